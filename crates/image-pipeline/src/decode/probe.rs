//! Header probing: format, size and EXIF orientation read without decoding a pixel, so that a
//! decompression bomb is refused (docs/image-service.md §8, MAX_SOURCE_PIXELS) before anything
//! is allocated for it.

use image::ImageDecoder;

use super::{SourceFormat, dim, exif, generic, heif, jpeg, sniff, svg};
use crate::error::PipelineError;

/// What the header says about a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceInfo {
    pub format: SourceFormat,
    /// Stored width in pixels, before EXIF orientation (HEIF: after its own irot/imir).
    pub width: u32,
    /// Stored height in pixels, before EXIF orientation.
    pub height: u32,
    /// EXIF orientation 1..=8 (1 when absent).
    pub orientation: u8,
}

impl SourceInfo {
    /// Width and height once the EXIF orientation is applied.
    pub fn oriented_size(&self) -> (u32, u32) {
        if self.orientation >= 5 {
            (self.height, self.width)
        } else {
            (self.width, self.height)
        }
    }
}

/// Reads format, dimensions and orientation from the header only, and enforces
/// `max_source_pixels`.
///
/// # Errors
/// [`PipelineError::NotAnImage`] for unknown bytes, [`PipelineError::Undecodable`] for a broken
/// header, [`PipelineError::TooManyPixels`] above the limit.
pub fn probe(bytes: &[u8], max_source_pixels: u64) -> Result<SourceInfo, PipelineError> {
    let format = sniff(bytes).ok_or(PipelineError::NotAnImage)?;
    let (width, height, orientation) = match format {
        SourceFormat::Jpeg => {
            let h = jpeg::header(bytes)?;
            (
                dim(h.width)?,
                dim(h.height)?,
                exif::jpeg_orientation(bytes).unwrap_or(1),
            )
        }
        SourceFormat::Heif | SourceFormat::Avif => {
            let (w, h) = heif::header_size(bytes, max_source_pixels)?;
            (w, h, 1)
        }
        SourceFormat::Svg => {
            let (w, h) = svg::size(bytes)?;
            (w, h, 1)
        }
        SourceFormat::Png | SourceFormat::Gif | SourceFormat::Webp | SourceFormat::Tiff => {
            let mut decoder = generic::decoder(bytes)?;
            let (w, h) = decoder.dimensions();
            // A TIFF's orientation is a tag of its own IFD; PNG and WebP hold an EXIF chunk.
            let o = match format {
                SourceFormat::Tiff => decoder.orientation().map_or(1, exif::orientation_to_exif),
                _ => decoder
                    .exif_metadata()
                    .ok()
                    .flatten()
                    .and_then(|chunk| exif::chunk_orientation(&chunk))
                    .unwrap_or(1),
            };
            (w, h, o)
        }
    };
    let pixels = u64::from(width) * u64::from(height);
    if pixels > max_source_pixels {
        return Err(PipelineError::TooManyPixels {
            width: width.into(),
            height: height.into(),
            limit: max_source_pixels,
        });
    }
    if width == 0 || height == 0 {
        return Err(PipelineError::Undecodable("zero-sized image".into()));
    }
    Ok(SourceInfo {
        format,
        width,
        height,
        orientation,
    })
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
