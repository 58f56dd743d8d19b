//! `quality=auto` against quality 80, per output format, over photos given as arguments
//! (bench/image/auto-quality.sh runs it on a release build and writes AUTO_QUALITY.md).
//!
//! Each photo is resized to `WIDTH` (default 800) pixels wide through the pipeline (a lossless
//! PNG result), then encoded as JPEG, WebP and AVIF once at quality 80 and once by the
//! `quality=auto` search at `TARGET` (default 80, AUTO_QUALITY_TARGET's default); both are
//! scored with SSIMULACRA2 against that picture. Then `format=best` through `transform` for a
//! client that accepts all three. Times are wall clock on one thread: "extra ms" is the
//! search's time minus the one encode at 80, the CPU `quality=auto` adds to a request.
#![expect(
    clippy::unwrap_used,
    reason = "a benchmark or tool run by hand: a failure ends it with its message"
)]

use std::time::Instant;

use image_pipeline::image::DynamicImage;
use image_pipeline::{Limits, OutputFormat, TransformSpec, auto_quality, transform};

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

fn main() {
    let width: u32 = std::env::var("WIDTH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(800);
    let limits = Limits::default();
    let target: f64 = std::env::var("TARGET")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(limits.auto_quality_target);
    let limits = Limits {
        auto_quality_target: target,
        ..limits
    };
    let effort = limits.webp_effort;
    let formats = [
        (OutputFormat::Jpeg, "jpeg"),
        (OutputFormat::Webp, "webp"),
        (OutputFormat::Avif, "avif"),
    ];
    println!("SSIMULACRA2 target {target}, {width} px wide");
    println!();
    println!(
        "| photo | format | bytes q80 | score q80 | bytes auto | q auto | score auto | encodes | saved | extra ms |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    // Per format: bytes at 80, bytes auto, ms at 80, ms auto, images, auto below target,
    // photos where q80 meets the target and auto is larger.
    let mut totals = [(0usize, 0usize, 0.0f64, 0.0f64, 0u32, 0u32, 0u32); 3];
    let mut best_rows = Vec::new();
    let mut skipped = Vec::new();
    for path in std::env::args().skip(1) {
        let source = std::fs::read(&path).unwrap();
        let name = std::path::Path::new(&path)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let pairs = [("width", width.to_string()), ("format", "png".to_owned())];
        let spec = TransformSpec::from_query(pairs.iter().map(|(k, v)| (*k, v.as_str())), &limits)
            .unwrap();
        let png = match transform(&source, &spec, OutputFormat::Png, None, &limits) {
            Ok(out) => out.bytes,
            Err(e) => {
                eprintln!("{name}: skipped: {e}");
                skipped.push(format!("{name} ({e})"));
                continue;
            }
        };
        let rgba = image_pipeline::decode_to_rgba(&png, u64::MAX).unwrap();
        let picture = DynamicImage::ImageRgb8(DynamicImage::ImageRgba8(rgba).to_rgb8());
        for (i, (format, fname)) in formats.iter().enumerate() {
            let started = Instant::now();
            let q80 = auto_quality::encode_at(&picture, *format, 80, effort).unwrap();
            let t80 = ms(started);
            let started = Instant::now();
            let auto = auto_quality::encode_auto(&picture, *format, target, effort).unwrap();
            let tauto = ms(started);
            let s80 = auto_quality::score_encoded(&picture, &q80).unwrap();
            let sauto = auto.score.unwrap_or(f64::NAN);
            let saved = 100.0 * (1.0 - auto.bytes.len() as f64 / q80.len() as f64);
            println!(
                "| {name} | {fname} | {} | {s80:.1} | {} | {} | {sauto:.1} | {} | {saved:.1}% | {:.0} |",
                q80.len(),
                auto.bytes.len(),
                auto.quality,
                auto.encodes,
                tauto - t80
            );
            let t = &mut totals[i];
            t.0 += q80.len();
            t.1 += auto.bytes.len();
            t.2 += t80;
            t.3 += tauto;
            t.4 += 1;
            t.5 += u32::from(sauto < target);
            t.6 += u32::from(s80 >= target && auto.bytes.len() > q80.len());
        }
        let pairs = [("width", width.to_string()), ("format", "best".to_owned())];
        let spec = TransformSpec::from_query(pairs.iter().map(|(k, v)| (*k, v.as_str())), &limits)
            .unwrap();
        let started = Instant::now();
        match transform(&source, &spec, OutputFormat::Avif, None, &limits) {
            Ok(out) => {
                let tbest = ms(started);
                let sbest = auto_quality::score_encoded(&picture, &out.bytes).unwrap();
                best_rows.push(format!(
                    "| {name} | {} | {} | {sbest:.1} | {tbest:.0} |",
                    out.format.name(),
                    out.bytes.len()
                ));
            }
            Err(e) => best_rows.push(format!("| {name} | refused: {e} | | | |")),
        }
    }
    println!();
    println!(
        "| format | photos | bytes q80 | bytes auto | saved | ms q80 (mean) | ms auto (mean) | extra ms (mean) | auto below target | larger than a passing q80 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (i, (_, fname)) in formats.iter().enumerate() {
        let (b80, bauto, t80, tauto, n, below, larger) = totals[i];
        let n_f = f64::from(n.max(1));
        println!(
            "| {fname} | {n} | {b80} | {bauto} | {:.1}% | {:.0} | {:.0} | {:.0} | {below} | {larger} |",
            100.0 * (1.0 - bauto as f64 / b80.max(1) as f64),
            t80 / n_f,
            tauto / n_f,
            (tauto - t80) / n_f
        );
    }
    println!();
    println!("format=best (Accept: image/avif,image/webp,*/*), whole transformation:");
    println!();
    println!("| photo | picked | bytes | score | ms |");
    println!("|---|---|---:|---:|---:|");
    for row in best_rows {
        println!("{row}");
    }
    if !skipped.is_empty() {
        println!();
        println!(
            "Skipped (refused under the default limits): {}",
            skipped.join("; ")
        );
    }
}
