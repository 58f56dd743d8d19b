//! `trim`, `padding` and `pixelate` on real photos (docs/image-service.md §4): trim's box
//! against libvips' `find_trim` for the same file, the others against their definitions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use image_pipeline::image::{Rgba, RgbaImage};
use image_pipeline::samples::fixture;
use image_pipeline::{Limits, PipelineError, TransformSpec, decode_to_rgba, transform};
use pretty_assertions::assert_eq;

fn spec_with(q: &str, limits: &Limits) -> Result<TransformSpec, PipelineError> {
    let pairs: Vec<(&str, &str)> = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    TransformSpec::from_query(pairs, limits)
}

fn run_with(src: &[u8], q: &str, limits: &Limits) -> Result<RgbaImage, PipelineError> {
    let s = spec_with(q, limits)?;
    let out = transform(src, &s, s.output_format(""), None, limits)?;
    Ok(decode_to_rgba(&out.bytes, u64::MAX).unwrap())
}

fn run(src: &[u8], q: &str) -> RgbaImage {
    run_with(src, q, &Limits::default()).unwrap()
}

/// lake_bordered.jpg is lake_240.png (240x135) in a 30, 20 px border of grey 250, saved as a
/// JPEG at quality 85 (ATTRIBUTION.md). libvips 8.14 with the top-left pixel as background,
/// `vips find_trim lake_bordered.jpg --threshold T --background "250 250 250"`, answers
/// `30 20 241 135` at 10 (a JPEG ringing column) and `30 20 240 135` at 30.
#[test]
fn trim_finds_the_box_libvips_finds() {
    let photo = fixture("lake_bordered.jpg");
    assert_eq!(run(&photo, "trim=10&format=png").dimensions(), (241, 135));
    assert_eq!(run(&photo, "trim&format=png").dimensions(), (241, 135));
    assert_eq!(run(&photo, "trim=30&format=png").dimensions(), (240, 135));
    // The box is the crop the resize works on.
    assert_eq!(
        run(&photo, "trim=30&width=120&format=png").dimensions(),
        (120, 68)
    );
    // Without trim the border stays.
    assert_eq!(run(&photo, "format=png").dimensions(), (320, 200));
    // The trimmed picture is the photo: its corner is no longer the border's grey.
    let trimmed = run(&photo, "trim=30&format=png");
    let lake = decode_to_rgba(&fixture("lake_240.png"), u64::MAX).unwrap();
    let (a, b) = (trimmed.get_pixel(120, 60).0, lake.get_pixel(120, 60).0);
    let off: i32 = (0..3)
        .map(|c| (i32::from(a[c]) - i32::from(b[c])).abs())
        .sum();
    assert!(off < 30, "{a:?} against {b:?}");
}

#[test]
fn trim_applies_inside_the_crop_rectangle() {
    let photo = fixture("lake_bordered.jpg");
    // A crop holding the top-left corner of the photo and 10 px of border above and left of
    // it. libvips on that rectangle (`vips extract_area lake_bordered.jpg r.png 20 10 60 40`,
    // `vips find_trim r.png --threshold 30 --background "250 250 250"`) answers
    // `10 10 50 22`: the bright sky at the bottom of the rectangle is within 30 of the border.
    let out = run(
        &photo,
        "cropLeft=20&cropTop=10&cropWidth=60&cropHeight=40&trim=30&format=png",
    );
    assert_eq!(out.dimensions(), (50, 22));
}

#[test]
fn padding_surrounds_the_result_in_the_background_colour() {
    let photo = fixture("lake.jpg");
    let out = run(
        &photo,
        "width=200&padding=10,20,30,40&background=ff0000&format=png",
    );
    let inner = (200, 113);
    assert_eq!(out.dimensions(), (inner.0 + 20 + 40, inner.1 + 10 + 30));
    for (x, y) in [(0, 0), (39, 50), (259, 50), (100, 9), (100, 152)] {
        assert_eq!(out.get_pixel(x, y), &Rgba([255, 0, 0, 255]), "({x}, {y})");
    }
    assert_ne!(out.get_pixel(100, 60), &Rgba([255, 0, 0, 255]));
    // Transparent by default in PNG, white in JPEG.
    let clear = run(&photo, "width=100&padding=5&format=png");
    assert_eq!(clear.get_pixel(0, 0).0[3], 0);
    let jpeg = run(&photo, "width=100&padding=5&format=jpeg");
    assert!(jpeg.get_pixel(1, 1).0.iter().take(3).all(|&v| v > 245));
}

