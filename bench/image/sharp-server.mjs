// Reference server for the benchmark: the same URL shape as image-server, built on sharp the
// way the original service does it (read the source per request, auto-orient, fit inside
// without enlargement, encode; `fit=cover` crops to fill the box from its centre, as
// image-server's and thumbor's default crop). No cache. Usage: node sharp-server.mjs PORT DIR
import http from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";

const [port, dir] = [Number(process.argv[2] ?? 3100), process.argv[3] ?? "."];
const root = path.resolve(dir);

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, "http://x");
    const prefix = "/images/resize/";
    if (!url.pathname.startsWith(prefix)) {
      res.writeHead(404).end();
      return;
    }
    const file = path.resolve(root, decodeURIComponent(url.pathname.slice(prefix.length)));
    if (!file.startsWith(root + path.sep)) {
      res.writeHead(400).end();
      return;
    }
    const input = await readFile(file);
    const q = url.searchParams;
    const width = q.has("width") ? Number(q.get("width")) : undefined;
    const height = q.has("height") ? Number(q.get("height")) : undefined;
    const format = q.get("format") ?? "webp";
    const quality = Number(q.get("quality") ?? 80);
    const fit = q.get("fit") === "cover" ? "cover" : "inside";
    // Animated sources stay animated, as image-server keeps them (sharp's `animated` option).
    const animated = /\.(gif|webp)$/i.test(file) && q.get("animated") !== "false";
    const encode = (q80) => {
      let img = sharp(input, { animated }).rotate();
      if (width || height) img = img.resize({ width, height, fit, withoutEnlargement: true });
      return img.toFormat(format === "jpg" ? "jpeg" : format, { quality: q80 }).toBuffer();
    };
    let out = await encode(quality);
    // max_bytes as image-server does it: the highest quality from `quality` down to 10 that
    // fits, by bisection (the rows here fit without shrinking the picture).
    const budget = q.has("max_bytes") ? Number(q.get("max_bytes")) : Infinity;
    if (out.length > budget) {
      let [low, high, best] = [10, quality - 1, null];
      while (low <= high) {
        const mid = Math.floor((low + high) / 2);
        const tried = await encode(mid);
        if (tried.length <= budget) [best, low] = [tried, mid + 1];
        else high = mid - 1;
      }
      if (best) out = best;
    }
    res.writeHead(200, { "content-type": `image/${format}`, "content-length": out.length }).end(out);
  } catch (e) {
    res.writeHead(500, { "content-type": "text/plain" }).end(String(e));
  }
});
server.listen(port, "127.0.0.1", () => console.log(`sharp reference on ${port}, sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}`));
