//! Every transformation on real photographs: dimensions, format magic and pixel facts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use image_pipeline::image::{Rgba, RgbaImage};
use image_pipeline::samples::fixture;
use image_pipeline::{
    Limits, OutputFormat, PipelineError, TransformSpec, decode_to_rgba, samples, transform, verify,
};
use pretty_assertions::assert_eq;

fn spec(q: &str) -> TransformSpec {
    spec_with(q, &Limits::default())
}

fn spec_with(q: &str, limits: &Limits) -> TransformSpec {
    let pairs: Vec<(&str, &str)> = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    TransformSpec::from_query(pairs, limits).unwrap()
}

fn run(src: &[u8], q: &str) -> image_pipeline::Output {
    let s = spec(q);
    transform(src, &s, s.output_format(""), None, &Limits::default()).unwrap()
}

fn pixels(out: &image_pipeline::Output) -> RgbaImage {
    decode_to_rgba(&out.bytes, u64::MAX).unwrap()
}

fn magic(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "jpeg"
    } else if bytes.starts_with(b"\x89PNG") {
        "png"
    } else if bytes.len() > 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        "webp"
    } else if bytes.len() > 12 && &bytes[4..12] == b"ftypavif" {
        "avif"
    } else {
        "unknown"
    }
}

/// The lake photo as PNG with a pure red 64x64 square in its top-left corner.
fn marked_png() -> Vec<u8> {
    let mut img = decode_to_rgba(&fixture("large_image.jpg"), u64::MAX).unwrap();
    for y in 0..64 {
        for x in 0..64 {
            img.put_pixel(x, y, Rgba([255, 0, 0, 255]));
        }
    }
    samples::png(&img)
}

fn is_red(p: &Rgba<u8>) -> bool {
    p.0[0] > 200 && p.0[1] < 60 && p.0[2] < 60
}

#[test]
fn width_alone_keeps_the_aspect_ratio_in_every_format() {
    let lake = fixture("lake.jpg");
    for (f, m) in [("webp", "webp"), ("jpeg", "jpeg"), ("png", "png")] {
        let out = run(&lake, &format!("width=800&format={f}"));
        assert_eq!((out.width, out.height, magic(&out.bytes)), (800, 450, m));
        let px = pixels(&out);
        assert_eq!(px.dimensions(), (800, 450));
    }
}

#[test]
fn no_format_means_webp_at_quality_80() {
    let out = run(&fixture("lake.jpg"), "height=200");
    assert_eq!(
        (magic(&out.bytes), out.width, out.height),
        ("webp", 356, 200)
    );
}

#[test]
fn every_fit_mode_gives_its_box() {
    let lake = fixture("lake.jpg");
    for (fit, expect) in [
        ("inside", (400, 225)),
        ("cover", (400, 400)),
        ("contain", (400, 400)),
        ("fill", (400, 400)),
        ("outside", (711, 400)),
    ] {
        let out = run(&lake, &format!("width=400&height=400&fit={fit}&format=png"));
        assert_eq!((out.width, out.height), expect, "fit={fit}");
    }
}

#[test]
fn contain_pads_with_the_background() {
    let out = run(
        &fixture("lake.jpg"),
        "width=400&height=400&fit=contain&background=ff0000&format=png",
    );
    let px = pixels(&out);
    assert!(is_red(px.get_pixel(200, 5)), "{:?}", px.get_pixel(200, 5));
    assert!(!is_red(px.get_pixel(200, 200)));
}

#[test]
fn cover_positions_pick_different_windows() {
    let src = marked_png();
    let west = pixels(&run(
        &src,
        "width=100&height=100&fit=cover&position=west&format=png",
    ));
    let east = pixels(&run(
        &src,
        "width=100&height=100&fit=cover&position=east&format=png",
    ));
    assert!(is_red(west.get_pixel(1, 1)));
    assert!(!is_red(east.get_pixel(1, 1)));
    for p in ["north", "southeast", "entropy", "attention"] {
        let out = run(
            &src,
            &format!("width=100&height=100&fit=cover&position={p}"),
        );
        assert_eq!((out.width, out.height), (100, 100), "{p}");
    }
}

#[test]
fn crop_takes_the_rectangle_before_the_resize() {
    let src = marked_png();
    let out = run(
        &src,
        "cropLeft=0&cropTop=0&cropWidth=64&cropHeight=64&format=png",
    );
    assert_eq!((out.width, out.height), (64, 64));
    assert!(pixels(&out).pixels().all(is_red));
    let out = run(
        &fixture("lake.jpg"),
        "cropLeft=1000&cropTop=500&cropWidth=2000&cropHeight=1000&width=500",
    );
    assert_eq!((out.width, out.height), (500, 250));
}

