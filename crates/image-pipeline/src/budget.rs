//! `max_bytes` (docs/image-service.md §4): the encoded result made to fit a byte budget, as
//! thumbor's `max_bytes` filter and imgproxy's `max_bytes` option do: first the quality is
//! lowered (a binary search between the asked quality and [`MIN_QUALITY`], keeping the
//! highest that fits), then, when even that is too large or the format has no quality (PNG),
//! the picture is shrunk in steps until it fits.

use image::DynamicImage;
use image::imageops::FilterType;

use crate::PipelineError;
use crate::encode::{self, Settings};
use crate::spec::OutputFormat;

/// The lowest quality tried before the picture is shrunk instead.
pub(crate) const MIN_QUALITY: u8 = 10;

/// The smallest side a picture is shrunk to; a budget that even this misses is refused.
const MIN_SIDE: u32 = 16;

/// Shrink steps tried at most.
const MAX_SHRINKS: usize = 12;

/// The encoded result within `max_bytes`, and the picture it encodes (shrunk when it had to
/// be). Encodes at `settings.quality` first: a result that fits already is unchanged.
///
/// # Errors
/// [`PipelineError::BadParam`] naming `max_bytes` when no quality and size down to 16 px on
/// the shorter side fit (the message gives the smallest size reached);
/// [`PipelineError::Encode`] from the encoder.
pub(crate) fn encode_within(
    img: DynamicImage,
    format: OutputFormat,
    settings: Settings,
    max_bytes: u64,
) -> Result<(Vec<u8>, DynamicImage), PipelineError> {
    let encode_at = |img: &DynamicImage, quality: u8| {
        // Each try is a whole encode: a cancelled job stops between them.
        crate::cancel::check()?;
        encode::encode(
            img,
            format,
            Settings {
                quality,
                ..settings
            },
        )
    };
    let fits = |bytes: &[u8]| bytes.len() as u64 <= max_bytes;
    let lossy = matches!(
        format,
        OutputFormat::Jpeg | OutputFormat::Webp | OutputFormat::Avif
    );
    let mut img = img;
    let mut smallest = u64::MAX;
    for _ in 0..=MAX_SHRINKS {
        let first = encode_at(&img, settings.quality)?;
        if fits(&first) {
            return Ok((first, img));
        }
        let mut floor = first;
        if lossy && settings.quality > MIN_QUALITY {
            // The highest quality in [MIN_QUALITY, asked) that fits, if any.
            let (mut low, mut high) = (MIN_QUALITY, settings.quality - 1);
            let mut best = None;
            while low <= high {
                let mid = low + (high - low) / 2;
                let bytes = encode_at(&img, mid)?;
                if fits(&bytes) {
                    best = Some(bytes);
                    low = mid + 1;
                } else {
                    floor = bytes;
                    if mid == MIN_QUALITY {
                        break;
                    }
                    high = mid - 1;
                }
            }
            if let Some(bytes) = best {
                return Ok((bytes, img));
            }
        }
        smallest = floor.len() as u64;
        let (w, h) = (img.width(), img.height());
        if w.min(h) <= MIN_SIDE {
            break;
        }
        // Bytes grow about with the pixels: shrink by the square root of the share that
        // fits, a little more so the next try is likely the last.
        let share = (max_bytes as f64 / smallest as f64).sqrt() * 0.9;
        let share = share.clamp(0.1, 0.9);
        let floor_share = f64::from(MIN_SIDE) / f64::from(w.min(h));
        let share = share.max(floor_share);
        let (nw, nh) = (
            ((f64::from(w) * share).round() as u32).max(1),
            ((f64::from(h) * share).round() as u32).max(1),
        );
        img = img.resize_exact(nw, nh, FilterType::Lanczos3);
    }
    Err(PipelineError::BadParam {
        name: "max_bytes".into(),
        reason: format!(
            "cannot reach {max_bytes} bytes: the smallest result was {smallest} bytes at {}x{}{}",
            img.width(),
            img.height(),
            if lossy {
                format!(" and quality {MIN_QUALITY}")
            } else {
                String::new()
            }
        ),
    })
}
