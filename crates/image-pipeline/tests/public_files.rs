//! Real-world cases on public files (provenance and licences in
//! fixtures/ATTRIBUTION.md), each against its reference decoder's own output: sharp 0.34.5
//! (libvips 8.17.3, libheif 1.20.2, librsvg 2.61.2, libtiff 4.7.1) or, for the monochrome AVIF,
//! libavif's avifdec. A reference is the block means of that output (every k x k block
//! averaged, written by `bench/image/reference-blocks-public.mjs`); the same means of our output
//! must match within the decoders' rounding, while a wrong turn, crop, mirror, colour
//! conversion or range moves them by tens.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use image_pipeline::image::{RgbaImage, imageops};
use image_pipeline::samples::fixture;
use image_pipeline::{Limits, PipelineError, TransformSpec, decode_to_rgba, probe, transform};

/// Block means of `img`: each whole k x k block's rounded mean per channel (a partial block at
/// the right or bottom edge is dropped), as the reference script computes them.
fn block_means(img: &RgbaImage, k: u32) -> RgbaImage {
    let n = k * k;
    RgbaImage::from_fn(img.width() / k, img.height() / k, |bx, by| {
        let mut sum = [0u32; 4];
        for y in by * k..(by + 1) * k {
            for x in bx * k..(bx + 1) * k {
                for (s, v) in sum.iter_mut().zip(img.get_pixel(x, y).0) {
                    *s += u32::from(v);
                }
            }
        }
        image_pipeline::image::Rgba(sum.map(|s| u8::try_from((s + n / 2) / n).unwrap()))
    })
}

/// Our output of `file` for `query` (PNG, lossless), decoded.
fn ours(file: &str, query: &str) -> RgbaImage {
    let limits = Limits::default();
    let pairs = query.split('&').filter_map(|kv| kv.split_once('='));
    let spec = TransformSpec::from_query(pairs, &limits).unwrap();
    let out = transform(&fixture(file), &spec, spec.output_format(""), None, &limits)
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    decode_to_rgba(&out.bytes, u64::MAX).unwrap()
}

/// Mean and largest absolute difference of two images' samples, which must be the same size.
fn difference(a: &RgbaImage, b: &RgbaImage) -> (f64, u8) {
    assert_eq!(a.dimensions(), b.dimensions(), "block grid");
    let (mut sum, mut largest) = (0u64, 0u8);
    for (x, y) in a.as_raw().iter().zip(b.as_raw()) {
        let d = x.abs_diff(*y);
        sum += u64::from(d);
        largest = largest.max(d);
    }
    (sum as f64 / a.as_raw().len() as f64, largest)
}

/// Decodes `file` through the pipeline (`query`), checks its size, and returns the difference
/// of its `k`-block means from the reference `<file>.blocks<k>.png` with the decoded image.
fn against_reference(file: &str, query: &str, k: u32, size: (u32, u32)) -> ((f64, u8), RgbaImage) {
    against(file, query, &format!("{file}.blocks{k}.png"), k, size)
}

/// As [`against_reference`], with the reference named.
fn against(
    file: &str,
    query: &str,
    reference: &str,
    k: u32,
    size: (u32, u32),
) -> ((f64, u8), RgbaImage) {
    let img = ours(file, query);
    assert_eq!(img.dimensions(), size, "{file}: output size");
    let reference = decode_to_rgba(&fixture(reference), u64::MAX).unwrap();
    (difference(&block_means(&img, k), &reference), img)
}

