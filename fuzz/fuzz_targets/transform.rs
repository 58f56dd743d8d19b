//! Any bytes as a source image, through one of eight transformations and an output format
//! picked by the first byte (`image_pipeline::fuzzing::check_transform`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    image_pipeline::fuzzing::check_transform(data);
});
