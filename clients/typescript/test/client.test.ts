// Tests against a running image-server. Uses IMAGE_SERVER_URL + IMAGE_SERVER_KEY when set;
// otherwise starts the binary at IMAGE_SERVER_BIN (default: $CARGO_TARGET_DIR or ../../target,
// debug build) on a free port with memory storage.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { inflateSync } from "node:zlib";
import { decode as decodeBlurhash } from "blurhash";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ImageClient, ImageServerError, ResizeIt } from "../src/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../../..");
const photo = readFileSync(path.join(repo, "crates/image-pipeline/tests/fixtures/large_image.jpg"));

let server: ChildProcess | undefined;
let baseUrl = process.env.IMAGE_SERVER_URL ?? "";
let apiKey = process.env.IMAGE_SERVER_KEY ?? "";

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Starts the image-server binary on a free port with memory storage and `env` added. */
async function startServer(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const target = process.env.CARGO_TARGET_DIR ?? path.join(repo, "target");
  const bin = process.env.IMAGE_SERVER_BIN ?? path.join(target, "debug", "image-server");
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(bin, [], {
    env: { ...process.env, LISTEN: `127.0.0.1:${port}`, STORAGE_URL: "memory://", RUST_LOG: "warn", ...env },
    stdio: "inherit",
  });
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${url}/admin/health`)).ok) return { url, child };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGTERM");
  throw new Error(`image-server did not start from ${bin}`);
}

before(async () => {
  if (baseUrl) return;
  apiKey = "ts-test-key";
  const started = await startServer({ API_KEY: apiKey });
  baseUrl = started.url;
  server = started.child;
});

after(() => {
  server?.kill("SIGTERM");
});

test("getResizeUrl builds the original SDK's query", () => {
  const c = new ImageClient("http://cdn.example/", "k");
  assert.equal(
    c.getResizeUrl("my photos/cat.jpg", { width: 300, format: "webp", flip: true, crop: { left: 1, top: 2, width: 30, height: 40 } }),
    "http://cdn.example/images/resize/my%20photos/cat.jpg?width=300&format=webp&flip=true&cropLeft=1&cropTop=2&cropWidth=30&cropHeight=40",
  );
  assert.equal(new ResizeIt({ baseUrl: "http://x" }).getResizeUrl("a.png"), "http://x/images/resize/a.png");
});

test("getResizeUrl builds every parameter of the URL API", () => {
  const c = new ImageClient("http://cdn.example", "k");
  assert.equal(
    c.getResizeUrl("a.jpg", {
      width: 300,
      trim: 25,
      padding: [1, 2, 3, 4],
      pixelate: 8,
      maxBytes: 50000,
      preset: ["thumb", "gray"],
      watermark: { text: "© Acme" },
      version: "0123456789abcdef",
    }),
    "http://cdn.example/images/resize/a.jpg?width=300&watermarkText=%C2%A9+Acme&trim=25&padding=1%2C2%2C3%2C4&pixelate=8&max_bytes=50000&preset=thumb%2Cgray&v=0123456789abcdef",
  );
  assert.equal(
    c.getResizeUrl("a.jpg", { format: "blurhash", blurhash: { x: 5, y: 2 } }),
    "http://cdn.example/images/resize/a.jpg?format=blurhash&blurhash_x=5&blurhash_y=2",
  );
  assert.equal(c.getResizeUrl("a.jpg", { lqip: true, padding: 4 }), "http://cdn.example/images/resize/a.jpg?padding=4&lqip=true");
  assert.equal(
    c.getResizeUrl("a.jpg", { zoom: 0.5, minWidth: 300, minHeight: 200, keepCopyright: true, animated: false, frame: 2, format: "gif" }),
    "http://cdn.example/images/resize/a.jpg?format=gif&animated=false&frame=2&keep_copyright=true&zoom=0.5&min_width=300&min_height=200",
  );
});

test("getResizeUrl signs path and query with signingKey", () => {
  const c = new ImageClient({ baseUrl: "http://cdn.example/img/", signingKey: "secret" });
  // Expected values from `printf '%s' 'a%20b.jpg?width=800' |
  //   openssl dgst -sha256 -hmac secret -binary | basenc --base64url | tr -d =`.
  assert.equal(
    c.getResizeUrl("a b.jpg", { width: 800 }),
    "http://cdn.example/img/images/resize/a%20b.jpg?width=800&signature=0FI1K2sR8W9urAbw7hkDC6knp_x9lZydZTB7bmRF5_s",
  );
  assert.equal(
    c.getResizeUrl("a.jpg"),
    "http://cdn.example/img/images/resize/a.jpg?signature=zNiikLdDTaFCZB4oMFcpwZWwAvRzm2b3PdhtJOrBEYU",
  );
});