#[test]
fn avif_irot_imir_and_clap_give_the_shown_geometry_of_public_files() {
    // Link-U's kimono (722x1024 shown): stored turned by a quarter (irot), cropped by a clean
    // aperture with a negative offset (clap), and all three of clap, irot and imir.
    for (file, k, size) in [
        ("kimono.rotate90.avif", 8, (722, 1024)),
        ("kimono.crop.avif", 5, (385, 330)),
        ("kimono.mirror-vertical.rotate270.crop.avif", 5, (385, 330)),
    ] {
        let ((mean, largest), img) = against_reference(file, "format=png", k, size);
        // Measured: the turned file to the bit, the cropped ones a mean of 0.13 and 5 at most
        // (libheif 1.15 here, 1.20 in sharp).
        assert!(
            mean < 0.5 && largest <= 6,
            "{file}: {mean} mean, {largest} largest"
        );
        // The mirror image is far: the test can tell a wrong mirror from a right one.
        let reference = decode_to_rgba(&fixture(&format!("{file}.blocks{k}.png")), u64::MAX);
        let flipped = block_means(&imageops::flip_vertical(&img), k);
        assert!(difference(&flipped, &reference.unwrap()).0 > 10.0, "{file}");
        // A resize keeps the shown geometry: the shown aspect ratio, no edge smeared in.
        let resized = ours(file, "width=200&format=png");
        let want = (
            200,
            (200.0 * f64::from(size.1) / f64::from(size.0)).round() as u32,
        );
        assert_eq!(resized.dimensions(), want, "{file}");
    }
    // The header says the shown size too, before anything is decoded.
    let info = probe(&fixture("kimono.rotate90.avif"), u64::MAX).unwrap();
    assert_eq!((info.width, info.height), (722, 1024));
}

#[test]
fn a_photoshop_ycck_jpeg_is_converted_to_srgb_as_sharp_does() {
    // Pillow's pil_sample_cmyk.jpg: YCCK (Adobe transform 2), inverted samples, no profile, so
    // libvips' built-in CMYK profile converts it, as sharp does.
    let (difference, img) = against_reference("pil_sample_cmyk.jpg", "format=png", 1, (100, 100));
    // sharp's pixels to the bit, the rich black background (0, 0, 23) included.
    assert_eq!(difference, (0.0, 0));
    // The red lettering stays red: (R much above G and B) somewhere, not a grey or cyan cast.
    assert!(
        img.pixels()
            .any(|p| p.0[0] > 180 && p.0[1] < 80 && p.0[2] < 80)
    );
}

#[test]
fn grayscale_of_a_photo_with_saturated_reds_is_libvips_b_w() {
    // sharp's grayscale() of the cropped kimono (bright reds, where luma on gamma-encoded
    // values is far darker than libvips' luminance).
    let ((mean, largest), img) = against(
        "kimono.crop.avif",
        "grayscale=true&format=png",
        "kimono.crop.avif.grayscale.blocks5.png",
        5,
        (385, 330),
    );
    // Measured: a mean of 0.04, 1 at most.
    assert!(mean < 0.2 && largest <= 2, "{mean} mean, {largest} largest");
    assert!(img.pixels().all(|p| p.0[0] == p.0[1] && p.0[1] == p.0[2]));
}

#[test]
fn a_monochrome_avif_in_limited_range_is_expanded_as_libavif_does() {
    // Link-U's fox, monochrome AV1 in limited range: libheif (1.15 here, 1.20 in sharp) copies
    // the luma as it is (mean 63.3, black at 12); libavif expands it (mean 54.8).
    let ((mean, largest), img) = against_reference(
        "fox.profile0.8bpc.yuv420.monochrome.avif",
        "format=png",
        8,
        (1204, 800),
    );
    // Measured: a mean of 0.2, 1 at most (libheif narrows to 8 bits, avifdec from 16).
    assert!(mean < 0.5 && largest <= 2, "{mean} mean, {largest} largest");
    let grey: Vec<u8> = img.pixels().map(|p| p.0[0]).collect();
    let average = grey.iter().map(|&v| f64::from(v)).sum::<f64>() / grey.len() as f64;
    assert!((average - 54.8).abs() < 0.5, "mean grey {average}");
    assert_eq!(grey.iter().min(), Some(&0), "black is 0, not 16");
}

#[test]
fn a_tiff_source_is_read_as_libtiff_reads_it() {
    // Pillow's hopper_lzw.tif: RGB, LZW-compressed strips.
    let (difference, _) = against_reference("hopper_lzw.tif", "format=png", 2, (128, 128));
    assert_eq!(difference, (0.0, 0), "libtiff's pixels");
    let info = probe(&fixture("hopper_lzw.tif"), u64::MAX).unwrap();
    assert_eq!(info.format.mime(), "image/tiff");
    // And through a resize and another output format.
    let img = ours("hopper_lzw.tif", "width=50&format=webp");
    assert_eq!(img.dimensions(), (50, 50));
}

