//! `quality=auto` and `format=best` (docs/image-service.md, "Automatic quality"): the encoder's
//! quality searched so that the decoded result scores at least the target on SSIMULACRA2
//! against the finished picture, at the fewest bytes the search finds.
//!
//! The search is bounded: the first encode is at [`DEFAULT_QUALITY`] (80); when that meets the
//! target, a bisection looks below it (down to [`LOW`]), otherwise above it (up to [`HIGH`]),
//! for [`MAX_ENCODES`] encodes in all. The answer is the smallest encode that met the target,
//! so it is never larger than quality 80's when quality 80 met it; when none met it, the
//! highest quality tried. Each trial is decoded and scored at no more than
//! [`SCORE_MAX_PIXELS`] (both pictures scaled down alike above that), so a trial costs an
//! encode, a decode and a score, all counted by the cost model before any work starts
//! (`limits.rs`, [`TRIAL_OPS_PER_PIXEL`]).
//!
//! PNG and GIF have no quality to search (PNG is lossless; GIF's palette is not a quality):
//! they are encoded once, as without `auto`.

use image::DynamicImage;
use image::imageops::FilterType;
use image_params::DEFAULT_QUALITY;

use crate::encode::{self, Settings};
use crate::error::PipelineError;
use crate::spec::OutputFormat;

/// Most encodes one search makes (one per format for `format=best`'s candidates).
pub const MAX_ENCODES: u32 = 6;
/// The lowest quality the search tries.
pub const LOW: u8 = 20;
/// The highest quality the search tries.
pub const HIGH: u8 = 95;
/// Largest picture scored, in pixels; larger ones are compared scaled down to about this.
pub const SCORE_MAX_PIXELS: u64 = 512 * 1024;
/// Weighted operations a trial's decode and score cost per scored pixel, besides its encode
/// (`cost.rs`' units, about a nanosecond each): SSIMULACRA2's XYB conversion, blurs and six
/// scales, and the decode: bench/image/AUTO_QUALITY.md measured about 440 ms a JPEG trial at
/// about 500,000 scored pixels on a loaded 2-core machine (load 5), so about 400 on a quiet one.
pub(crate) const TRIAL_OPS_PER_PIXEL: u64 = 400;
/// Bytes SSIMULACRA2 holds per scored pixel: both pictures in linear light and in XYB, their
/// products and blurred copies, all in f32 (about 30 planes of 4 bytes).
pub(crate) const SCORE_BYTES_PER_PIXEL: u64 = 120;

/// One search's answer.
#[derive(Debug, Clone)]
pub struct Found {
    /// The encoded file.
    pub bytes: Vec<u8>,
    /// The quality it was encoded at.
    pub quality: u8,
    /// Its SSIMULACRA2 score against the picture; `None` when nothing was scored (PNG, GIF, a
    /// picture under 8x8 pixels).
    pub score: Option<f64>,
    /// Encodes made, at most [`MAX_ENCODES`].
    pub encodes: u32,
}

/// Whether `format` has a quality to search.
pub(crate) fn searchable(format: OutputFormat) -> bool {
    matches!(
        format,
        OutputFormat::Jpeg | OutputFormat::Webp | OutputFormat::Avif
    )
}

/// The picture as SSIMULACRA2 compares it: RGB (alpha dropped: JPEG output is flattened
/// before it is encoded, and WebP and AVIF keep alpha losslessly enough at these qualities),
/// scaled down to about [`SCORE_MAX_PIXELS`] when larger.
fn comparable(img: &DynamicImage) -> image::RgbImage {
    let (w, h) = (img.width(), img.height());
    let area = u64::from(w) * u64::from(h);
    if area <= SCORE_MAX_PIXELS {
        return img.to_rgb8();
    }
    let (nw, nh) = scored_size((w, h));
    img.resize_exact(nw, nh, FilterType::Triangle).to_rgb8()
}

/// The size a `w` x `h` picture is scored at.
pub(crate) fn scored_size((w, h): (u32, u32)) -> (u32, u32) {
    let area = u64::from(w) * u64::from(h);
    if area <= SCORE_MAX_PIXELS {
        return (w, h);
    }
    let share = (SCORE_MAX_PIXELS as f64 / area as f64).sqrt();
    (
        ((f64::from(w) * share).round() as u32).max(1),
        ((f64::from(h) * share).round() as u32).max(1),
    )
}

