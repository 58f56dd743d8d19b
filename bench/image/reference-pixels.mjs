// Writes the libvips reference pixels that crates/image-pipeline/tests/libvips_parity.rs compares
// our resize with: sharp's own output, before any lossy encoding (PNG), for the same request.
// Usage (from bench/image, after `npm install`): node reference-pixels.mjs
import sharp from "sharp";
import path from "node:path";
import os from "node:os";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, "../../crates/image-pipeline/tests/fixtures");
const cases = [
  // lake.jpg is 4000x2250: 1/4 scaled decode (1000x562, libvips drops libjpeg's partial row),
  // then Lanczos3 by 1.25 centred over the rows there are.
  ["lake.jpg", 800, "lake_800w_libvips.png"],
  // 1/8 decode (500x281), Lanczos3 by 5/3 (out 300x169).
  ["lake.jpg", 300, "lake_300w_libvips.png"],
  // 1/8 decode (500x281), then a shrink of 5: rows averaged by 2, Lanczos3 down by 2.5,
  // columns averaged by 2, Lanczos3 across.
  ["lake.jpg", 100, "lake_100w_libvips.png"],
];
// A PNG source: lake.jpg decoded whole (our decoder gives the same pixels) and stored lossless;
// 4000 -> 300 averages boxes of 6 rows, reduces by 20/9, then the same across.
const png = path.join(os.tmpdir(), "lake-reference.png");
await sharp(path.join(fixtures, "lake.jpg")).png().toFile(png);
cases.push([png, 300, "lake_png_300w_libvips.png"]);
// A Display P3 photo (what phones write): lake.jpg at 1600 px, converted to P3 and tagged with
// it. Kept as a fixture itself; the reference converts it back to sRGB, then to 400 px.
const p3 = path.join(fixtures, "lake_p3.jpg");
await sharp(path.join(fixtures, "lake.jpg"))
  .resize({ width: 1600 })
  .withIccProfile("p3")
  .jpeg({ quality: 90 })
  .toFile(p3);
cases.push(["lake_p3.jpg", 400, "lake_p3_400w_libvips.png"]);
// WebP sources, which sharp scales on load through libwebp's own rescaler (fastShrinkOnLoad):
// lake.jpg at 1600 px as lossy WebP q80, and the same with a constant 60% alpha. Kept as
// fixtures themselves.
await sharp(path.join(fixtures, "lake.jpg"))
  .resize({ width: 1600 })
  .webp({ quality: 80 })
  .toFile(path.join(fixtures, "lake_1600.webp"));
cases.push(["lake_1600.webp", 300, "lake_webp_300w_libvips.png"]);
await sharp(path.join(fixtures, "lake.jpg"))
  .resize({ width: 1600 })
  .ensureAlpha(0.6)
  .webp({ quality: 80 })
  .toFile(path.join(fixtures, "lake_alpha_1600.webp"));
cases.push(["lake_alpha_1600.webp", 300, "lake_alpha_webp_300w_libvips.png"]);
for (const [source, width, out] of cases) {
  await sharp(path.resolve(fixtures, source))
    .resize({ width, fit: "inside", withoutEnlargement: true })
    .png({ compressionLevel: 9 })
    .toFile(path.join(fixtures, out));
}
console.log(`sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}`);