#[test]
fn a_cmyk_tiff_is_converted_through_the_cmyk_profile_as_a_cmyk_jpeg_is() {
    // Pillow's tiff_strip_cmyk_jpeg.tif holds the picture of pil_sample_cmyk.jpg as 8-bit CMYK
    // in JPEG-compressed strips, without a profile: it must come out as sharp converts the JPEG
    // (libvips' built-in CMYK profile, perceptual), not with the inks subtracted from white, as
    // the `image` crate converts it, which moved its colours by tens of levels.
    let ((mean, largest), _) = against(
        "tiff_strip_cmyk_jpeg.tif",
        "format=png",
        "pil_sample_cmyk.jpg.blocks1.png",
        1,
        (100, 100),
    );
    // Measured: a mean of 0.02, 5 at most (the two files' JPEG coding differs).
    assert!(mean < 0.2 && largest <= 8, "{mean} mean, {largest} largest");
}

#[test]
fn a_tiff_with_premultiplied_alpha_is_divided_back_as_libvips_does() {
    // Pillow's tiff_16bit_RGBa.tiff: 16-bit RGBA whose ExtraSamples tag says the alpha is
    // associated (the colours premultiplied by it); libvips divides it out on load, and the
    // `image` crate hands the stored samples over as they are.
    let img = ours("tiff_16bit_RGBa.tiff", "format=png");
    let reference = decode_to_rgba(&fixture("tiff_16bit_RGBa_libvips.png"), u64::MAX).unwrap();
    let (mean, largest) = difference(&img, &reference);
    // Measured: a mean of 0.2, 1 at most; left premultiplied, a pixel of alpha 16 showed
    // (5, 3, 3) for libvips' (82, 53, 39), a mean of 86 off in red.
    assert!(mean < 0.5 && largest <= 2, "{mean} mean, {largest} largest");
}

#[test]
fn an_svg_source_is_drawn_at_libvips_size_and_close_to_librsvg() {
    // Link-U's plum blossom (Inkscape, 1000 mm square): 2835 px at libvips' 72 dpi.
    let ((mean, largest), img) =
        against_reference("plum-blossom.svg", "format=png", 15, (2835, 2835));
    // resvg and librsvg antialias edges differently; 15 px blocks average that out.
    // Measured: a mean of 0.02, 14 at most.
    assert!(
        mean < 0.5 && largest <= 24,
        "{mean} mean, {largest} largest"
    );
    assert!(
        img.pixels().any(|p| p.0[3] == 0),
        "the background stays transparent"
    );
    // A small output is drawn small (not drawn at 2835 px and shrunk), with the same picture.
    let small = ours("plum-blossom.svg", "width=189&format=png");
    assert_eq!(small.dimensions(), (189, 189));
    let reference = decode_to_rgba(&fixture("plum-blossom.svg.blocks15.png"), u64::MAX).unwrap();
    let (mean, _) = difference(&small, &reference);
    assert!(mean < 3.0, "small drawing: {mean} mean difference");
}

/// The refusal of `bytes`, which must be an error.
fn refusal(bytes: &[u8]) -> PipelineError {
    let limits = Limits::default();
    let spec = TransformSpec::from_query([("width", "20")], &limits).unwrap();
    let by_probe = probe(bytes, limits.max_source_pixels).err();
    let by_transform = transform(bytes, &spec, spec.output_format(""), None, &limits).err();
    assert_eq!(by_probe, by_transform, "probe and transform refuse alike");
    by_transform.expect("refused")
}

#[test]
fn a_jpeg_whose_header_ends_before_its_frame_is_refused_in_plain_words() {
    // sharp's corrupt-header.jpg: an EXIF segment longer than the file, so the markers end
    // before any frame header.
    let e = refusal(&fixture("corrupt-header.jpg"));
    let message = e.to_string();
    assert!(matches!(e, PipelineError::Undecodable(_)), "{message}");
    assert!(
        message.contains("JPEG header") && message.contains("SOF"),
        "{message}"
    );
    assert!(!message.contains("overflowed"), "{message}");
}