#[test]
fn crop_outside_the_image_is_a_bad_parameter() {
    // lake.jpg is 4000x2250; the error names the edge that is out.
    for (q, named) in [
        (
            "cropLeft=4000&cropTop=0&cropWidth=10&cropHeight=10",
            "cropLeft",
        ),
        (
            "cropLeft=3995&cropTop=0&cropWidth=10&cropHeight=10",
            "cropWidth",
        ),
        (
            "cropLeft=0&cropTop=2250&cropWidth=10&cropHeight=10",
            "cropTop",
        ),
        (
            "cropLeft=10&cropTop=2240&cropWidth=10&cropHeight=20",
            "cropHeight",
        ),
    ] {
        let err = transform(
            &fixture("lake.jpg"),
            &spec(q),
            OutputFormat::Png,
            None,
            &Limits::default(),
        );
        assert!(
            matches!(&err, Err(PipelineError::BadParam { name, .. }) if name == named),
            "{q}: {err:?}"
        );
    }
}

/// MAX_OUTPUT_DIMENSION holds for the picture that is sent, after padding and rotation; a
/// size that comes from the source alone is shrunk to fit instead of refused.
#[test]
fn the_output_limit_holds_after_rotation_and_shrinks_sizes_nobody_asked_for() {
    let limits = Limits {
        max_output_dimension: 200,
        ..Limits::default()
    };
    let wide = samples::png(&RgbaImage::from_pixel(400, 100, Rgba([10, 200, 30, 255])));
    let attempt = |q: &str| {
        transform(
            &wide,
            &spec_with(q, &limits),
            OutputFormat::Png,
            None,
            &limits,
        )
        .map(|out| pixels(&out).dimensions())
    };
    assert_eq!(attempt("").unwrap(), (200, 50));
    assert_eq!(attempt("grayscale").unwrap(), (200, 50));
    let (w, h) = attempt("rotate=45").unwrap();
    assert!(w <= 200 && h <= 200 && w > 190, "{w}x{h}");
    assert_eq!(attempt("rotate=90").unwrap(), (50, 200));
    assert_eq!(
        attempt("width=200&height=200&fit=contain").unwrap(),
        (200, 200)
    );
    for (q, named) in [
        ("width=200&height=200&fit=fill&enlarge&rotate=45", "rotate"),
        ("width=200&height=200&fit=contain&rotate=30", "rotate"),
        ("height=90&enlarge", "height"),
        ("width=190&height=190&fit=outside", "width"),
    ] {
        let err = attempt(q);
        assert!(
            matches!(&err, Err(PipelineError::BadParam { name, .. }) if name == named),
            "{q}: {err:?}"
        );
    }
}

/// The caps for unsigned URLs: an enlargement over `max_enlarge` is refused naming `enlarge`,
/// an output grown past `max_grown_output_pixels` naming what grew it, both from the header
/// (a source whose pixels are cut off gets the refusal, not a decode error); outputs no larger
/// than their source region are never held to the area cap, and `None` is today's full range.
#[test]
fn enlargement_and_grown_outputs_are_capped_before_decoding() {
    let capped = Limits {
        max_enlarge: Some(4.0),
        max_grown_output_pixels: Some(10_000),
        ..Limits::default()
    };
    let tiny = samples::png(&RgbaImage::from_pixel(8, 8, Rgba([200, 30, 30, 255])));
    let attempt = |src: &[u8], q: &str, limits: &Limits| {
        transform(src, &spec_with(q, limits), OutputFormat::Png, None, limits)
            .map(|out| pixels(&out).dimensions())
    };
    let review = "width=8192&height=8192&fit=fill&enlarge=true&blur=100";
    let cut = &tiny[..tiny.len() - 20];
    for (q, named) in [
        (review, "enlarge"),
        ("width=33&enlarge", "enlarge"),
        ("width=8&height=33&fit=fill&enlarge", "enlarge"),
        ("width=40&height=40&fit=outside&enlarge", "enlarge"),
        ("width=101&height=100&fit=contain", "width"),
        ("width=20&height=600&fit=contain", "height"),
        ("width=99&height=99&fit=contain&rotate=30", "rotate"),
    ] {
        for src in [&tiny[..], cut] {
            let err = attempt(src, q, &capped);
            assert!(
                matches!(&err, Err(PipelineError::BadParam { name, .. }) if name == named),
                "{q}: {err:?}"
            );
        }
    }
    let err = attempt(cut, "width=32&enlarge", &capped);
    assert!(matches!(err, Err(PipelineError::Undecodable(_))), "{err:?}");
    assert_eq!(
        attempt(&tiny, "width=32&enlarge", &capped).unwrap(),
        (32, 32)
    );
    assert_eq!(
        attempt(&tiny, "width=100&height=100&fit=contain", &capped).unwrap(),
        (100, 100)
    );
    assert_eq!(
        attempt(&tiny, "width=8192&height=8192&blur=100", &capped).unwrap(),
        (8, 8)
    );
    // A 200x150 source is 30,000 pixels: its own size is fine, its turned box is shrunk to
    // that when nobody asked for a size, and refused when somebody did.
    let photo = samples::png(&RgbaImage::from_pixel(200, 150, Rgba([1, 2, 3, 255])));
    assert_eq!(attempt(&photo, "", &capped).unwrap(), (200, 150));
    let (w, h) = attempt(&photo, "rotate=45", &capped).unwrap();
    assert!(u64::from(w) * u64::from(h) <= 30_000 && w > 160, "{w}x{h}");
    let err = attempt(&photo, "width=200&rotate=45", &capped);
    assert!(
        matches!(&err, Err(PipelineError::BadParam { name, .. }) if name == "rotate"),
        "{err:?}"
    );
    // Without caps (signed URLs) the same requests are served.
    let full = Limits::default();
    assert_eq!(attempt(&tiny, "width=64&enlarge", &full).unwrap(), (64, 64));
    assert_eq!(
        attempt(&tiny, "width=101&height=100&fit=contain", &full).unwrap(),
        (101, 100)
    );
}