#[test]
fn padding_is_held_to_the_output_limits() {
    let photo = fixture("lake_240.png");
    let limits = Limits {
        max_output_dimension: 300,
        ..Limits::default()
    };
    assert!(run_with(&photo, "padding=30", &limits).is_ok());
    let e = run_with(&photo, "padding=31", &limits).unwrap_err();
    assert!(
        matches!(&e, PipelineError::BadParam { name, .. } if name == "padding"),
        "{e}"
    );
    // An unsigned URL may not grow its output past MAX_UNSIGNED_OUTPUT_PIXELS with padding.
    let unsigned = Limits {
        max_grown_output_pixels: Some(240 * 135 + 100),
        ..Limits::default()
    };
    let e = run_with(&photo, "padding=20", &unsigned).unwrap_err();
    assert!(
        matches!(&e, PipelineError::BadParam { name, .. } if name == "padding"),
        "{e}"
    );
}

#[test]
fn pixelate_fills_each_block_with_its_mean() {
    let photo = fixture("lake_240.png");
    let plain = run(&photo, "format=png");
    let out = run(&photo, "pixelate=16&format=png");
    assert_eq!(out.dimensions(), (240, 135));
    for (bx, by) in [(0u32, 0u32), (5, 3), (14, 8)] {
        let (w, h) = (16.min(240 - bx * 16), 16.min(135 - by * 16));
        let first = out.get_pixel(bx * 16, by * 16);
        for y in 0..h {
            for x in 0..w {
                assert_eq!(
                    out.get_pixel(bx * 16 + x, by * 16 + y),
                    first,
                    "block ({bx}, {by})"
                );
            }
        }
        let mean: Vec<u64> = (0..3)
            .map(|c| {
                let sum: u64 = (0..h)
                    .flat_map(|y| (0..w).map(move |x| (x, y)))
                    .map(|(x, y)| u64::from(plain.get_pixel(bx * 16 + x, by * 16 + y).0[c]))
                    .sum();
                (sum + u64::from(w * h) / 2) / u64::from(w * h)
            })
            .collect();
        for (&got, want) in first.0.iter().zip(&mean) {
            assert!(u64::from(got).abs_diff(*want) <= 1, "block ({bx}, {by})");
        }
    }
}

fn encoded(src: &[u8], q: &str) -> Result<image_pipeline::Output, PipelineError> {
    let s = spec_with(q, &Limits::default())?;
    transform(src, &s, s.output_format(""), None, &Limits::default())
}

/// `max_bytes` lowers the quality first: the lake photo at 640 px fits 8 kB at its full
/// size, at the highest quality that does.
#[test]
fn max_bytes_meets_its_budget_by_quality_first() {
    let photo = fixture("lake.jpg");
    for format in ["webp", "jpeg"] {
        let free = encoded(&photo, &format!("width=640&format={format}")).unwrap();
        assert!(
            free.bytes.len() > 8_000,
            "{format}: {} bytes without a budget",
            free.bytes.len()
        );
        let held = encoded(&photo, &format!("width=640&format={format}&max_bytes=8000")).unwrap();
        assert!(
            held.bytes.len() <= 8_000,
            "{format}: {} bytes",
            held.bytes.len()
        );
        assert_eq!(
            (held.width, held.height),
            (640, 360),
            "{format}: the size is kept"
        );
        // It is the encoding at some quality q, and q + 1 would not fit: the highest that does.
        // (Sizes grow with quality, so the qualities that fit are 10..=q: a bisection finds q.)
        let at =
            |q: u8| encoded(&photo, &format!("width=640&format={format}&quality={q}")).unwrap();
        let (mut low, mut high) = (10u8, 79u8);
        while low < high {
            let mid = (low + high).div_ceil(2);
            if at(mid).bytes.len() <= 8_000 {
                low = mid
            } else {
                high = mid - 1
            }
        }
        assert_eq!(held.bytes, at(low).bytes, "{format}: quality {low}");
        assert!(
            at(low + 1).bytes.len() > 8_000,
            "{format}: quality {} fits too",
            low + 1
        );
    }
    // A result already within the budget is unchanged.
    let small = encoded(&photo, "width=200&format=webp").unwrap();
    let held = encoded(&photo, "width=200&format=webp&max_bytes=1000000").unwrap();
    assert_eq!(held.bytes, small.bytes);
}