/// Linear-light input of SSIMULACRA2 from 8-bit sRGB.
fn linear(img: &image::RgbImage) -> Result<ssimulacra2::Rgb, PipelineError> {
    let data = img
        .pixels()
        .map(|p| p.0.map(|c| f32::from(c) / 255.0))
        .collect();
    ssimulacra2::Rgb::new(
        data,
        img.width() as usize,
        img.height() as usize,
        ssimulacra2::TransferCharacteristic::SRGB,
        ssimulacra2::ColorPrimaries::BT709,
    )
    .map_err(|e| PipelineError::Encode(format!("ssimulacra2 input: {e}")))
}

/// SSIMULACRA2 score of `distorted` against `reference`, both the same size and at least 8x8
/// pixels (100 identical, 90 visually lossless, 80 high quality, 70 medium, 50 low; it can be
/// negative).
///
/// # Errors
/// [`PipelineError::Encode`] when the sizes differ or are under 8x8.
pub fn ssimulacra2(
    reference: &image::RgbImage,
    distorted: &image::RgbImage,
) -> Result<f64, PipelineError> {
    ssimulacra2::compute_frame_ssimulacra2(linear(reference)?, linear(distorted)?)
        .map_err(|e| PipelineError::Encode(format!("ssimulacra2: {e}")))
}

/// SSIMULACRA2 score of the encoded file `encoded` against `picture`, scored as the search
/// scores (scaled down to about [`SCORE_MAX_PIXELS`] when larger). Used by the search and by
/// the benchmark (bench/image/auto-quality.sh).
///
/// # Errors
/// As [`crate::decode_to_rgba`] for `encoded`; [`PipelineError::Encode`] when its size is not
/// `picture`'s or under 8x8.
pub fn score_encoded(picture: &DynamicImage, encoded: &[u8]) -> Result<f64, PipelineError> {
    let reference = comparable(picture);
    score_against(&reference, encoded, (picture.width(), picture.height()))
}

fn score_against(
    reference: &image::RgbImage,
    encoded: &[u8],
    size: (u32, u32),
) -> Result<f64, PipelineError> {
    let area = u64::from(size.0) * u64::from(size.1);
    let decoded = crate::decode_to_rgba(encoded, area.max(1))?;
    if (decoded.width(), decoded.height()) != size {
        return Err(PipelineError::Encode(format!(
            "auto quality: decoded {}x{}, expected {}x{}",
            decoded.width(),
            decoded.height(),
            size.0,
            size.1
        )));
    }
    let decoded = comparable(&DynamicImage::ImageRgba8(decoded));
    ssimulacra2(reference, &decoded)
}

/// Encodes `img` as `format` at the lowest quality the bounded search finds whose result
/// scores at least `target` (see the module's documentation); `settings.quality` is ignored
/// for a lossy format, used as is for PNG and GIF.
///
/// # Errors
/// [`PipelineError::Encode`] from the encoder or the scoring; a cancelled job stops between
/// trials.
pub(crate) fn search(
    img: &DynamicImage,
    format: OutputFormat,
    settings: Settings,
    target: f64,
) -> Result<Found, PipelineError> {
    if !searchable(format) || img.width() < 8 || img.height() < 8 {
        let bytes = encode::encode(img, format, settings)?;
        return Ok(Found {
            bytes,
            quality: settings.quality,
            score: None,
            encodes: 1,
        });
    }
    let reference = comparable(img);
    let size = (img.width(), img.height());
    let mut encodes = 0;
    let mut trial = |quality: u8| -> Result<(Vec<u8>, f64), PipelineError> {
        crate::cancel::check()?;
        encodes += 1;
        let bytes = encode::encode(
            img,
            format,
            Settings {
                quality,
                ..settings
            },
        )?;
        let score = score_against(&reference, &bytes, size)?;
        Ok((bytes, score))
    };
    // (quality, bytes, score) of the smallest passing trial, and of the best failing one.
    let mut passed: Option<(u8, Vec<u8>, f64)> = None;
    let mut failed: Option<(u8, Vec<u8>, f64)> = None;
    let mut keep = |q: u8, bytes: Vec<u8>, score: f64| {
        let slot = if score >= target {
            &mut passed
        } else {
            &mut failed
        };
        let better = match slot {
            None => true,
            Some((_, b, s)) => {
                if score >= target {
                    bytes.len() < b.len()
                } else {
                    score > *s
                }
            }
        };
        if better {
            *slot = Some((q, bytes, score));
        }
    };
    let (first, first_score) = trial(DEFAULT_QUALITY)?;
    let first_passed = first_score >= target;
    keep(DEFAULT_QUALITY, first, first_score);
    let (mut low, mut high) = if first_passed {
        (LOW, DEFAULT_QUALITY - 1)
    } else {
        (DEFAULT_QUALITY + 1, HIGH)
    };
    for _ in 1..MAX_ENCODES {
        if low > high {
            break;
        }
        let mid = low + (high - low) / 2;
        let (bytes, score) = trial(mid)?;
        let ok = score >= target;
        keep(mid, bytes, score);
        if ok {
            high = mid - 1;
        } else {
            low = mid + 1;
        }
    }
    let (quality, bytes, score) = match (passed, failed) {
        (Some(p), _) => p,
        (None, Some(f)) => f,
        (None, None) => {
            return Err(PipelineError::Encode("auto quality: no trial".into()));
        }
    };
    Ok(Found {
        bytes,
        quality,
        score: Some(score),
        encodes,
    })
}

