//! Our resize against libvips' own pixels (sharp 0.34.5, libvips 8.17.3; fixtures written by
//! `bench/image/reference-pixels.mjs`): a JPEG source reduced as sharp reduces it gives the same
//! 8-bit samples, so a lossy encoder at sharp's settings makes the same choices.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use image_pipeline::samples::fixture;
use image_pipeline::{Limits, OutputFormat, TransformSpec, decode_to_rgba, transform};
use pretty_assertions::assert_eq;

/// Resizes lake.jpg to `width` as PNG (lossless) and counts the samples that differ from the
/// libvips reference: `(differing samples, largest difference, size)`.
fn compare(width: u32, reference: &str) -> (usize, u8, (u32, u32)) {
    compare_source(&fixture("lake.jpg"), width, reference)
}

fn compare_source(source: &[u8], width: u32, reference: &str) -> (usize, u8, (u32, u32)) {
    compare_query(source, &format!("width={width}&format=png"), reference)
}

/// Transforms `source` by the URL query `query` (lossless output) and counts the samples that
/// differ from the libvips reference: `(differing samples, largest difference, size)`.
fn compare_query(source: &[u8], query: &str, reference: &str) -> (usize, u8, (u32, u32)) {
    let limits = Limits::default();
    let query = query.split('&').filter_map(|kv| kv.split_once('='));
    let spec = TransformSpec::from_query(query, &limits).unwrap();
    let out = transform(source, &spec, spec.output_format(""), None, &limits).unwrap();
    let ours = decode_to_rgba(&out.bytes, u64::MAX).unwrap();
    let theirs = decode_to_rgba(&fixture(reference), u64::MAX).unwrap();
    assert_eq!(ours.dimensions(), theirs.dimensions(), "output size");
    let diffs: Vec<u8> = ours
        .as_raw()
        .iter()
        .zip(theirs.as_raw())
        .map(|(a, b)| a.abs_diff(*b))
        .filter(|&d| d > 0)
        .collect();
    (
        diffs.len(),
        diffs.iter().copied().max().unwrap_or(0),
        ours.dimensions(),
    )
}

#[test]
fn a_quarter_scale_decode_reduced_by_one_and_a_quarter_is_libvips_to_the_bit() {
    // 4000x2250 -> 1000x562 (libjpeg's partial 563rd row dropped) -> Lanczos3 1.25, centred.
    assert_eq!(compare(800, "lake_800w_libvips.png"), (0, 0, (800, 450)));
}

#[test]
fn an_eighth_scale_decode_reduced_by_five_thirds_is_libvips_to_the_bit() {
    // 1/8 -> 500x281, then 300x169: the height samples 281.67 rows of 281, centred.
    assert_eq!(compare(300, "lake_300w_libvips.png"), (0, 0, (300, 169)));
}

#[test]
fn a_shrink_of_five_after_the_decode_boxes_by_two_first_as_libvips_does() {
    // 1/8 -> 500x281, then 100x56: rows averaged by 2, Lanczos3 2.5 down, columns averaged by
    // 2, Lanczos3 2.5 across.
    assert_eq!(compare(100, "lake_100w_libvips.png"), (0, 0, (100, 56)));
}

#[test]
fn a_png_boxed_by_six_and_reduced_by_twenty_ninths_is_libvips_to_the_bit() {
    // The PNG holds lake.jpg decoded whole (the same pixels as libvips' decode). libvips'
    // order: rows averaged by 6, Lanczos3 down by 20/9, columns averaged by 6 (the last box
    // partial), Lanczos3 across.
    let whole = decode_to_rgba(&fixture("lake.jpg"), u64::MAX).unwrap();
    let rgb = image_pipeline::image::DynamicImage::ImageRgba8(whole).to_rgb8();
    let mut png = std::io::Cursor::new(Vec::new());
    rgb.write_to(&mut png, image_pipeline::image::ImageFormat::Png)
        .unwrap();
    assert_eq!(
        compare_source(png.get_ref(), 300, "lake_png_300w_libvips.png"),
        (0, 0, (300, 169))
    );
    // Streamed row by row, a PNG cut in the middle of its rows is still an error, not a half
    // image.
    let limits = Limits::default();
    let spec = TransformSpec::from_query([("width", "300")], &limits).unwrap();
    let cut = &png.get_ref()[..png.get_ref().len() / 2];
    let err = transform(cut, &spec, spec.output_format(""), None, &limits);
    assert!(
        matches!(err, Err(image_pipeline::PipelineError::Undecodable(_))),
        "{err:?}"
    );
}

