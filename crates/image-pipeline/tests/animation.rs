//! Animated GIF and WebP sources (docs/image-service.md §4, Animation) on the committed
//! animations (fixtures/ATTRIBUTION.md): frames and delays kept through a resize into WebP and
//! GIF, one frame as a still, and the frame limit before decoding.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Cursor;

use image_pipeline::image::codecs::gif::GifDecoder;
use image_pipeline::image::codecs::webp::WebPDecoder;
use image_pipeline::image::{AnimationDecoder, Frame};
use image_pipeline::samples::fixture;
use image_pipeline::{
    Limits, OutputFormat, PipelineError, TransformSpec, decode_to_rgba, transform,
};
use pretty_assertions::assert_eq;

fn run_with(src: &[u8], q: &str, limits: &Limits) -> Result<image_pipeline::Output, PipelineError> {
    let pairs: Vec<(&str, &str)> = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    let spec = TransformSpec::from_query(pairs, limits)?;
    transform(src, &spec, spec.output_format(""), None, limits)
}

fn run(src: &[u8], q: &str) -> image_pipeline::Output {
    run_with(src, q, &Limits::default()).unwrap()
}

/// The frames of an animated WebP or GIF result: (width, height, delay in ms).
fn frames(out: &image_pipeline::Output) -> Vec<Frame> {
    let frames = match out.format {
        OutputFormat::Webp => WebPDecoder::new(Cursor::new(&out.bytes))
            .unwrap()
            .into_frames(),
        OutputFormat::Gif => GifDecoder::new(Cursor::new(&out.bytes))
            .unwrap()
            .into_frames(),
        other => panic!("{other:?} is no animation"),
    };
    frames.collect::<Result<Vec<_>, _>>().unwrap()
}

fn shape(frames: &[Frame]) -> Vec<(u32, u32, u32)> {
    frames
        .iter()
        .map(|f| {
            let (n, d) = f.delay().numer_denom_ms();
            (f.buffer().width(), f.buffer().height(), n / d)
        })
        .collect()
}

/// anim_5f.gif: five 64x48 frames shown 100, 120, 140, 160 and 180 ms.
#[test]
fn an_animated_gif_resized_stays_animated_with_its_frames_and_delays() {
    let gif = fixture("anim_5f.gif");
    let want: Vec<(u32, u32, u32)> = [100, 120, 140, 160, 180].map(|d| (32, 24, d)).to_vec();
    let webp = run(&gif, "width=32");
    assert_eq!(webp.format, OutputFormat::Webp);
    assert_eq!(shape(&frames(&webp)), want);
    let again = run(&gif, "width=32&format=gif");
    assert_eq!(again.format, OutputFormat::Gif);
    assert_eq!(shape(&frames(&again)), want);
    // The circle moves: the frames differ, as in the source.
    let f = frames(&webp);
    assert_ne!(f[0].buffer().as_raw(), f[4].buffer().as_raw());
    // Every operation applies to every frame: flipped frames are the mirror of unflipped ones.
    let flipped = frames(&run(&gif, "width=32&flip=true&format=gif"));
    let plain = frames(&again);
    for (a, b) in plain.iter().zip(&flipped) {
        let mirrored = image_pipeline::image::imageops::flip_horizontal(a.buffer());
        assert_eq!(mirrored.as_raw(), b.buffer().as_raw());
    }
}

#[test]
fn an_animated_webp_stays_animated_too() {
    let webp = fixture("anim_5f.webp");
    let out = run(&webp, "width=48&format=webp");
    assert_eq!(frames(&out).len(), 5);
    assert_eq!((out.width, out.height), (48, 36));
}

/// Still formats, `animated=false` and `frame=N` give one frame: the first, or the Nth.
#[test]
fn a_still_result_shows_the_first_frame_or_the_one_named() {
    let gif = fixture("anim_5f.gif");
    let first = decode_to_rgba(&run(&gif, "format=png").bytes, u64::MAX).unwrap();
    let still = run(&gif, "animated=false&format=webp");
    assert!(
        !WebPDecoder::new(Cursor::new(&still.bytes))
            .unwrap()
            .has_animation()
    );
    let source_frames = GifDecoder::new(Cursor::new(&gif))
        .unwrap()
        .into_frames()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(first.as_raw(), source_frames[0].buffer().as_raw());
    let third = decode_to_rgba(&run(&gif, "frame=2&format=png").bytes, u64::MAX).unwrap();
    assert_eq!(third.as_raw(), source_frames[2].buffer().as_raw());
    let jpeg = run(&gif, "format=jpeg");
    assert_eq!(jpeg.format, OutputFormat::Jpeg);
    match run_with(&gif, "frame=5", &Limits::default()).unwrap_err() {
        PipelineError::BadParam { name, reason } => {
            assert_eq!(name, "frame");
            assert!(reason.contains("5 frames"), "{reason}");
        }
        other => panic!("{other}"),
    }
    // A still picture has one frame, 0.
    let png = fixture("lake_240.png");
    assert!(run_with(&png, "frame=0", &Limits::default()).is_ok());
    assert!(run_with(&png, "frame=1", &Limits::default()).is_err());
}

