//! Replays the fuzz targets' committed inputs (`fuzz/corpus`: the seeds, one small real photo
//! per source format and layout) and every input a fuzzing run ever failed on
//! (`fuzz/regressions`) through the same property checks, so a fixed finding stays fixed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use image_pipeline::fuzzing::{check_hostile, check_query, check_transform};
use image_pipeline::{Limits, PipelineError, probe};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `fuzz/<kind>/<target>`, sorted; none when the folder is absent.
fn inputs(kind: &str, target: &str) -> Vec<(String, Vec<u8>)> {
    let Ok(dir) = std::fs::read_dir(fuzz_dir().join(kind).join(target)) else {
        return Vec::new();
    };
    let mut files: Vec<_> = dir
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

#[test]
fn transform_corpus_and_past_findings_hold() {
    let seeds = inputs("corpus", "transform");
    assert!(seeds.len() >= 16, "the seed corpus is missing");
    // The seeds are sound images: each is transformed, but the PNG bomb, refused from its
    // header.
    for (name, data) in &seeds {
        assert_eq!(
            check_transform(data),
            !name.ends_with("png_bomb.png"),
            "{name}"
        );
    }
    for (name, data) in inputs("regressions", "transform") {
        let outcome = std::panic::catch_unwind(|| check_transform(&data));
        assert!(outcome.is_ok(), "{name}");
    }
}

#[test]
fn query_corpus_and_past_findings_hold() {
    let source = std::fs::read(fuzz_dir().join("seeds/query_source.jpg")).unwrap();
    let watermark = std::fs::read(fuzz_dir().join("seeds/watermark.png")).unwrap();
    let seeds = inputs("corpus", "query");
    assert!(seeds.len() >= 6, "the seed corpus is missing");
    // Every seed query is valid and transformed.
    for (name, data) in &seeds {
        assert!(check_query(data, &source, &watermark), "{name}");
    }
    for (name, data) in inputs("regressions", "query") {
        let outcome = std::panic::catch_unwind(|| check_query(&data, &source, &watermark));
        assert!(outcome.is_ok(), "{name}");
    }
}

/// The first finding (fuzz/RUNS.md): a 3 KB HEIF whose primary image is an overlay declaring
/// 96x64 in `ispe` and an 8508x6974 canvas in its own data, which libheif allocated (355 MB
/// of RSS, 0.6 s). The pixel limit now holds for the canvas, from the header.
#[test]
fn an_overlay_canvas_over_the_pixel_limit_is_refused_from_the_header() {
    let path = fuzz_dir().join("regressions/transform/overlay-canvas-59mp-behind-96x64-ispe");
    let file = std::fs::read(path).unwrap();
    let source = &file[1..];
    match probe(source, Limits::default().max_source_pixels) {
        Err(PipelineError::TooManyPixels { width, height, .. }) => {
            assert_eq!((width, height), (8508, 6974));
        }
        other => panic!("{other:?}"),
    }
    // Under a limit that admits the canvas it is an ordinary (corrupt) source: no panic.
    let _ = probe(source, 100_000_000);
    // The same overlay when it is not the primary image (pitm names item 2 instead): libheif
    // may still decode it with the primary (as a grid's alpha plane), so it is held too.
    let mut other = source.to_vec();
    let pitm = other.windows(4).position(|w| w == b"pitm").unwrap();
    assert_eq!(other[pitm + 8..pitm + 10], [0, 1]);
    other[pitm + 9] = 2;
    match probe(&other, Limits::default().max_source_pixels) {
        Err(PipelineError::TooManyPixels { width, height, .. }) => {
            assert_eq!((width, height), (8508, 6974));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn hostile_corpus_holds_its_time_bound() {
    let source = std::fs::read(fuzz_dir().join("seeds/query_source.jpg")).unwrap();
    let seeds = inputs("corpus", "hostile");
    assert!(seeds.len() >= 6, "the seed corpus is missing");
    for (name, data) in seeds.iter().chain(&inputs("regressions", "hostile")) {
        let outcome = std::panic::catch_unwind(|| check_hostile(data, &source));
        assert!(outcome.is_ok(), "{name}");
    }
}