test("a server with URL_SIGNING_KEY serves signed URLs and refuses unsigned ones", async () => {
  const { url, child } = await startServer({ API_KEY: "k2", URL_SIGNING_KEY: "ts-signing" });
  try {
    const plain = new ImageClient(url, "k2");
    const signed = new ImageClient({ baseUrl: url, apiKey: "k2", signingKey: "ts-signing" });
    const { path: stored } = await plain.uploadImage(photo, { path: "ts/signed photo.jpg", contentType: "image/jpeg" });
    const options = { width: 90, format: "png" as const, grayscale: true };
    assert.equal((await fetch(plain.getResizeUrl(stored, options))).status, 403);
    await assert.rejects(plain.getResizedImage(stored, options), (e: unknown) => {
      assert.ok(e instanceof ImageServerError);
      assert.equal(e.status, 403);
      return true;
    });
    const blob = await signed.getResizedImage(stored, options);
    assert.equal(blob.type, "image/png");
  } finally {
    child.kill("SIGTERM");
  }
});

test("uploadImage stores the photo and the resize URL serves it", async () => {
  const client = new ImageClient(baseUrl, apiKey);
  const result = await client.uploadImage(photo, { path: "ts/photo.jpg", contentType: "image/jpeg" });
  assert.equal(result.success, true);
  assert.equal(result.path, "ts/photo.jpg");
  const response = await fetch(client.getResizeUrl(result.path, { width: 200, format: "jpeg", grayscale: true }));
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "image/jpeg");
  const bytes = new Uint8Array(await response.arrayBuffer());
  assert.deepEqual([...bytes.slice(0, 3)], [0xff, 0xd8, 0xff]);
  const blob = await client.getResizedImage(result.path, { width: 100 });
  assert.equal(blob.type, "image/webp");
  // Asked in CSS pixels for a 2x screen: a PNG 200 px wide (IHDR width, big-endian at 16).
  const hiDpi = client.getResizeUrl(result.path, { width: 100, dpr: 2, format: "png" });
  assert.match(hiDpi, /width=100&dpr=2&format=png/);
  const png = new DataView(await (await fetch(hiDpi)).arrayBuffer());
  assert.equal(png.getUint32(16), 200);
});

test("a URL pinned to the upload's version is immutable, and text watermarks are drawn", async () => {
  const client = new ImageClient(baseUrl, apiKey);
  const result = await client.uploadImage(photo, { path: "ts/pinned.jpg", contentType: "image/jpeg" });
  assert.match(result.version ?? "", /^[0-9a-f]{16}$/);
  const pinned = client.getResizeUrl(result.path, { width: 120, format: "png", version: result.version });
  assert.match(pinned, /&v=[0-9a-f]{16}$/);
  const r = await fetch(pinned);
  assert.equal(r.headers.get("cache-control"), "public, max-age=31536000, immutable");
  const plain = new Uint8Array(await r.arrayBuffer());
  const unpinned = await fetch(client.getResizeUrl(result.path, { width: 120, format: "png" }));
  assert.equal(unpinned.headers.get("cache-control"), "public, max-age=86400");
  const marked = client.getResizeUrl(result.path, {
    width: 120,
    format: "png",
    watermark: { text: "© Acme", position: "centre", opacity: 1, scale: 0.5 },
  });
  const drawn = new Uint8Array(await (await fetch(marked)).arrayBuffer());
  assert.notDeepEqual(drawn, plain);
  await assert.rejects(client.getResizedImage(result.path, { watermark: { text: "a\nb" } }), (e: unknown) => {
    assert.ok(e instanceof ImageServerError);
    assert.equal(e.status, 400);
    assert.match(e.message, /watermarkText/);
    return true;
  });
});

/** RGBA pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what the server writes). */
function pngPixels(png: Uint8Array): { width: number; height: number; rgba: Uint8Array } {
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const width = view.getUint32(16);
  const height = view.getUint32(20);
  const channels = png[25] === 6 ? 4 : 3;
  const idat: Uint8Array[] = [];
  for (let at = 8; at < png.length; ) {
    const len = view.getUint32(at);
    const type = String.fromCharCode(...png.subarray(at + 4, at + 8));
    if (type === "IDAT") idat.push(png.subarray(at + 8, at + 8 + len));
    at += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = new Uint8Array(width * height * channels);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x++) {
      const v = raw[y * (stride + 1) + 1 + x];
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c;
      const paeth = Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter];
      out[y * stride + x] = (v + predictor) & 0xff;
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    rgba.set(out.subarray(i * channels, i * channels + 3), i * 4);
    rgba[i * 4 + 3] = channels === 4 ? out[i * channels + 3] : 255;
  }
  return { width, height, rgba };
}