#[test]
fn flip_mirrors_left_to_right_and_flop_top_to_bottom() {
    let src = marked_png();
    let flip = pixels(&run(&src, "flip=true&format=png"));
    let (w, h) = flip.dimensions();
    assert!(is_red(flip.get_pixel(w - 2, 1)));
    assert!(!is_red(flip.get_pixel(1, 1)));
    let flop = pixels(&run(&src, "flop=1&format=png"));
    assert!(is_red(flop.get_pixel(1, h - 2)));
    assert!(!is_red(flop.get_pixel(1, 1)));
}

#[test]
fn rotate_90_swaps_the_sides_and_turns_clockwise() {
    let src = marked_png();
    let out = run(&src, "rotate=90&format=png");
    let px = pixels(&out);
    assert_eq!(px.dimensions(), (1512, 2268));
    // Top-left goes to top-right when turning clockwise.
    assert!(is_red(px.get_pixel(1510, 1)));
    for r in ["180", "270", "360"] {
        let out = run(&src, &format!("rotate={r}&format=png"));
        assert_eq!(
            (out.width, out.height),
            if r == "270" {
                (1512, 2268)
            } else {
                (2268, 1512)
            }
        );
    }
}

#[test]
fn rotate_45_fills_the_corners_with_background() {
    let lake = fixture("lake.jpg");
    let png = pixels(&run(&lake, "width=400&rotate=45&format=png"));
    assert_eq!(png.get_pixel(0, 0).0[3], 0, "transparent corner for PNG");
    assert!(png.width() > 400);
    let webp = run(&lake, "width=400&rotate=45&format=webp");
    assert_eq!(webp.format, OutputFormat::Webp);
    assert_eq!(&webp.bytes[8..12], b"WEBP");
    let webp = pixels(&webp);
    assert_eq!(webp.get_pixel(0, 0).0[3], 0, "transparent corner for WebP");
    let centre = webp.get_pixel(webp.width() / 2, webp.height() / 2);
    assert_eq!(centre.0[3], 255, "opaque picture inside");
    let jpeg = pixels(&run(&lake, "width=400&rotate=45&format=jpeg"));
    assert!(
        jpeg.get_pixel(0, 0).0[..3].iter().all(|&c| c > 240),
        "white corner for JPEG"
    );
    let blue = pixels(&run(
        &lake,
        "width=400&rotate=30&background=0000ff&format=png",
    ));
    assert_eq!(blue.get_pixel(0, 0).0, [0, 0, 255, 255]);
}

#[test]
fn grayscale_makes_the_channels_equal() {
    for f in ["png", "jpeg", "webp"] {
        let px = pixels(&run(
            &fixture("lake.jpg"),
            &format!("width=300&grayscale=true&format={f}"),
        ));
        let tolerance = if f == "webp" { 3 } else { 0 };
        assert!(
            px.pixels()
                .all(|p| p.0[0].abs_diff(p.0[1]) <= tolerance
                    && p.0[1].abs_diff(p.0[2]) <= tolerance),
            "{f}"
        );
    }
}

fn mean_abs_gradient(img: &RgbaImage) -> f64 {
    let mut sum = 0u64;
    for y in 0..img.height() {
        for x in 1..img.width() {
            sum += u64::from(img.get_pixel(x, y).0[1].abs_diff(img.get_pixel(x - 1, y).0[1]));
        }
    }
    sum as f64 / f64::from(img.width() * img.height())
}

#[test]
fn blur_softens_and_sharpen_crisps() {
    let lake = fixture("lake.jpg");
    let plain = mean_abs_gradient(&pixels(&run(&lake, "width=400&format=png")));
    let blurred = mean_abs_gradient(&pixels(&run(&lake, "width=400&blur=3&format=png")));
    let sharp = mean_abs_gradient(&pixels(&run(&lake, "width=400&sharpen=true&format=png")));
    assert!(blurred < plain * 0.7, "blur {blurred} vs {plain}");
    assert!(sharp > plain, "sharpen {sharp} vs {plain}");
}

#[test]
fn quality_changes_the_size_monotonically() {
    let lake = fixture("lake.jpg");
    for f in ["jpeg", "webp"] {
        let sizes: Vec<usize> = [10, 40, 70, 95]
            .iter()
            .map(|q| {
                run(&lake, &format!("width=800&format={f}&quality={q}"))
                    .bytes
                    .len()
            })
            .collect();
        assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{f}: {sizes:?}");
    }
}

