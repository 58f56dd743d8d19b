//! Times one transformation end to end (for tuning): `stages FILE QUERY [N]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bytes = std::fs::read(&args[1]).unwrap();
    let pairs: Vec<(&str, &str)> = args[2]
        .split('&')
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    let n: u32 = args.get(3).map_or(10, |s| s.parse().unwrap());
    let limits = image_pipeline::Limits::default();
    let spec = image_pipeline::TransformSpec::from_query(pairs, &limits).unwrap();
    let format = spec.output_format("");
    let start = std::time::Instant::now();
    let mut size = 0;
    for _ in 0..n {
        size = image_pipeline::transform(&bytes, &spec, format, None, &limits)
            .unwrap()
            .bytes
            .len();
    }
    println!(
        "{:.1} ms per transform, {size} bytes",
        start.elapsed().as_secs_f64() * 1000.0 / f64::from(n)
    );
}
