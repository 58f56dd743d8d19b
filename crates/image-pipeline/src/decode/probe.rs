//! Header probing: format, size and EXIF orientation read without decoding a pixel, so that a
//! decompression bomb is refused (docs/image-service.md §8, MAX_SOURCE_PIXELS) before anything
//! is allocated for it. Raster headers are read by `header`, SVG's size by `svg`.

use super::header::{self, SourceInfo};
use super::{SourceFormat, sniff, svg};
use crate::error::PipelineError;

/// Reads format, dimensions and orientation from the header only, and enforces
/// `max_source_pixels`.
///
/// # Errors
/// [`PipelineError::NotAnImage`] for unknown bytes, [`PipelineError::Undecodable`] for a broken
/// header, [`PipelineError::TooManyPixels`] above the limit.
pub fn probe(bytes: &[u8], max_source_pixels: u64) -> Result<SourceInfo, PipelineError> {
    let format = sniff(bytes).ok_or(PipelineError::NotAnImage)?;
    match format {
        SourceFormat::Svg => header::checked(format, svg::size(bytes)?, 1, max_source_pixels),
        _ => header::raster(bytes, format, max_source_pixels),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_not_an_image() {
        assert_eq!(sniff(b"hello, world"), None);
        assert!(matches!(
            probe(b"hello", 100),
            Err(PipelineError::NotAnImage)
        ));
    }
}