/// MAX_ANIMATION_FRAMES and the frames' total pixels refuse an animation before decoding.
#[test]
fn too_many_frames_are_refused_before_decoding() {
    let gif = fixture("anim_5f.gif");
    let few = Limits {
        max_animation_frames: 4,
        ..Limits::default()
    };
    assert!(matches!(
        run_with(&gif, "width=32", &few),
        Err(PipelineError::TooManyFrames { frames: 5, .. })
    ));
    // 5 frames of 64x48 are 15,360 pixels together.
    let small = Limits {
        max_source_pixels: 15_000,
        ..Limits::default()
    };
    assert!(matches!(
        run_with(&gif, "width=32", &small),
        Err(PipelineError::TooManyFrames { .. })
    ));
    // One frame asked for is still held to the frame limit: the file is refused as a whole.
    assert!(run_with(&gif, "frame=0&format=png", &few).is_err());
}

/// GIF output for a still picture, and format=auto keeps an animation animated.
#[test]
fn gif_output_for_stills_and_auto_for_animations() {
    let still = run(&fixture("lake_240.png"), "width=120&format=gif");
    assert_eq!(
        (still.format, still.width, still.height),
        (OutputFormat::Gif, 120, 68)
    );
    assert!(still.bytes.starts_with(b"GIF8"));
    let gif = fixture("anim_5f.gif");
    let spec = TransformSpec::from_query([("format", "auto")], &Limits::default()).unwrap();
    let jpeg_only = spec.output_format("image/jpeg");
    let out = transform(&gif, &spec, jpeg_only, None, &Limits::default()).unwrap();
    assert_eq!((out.format, frames(&out).len()), (OutputFormat::Gif, 5));
    let modern = spec.output_format("image/avif,image/webp");
    let out = transform(&gif, &spec, modern, None, &Limits::default()).unwrap();
    assert_eq!((out.format, frames(&out).len()), (OutputFormat::Webp, 5));
}

/// A real animation (iss634.gif, 42 frames of 245x245) resized into an animated WebP keeps
/// every frame and the delays libvips reads from it (`vipsheader -f delay`), and its frames
/// are composed as libvips composes them, disposal "restore to previous" included.
#[test]
fn a_real_animated_gif_keeps_its_frames_delays_and_composition() {
    let gif = fixture("iss634.gif");
    let libvips_delays = "0 70 60 70 70 60 70 70 60 70 70 60 70 70 60 70 70 60 70 60 70 70 60 70 70 \
                          60 70 70 60 70 70 60 70 70 60 70 70 60 70 70 60 70";
    let want: Vec<u32> = libvips_delays
        .split_whitespace()
        .map(|d| d.parse().unwrap())
        .collect();
    let out = run(&gif, "width=120");
    let got = shape(&frames(&out));
    assert_eq!(got.len(), 42);
    assert!(got.iter().all(|&(w, h, _)| (w, h) == (120, 120)));
    assert_eq!(got.iter().map(|&(_, _, d)| d).collect::<Vec<_>>(), want);

    for (file, n, reference) in [
        ("iss634.gif", 10, "iss634_frame10_libvips.png"),
        ("dispose_prev.gif", 3, "dispose_prev_frame3_libvips.png"),
    ] {
        let ours = decode_to_rgba(
            &run(&fixture(file), &format!("frame={n}&format=png")).bytes,
            u64::MAX,
        )
        .unwrap();
        let theirs = decode_to_rgba(&fixture(reference), u64::MAX).unwrap();
        assert_eq!(ours.dimensions(), theirs.dimensions(), "{file}");
        let diff: u64 = ours
            .pixels()
            .zip(theirs.pixels())
            .map(|(a, b)| {
                (0..3)
                    .map(|c| u64::from(a.0[c].abs_diff(b.0[c])))
                    .sum::<u64>()
            })
            .sum();
        let mean = diff as f64 / (3.0 * f64::from(ours.width() * ours.height()));
        assert!(
            mean < 0.5,
            "{file} frame {n}: {mean} from libvips on average"
        );
    }
}
