//! Any bytes as the resize endpoint's query string, applied to a small real photo
//! (`image_pipeline::fuzzing::check_query`).
#![no_main]

/// A 96x64 cut of lake.jpg with an EXIF orientation of 6 (written by `examples/fuzz_seeds.rs`).
static SOURCE: &[u8] = include_bytes!("../seeds/query_source.jpg");
/// A 32x32 PNG with transparency, the watermark of every query that names one.
static WATERMARK: &[u8] = include_bytes!("../seeds/watermark.png");

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    image_pipeline::fuzzing::check_query(data, SOURCE, WATERMARK);
});