#[test]
fn a_display_p3_photo_is_converted_and_reduced_to_libvips_bits() {
    // Display P3 to sRGB through Little CMS (perceptual, libvips' sRGB profile) after a 1/2
    // decode (a shrink of exactly 4 keeps a Lanczos3 step of 2, as sharp does).
    assert_eq!(
        compare_source(&fixture("lake_p3.jpg"), 400, "lake_p3_400w_libvips.png"),
        (0, 0, (400, 225))
    );
}

#[test]
fn a_webp_scaled_on_load_by_libwebp_is_sharps_to_the_bit() {
    // sharp (fastShrinkOnLoad) asks libwebp for round(1600 * 300 / 1600) x round(900 * 0.1875)
    // = 300x169 through libwebp's rescaler, and nothing is left to resize; so do we.
    assert_eq!(
        compare_source(
            &fixture("lake_1600.webp"),
            300,
            "lake_webp_300w_libvips.png"
        ),
        (0, 0, (300, 169))
    );
    // With alpha: the same, alpha included.
    assert_eq!(
        compare_source(
            &fixture("lake_alpha_1600.webp"),
            300,
            "lake_alpha_webp_300w_libvips.png"
        ),
        (0, 0, (300, 169))
    );
}

#[test]
fn avif_rotations_mirrors_and_clean_apertures_give_libvips_geometry_and_pixels() {
    // Made here by libavif's avifenc from lake.jpg at 240x135 (irot turns anticlockwise, imir 0
    // mirrors top to bottom, clap crops before both); 8-bit references by sharp (libvips 8.17.3
    // over libheif 1.20.2), the 10-bit one by `vips colourspace FILE REF.png srgb` (libvips
    // 8.14.1 over libheif 1.15.1: sharp's libheif has no 10-bit AV1 decoder). See
    // fixtures/ATTRIBUTION.md.
    let cases = [
        ("lake_irot1.avif", (135, 240)),
        ("lake_irot3_imir0.avif", (135, 240)),
        ("lake_irot1_clap.avif", (100, 160)),
        ("lake_irot2_imir1.avif", (240, 135)),
        ("lake_irot1_imir0_clap.avif", (100, 160)),
    ];
    for (file, size) in cases {
        let reference = file.replace(".avif", "_libvips.png");
        assert_eq!(
            compare_query(&fixture(file), "format=png", &reference),
            (0, 0, size),
            "{file}"
        );
    }
    // 10 bits: libvips keeps 16 bits and narrows them in `colourspace`, we ask libheif for 8;
    // both round, so a sample may differ by one.
    let (_, largest, size) = compare_query(
        &fixture("lake_10bit_irot2_clap.avif"),
        "format=png",
        "lake_10bit_irot2_clap_libvips.png",
    );
    assert_eq!(size, (160, 100));
    assert!(largest <= 1, "largest difference {largest}");
}

#[test]
fn cmyk_and_ycck_jpegs_are_converted_to_srgb_as_libvips_does() {
    // Adobe-inverted CMYK (written by libvips) and YCCK (the same samples through TurboJPEG),
    // without an embedded profile: converted from libvips' built-in CMYK profile, as sharp
    // does. References by sharp 0.34.5 itself (libvips 8.17.3, written by
    // bench/image/reference-pixels-real-world.mjs): the same Little CMS link (perceptual, with
    // its optimisation) from the Little CMS whose v2-to-v4 perceptual black agrees with sharp's
    // (crates/image-pipeline/Cargo.toml, lcms2-sys), so to the bit.
    for file in ["lake_cmyk.jpg", "lake_ycck.jpg"] {
        let reference = file.replace(".jpg", "_libvips.png");
        assert_eq!(
            compare_query(&fixture(file), "format=png", &reference),
            (0, 0, (240, 135)),
            "{file}"
        );
        // The same request as a resize (shrink-on-load at 1/2 over the CMYK samples) succeeds.
        let limits = Limits::default();
        let spec =
            TransformSpec::from_query([("width", "100"), ("format", "jpeg")], &limits).unwrap();
        let out = transform(&fixture(file), &spec, spec.output_format(""), None, &limits).unwrap();
        assert_eq!((out.width, out.height), (100, 56), "{file}");
    }
}

