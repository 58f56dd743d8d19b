//! Replays the fuzz targets' committed inputs (`fuzz/corpus`: the seeds, one small real photo
//! per source format and layout) and every input a fuzzing run ever failed on
//! (`fuzz/regressions`) through the same property checks, so a fixed finding stays fixed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use image_pipeline::fuzzing::{check_query, check_transform};

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

