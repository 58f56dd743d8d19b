// Writes the references that crates/image-pipeline/tests/public_files.rs compares our decodes of
// the public real-world files of issue 20 with (provenance in
// crates/image-pipeline/tests/fixtures/ATTRIBUTION.md). Only the references are written.
//
// A reference is the block means of the reference decoder's 8-bit sRGB(A) output: the picture
// cut into k x k blocks (a partial block at the right or bottom edge is dropped), each block the
// rounded mean of its samples per channel, RGBA, stored as PNG. The test computes the same means
// of our output, so a large photo is checked through a small file; a wrong turn, crop, mirror or
// range moves the means by tens, the decoders' rounding by a level or two.
//
// Decoders: sharp 0.34.5 (libvips 8.17.3 with libheif 1.20.2, libjpeg from mozjpeg, libtiff 4.7.1,
// librsvg 2.61.2) for every file it decodes as its authors mean; libavif's `avifdec -d 16`
// (Debian 12's libavif-bin 0.11.1) for the monochrome AVIF, which libheif, and so sharp, leaves
// in limited range.
//
// Usage (from bench/image, after `npm install`, with avifdec on PATH):
//   node reference-blocks-public.mjs
import sharp from "sharp";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, "../../crates/image-pipeline/tests/fixtures");
const at = (name) => path.join(fixtures, name);

/** Block means (k x k, partial blocks dropped) of 8-bit RGBA `data` of `width` x `height`. */
function blockMeans(data, width, height, k) {
  const [bw, bh] = [Math.floor(width / k), Math.floor(height / k)];
  const out = Buffer.alloc(bw * bh * 4);
  const n = k * k;
  for (let by = 0; by < bh; by++) {
    for (let bx = 0; bx < bw; bx++) {
      for (let c = 0; c < 4; c++) {
        let sum = 0;
        for (let y = by * k; y < (by + 1) * k; y++) {
          for (let x = bx * k; x < (bx + 1) * k; x++) {
            sum += data[(y * width + x) * 4 + c];
          }
        }
        out[(by * bw + bx) * 4 + c] = Math.floor((sum + n / 2) / n);
      }
    }
  }
  return { out, bw, bh };
}

async function write(input, k, name, grey = false) {
  const { data, info } = await (grey ? sharp(input).grayscale() : sharp(input))
    .toColourspace("srgb")
    .raw()
    .toBuffer({ resolveWithObject: true });
  // To RGBA: grey (1 band, or 2 with alpha) and RGB are expanded, alpha 255 when absent.
  const rgba = Buffer.alloc(info.width * info.height * 4);
  const c = info.channels;
  for (let i = 0; i < info.width * info.height; i++) {
    const px = data.subarray(i * c, (i + 1) * c);
    const [r, g, b] = c >= 3 ? [px[0], px[1], px[2]] : [px[0], px[0], px[0]];
    const a = c === 2 || c === 4 ? px[c - 1] : 255;
    rgba.set([r, g, b, a], i * 4);
  }
  const { out, bw, bh } = blockMeans(rgba, info.width, info.height, k);
  await sharp(out, { raw: { width: bw, height: bh, channels: 4 } })
    .png({ compressionLevel: 9 })
    .toFile(at(name));
  console.log(`${name}: ${info.width}x${info.height}x${c} in ${k} px blocks`);
}

// (source, block size): decoded by sharp as it is.
for (const [source, k] of [
  ["kimono.rotate90.avif", 8],
  ["kimono.crop.avif", 5],
  ["kimono.mirror-vertical.rotate270.crop.avif", 5],
  ["pil_sample_cmyk.jpg", 1],
  ["hopper_lzw.tif", 2],
  ["plum-blossom.svg", 15],
  // libtiff's test pictures (from image-rs/image-tiff's tests/libtiffpic): YCbCr with 2x2
  // subsampled chroma, LZW; CCITT Group 3 faxes, 1-D and 2-D.
  ["ycbcr-cat.tif", 1],
  // Pillow's hopper_webp.tif: WebP-compressed strips.
  ["hopper_webp.tif", 2],
  ["fax2d.tif", 8],
  ["g3test.tif", 8],
]) {
  await write(at(source), k, `${source}.blocks${k}.png`);
}

// sharp's grayscale() (libvips `colourspace b-w`) of a photo with saturated reds.
await write(at("kimono.crop.avif"), 5, "kimono.crop.avif.grayscale.blocks5.png", true);

// The monochrome AVIF through libavif, which expands its limited range.
const tmp = path.join(mkdtempSync(path.join(os.tmpdir(), "ref-")), "fox16.png");
const fox = "fox.profile0.8bpc.yuv420.monochrome.avif";
execFileSync("avifdec", ["-d", "16", at(fox), tmp]);
await write(tmp, 8, `${fox}.blocks8.png`);

console.log(
  `sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}, libheif ${sharp.versions.heif}, ` +
    `librsvg ${sharp.versions.rsvg}, libtiff ${sharp.versions.tiff}; ` +
    execFileSync("avifdec", ["--version"]).toString().split("\n")[0],
);
