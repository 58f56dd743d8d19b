// Tests against a running image-server. Uses IMAGE_SERVER_URL + IMAGE_SERVER_KEY when set;
// otherwise starts the binary at IMAGE_SERVER_BIN (default: $CARGO_TARGET_DIR or ../../target,
// debug build) on a free port with memory storage.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
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