#[test]
fn heif_coded_with_a_codec_we_lack_is_refused_naming_the_codec() {
    // libheif's own one-per-codec samples (32x32): libheif 1.15 has no decoder for these and
    // says "Non-existing item ID referenced: 'pitm' box".
    for (file, coding) in [
        ("avc32.heif", "H.264/AVC"),
        ("jpeg32.heif", "JPEG"),
        ("unci32.heif", "uncompressed"),
    ] {
        let e = refusal(&fixture(file));
        let message = e.to_string();
        assert!(
            matches!(e, PipelineError::Unsupported(_)),
            "{file}: {message}"
        );
        assert!(message.contains(coding), "{file}: {message}");
        assert!(!message.contains("pitm"), "{file}: {message}");
    }
}

#[test]
fn tiff_compressed_with_a_method_the_tiff_crate_lacks_is_read_through_libtiff() {
    // Pillow's hopper_webp.tif: a TIFF whose strips are WebP-compressed, which the `tiff`
    // crate does not read (it was a 415 before libtiff): now as libvips reads it, for every
    // request.
    let bytes = fixture("hopper_webp.tif");
    let info = probe(&bytes, u64::MAX).unwrap();
    assert_eq!((info.width, info.height), (128, 128), "the header reads");
    let ((mean, largest), _) = against_reference("hopper_webp.tif", "format=png", 2, (128, 128));
    assert!(mean < 0.5 && largest <= 2, "{mean} mean, {largest} largest");
    let limits = Limits::default();
    for query in ["width=20", "trim=true", "width=20&format=blurhash"] {
        let pairs = query.split('&').filter_map(|kv| kv.split_once('='));
        let spec = TransformSpec::from_query(pairs, &limits).unwrap();
        transform(&bytes, &spec, spec.output_format(""), None, &limits)
            .unwrap_or_else(|e| panic!("{query}: {e}"));
    }
}

#[test]
fn compact_heif_and_avif_are_refused_as_compact_not_as_non_images() {
    // libheif's mini-box samples (ISO/IEC 23008-12:2025 low-overhead format), which libheif
    // 1.15 cannot read.
    for (file, mime) in [
        ("avif32-mini.heif", "image/avif"),
        ("hevc32-mini.heif", "image/heic"),
    ] {
        let bytes = fixture(file);
        assert_eq!(
            image_pipeline::sniff(&bytes).map(|f| f.mime()),
            Some(mime),
            "{file}"
        );
        let e = refusal(&bytes);
        let message = e.to_string();
        assert!(
            matches!(e, PipelineError::Unsupported(_)),
            "{file}: {message}"
        );
        assert!(
            message.contains("compact") && message.contains("mini"),
            "{file}: {message}"
        );
    }
}

/// Draws `svg` (full size, PNG out) or returns the refusal.
fn draw(svg: &str) -> Result<RgbaImage, PipelineError> {
    let limits = Limits::default();
    let spec = TransformSpec::from_query([("format", "png")], &limits).unwrap();
    let out = transform(svg.as_bytes(), &spec, spec.output_format(""), None, &limits)?;
    Ok(decode_to_rgba(&out.bytes, u64::MAX).unwrap())
}

const SVG_OPEN: &str = r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="40" height="30">"#;

#[test]
fn an_svg_reads_no_file_and_no_url() {
    // A photo that exists on this machine, by absolute path and as a file: URL, and a URL: none
    // is read, so the drawing stays transparent where they would be.
    let lake = format!("{}/tests/fixtures/lake.jpg", env!("CARGO_MANIFEST_DIR"));
    for href in [
        lake.clone(),
        format!("file://{lake}"),
        "http://127.0.0.1:9/a.png".into(),
    ] {
        let svg = format!(
            r#"{SVG_OPEN}<image href="{href}" xlink:href="{href}" width="40" height="30"/></svg>"#
        );
        let img = draw(&svg).unwrap();
        assert_eq!(img.dimensions(), (40, 30));
        assert!(img.pixels().all(|p| p.0[3] == 0), "{href} was drawn");
    }
    // An external entity is not loaded either: refused or left out, never its content.
    let svg = format!(
        r#"<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file://{lake}">]>{SVG_OPEN}<rect width="40" height="30" fill="&x;"/></svg>"#
    );
    if let Ok(img) = draw(&svg) {
        assert!(img.pixels().all(|p| p.0[3] == 0));
    }
}

