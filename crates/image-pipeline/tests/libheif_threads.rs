//! libheif used from several threads at once, as image-server does: decodes (one at a time, the
//! crate's gate), header probes and HEIC encodes (tests) beside them. A deep mirrored AVIF must
//! decode the same every time: with libheif-rs 0.20.0 as published, the decoding options were
//! freed before libheif read them, and about one decode in eight applied the mirror it was told
//! to ignore ("Can currently only mirror images with 8 bits per pixel"; this test failed 32 runs
//! of 40). third_party/libheif-rs/PATCHED.md has the fix.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use image_pipeline::samples::{self, fixture};
use image_pipeline::{Limits, OutputFormat, TransformSpec, probe, transform};

#[test]
fn deep_mirrored_avifs_decode_while_other_threads_probe_and_encode_heifs() {
    let limits = Limits::default();
    let spec = TransformSpec::from_query([("width", "60"), ("format", "png")], &limits).unwrap();
    let avif = fixture("lake_10bit_irot2_imir1.avif");
    let heic = fixture("window.heic");
    let small = image_pipeline::image::RgbaImage::from_pixel(
        32,
        32,
        image_pipeline::image::Rgba([10, 200, 30, 255]),
    );
    std::thread::scope(|scope| {
        let decoders: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    (0..8)
                        .map(|_| {
                            transform(&avif, &spec, OutputFormat::Png, None, &limits)
                                .map(|out| (out.width, out.height))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let prober = scope.spawn(|| {
            (0..200)
                .map(|_| probe(&avif, u64::MAX).and_then(|_| probe(&heic, u64::MAX)))
                .filter(Result::is_err)
                .count()
        });
        let encoder = scope.spawn(|| {
            (0..4)
                .map(|_| samples::heic(&small, false))
                .filter(|bytes| probe(bytes, u64::MAX).is_err())
                .count()
        });
        for decoder in decoders {
            for result in decoder.join().unwrap() {
                assert_eq!(result, Ok((60, 34)));
            }
        }
        assert_eq!(prober.join().unwrap(), 0, "probes that failed");
        assert_eq!(encoder.join().unwrap(), 0, "encodes that failed");
    });
}