/// A budget quality cannot meet shrinks the picture; PNG, which has no quality, shrinks at
/// once; a budget nothing meets is refused naming `max_bytes`.
#[test]
fn max_bytes_shrinks_when_quality_is_not_enough_or_says_why_not() {
    let photo = fixture("lake.jpg");
    let held = encoded(&photo, "width=1600&format=webp&max_bytes=4000").unwrap();
    assert!(held.bytes.len() <= 4000, "{} bytes", held.bytes.len());
    assert!(
        held.width < 1600 && held.width * 9 / 16 <= held.height + 1,
        "{}x{}",
        held.width,
        held.height
    );
    let png = encoded(&photo, "width=800&format=png&max_bytes=50000").unwrap();
    assert!(
        png.bytes.len() <= 50_000 && png.width < 800,
        "{} bytes at {}",
        png.bytes.len(),
        png.width
    );
    let e = encoded(&photo, "width=800&format=png&max_bytes=100").unwrap_err();
    match e {
        PipelineError::BadParam { name, reason } => {
            assert_eq!(name, "max_bytes");
            assert!(reason.contains("cannot reach 100 bytes"), "{reason}");
        }
        other => panic!("{other}"),
    }
}

/// `zoom` multiplies the asked size, or without one the source's (imgproxy's `zoom`).
#[test]
fn zoom_scales_the_asked_size_or_the_source() {
    let photo = fixture("lake_240.png");
    assert_eq!(run(&photo, "zoom=0.5&format=png").dimensions(), (120, 68));
    assert_eq!(
        run(&photo, "width=100&zoom=1.5&format=png").dimensions(),
        (150, 84)
    );
    assert_eq!(run(&photo, "zoom=2&format=png").dimensions(), (480, 270));
    let unsigned = Limits {
        max_enlarge: Some(1.5),
        ..Limits::default()
    };
    let e = run_with(&photo, "zoom=2&format=png", &unsigned).unwrap_err();
    assert!(
        matches!(&e, PipelineError::BadParam { name, .. } if name == "enlarge"),
        "{e}"
    );
}

/// `min_width` and `min_height` scale a smaller result up, its shape kept.
#[test]
fn min_sizes_scale_a_smaller_result_up() {
    let photo = fixture("lake_240.png");
    assert_eq!(
        run(&photo, "min_width=480&format=png").dimensions(),
        (480, 270)
    );
    assert_eq!(
        run(&photo, "width=100&min_width=200&format=png").dimensions(),
        (200, 113)
    );
    assert_eq!(
        run(&photo, "width=100&min_height=90&format=png").dimensions(),
        (160, 90)
    );
    // Already large enough: unchanged.
    assert_eq!(
        run(&photo, "width=200&min_width=100&format=png").dimensions(),
        (200, 113)
    );
    assert_eq!(
        run(
            &photo,
            "width=100&height=100&fit=cover&min_width=150&format=png"
        )
        .dimensions(),
        (150, 150)
    );
}

