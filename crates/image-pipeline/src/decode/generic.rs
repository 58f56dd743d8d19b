//! Decoding through the `image` crate, whole: GIF's first frame, an animated WebP's first frame
//! (composed), and PNGs that the row-by-row path (`png`) does not take; also the header reader
//! `probe` uses for PNG, GIF and WebP.

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageReader};

use super::{Decoded, normalise, undecodable};
use crate::error::PipelineError;

/// The `image` crate's decoder for `bytes` (format guessed from them), with an allocation cap.
///
/// # Errors
/// [`PipelineError::Undecodable`] when `image` cannot read the header.
pub(super) fn decoder(bytes: &[u8]) -> Result<Box<dyn ImageDecoder + '_>, PipelineError> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(undecodable)?;
    // The pixel limit is enforced from the header by `probe`; this only guards allocations.
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(2 * 1024 * 1024 * 1024);
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(refusal)?;
    Ok(Box::new(decoder))
}

/// The refusal for an error of the `image` crate: a feature its decoders lack (a TIFF
/// compressed with WebP or JPEG 2000, say) is an image coded in a way we cannot decode, 415
/// `unsupported_image` naming it (docs/image-service.md §7); anything else is a broken file,
/// 422 `undecodable_image`.
fn refusal(e: image::ImageError) -> PipelineError {
    match e {
        image::ImageError::Unsupported(what) => PipelineError::Unsupported(what.to_string()),
        other => undecodable(other),
    }
}

/// Decodes whole through `image` (PNG, GIF's first frame, animated WebP's first frame), with
/// the embedded ICC profile.
pub(super) fn decode(bytes: &[u8]) -> Result<Decoded, PipelineError> {
    let mut decoder = decoder(bytes)?;
    let icc = decoder.icc_profile().ok().flatten();
    let img = DynamicImage::from_decoder(decoder).map_err(refusal)?;
    Ok((normalise(img), (1.0, 1.0), icc))
}
