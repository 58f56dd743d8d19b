//! SSIM of two images (luma, 8x8 windows with stride 4), used by bench/image/run.sh to compare
//! image-server's output with sharp's. Usage: `ssim A B` prints a number in [-1, 1]; images
//! of different sizes are an error. The mean absolute difference of R, G and B goes to stderr
//! (colour shifts that luma SSIM does not see).
#![expect(
    clippy::unwrap_used,
    reason = "a benchmark or tool run by hand: a failure ends it with its message"
)]

fn luma(img: &image_pipeline::image::RgbaImage) -> Vec<f64> {
    img.pixels()
        .map(|p| 0.299 * f64::from(p.0[0]) + 0.587 * f64::from(p.0[1]) + 0.114 * f64::from(p.0[2]))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    assert!(args.len() == 3, "usage: ssim A B");
    let a = image_pipeline::decode_to_rgba(&std::fs::read(&args[1]).unwrap(), u64::MAX).unwrap();
    let b = image_pipeline::decode_to_rgba(&std::fs::read(&args[2]).unwrap(), u64::MAX).unwrap();
    assert_eq!(a.dimensions(), b.dimensions(), "sizes differ");
    let (w, h) = (a.width() as usize, a.height() as usize);
    let (la, lb) = (luma(&a), luma(&b));
    let (c1, c2) = ((0.01f64 * 255.0).powi(2), (0.03f64 * 255.0).powi(2));
    let (mut total, mut n) = (0.0, 0u64);
    for y in (0..h.saturating_sub(7)).step_by(4) {
        for x in (0..w.saturating_sub(7)).step_by(4) {
            let (mut sa, mut sb, mut saa, mut sbb, mut sab) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for dy in 0..8 {
                for dx in 0..8 {
                    let i = (y + dy) * w + x + dx;
                    let (p, q) = (la[i], lb[i]);
                    sa += p;
                    sb += q;
                    saa += p * p;
                    sbb += q * q;
                    sab += p * q;
                }
            }
            let k = 64.0;
            let (ma, mb) = (sa / k, sb / k);
            let (va, vb, cov) = (saa / k - ma * ma, sbb / k - mb * mb, sab / k - ma * mb);
            total += ((2.0 * ma * mb + c1) * (2.0 * cov + c2))
                / ((ma * ma + mb * mb + c1) * (va + vb + c2));
            n += 1;
        }
    }
    println!("{:.4}", total / n.max(1) as f64);
    let mut diff = [0.0f64; 3];
    for (p, q) in a.pixels().zip(b.pixels()) {
        for (d, (x, y)) in diff.iter_mut().zip(p.0.iter().zip(&q.0)) {
            *d += f64::from(x.abs_diff(*y));
        }
    }
    let px = (w * h).max(1) as f64;
    eprintln!(
        "mean |dR| {:.2} |dG| {:.2} |dB| {:.2}",
        diff[0] / px,
        diff[1] / px,
        diff[2] / px
    );
}
