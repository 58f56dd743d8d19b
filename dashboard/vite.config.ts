// The production build: React, then a .br and a .gz copy of every compressible file (the
// server picks one by Accept-Encoding), then the gzipped JavaScript total printed against the
// 300 KB budget of issue 17.
import { defineConfig, type Plugin } from "vite";
import react from "@vitejs/plugin-react";
import { brotliCompressSync, gzipSync, constants } from "node:zlib";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const COMPRESSIBLE = /\.(js|css|html|svg|json|txt|map)$/;
const BUDGET_KB = 300;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

function precompress(): Plugin {
  let outDir = "dist";
  return {
    name: "precompress",
    apply: "build",
    configResolved(config) {
      outDir = config.build.outDir;
    },
    closeBundle() {
      let jsGzip = 0;
      for (const file of files(outDir)) {
        if (!COMPRESSIBLE.test(file)) continue;
        const bytes = readFileSync(file);
        const gz = gzipSync(bytes, { level: 9 });
        const br = brotliCompressSync(bytes, {
          params: { [constants.BROTLI_PARAM_QUALITY]: 11 },
        });
        if (gz.length < bytes.length) writeFileSync(`${file}.gz`, gz);
        if (br.length < bytes.length) writeFileSync(`${file}.br`, br);
        if (file.endsWith(".js")) jsGzip += gz.length;
      }
      const kb = (jsGzip / 1024).toFixed(1);
      const verdict = jsGzip < BUDGET_KB * 1024 ? "within" : "OVER";
      console.log(`dashboard: ${kb} KB of JavaScript gzipped (${verdict} the ${BUDGET_KB} KB budget)`);
    },
  };
}

export default defineConfig({
  plugins: [react(), precompress()],
  build: {
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
});