/// `min_width` and `min_height` grow a `cover`, `contain` or `fill` box to the smallest box of
/// its shape that holds them, whatever the source's size, and count the padding of `contain`
/// as part of the result (found by tests/corpus.rs on a 2x1 JPEG).
#[test]
fn min_sizes_grow_a_box_to_the_smallest_box_that_holds_them() {
    let photo = fixture("lake_240.png");
    // A source smaller than the box: it reaches the grown box, not a box grown by how far
    // the small, unenlarged result fell short (a 2x1 source asked 24000x16000 and was refused).
    let tiny = image_pipeline::samples::png(&RgbaImage::from_pixel(
        2,
        1,
        image_pipeline::image::Rgba([200, 30, 30, 255]),
    ));
    assert_eq!(
        run(
            &tiny,
            "width=120&height=80&fit=cover&min_width=200&format=png"
        )
        .dimensions(),
        (200, 134)
    );
    assert_eq!(
        run(
            &photo,
            "width=300&height=200&fit=fill&min_height=150&format=png"
        )
        .dimensions(),
        (300, 200),
        "the box already holds the minimum: the source is stretched to it"
    );
    // The padded box of `contain` is the result: it already holds the minimum.
    assert_eq!(
        run(
            &photo,
            "width=120&height=120&fit=contain&min_width=100&format=png"
        )
        .dimensions(),
        (120, 120)
    );
    // The side that sets the growth is its minimum exactly (7 x (29 / 7) is 30 in floating
    // point, rounded up).
    assert_eq!(
        run(&photo, "width=7&height=7&fit=cover&min_width=29&format=png").dimensions(),
        (29, 29)
    );
}

/// Results carry no metadata; with `keep_copyright` they carry the source's EXIF `Copyright`
/// and `Artist` and, for a source with an ICC profile, the sRGB profile of their pixels, in
/// JPEG, PNG and WebP alike, and still decode to the same pixels.
#[test]
fn keep_copyright_keeps_the_owner_and_nothing_else_is_kept() {
    use exif::{In, Tag};
    let owned = fixture("orient6.jpg");
    for format in ["jpeg", "png", "webp"] {
        let plain = encoded(&owned, &format!("width=120&format={format}")).unwrap();
        let kept = encoded(
            &owned,
            &format!("width=120&format={format}&keep_copyright=true"),
        )
        .unwrap();
        let read = |bytes: &[u8]| {
            exif::Reader::new().read_from_container(&mut std::io::Cursor::new(bytes.to_vec()))
        };
        assert!(read(&plain.bytes).is_err(), "{format}: no EXIF by default");
        let exif = read(&kept.bytes).unwrap();
        let text = |tag| match &exif.get_field(tag, In::PRIMARY)?.value {
            exif::Value::Ascii(parts) => Some(String::from_utf8_lossy(&parts[0]).into_owned()),
            _ => None,
        };
        assert_eq!(
            text(Tag::Copyright).as_deref(),
            Some("© 2026 Example Photo Co."),
            "{format}"
        );
        assert_eq!(text(Tag::Artist).as_deref(), Some("Jane Doe"), "{format}");
        // Nothing else: no camera, no place, no orientation (the pixels are upright).
        for tag in [
            Tag::Make,
            Tag::GPSLatitude,
            Tag::Orientation,
            Tag::DateTimeOriginal,
        ] {
            assert!(
                exif.get_field(tag, In::PRIMARY).is_none(),
                "{format}: {tag}"
            );
        }
        assert_eq!(
            decode_to_rgba(&kept.bytes, u64::MAX).unwrap(),
            decode_to_rgba(&plain.bytes, u64::MAX).unwrap(),
            "{format}: the same pixels"
        );
        assert_eq!(
            image_pipeline::info(&kept.bytes).unwrap().icc_profile,
            None,
            "{format}"
        );
    }
    // A source with a profile (Display P3): the result is described as sRGB.
    let p3 = fixture("lake_p3.jpg");
    for format in ["jpeg", "png", "webp"] {
        let kept = encoded(&p3, &format!("width=120&format={format}&keep_copyright=1")).unwrap();
        let icc = image_pipeline::info(&kept.bytes).unwrap().icc_profile;
        assert!(icc.is_some_and(|name| name.contains("sRGB")), "{format}");
        let plain = encoded(&p3, &format!("width=120&format={format}")).unwrap();
        assert_eq!(
            image_pipeline::info(&plain.bytes).unwrap().icc_profile,
            None,
            "{format}"
        );
    }
}