#[test]
fn grayscale_is_libvips_b_w_on_every_colour() {
    // colour_cube.png: every combination of 33 levels (0, 8, .., 248, 255) per channel;
    // references by sharp's `grayscale()` (libvips 8.17.3 `colourspace b-w`), written by
    // bench/image/reference-pixels-real-world.mjs.
    let (differing, largest, _) = compare_query(
        &fixture("colour_cube.png"),
        "grayscale=true&format=png",
        "colour_cube_bw_libvips.png",
    );
    assert_eq!((differing, largest), (0, 0), "colour cube");
    // The photo: one grey pixel of 32,400 is one level off (libvips' single-precision sums).
    let (differing, largest, _) = compare_query(
        &fixture("lake_240.png"),
        "grayscale=true&format=png",
        "lake_bw_libvips.png",
    );
    assert!(
        differing <= 3 && largest <= 1,
        "{differing} samples, up to {largest}"
    );
    // Pure red, the example: 127 as in libvips, not 54.
    let cube = decode_to_rgba(&fixture("colour_cube_bw_libvips.png"), u64::MAX).unwrap();
    assert_eq!(cube.get_pixel(32 * 33, 0).0, [127, 127, 127, 255]);
}

#[test]
fn monochrome_avif_limited_range_is_expanded_at_every_depth() {
    // Grey AVIFs (avifenc `-y 400 -r limited`, 8, 10 and 12 bits) of lake.jpg at 240x135.
    // libheif (1.15 here, 1.20 in sharp: libvips 8.17.3 too) copies the limited-range luma as
    // it is, so black is 16 and the mean 156 where the source's luma is 163; the reference is
    // libavif's own decode (`avifdec -d 16`, narrowed to 8 bits by `vips colourspace`).
    for bits in [8, 10, 12] {
        let file = format!("lake_mono_{bits}bit.avif");
        let (_, largest, size) = compare_query(
            &fixture(&file),
            "format=png",
            &format!("lake_mono_{bits}bit_libavif.png"),
        );
        assert_eq!(size, (240, 135), "{file}");
        // 10 and 12 bits are narrowed to 8 by libheif before the expansion: a level or two.
        assert!(largest <= 2, "{file}: largest difference {largest}");
    }
    // A colour AVIF is not touched (libheif converts YCbCr with its range itself).
    let (differing, _, _) = compare_query(
        &fixture("lake_irot1.avif"),
        "format=png",
        "lake_irot1_libvips.png",
    );
    assert_eq!(differing, 0);
}

#[test]
fn deep_avifs_with_a_mirror_are_turned_mirrored_and_cropped_not_refused() {
    // libheif 1.15 refuses to mirror an image deeper than 8 bits; we apply clap/irot/imir
    // ourselves then. Each 10-bit file has an 8-bit twin (same source, same properties) whose
    // decode by sharp (libvips 8.17.3) is the reference: the two encodes differ by a level or
    // two on average, a wrong turn or mirror by tens.
    for (file, reference, size) in [
        (
            "lake_10bit_irot2_imir1.avif",
            "lake_irot2_imir1_libvips.png",
            (240, 135),
        ),
        (
            "lake_10bit_irot1_imir0_clap.avif",
            "lake_irot1_imir0_clap_libvips.png",
            (100, 160),
        ),
    ] {
        let limits = Limits::default();
        let spec = TransformSpec::from_query([("format", "png")], &limits).unwrap();
        let out = transform(&fixture(file), &spec, spec.output_format(""), None, &limits);
        let ours = decode_to_rgba(&out.unwrap().bytes, u64::MAX).unwrap();
        let theirs = decode_to_rgba(&fixture(reference), u64::MAX).unwrap();
        assert_eq!(ours.dimensions(), size, "{file}");
        let mean = |a: &image_pipeline::image::RgbaImage| {
            let sum: u64 = a
                .as_raw()
                .iter()
                .zip(theirs.as_raw())
                .map(|(x, y)| u64::from(x.abs_diff(*y)))
                .sum();
            sum as f64 / a.as_raw().len() as f64
        };
        assert!(mean(&ours) < 3.0, "{file}: mean difference {}", mean(&ours));
        let flipped = image_pipeline::image::imageops::flip_horizontal(&ours);
        assert!(
            mean(&flipped) > 10.0,
            "{file}: the wrong mirror is as close"
        );
        // And as a resize, the same geometry.
        let spec = TransformSpec::from_query([("width", "50"), ("format", "webp")], &limits);
        let out = transform(
            &fixture(file),
            &spec.unwrap(),
            OutputFormat::Webp,
            None,
            &limits,
        );
        assert_eq!(out.unwrap().width, 50, "{file}");
    }
}