test("format=blurhash decodes with woltapp's reference decoder to the picture's colours", async () => {
  const client = new ImageClient(baseUrl, apiKey);
  const { path: stored } = await client.uploadImage(photo, { path: "ts/blurhash.jpg", contentType: "image/jpeg" });
  const r = await fetch(client.getResizeUrl(stored, { width: 300, format: "blurhash" }));
  assert.equal(r.headers.get("content-type"), "application/json");
  const answer = (await r.json()) as { blurhash: string; components: { x: number; y: number }; width: number; height: number };
  assert.deepEqual([answer.components, answer.width, answer.height], [{ x: 4, y: 3 }, 300, 200]);
  // The hash decoded at 32x24 against the picture at 32x24, both averaged over a 4x3 grid of
  // 8x8 blocks (the scale 4x3 components describe): 13.8 of 255 apart on average here.
  const small = pngPixels(new Uint8Array(await (await fetch(client.getResizeUrl(stored, { width: 32, height: 24, fit: "fill", format: "png" }))).arrayBuffer()));
  const decoded = decodeBlurhash(answer.blurhash, 32, 24);
  const blocks = (rgba: ArrayLike<number>) => {
    const out: number[] = [];
    for (let by = 0; by < 3; by++)
      for (let bx = 0; bx < 4; bx++)
        for (let c = 0; c < 3; c++) {
          let sum = 0;
          for (let y = 0; y < 8; y++) for (let x = 0; x < 8; x++) sum += rgba[((by * 8 + y) * 32 + bx * 8 + x) * 4 + c];
          out.push(sum / 64);
        }
    return out;
  };
  const [want, got] = [blocks(small.rgba), blocks(decoded)];
  const mean = want.reduce((e, w, i) => e + Math.abs(w - got[i]), 0) / want.length;
  assert.ok(mean < 20, `mean difference ${mean.toFixed(1)} of 255`);
  // More components: a longer hash of the same picture.
  const fine = await (await fetch(client.getResizeUrl(stored, { width: 300, format: "blurhash", blurhash: { x: 9, y: 9 } }))).json() as { blurhash: string };
  assert.equal(fine.blurhash.length, 4 + 2 * 81);
});

test("lqip=true answers a tiny WebP data URL and the full size", async () => {
  const client = new ImageClient(baseUrl, apiKey);
  const { path: stored } = await client.uploadImage(photo, { path: "ts/lqip.jpg", contentType: "image/jpeg" });
  const url = client.getResizeUrl(stored, { width: 600, lqip: true });
  assert.match(url, /lqip=true/);
  const answer = (await (await fetch(url)).json()) as { lqip: string; width: number; height: number };
  assert.match(answer.lqip, /^data:image\/webp;base64,/);
  assert.ok(answer.lqip.length < 1000, `${answer.lqip.length} characters`);
  assert.deepEqual([answer.width, answer.height], [600, 400]);
});

test("a data URL upload works and a wrong key is refused with the server's message", async () => {
  const client = new ImageClient({ baseUrl, apiKey });
  const dataUrl = `data:image/jpeg;base64,${photo.toString("base64")}`;
  const ok = await client.uploadImage(dataUrl, { path: "ts/data-url.jpg", contentType: "image/jpeg" });
  assert.equal(ok.path, "ts/data-url.jpg");
  const wrong = new ImageClient(baseUrl, "wrong");
  await assert.rejects(wrong.uploadImage(photo, { path: "ts/x.jpg", contentType: "image/jpeg" }), (e: unknown) => {
    assert.ok(e instanceof ImageServerError);
    assert.equal(e.status, 401);
    return true;
  });
});

test("a non-image is refused as 415", async () => {
  const client = new ImageClient(baseUrl, apiKey);
  await assert.rejects(client.uploadImage(Buffer.from("hello"), { path: "ts/x.jpg", contentType: "image/jpeg" }), (e: unknown) => {
    assert.ok(e instanceof ImageServerError);
    assert.equal(e.status, 415);
    return true;
  });
});
