//! `image_pipeline::info` against what libvips (`vipsheader`) and exiftool report for the same
//! files (fixtures/info_reference.json, written by fixtures/info_reference.sh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use image_pipeline::samples::fixture;
use pretty_assertions::assert_eq;
use serde_json::Value;

fn reference() -> serde_json::Map<String, Value> {
    let text = String::from_utf8(fixture("info_reference.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

/// Every field of `info` as libvips and exiftool give it: size and frames (libvips' width,
/// height and n-pages; exiftool's AnimationFrames for APNG, which libvips 8.14 reads as a
/// still), orientation, alpha (a fourth band of an RGB image, or a second of a grey one), the
/// ICC description, the byte size and every EXIF field exiftool reports.
#[test]
fn info_matches_libvips_and_exiftool_on_every_reference_file() {
    let reference = reference();
    assert!(reference.len() >= 14);
    for (file, want) in &reference {
        let got = image_pipeline::info(&fixture(file)).unwrap();
        let got = serde_json::to_value(&got).unwrap();
        let (vips, tool) = (&want["vips"], &want["exiftool"]);
        let frames = tool["AnimationFrames"]
            .as_u64()
            .or(vips["n-pages"].as_u64())
            .unwrap_or(1);
        let bands = vips["bands"].as_u64().unwrap();
        let alpha = vips["interpretation"] != "cmyk" && (bands == 4 || bands == 2);
        let expected = serde_json::json!({
            "width": vips["width"],
            "height": vips["height"],
            "orientation": vips["orientation"].as_u64().unwrap_or(1),
            "frames": frames,
            "alpha": alpha,
            "iccProfile": tool.get("ProfileDescription").cloned().unwrap_or(Value::Null),
            "size": tool["FileSize"],
        });
        let fields = [
            "width",
            "height",
            "orientation",
            "frames",
            "alpha",
            "iccProfile",
            "size",
        ];
        let actual: serde_json::Map<String, Value> = fields
            .iter()
            .map(|f| ((*f).to_owned(), got[*f].clone()))
            .collect();
        assert_eq!(Value::Object(actual), expected, "{file}");

        let names = [
            ("Make", "make"),
            ("Model", "model"),
            ("LensModel", "lensModel"),
            ("DateTimeOriginal", "dateTimeOriginal"),
            ("ExposureTime", "exposureTime"),
            ("FNumber", "fNumber"),
            ("ISO", "iso"),
            ("FocalLength", "focalLength"),
            ("Artist", "artist"),
            ("Copyright", "copyright"),
            ("GPSLatitude", "gpsLatitude"),
            ("GPSLongitude", "gpsLongitude"),
        ];
        for (theirs, ours) in names {
            let (want, have) = (&tool[theirs], &got["exif"][ours]);
            match (want.as_f64(), have.as_f64()) {
                (Some(w), Some(h)) => assert!((w - h).abs() < 1e-6, "{file} {ours}: {h} vs {w}"),
                _ => assert_eq!(have, want, "{file} {ours}"),
            }
        }
    }
}

#[test]
fn info_names_the_format_and_refuses_what_is_no_image() {
    let jpeg = image_pipeline::info(&fixture("lake_p3.jpg")).unwrap();
    assert_eq!((jpeg.format, jpeg.content_type), ("jpeg", "image/jpeg"));
    let avif = image_pipeline::info(&fixture("lake_irot1.avif")).unwrap();
    assert_eq!((avif.format, avif.content_type), ("avif", "image/avif"));
    assert!(matches!(
        image_pipeline::info(b"hello, not an image"),
        Err(image_pipeline::PipelineError::NotAnImage)
    ));
    // The 200 MP decompression bomb is described, not decoded.
    let bomb = image_pipeline::info(&fixture("heic_200mp.heic")).unwrap();
    assert_eq!((bomb.width, bomb.height), (12240, 16320));
    // A truncated GIF counts the frames it holds, and never reads past its end.
    let gif = fixture("anim_5f.gif");
    for cut in [14, 40, gif.len() / 2, gif.len() - 1] {
        if let Ok(info) = image_pipeline::info(&gif[..cut]) {
            assert!(
                (1..=5).contains(&info.frames),
                "{} frames at {cut}",
                info.frames
            );
        }
    }
}