/// The search on a finished picture, as `transform` runs it for `quality=auto` (for the
/// benchmark, bench/image/auto-quality.sh): `img` encoded as `format` (RGB or RGBA 8-bit;
/// opaque for JPEG) at the quality found for `target`, with libwebp at `webp_effort`.
///
/// # Errors
/// As the encoders and the scoring ([`PipelineError::Encode`]).
pub fn encode_auto(
    img: &DynamicImage,
    format: OutputFormat,
    target: f64,
    webp_effort: u8,
) -> Result<Found, PipelineError> {
    search(img, format, plain(DEFAULT_QUALITY, webp_effort), target)
}

/// `img` encoded as `format` at `quality` (1..=100), as `transform` encodes it (for the
/// benchmark's fixed-quality column).
///
/// # Errors
/// As the encoders ([`PipelineError::Encode`]).
pub fn encode_at(
    img: &DynamicImage,
    format: OutputFormat,
    quality: u8,
    webp_effort: u8,
) -> Result<Vec<u8>, PipelineError> {
    encode::encode(img, format, plain(quality, webp_effort))
}

fn plain(quality: u8, webp_effort: u8) -> Settings {
    Settings {
        quality: quality.clamp(1, 100),
        progressive: false,
        gray: false,
        webp_effort,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::Settings;

    fn settings(quality: u8) -> Settings {
        Settings {
            quality,
            progressive: false,
            gray: false,
            webp_effort: 4,
        }
    }

    /// A photo-like picture: smooth gradients under fine texture.
    fn photo(w: u32, h: u32) -> DynamicImage {
        DynamicImage::ImageRgb8(image::RgbImage::from_fn(w, h, |x, y| {
            let n = (x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)) % 23;
            let r = (x * 255 / w) as u8;
            let g = (y * 255 / h) as u8;
            let b = ((x + y) % 97) as u8 + n as u8;
            image::Rgb([r.saturating_add(n as u8), g, b])
        }))
    }

    fn corpus_photo() -> Option<DynamicImage> {
        let bytes = std::fs::read("/work/shared/images/crate_webp-0.3.1__lake.jpg").ok()?;
        let rgba = crate::decode_to_rgba(&bytes, 100_000_000).ok()?;
        Some(DynamicImage::ImageRgba8(rgba).resize(800, 800, FilterType::Triangle))
    }

    #[test]
    fn auto_quality_meets_the_target_within_the_encode_bound() {
        let img = corpus_photo().unwrap_or_else(|| photo(320, 240));
        for format in [OutputFormat::Jpeg, OutputFormat::Webp, OutputFormat::Avif] {
            for target in [60.0, 80.0, 88.0] {
                let found = search(&img, format, settings(80), target).unwrap();
                assert!(found.encodes <= MAX_ENCODES, "{format:?}: {found:?}");
                let score = score_encoded(&img, &found.bytes).unwrap();
                assert_eq!(Some(score), found.score, "{format:?} at {target}");
                if found.quality < HIGH {
                    assert!(
                        score >= target,
                        "{format:?} q{}: {score} < {target}",
                        found.quality
                    );
                }
            }
        }
    }

    #[test]
    fn auto_quality_is_no_larger_than_quality_80_when_80_meets_the_target() {
        let img = corpus_photo().unwrap_or_else(|| photo(320, 240));
        for format in [OutputFormat::Jpeg, OutputFormat::Webp, OutputFormat::Avif] {
            let q80 = encode::encode(&img, format, settings(80)).unwrap();
            let s80 = score_encoded(&img, &q80).unwrap();
            let target = s80 - 5.0;
            let found = search(&img, format, settings(80), target).unwrap();
            assert!(
                found.bytes.len() <= q80.len(),
                "{format:?}: {} > {} bytes (q80 scores {s80})",
                found.bytes.len(),
                q80.len()
            );
            assert!(found.quality < 80, "{format:?}: {found:?}");
        }
    }

    #[test]
    fn auto_quality_leaves_png_and_tiny_pictures_alone() {
        let img = photo(64, 64);
        let png = search(&img, OutputFormat::Png, settings(80), 80.0).unwrap();
        assert_eq!((png.encodes, png.score), (1, None));
        let tiny = search(&photo(4, 4), OutputFormat::Webp, settings(80), 80.0).unwrap();
        assert_eq!((tiny.encodes, tiny.quality, tiny.score), (1, 80, None));
    }

    /// `transform` with `query` (pairs `k=v` joined by `&`) as `format`.
    fn run(
        source: &[u8],
        query: &str,
        format: OutputFormat,
        limits: &crate::Limits,
    ) -> Result<crate::Output, PipelineError> {
        let pairs: Vec<(&str, &str)> = query
            .split('&')
            .map(|kv| kv.split_once('=').unwrap())
            .collect();
        let spec = crate::TransformSpec::from_query(pairs, limits)?;
        crate::transform(source, &spec, format, None, limits)
    }

    #[test]
    fn max_bytes_starts_from_the_searched_quality_and_best_is_the_smallest_candidate() {
        let img = corpus_photo().unwrap_or_else(|| photo(320, 240));
        let source = crate::samples::jpeg(&img.to_rgb8(), 95);
        let limits = crate::Limits::default();
        let webp = OutputFormat::Webp;
        let auto = run(&source, "width=400&format=webp&quality=auto", webp, &limits).unwrap();
        let roomy = format!(
            "width=400&format=webp&quality=auto&max_bytes={}",
            auto.bytes.len()
        );
        assert_eq!(
            run(&source, &roomy, webp, &limits).unwrap().bytes,
            auto.bytes
        );
        let budget = auto.bytes.len() * 2 / 3;
        let tight = format!("width=400&format=webp&quality=auto&max_bytes={budget}");
        assert!(run(&source, &tight, webp, &limits).unwrap().bytes.len() <= budget);

        let mut sizes = Vec::new();
        for (f, name) in [
            (OutputFormat::Avif, "avif"),
            (OutputFormat::Webp, "webp"),
            (OutputFormat::Jpeg, "jpeg"),
        ] {
            let q = format!("width=400&format={name}&quality=auto");
            sizes.push((run(&source, &q, f, &limits).unwrap().bytes.len(), f));
        }
        let best = run(
            &source,
            "width=400&format=best",
            OutputFormat::Avif,
            &limits,
        )
        .unwrap();
        let smallest = sizes.iter().min_by_key(|(n, _)| *n).unwrap();
        assert_eq!((best.bytes.len(), best.format), *smallest, "{sizes:?}");
        // A client without AVIF: WebP or JPEG, whichever is smaller.
        let best = run(
            &source,
            "width=400&format=best",
            OutputFormat::Webp,
            &limits,
        )
        .unwrap();
        let smallest = sizes
            .iter()
            .filter(|(_, f)| *f != OutputFormat::Avif)
            .min_by_key(|(n, _)| *n)
            .unwrap();
        assert_eq!((best.bytes.len(), best.format), *smallest, "{sizes:?}");
    }

    #[test]
    fn the_cost_model_charges_the_search_before_decoding() {
        let img = photo(1600, 1200);
        let source = crate::samples::jpeg(&img.to_rgb8(), 90);
        let limits = crate::Limits {
            max_request_pixel_ops: 150_000_000,
            ..crate::Limits::default()
        };
        let q = "width=800&format=webp";
        assert!(
            run(
                &source,
                &format!("{q}&quality=80"),
                OutputFormat::Webp,
                &limits
            )
            .is_ok()
        );
        let refused = run(
            &source,
            &format!("{q}&quality=auto"),
            OutputFormat::Webp,
            &limits,
        );
        assert!(
            matches!(&refused, Err(PipelineError::BadParam { reason, .. }) if reason.contains("MAX_REQUEST_PIXEL_OPS")),
            "{refused:?}"
        );
    }

    #[test]
    fn large_pictures_are_scored_scaled_down() {
        assert_eq!(scored_size((800, 600)), (800, 600));
        let (w, h) = scored_size((4000, 3000));
        assert!(
            u64::from(w) * u64::from(h) <= SCORE_MAX_PIXELS + 4000,
            "{w}x{h}"
        );
        assert!(
            u64::from(w) * u64::from(h) >= SCORE_MAX_PIXELS - 4000,
            "{w}x{h}"
        );
        assert_eq!(w * 3 / 4, h);
    }
}