#[test]
fn progressive_jpeg_has_an_sof2_marker() {
    let out = run(
        &fixture("lake.jpg"),
        "width=300&format=jpeg&progressive=true",
    );
    assert!(out.bytes.windows(2).any(|w| w == [0xFF, 0xC2]));
}

#[test]
fn exif_orientation_6_turns_the_photo_upright() {
    let oriented = samples::with_exif_orientation(&fixture("large_image.jpg"), 6);
    let out = run(&oriented, "format=png");
    assert_eq!((out.width, out.height), (1512, 2268));
    let small = run(&oriented, "width=300");
    assert_eq!((small.width, small.height), (300, 450));
}

#[test]
fn heic_photos_decode_with_their_rotation() {
    let out = run(&fixture("iphone.heic"), "width=300&format=jpeg");
    assert_eq!(
        (out.width, out.height, magic(&out.bytes)),
        (300, 400, "jpeg")
    );
    let out = run(&fixture("window.heic"), "width=800");
    assert_eq!(
        (out.width, out.height, magic(&out.bytes)),
        (800, 600, "webp")
    );
}

/// Display P3 to sRGB by the published matrix (both D65, both with the sRGB curve): the
/// reference the pipeline's colour management is checked against.
fn p3_to_srgb(p: [u8; 3]) -> [f64; 3] {
    let lin = |v: u8| {
        let c = f64::from(v) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let enc = |l: f64| {
        let l = l.clamp(0.0, 1.0);
        255.0
            * if l <= 0.003_130_8 {
                l * 12.92
            } else {
                1.055 * l.powf(1.0 / 2.4) - 0.055
            }
    };
    let [r, g, b] = p.map(lin);
    [
        enc(1.224_940 * r - 0.224_940 * g),
        enc(-0.042_057 * r + 1.042_057 * g),
        enc(-0.019_638 * r - 0.078_636 * g + 1.098_274 * b),
    ]
}

/// A 96x64 picture: red, green and blue bands from left to right; with `transparent_left`, the
/// left half has alpha 0.
fn bands(transparent_left: bool) -> RgbaImage {
    RgbaImage::from_fn(96, 64, |x, _| {
        let alpha = if transparent_left && x < 48 { 0 } else { 255 };
        match x / 32 {
            0 => Rgba([220, 30, 30, alpha]),
            1 => Rgba([30, 200, 30, alpha]),
            _ => Rgba([30, 30, 220, alpha]),
        }
    })
}

fn near(got: [u8; 4], want: [u8; 4], tolerance: u8) -> bool {
    got.iter()
        .zip(want)
        .all(|(&g, w)| g.abs_diff(w) <= tolerance)
}

#[test]
fn heic_channels_come_out_in_rgb_order() {
    let out = pixels(&run(&samples::heic(&bands(false), false), "format=png"));
    assert_eq!(out.dimensions(), (96, 64));
    for (x, want) in [
        (16, [220, 30, 30, 255]),
        (48, [30, 200, 30, 255]),
        (80, [30, 30, 220, 255]),
    ] {
        let got = out.get_pixel(x, 32).0;
        assert!(near(got, want, 12), "x={x}: got {got:?}, want {want:?}");
    }
    // Shrunk on decode (4x here) as well.
    let small = pixels(&run(
        &samples::heic(&bands(false), false),
        "width=24&format=png",
    ));
    assert!(near(small.get_pixel(4, 8).0, [220, 30, 30, 255], 16));
    assert!(near(small.get_pixel(20, 8).0, [30, 30, 220, 255], 16));
}

#[test]
fn heic_alpha_survives_to_png_and_webp() {
    let heic = samples::heic(&bands(true), true);
    for q in ["format=png", "format=webp&quality=100"] {
        let out = pixels(&run(&heic, q));
        assert_eq!(out.dimensions(), (96, 64), "{q}");
        let left = out.get_pixel(10, 32).0;
        let right = out.get_pixel(80, 32).0;
        assert!(
            left[3] <= 8,
            "{q}: left half should be transparent, got {left:?}"
        );
        assert!(
            near(right, [30, 30, 220, 255], 12),
            "{q}: right band should be opaque blue, got {right:?}"
        );
    }
}

#[test]
fn format_auto_keeps_transparency_for_clients_without_webp() {
    let auto = |img: &RgbaImage, accept: &str| {
        let s = spec("format=auto&rotate=90");
        transform(
            &samples::png(img),
            &s,
            s.output_format(accept),
            None,
            &Limits::default(),
        )
        .unwrap()
    };
    // Transparent pixels and only JPEG accepted: PNG, with the alpha kept.
    let out = auto(&bands(true), "image/png,*/*");
    assert_eq!((magic(&out.bytes), out.format), ("png", OutputFormat::Png));
    let px = pixels(&out);
    assert_eq!(px.dimensions(), (64, 96));
    assert_eq!(
        px.get_pixel(32, 10).0[3],
        0,
        "the top (was left) stays transparent"
    );
    // An alpha channel with no transparent pixel is still a photo: JPEG.
    assert_eq!(magic(&auto(&bands(false), "*/*").bytes), "jpeg");
    // WebP keeps the alpha itself.
    assert_eq!(magic(&auto(&bands(true), "image/webp").bytes), "webp");
    // An explicit format=jpeg is obeyed: flattened onto white.
    let s = spec("format=jpeg");
    let jpeg = transform(
        &samples::png(&bands(true)),
        &s,
        s.output_format(""),
        None,
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(magic(&jpeg.bytes), "jpeg");
    assert!(near(
        pixels(&jpeg).get_pixel(10, 32).0,
        [255, 255, 255, 255],
        4
    ));
}

#[test]
fn monochrome_heic_decodes_grey() {
    let grey = image_pipeline::image::GrayImage::from_fn(96, 64, |x, _| {
        image_pipeline::image::Luma([u8::try_from(x * 2 + 40).unwrap()])
    });
    let out = pixels(&run(&samples::heic_grey(&grey), "format=png"));
    assert_eq!(out.dimensions(), (96, 64));
    for x in [8u32, 48, 88] {
        let [r, g, b, a] = out.get_pixel(x, 32).0;
        let want = u8::try_from(x * 2 + 40).unwrap();
        assert!(r == g && g == b && a == 255, "x={x}: {:?}", [r, g, b, a]);
        assert!(r.abs_diff(want) <= 6, "x={x}: got {r}, want {want}");
    }
}

#[test]
fn ten_bit_heic_is_reduced_to_8_bits_with_its_colours() {
    // Cameras (Canon, Sony) and some phones write 10-bit HEIF: libheif reduces it for us.
    use libheif_rs::{Channel, ColorSpace, RgbChroma};
    let (w, h) = (96u32, 64u32);
    let mut image = libheif_rs::Image::new(w, h, ColorSpace::Rgb(RgbChroma::C444)).unwrap();
    for c in [Channel::R, Channel::G, Channel::B] {
        image.create_plane(c, w, h, 10).unwrap();
    }
    let planes = image.planes_mut();
    let bands = [planes.r.unwrap(), planes.g.unwrap(), planes.b.unwrap()];
    for (i, p) in bands.into_iter().enumerate() {
        for y in 0..h as usize {
            for x in 0..w as usize {
                // 880/1023 and 120/1023 of full scale: 219 and 30 in 8 bits.
                let v: u16 = if x / 32 == i { 880 } else { 120 };
                p.data[y * p.stride + x * 2..][..2].copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    let heic = samples::encode_heic(&image);
    let bits = libheif_rs::HeifContext::read_from_bytes(&heic)
        .unwrap()
        .primary_image_handle()
        .unwrap()
        .luma_bits_per_pixel();
    assert_eq!(bits, 10);
    let out = pixels(&run(&heic, "format=png"));
    for (x, want) in [
        (16, [219, 30, 30, 255]),
        (48, [30, 219, 30, 255]),
        (80, [30, 30, 219, 255]),
    ] {
        let got = out.get_pixel(x, 32).0;
        assert!(near(got, want, 12), "x={x}: got {got:?}, want {want:?}");
    }
}

#[test]
fn an_embedded_display_p3_profile_is_converted_to_srgb() {
    // A real photo with a 300x300 patch of P3 (180, 80, 60), tagged with the Display P3 profile
    // of a real iPhone HEIC. In sRGB that colour is (194, 72, 52): redder, as sharp shows it.
    let p3 = samples::heif_icc_profile(&fixture("window.heic")).unwrap();
    let mut img = decode_to_rgba(&fixture("large_image.jpg"), u64::MAX).unwrap();
    for y in 600..900 {
        for x in 1000..1300 {
            img.put_pixel(x, y, Rgba([180, 80, 60, 255]));
        }
    }
    let rgb = image_pipeline::image::DynamicImage::ImageRgba8(img.clone()).to_rgb8();
    let plain = samples::jpeg(&rgb, 95);
    let expected = p3_to_srgb([180, 80, 60]);
    assert!((expected[0] - 194.0).abs() < 1.0, "{expected:?}");
    for (name, src, want) in [
        ("jpeg, no profile", plain.clone(), [180.0, 80.0, 60.0]),
        (
            "jpeg + P3",
            samples::with_icc_profile(&plain, &p3),
            expected,
        ),
        ("png + P3", samples::png_with_icc(&img, &p3), expected),
    ] {
        // 800 px wide: the patch is (353..459, 212..318); its centre is 406, 265.
        let out = pixels(&run(&src, "width=800&format=png"));
        let got = out.get_pixel(406, 265).0;
        for c in 0..3 {
            assert!(
                (f64::from(got[c]) - want[c]).abs() <= 3.0,
                "{name}: got {got:?}, want {want:?}"
            );
        }
    }
}

#[test]
fn heic_display_p3_pixels_come_out_in_srgb() {
    let heic = fixture("window.heic");
    let ours = decode_to_rgba(&heic, u64::MAX).unwrap();
    let lib = samples::libheif();
    let ctx = libheif_rs::HeifContext::read_from_bytes(&heic).unwrap();
    let handle = ctx.primary_image_handle().unwrap();
    let raw = lib
        .decode(
            &handle,
            libheif_rs::ColorSpace::Rgb(libheif_rs::RgbChroma::Rgb),
            None,
        )
        .unwrap();
    let plane = raw.planes().interleaved.unwrap();
    let (mut to_ref, mut to_raw, mut n) = (0.0, 0.0, 0.0);
    for y in (0..plane.height).step_by(37) {
        for x in (0..plane.width).step_by(41) {
            let i = y as usize * plane.stride + x as usize * 3;
            let p = [plane.data[i], plane.data[i + 1], plane.data[i + 2]];
            let want = p3_to_srgb(p);
            // Only the pixels the conversion visibly moves (the saturated ones) tell.
            if (0..3).all(|c| (want[c] - f64::from(p[c])).abs() < 3.0) {
                continue;
            }
            let got = ours.get_pixel(x, y).0;
            for c in 0..3 {
                to_ref += (f64::from(got[c]) - want[c]).abs();
                to_raw += f64::from(got[c].abs_diff(p[c]));
                n += 1.0;
            }
        }
    }
    // Within rounding of the reference conversion, and visibly away from the raw P3 values.
    assert!(n > 300.0, "only {n} samples");
    assert!(
        to_ref / n < 1.0,
        "mean distance to the sRGB reference {}",
        to_ref / n
    );
    assert!(
        to_raw / n > 2.0,
        "mean distance to the raw P3 values {}",
        to_raw / n
    );
}

#[test]
fn a_large_png_is_shrunk_while_decoding_without_losing_quality() {
    // 4000x2250 PNG to 800 px: rows are box-averaged by 2 as they are decoded (libvips' recipe),
    // then Lanczos3; the result matches a Lanczos3 resize of the whole image.
    let full = decode_to_rgba(&fixture("lake.jpg"), u64::MAX).unwrap();
    let png = samples::png(&full);
    let out = pixels(&run(&png, "width=800&format=png"));
    let reference = image_pipeline::image::imageops::resize(
        &full,
        800,
        450,
        image_pipeline::image::imageops::FilterType::Lanczos3,
    );
    assert_eq!(out.dimensions(), reference.dimensions());
    let diff: u64 = out
        .as_raw()
        .iter()
        .zip(reference.as_raw())
        .map(|(a, b)| u64::from(a.abs_diff(*b)))
        .sum();
    let mean = diff as f64 / out.as_raw().len() as f64;
    assert!(mean < 1.0, "mean difference {mean}");
    // A PNG cut in the middle of its rows is an error, not a half image.
    let err = transform(
        &png[..png.len() / 2],
        &spec("width=800"),
        OutputFormat::Webp,
        None,
        &Limits::default(),
    );
    assert!(matches!(err, Err(PipelineError::Undecodable(_))), "{err:?}");
}

#[test]
fn png_gif_and_webp_sources_decode() {
    let img = decode_to_rgba(&fixture("large_image.jpg"), u64::MAX).unwrap();
    let small = image_pipeline::image::imageops::thumbnail(&img, 600, 400);
    for src in [
        samples::png(&small),
        samples::gif(&small),
        samples::webp(&small),
    ] {
        let out = run(&src, "width=300&format=jpeg");
        assert_eq!((out.width, out.height), (300, 200));
    }
}

#[test]
fn avif_is_produced_when_negotiated() {
    if !cfg!(feature = "avif") {
        // Built without AVIF output: nothing to test, but CI builds with it (the default).
        assert!(
            std::env::var_os("CI").is_none_or(|v| v.is_empty() || v == "0" || v == "false"),
            "under CI the test would be skipped: build with the default `avif` feature"
        );
        return;
    }
    let s = spec("width=200&format=auto");
    let f = s.output_format("image/avif,image/webp");
    let out = transform(&fixture("lake.jpg"), &s, f, None, &Limits::default()).unwrap();
    assert_eq!(magic(&out.bytes), "avif");
    assert_eq!(out.format, OutputFormat::Avif);
    assert_eq!(OutputFormat::of(&out.bytes), Some(OutputFormat::Avif));
}

#[test]
fn avif_outputs_over_the_pixel_cap_go_out_as_webp() {
    let lake = fixture("lake.jpg");
    let limits = Limits {
        avif_max_pixels: 320 * 180,
        ..Limits::default()
    };
    let run_avif = |q: &str, limits: &Limits| {
        let s = spec_with(q, limits);
        transform(&lake, &s, OutputFormat::Avif, None, limits).unwrap()
    };
    // lake.jpg is 16:9, so 320 wide is exactly the cap and 321 is over it.
    let at_cap = run_avif("width=320&format=auto", &limits);
    assert_eq!((at_cap.width, at_cap.height), (320, 180));
    let over = run_avif("width=321&format=auto", &limits);
    assert_eq!(over.format, OutputFormat::Webp);
    assert_eq!(magic(&over.bytes), "webp");
    assert_eq!(OutputFormat::of(&over.bytes), Some(OutputFormat::Webp));
    // The cap is on the picture sent, after padding: a 320x320 contain box is over it.
    let padded = run_avif("width=320&height=320&fit=contain&format=auto", &limits);
    assert_eq!((padded.format, padded.height), (OutputFormat::Webp, 320));
    let never = Limits {
        avif_max_pixels: 0,
        ..Limits::default()
    };
    assert_eq!(
        run_avif("width=16&format=auto", &never).format,
        OutputFormat::Webp
    );
    if cfg!(feature = "avif") {
        assert_eq!(at_cap.format, OutputFormat::Avif);
        assert_eq!(magic(&at_cap.bytes), "avif");
        // An explicit format=avif is obeyed up to the cap and refused over it, never swapped.
        let explicit = run_avif("width=320&format=avif", &limits);
        assert_eq!(magic(&explicit.bytes), "avif");
        let s = spec_with("width=321&format=avif", &limits);
        match transform(&lake, &s, s.output_format(""), None, &limits) {
            Err(PipelineError::BadParam { name, reason }) => {
                assert_eq!(name, "format");
                assert!(reason.contains("this one is 321x181; ask"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Refused from the plan, before any pixel is decoded: a truncated source gives the
        // same 400, not a 422.
        let cut = &lake[..lake.len() / 3];
        let err = transform(cut, &s, s.output_format(""), None, &limits);
        assert!(
            matches!(&err, Err(PipelineError::BadParam { name, .. }) if name == "format"),
            "{err:?}"
        );
        let off = TransformSpec::from_query([("format", "avif")], &never);
        assert!(
            matches!(&off, Err(PipelineError::BadParam { name, .. }) if name == "format"),
            "{off:?}"
        );
    }
}

#[test]
fn watermark_lands_in_the_chosen_corner() {
    let mark = samples::png(&RgbaImage::from_pixel(40, 40, Rgba([255, 0, 0, 255])));
    let s = spec(
        "width=400&format=png&watermark=logo.png&watermark_opacity=1&watermark_position=northwest",
    );
    let out = transform(
        &fixture("lake.jpg"),
        &s,
        OutputFormat::Png,
        Some(&mark),
        &Limits::default(),
    )
    .unwrap();
    let px = pixels(&out);
    assert!(is_red(px.get_pixel(5, 5)));
    assert!(
        is_red(px.get_pixel(95, 5)),
        "scale 0.25 of 400 px is 100 px"
    );
    assert!(!is_red(px.get_pixel(105, 5)));
}

#[test]
fn bombs_are_refused_from_the_header() {
    let bomb = samples::png_bomb(100_000, 100_000);
    let err = transform(
        &bomb,
        &TransformSpec::default(),
        OutputFormat::Webp,
        None,
        &Limits::default(),
    );
    assert!(
        matches!(err, Err(PipelineError::TooManyPixels { .. })),
        "{err:?}"
    );
    // A 200 MP HEIC in 2.4 MB (about 600 MB decoded): refused with the size its header
    // declares (only the header check names it), so before any pixel is decoded.
    let err = transform(
        &fixture("heic_200mp.heic"),
        &TransformSpec::default(),
        OutputFormat::Webp,
        None,
        &Limits::default(),
    );
    assert_eq!(
        err,
        Err(PipelineError::TooManyPixels {
            width: 12240,
            height: 16320,
            limit: Limits::default().max_source_pixels,
        })
    );
}

/// A progressive JPEG's scans each pass over the whole image, so the number of scans is
/// limited (500, libjpeg-turbo's advice): past it decoding stops at once with an error that
/// says so. The test repeats the file's first scan (which libjpeg-turbo also reports as an
/// inconsistent progression, once it has read them all).
#[test]
fn a_progressive_jpeg_with_too_many_scans_is_stopped_at_the_limit() {
    let progressive = run(
        &fixture("large_image.jpg"),
        "width=300&format=jpeg&progressive=true",
    );
    let jpeg = &progressive.bytes;
    // The first scan: its SOS segment and entropy-coded data, up to the next marker that is
    // neither a stuffed 0xFF00 nor a restart marker.
    let sos = jpeg.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
    let header_len = usize::from(u16::from_be_bytes([jpeg[sos + 2], jpeg[sos + 3]]));
    let mut end = sos + 2 + header_len;
    while !(jpeg[end] == 0xFF && jpeg[end + 1] != 0 && !(0xD0..=0xD7).contains(&jpeg[end + 1])) {
        end += 1;
    }
    let scan = &jpeg[sos..end];
    let reason = |repeats: usize| {
        let mut file = jpeg[..jpeg.len() - 2].to_vec();
        for _ in 0..repeats {
            file.extend_from_slice(scan);
        }
        file.extend_from_slice(&[0xFF, 0xD9]);
        match transform(
            &file,
            &spec("width=100"),
            OutputFormat::Png,
            None,
            &Limits::default(),
        ) {
            Err(PipelineError::Undecodable(reason)) => reason,
            other => panic!("{repeats} repeats: {other:?}"),
        }
    };
    let under = reason(400);
    assert!(under.contains("progression"), "{under}");
    let over = reason(600);
    assert!(over.contains("500"), "{over}");
}

/// A grid's tiles are decoded one by one, and its record says how many there are: an iPhone
/// photo's 8 x 6 grid of 512 px tiles said to cover a 200x200 canvas (tiles under MIAF's
/// 64 px) is refused from the header, before libheif decodes 48 tiles for it.
#[test]
fn a_heif_grid_with_more_tiles_than_its_canvas_holds_is_refused() {
    let mut heic = fixture("iphone.heic");
    // The grid record: version 0, flags 0, 6 rows, 8 columns, 4032x3024.
    let record = [0, 0, 5, 7, 0x0f, 0xc0, 0x0b, 0xd0];
    let at = heic
        .windows(record.len())
        .position(|w| w == record)
        .unwrap();
    heic[at + 4..at + 8].copy_from_slice(&[0, 200, 0, 200]);
    match transform(
        &heic,
        &spec("width=100"),
        OutputFormat::Jpeg,
        None,
        &Limits::default(),
    ) {
        Err(PipelineError::Undecodable(reason)) => {
            assert!(
                reason.contains("6 x 8 tiles for a 200x200 canvas"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn webp_sources_are_scaled_on_load_and_animations_give_their_first_frame() {
    // A still WebP goes through libwebp's scaled decoding (tests/libvips_parity.rs has its
    // pixels); a marked corner must stay where it was.
    let photo = pixels(&run(&marked_png(), "format=png"));
    let still = samples::webp(&photo);
    let out = run(&still, "width=567&format=png");
    assert_eq!((out.width, out.height), (567, 378));
    assert!(
        pixels(&out).get_pixel(2, 2).0[0] > 200,
        "the red corner is top left"
    );
    // An animation: libwebp's still decoder refuses it, the first frame comes out.
    let red = RgbaImage::from_pixel(64, 48, Rgba([250, 0, 0, 255]));
    let blue = RgbaImage::from_pixel(64, 48, Rgba([0, 0, 250, 255]));
    let out = pixels(&run(
        &samples::animated_webp(&red, &blue),
        "width=32&format=png",
    ));
    assert_eq!(out.dimensions(), (32, 24));
    assert!(near(out.get_pixel(16, 12).0, [250, 0, 0, 255], 4));
    // Cut in half: an error, not a half picture.
    let lossy = run(&samples::png(&photo), "format=webp&quality=80").bytes;
    for cut in [&lossy[..lossy.len() / 2], &lossy[..40]] {
        let err = transform(
            cut,
            &spec("width=300"),
            OutputFormat::Png,
            None,
            &Limits::default(),
        );
        assert!(matches!(err, Err(PipelineError::Undecodable(_))), "{err:?}");
    }
}

#[test]
fn truncated_and_foreign_bytes_are_errors_not_panics() {
    let lake = fixture("lake.jpg");
    let err = transform(
        &lake[..lake.len() / 2],
        &TransformSpec::default(),
        OutputFormat::Webp,
        None,
        &Limits::default(),
    );
    assert!(matches!(err, Err(PipelineError::Undecodable(_))), "{err:?}");
    let err = transform(
        b"plain text",
        &TransformSpec::default(),
        OutputFormat::Webp,
        None,
        &Limits::default(),
    );
    assert!(matches!(err, Err(PipelineError::NotAnImage)));
    let err = transform(
        &fixture("truncated.heic"),
        &TransformSpec::default(),
        OutputFormat::Webp,
        None,
        &Limits::default(),
    );
    assert!(matches!(err, Err(PipelineError::Undecodable(_))), "{err:?}");
}

#[test]
fn verify_reads_past_the_header() {
    let max = Limits::default().max_source_pixels;
    let check = |bytes: &[u8]| verify(bytes, &image_pipeline::probe(bytes, max).unwrap());
    let lake = fixture("lake.jpg");
    assert!(check(&lake).is_ok());
    // The header is whole in each of these (probe accepts them); the pixels are not.
    for (name, bytes) in [
        ("a JPEG cut at a third", lake[..lake.len() / 3].to_vec()),
        ("a PNG cut in half", {
            let png = samples::png(&bands(false));
            png[..png.len() / 2].to_vec()
        }),
    ] {
        let err = check(&bytes);
        assert!(
            matches!(err, Err(PipelineError::Undecodable(_))),
            "{name}: {err:?}"
        );
    }
    for q in ["format=png", "format=webp", "format=jpeg"] {
        assert!(
            check(&run(&lake, &format!("width=300&{q}")).bytes).is_ok(),
            "{q}"
        );
    }
}
