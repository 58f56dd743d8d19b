//! Times one transformation end to end (for tuning): `stages FILE QUERY [N [OUT]]`, with
//! WEBP_EFFORT read as the server does and format=auto negotiated from ACCEPT; with OUT the
//! result is also written there (compare it with `ssim`).
#![expect(
    clippy::unwrap_used,
    reason = "a benchmark or tool run by hand: a failure ends it with its message"
)]

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bytes = std::fs::read(&args[1]).unwrap();
    let pairs: Vec<(&str, &str)> = args[2]
        .split('&')
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    let n: u32 = args.get(3).map_or(10, |s| s.parse().unwrap());
    let mut limits = image_pipeline::Limits::default();
    if let Ok(e) = std::env::var("WEBP_EFFORT") {
        limits.webp_effort = e.parse().unwrap();
    }
    let spec = image_pipeline::TransformSpec::from_query(pairs, &limits).unwrap();
    // format=auto negotiates from ACCEPT, as the server does from the Accept header.
    let format = spec.output_format(&std::env::var("ACCEPT").unwrap_or_default());
    let start = std::time::Instant::now();
    let mut out = Vec::new();
    for _ in 0..n {
        out = image_pipeline::transform(&bytes, &spec, format, None, &limits)
            .unwrap()
            .bytes;
    }
    let size = out.len();
    println!(
        "{:.1} ms per transform, {size} bytes",
        start.elapsed().as_secs_f64() * 1000.0 / f64::from(n)
    );
    if let Some(path) = args.get(4) {
        std::fs::write(path, &out).unwrap();
    }
}
