// Writes sharp's own output (lossless PNG) for the real-world fixtures of issue 20 that
// crates/image-pipeline/tests/libvips_parity.rs compares our output with: AVIF transformations,
// CMYK/YCCK JPEGs, grayscale. The sources are committed fixtures (see
// crates/image-pipeline/tests/fixtures/ATTRIBUTION.md); only the references are written.
// Usage (from bench/image, after `npm install`): node reference-pixels-real-world.mjs
import sharp from "sharp";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, "../../crates/image-pipeline/tests/fixtures");
const at = (name) => path.join(fixtures, name);
const png = { compressionLevel: 9 };
// sharp's prebuilt libheif decodes 8-bit AV1 only ("Bitstream not supported by this decoder"):
// the 10- and 12-bit files' references are made by libvips 8.14 / libavif instead (see
// ATTRIBUTION.md).
// Decoded as they are (AVIF transformations, CMYK to sRGB, limited-range grey expanded).
const plain = [
  "lake_irot1.avif",
  "lake_irot3_imir0.avif",
  "lake_irot1_clap.avif",
  // 8-bit twins of the 10-bit files with a mirror (libheif 1.15 cannot mirror deep images).
  "lake_irot2_imir1.avif",
  "lake_irot1_imir0_clap.avif",
  "lake_cmyk.jpg",
  "lake_ycck.jpg",
  ];
for (const source of plain) {
  const out = source.replace(/\.(avif|jpg)$/, "_libvips.png");
  // 8-bit sRGB, as we serve it (sharp keeps 16 bits for a deep source otherwise).
  await sharp(at(source)).toColourspace("srgb").png(png).toFile(at(out));
}
for (const [source, out] of [
  ["colour_cube.png", "colour_cube_bw_libvips.png"],
  ["lake_240.png", "lake_bw_libvips.png"],
]) {
  await sharp(at(source)).grayscale().png(png).toFile(at(out));
}
console.log(`sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}, libheif ${sharp.versions.heif}`);
