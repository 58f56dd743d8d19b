// The production build: React, then a .br and a .gz copy of every compressible file (the
// server picks one by Accept-Encoding), then the gzipped JavaScript measured: the initial
// JavaScript (what index.html loads before the first paint) must stay under 180 KB (issue 30),
// or the build fails; all of it, lazy chunks included, is printed against the 300 KB of issue 17.
import { defineConfig, type Plugin } from "vite";
import react from "@vitejs/plugin-react";
import { brotliCompressSync, gzipSync, constants } from "node:zlib";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const COMPRESSIBLE = /\.(js|css|html|svg|json|txt|map)$/;
const BUDGET_KB = 300;
const INITIAL_BUDGET_KB = 180;

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
      // The initial JavaScript: the scripts and module preloads index.html names.
      const html = readFileSync(join(outDir, "index.html"), "utf8");
      const initial = [...html.matchAll(/(?:src|href)="\/?([^"]+\.js)"/g)].map((m) => m[1] ?? "");
      const initialGzip = initial.reduce((a, f) => a + gzipSync(readFileSync(join(outDir, f)), { level: 9 }).length, 0);
      const initialKb = (initialGzip / 1024).toFixed(1);
      console.log(`dashboard: initial JavaScript ${initialKb} KB gzipped over ${initial.length} file(s) (budget ${INITIAL_BUDGET_KB} KB)`);
      if (initial.length === 0 || initialGzip > INITIAL_BUDGET_KB * 1024) {
        throw new Error(`the initial JavaScript is ${initialKb} KB gzipped, over the ${INITIAL_BUDGET_KB} KB budget (issue 30)`);
      }
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
