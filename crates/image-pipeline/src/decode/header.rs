//! What a raster header says (format, size, EXIF orientation), read without decoding a pixel
//! and held to a pixel limit, so that a decompression bomb is refused (docs/image-service.md §8,
//! MAX_SOURCE_PIXELS) before anything is allocated for it. Below both `probe` (every source)
//! and `svg` (the raster images an SVG embeds), so neither imports the other.

use image::ImageDecoder;

use super::{SourceFormat, dim, exif, generic, heif, jpeg};
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

/// Reads the header of a raster `format` (anything but SVG, which `svg::size` measures) and
/// enforces `max_pixels` through [`checked`].
///
/// # Errors
/// [`PipelineError::Undecodable`] for a broken header or an SVG, [`PipelineError::TooManyPixels`]
/// above the limit.
pub(super) fn raster(
    bytes: &[u8],
    format: SourceFormat,
    max_pixels: u64,
) -> Result<SourceInfo, PipelineError> {
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
            let (w, h) = heif::header_size(bytes, max_pixels)?;
            (w, h, 1)
        }
        SourceFormat::Svg => {
            return Err(PipelineError::Undecodable(
                "an SVG has no raster header".into(),
            ));
        }
        SourceFormat::Png | SourceFormat::Gif | SourceFormat::Webp | SourceFormat::Tiff => {
            let mut decoder = match generic::decoder(bytes) {
                // A TIFF header the `tiff` crate refuses is read by libtiff (decode::libtiff),
                // still before anything is decoded.
                Err(PipelineError::Unsupported(_)) if format == SourceFormat::Tiff => {
                    let (w, h, o) = super::libtiff::header(bytes)?;
                    return checked(format, (w, h), o, max_pixels);
                }
                other => other?,
            };
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
    checked(format, (width, height), orientation, max_pixels)
}

/// A measured source, refused when it has more than `max_pixels` pixels or none.
///
/// # Errors
/// [`PipelineError::TooManyPixels`] above the limit, then [`PipelineError::Undecodable`] for a
/// zero side.
pub(super) fn checked(
    format: SourceFormat,
    (width, height): (u32, u32),
    orientation: u8,
    max_pixels: u64,
) -> Result<SourceInfo, PipelineError> {
    let pixels = u64::from(width) * u64::from(height);
    if pixels > max_pixels {
        return Err(PipelineError::TooManyPixels {
            width: width.into(),
            height: height.into(),
            limit: max_pixels,
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