#[test]
fn an_svg_embeds_small_raster_images_but_not_bombs() {
    use image_pipeline::samples;
    let data_url = |bytes: &[u8]| {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        format!("data:image/png;base64,{encoded}")
    };
    let red = samples::png(&RgbaImage::from_pixel(
        4,
        4,
        image_pipeline::image::Rgba([255, 0, 0, 255]),
    ));
    let svg = format!(
        r#"{SVG_OPEN}<image href="{}" width="40" height="30" preserveAspectRatio="none"/></svg>"#,
        data_url(&red)
    );
    let img = draw(&svg).unwrap();
    assert!(
        img.pixels().all(|p| p.0 == [255, 0, 0, 255]),
        "the embedded PNG is drawn"
    );
    // 3.6 gigapixels declared in a 60 KB PNG: left out from its header, never decoded.
    let bomb = samples::png_bomb(60_000, 60_000);
    let svg = format!(
        r#"{SVG_OPEN}<image href="{}" width="40" height="30"/></svg>"#,
        data_url(&bomb)
    );
    let img = draw(&svg).unwrap();
    assert!(img.pixels().all(|p| p.0[3] == 0), "the bomb is not drawn");
}

#[test]
fn an_svg_over_the_limits_is_refused_before_it_is_drawn() {
    // A declared size above MAX_SOURCE_PIXELS: 422 too many pixels, from the parse alone.
    let huge = r#"<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"><rect width="10" height="10"/></svg>"#;
    assert!(matches!(
        draw(huge),
        Err(PipelineError::TooManyPixels { .. })
    ));
    // Entities that expand to millions of elements, and markup over 10 MiB: 422.
    let mut laughs = String::from(
        r#"<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "<rect width='1' height='1'/><rect width='1' height='1'/>">"#,
    );
    for (name, previous) in ["b", "c", "d", "e", "f", "g", "h", "i", "j"]
        .iter()
        .zip(["a", "b", "c", "d", "e", "f", "g", "h", "i"])
    {
        let refs = format!("&{previous};").repeat(10);
        laughs.push_str(&format!(r#"<!ENTITY {name} "{refs}">"#));
    }
    laughs
        .push_str(r#"]><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">&j;</svg>"#);
    assert!(
        matches!(draw(&laughs), Err(PipelineError::Undecodable(_))),
        "entity expansion"
    );
    // Few nodes but long text: 5 KB named 200 times by one entity, named 100 times in the body
    // (100 MB from 12 KB), which the parser's own limits let through.
    let long = format!(
        r#"<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "{}"><!ENTITY b "{}">]><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><desc>{}</desc></svg>"#,
        "x".repeat(5000),
        "&a;".repeat(200),
        "&b;".repeat(100)
    );
    assert!(
        matches!(draw(&long), Err(PipelineError::Undecodable(m)) if m.contains("entity references expand")),
        "long expansion"
    );
    // Illustrator's namespace entities are fine.
    let illustrator = r##"<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd" [<!ENTITY ns_svg "http://www.w3.org/2000/svg"><!ENTITY ns_xlink "http://www.w3.org/1999/xlink">]><svg xmlns="&ns_svg;" xmlns:xlink="&ns_xlink;" width="8" height="8"><rect width="8" height="8" fill="#00f"/></svg>"##;
    let img = draw(illustrator).unwrap();
    assert!(img.pixels().all(|p| p.0 == [0, 0, 255, 255]));
    let big = format!(
        r#"{SVG_OPEN}{}</svg>"#,
        "<rect width='1' height='1'/>".repeat(400_000)
    );
    assert!(big.len() > 10 * 1024 * 1024);
    assert!(
        matches!(draw(&big), Err(PipelineError::Undecodable(_))),
        "markup size"
    );
}

/// An earlier published copy of Link-U's rotated kimono (AOMediaCodec/av1-avif at 9876903,
/// before its spec fix 30a2f4c) lists `irot` before `ispe`, as libavif wrote files then: libheif
/// 1.15 ignored the turn and the picture came out on its side; libvips shows it upright. The
/// pixels are those of the fixed file, so its libvips reference holds for both.
#[test]
fn an_avif_listing_its_turn_before_ispe_is_shown_upright() {
    let info = probe(&fixture("kimono.rotate90.ispe-last.avif"), u64::MAX).unwrap();
    assert_eq!((info.width, info.height), (722, 1024));
    let ((mean, largest), _) = against(
        "kimono.rotate90.ispe-last.avif",
        "format=png",
        "kimono.rotate90.avif.blocks8.png",
        8,
        (722, 1024),
    );
    assert!(mean < 0.5 && largest <= 6, "{mean} mean, {largest} largest");
    assert_eq!(
        ours("kimono.rotate90.ispe-last.avif", "width=200&format=png").dimensions(),
        (200, 284)
    );
}

/// TIFF codings the tiff crate refuses (it answered 415) are read through libtiff, as libvips
/// reads them: libtiff's own test pictures, YCbCr with 2x2 subsampled chroma (LZW) and CCITT
/// Group 3 faxes, 1-D (g3test, written by fax2tiff) and 2-D (fax2d), against sharp's output.
#[test]
fn tiff_codings_the_tiff_crate_refuses_are_read_through_libtiff() {
    for (file, k, size, worst) in [
        ("ycbcr-cat.tif", 1, (250, 325), 3),
        ("fax2d.tif", 8, (1728, 1082), 1),
        ("g3test.tif", 8, (1728, 1103), 1),
    ] {
        let info = probe(&fixture(file), u64::MAX).unwrap();
        assert_eq!((info.width, info.height), size, "{file}: header");
        let ((mean, largest), img) = against_reference(file, "format=png", k, size);
        assert!(
            mean < 0.5 && largest <= worst,
            "{file}: {mean} mean, {largest} largest"
        );
        let flipped = block_means(&imageops::flip_vertical(&img), k);
        let reference =
            decode_to_rgba(&fixture(&format!("{file}.blocks{k}.png")), u64::MAX).unwrap();
        assert!(
            difference(&flipped, &reference).0 > 2.0,
            "{file}: the flip is as close"
        );
    }
    // A fax whose header claims 60000 x 60000 pixels is refused from libtiff's reading of the
    // header, before anything is allocated for it.
    let mut huge = fixture("fax2d.tif");
    assert_eq!(&huge[..2], b"MM", "fax2d.tif is big-endian");
    let u16_at = |b: &[u8], at: usize| usize::from(u16::from_be_bytes([b[at], b[at + 1]]));
    let ifd = usize::try_from(u32::from_be_bytes(huge[4..8].try_into().unwrap())).unwrap();
    for entry in (0..u16_at(&huge, ifd)).map(|i| ifd + 2 + 12 * i) {
        if matches!(u16_at(&huge, entry), 256 | 257) {
            huge[entry + 8..entry + 10].copy_from_slice(&60_000u16.to_be_bytes());
        }
    }
    let limits = Limits::default();
    let spec = TransformSpec::from_query([("width", "100")], &limits).unwrap();
    let e = transform(&huge, &spec, spec.output_format(""), None, &limits).unwrap_err();
    assert!(matches!(e, PipelineError::TooManyPixels { .. }), "{e:?}");
    // A cut file is a 422 naming libtiff's complaint, not a panic or a 415.
    let fax = fixture("fax2d.tif");
    for end in [100, 4000, fax.len() / 2] {
        let limits = Limits::default();
        let spec = TransformSpec::from_query([("format", "png")], &limits).unwrap();
        match transform(&fax[..end], &spec, spec.output_format(""), None, &limits) {
            Ok(_) | Err(PipelineError::Undecodable(_)) => {}
            Err(e) => panic!("cut at {end}: {e:?}"),
        }
    }
}
