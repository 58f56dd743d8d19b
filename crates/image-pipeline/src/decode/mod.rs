//! Decoding: the format sniffed from the bytes, then the decoder that reads it, each in its own
//! module (`jpeg`, `png`, `webp`, `heif`, `svg`, the `image` crate's in `generic`: GIF, TIFF and
//! what the others leave), with the header probe (`probe`), EXIF orientation (`exif`) and
//! embedded colour profiles (`icc`) beside them.
//!
//! The format is always sniffed from the bytes (never taken from a name or a client's
//! Content-Type). Dimensions come from the header first so that decompression bombs are refused
//! before any pixel is decoded. The result of [`decode`] is always 8-bit sRGB or sRGBA (an
//! embedded ICC profile is converted, see `colour`), with EXIF orientation applied.

mod exif;
mod generic;
mod header;
pub(crate) mod heif;
pub(crate) mod icc;
mod jpeg;
mod libtiff;
mod markers;
mod png;
mod probe;
mod svg;
mod webp;

use image::{DynamicImage, ImageDecoder, metadata::Orientation};

pub use header::SourceInfo;
pub(crate) use png::stream_rows as stream_png_rows;
pub use probe::probe;

use crate::colour;
use crate::error::PipelineError;
use crate::shrink;

/// A decoded image, the scale it was decoded at per axis (decoded width / stored width, decoded
/// height / stored height) and its ICC profile.
type Decoded = (DynamicImage, (f64, f64), Option<Vec<u8>>);

/// An input format we can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceFormat {
    Jpeg,
    Png,
    Gif,
    Webp,
    /// HEIC, HEIF, HEIX and multi-image (`mif1`, `msf1`) brands: decoded by libheif.
    Heif,
    /// AVIF (major brand `avif` or `avis`): also decoded by libheif, with its AV1 decoder.
    Avif,
    /// TIFF and BigTIFF, either byte order: the first image, decoded by the `tiff` crate.
    Tiff,
    /// SVG (XML whose root element is `svg`): rendered by resvg, without anything outside the
    /// file (`svg`).
    Svg,
}

impl SourceFormat {
    /// The canonical media type, stored as the object's Content-Type on upload.
    pub fn mime(self) -> &'static str {
        match self {
            Self::Jpeg => "image/jpeg",
            Self::Png => "image/png",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
            Self::Heif => "image/heic",
            Self::Avif => "image/avif",
            Self::Tiff => "image/tiff",
            Self::Svg => "image/svg+xml",
        }
    }

    /// The usual file name extension, without the dot (for names generated on upload).
    pub fn extension(self) -> &'static str {
        match self {
            Self::Jpeg => "jpeg",
            Self::Png => "png",
            Self::Gif => "gif",
            Self::Webp => "webp",
            Self::Heif => "heic",
            Self::Avif => "avif",
            Self::Tiff => "tiff",
            Self::Svg => "svg",
        }
    }
}

/// The `ftyp` brands (major or compatible) that make a file HEIF or AVIF. `mif3` is the compact
/// layout (a `mini` box), which is recognised so that it can be refused by name (`heif`).
const HEIF_BRANDS: &[&[u8; 4]] = &[
    b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs", b"mif1", b"msf1",
    b"mif2", b"mif3", b"avif", b"avis", b"miaf",
];

/// Recognises a supported image from its first bytes; `None` for anything else.
///
/// HEIF is recognised by any of its brands (major or compatible), not only `ftypheic`; TIFF by
/// its byte-order mark and version (42, or 43 for BigTIFF); SVG by its root element, after an
/// optional XML declaration, comments and document type declaration.
pub fn sniff(bytes: &[u8]) -> Option<SourceFormat> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return Some(SourceFormat::Jpeg);
    }
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Some(SourceFormat::Png);
    }
    if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        return Some(SourceFormat::Gif);
    }
    if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Some(SourceFormat::Webp);
    }
    if bytes.len() >= 16 && &bytes[4..8] == b"ftyp" {
        let size = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        let end = size.clamp(16, bytes.len().min(256));
        let major = &bytes[8..12];
        let compatible = bytes[16..end].chunks_exact(4);
        if std::iter::once(major)
            .chain(compatible)
            .any(|b| HEIF_BRANDS.iter().any(|h| &h[..] == b))
        {
            // A compact file's minor version is the brand of its coding (`avif` or `heic`).
            let avif = major == b"avif"
                || major == b"avis"
                || (major == b"mif3" && &bytes[12..16] == b"avif");
            return Some(if avif {
                SourceFormat::Avif
            } else {
                SourceFormat::Heif
            });
        }
    }
    if [b"II*\0", b"MM\0*", b"II+\0", b"MM\0+"]
        .iter()
        .any(|m| bytes.starts_with(*m))
    {
        return Some(SourceFormat::Tiff);
    }
    if svg::sniff(bytes) {
        return Some(SourceFormat::Svg);
    }
    None
}

/// A decoder's error, as [`PipelineError::Undecodable`] (422).
fn undecodable(e: impl std::fmt::Display) -> PipelineError {
    PipelineError::Undecodable(e.to_string())
}

/// A decoder's `usize` dimension as pixels; one past `u32` is undecodable.
fn dim(v: usize) -> Result<u32, PipelineError> {
    u32::try_from(v).map_err(|_| PipelineError::Undecodable("dimension overflow".into()))
}

/// Checks that the whole image decodes, not only the header `info` came from ([`probe`]):
/// a decode at the smallest scale the decoders offer for a 64 px picture (JPEG at 1/8, PNG
/// and HEIC rows box-shrunk while decoding), so a truncated or corrupt body is found without
/// holding the full-size picture. Uploads use it, so that what is stored can be served.
///
/// # Errors
/// [`PipelineError::Undecodable`] when the pixel data is truncated or corrupt.
pub fn verify(bytes: &[u8], info: &SourceInfo) -> Result<(), PipelineError> {
    let longest = f64::from(info.width.max(info.height).max(1));
    decode(bytes, info, (64.0 / longest).min(1.0)).map(drop)
}

/// Decodes to 8-bit sRGB(A) with orientation applied (an embedded ICC profile is converted).
///
/// `min_scale` (0, 1] is the smallest share of the full size the caller needs (in both axes);
/// JPEG sources are decoded at the smallest of 1/8, 1/4, 1/2, 1 that is still at least that
/// large; PNG (not interlaced) and HEIC rows are box-averaged while decoding by the integer
/// factor that keeps twice that size (see `shrink`; PNG down only, libvips' order). Returns the
/// image and the scale it was decoded at per axis (x, y), each exactly 1/denominator or 1/box
/// factor: a box-shrunk size is rounded up, so the image can be up to one pixel larger than
/// the stored size times the scale; a scaled JPEG keeps whole pixels only, so it can be up to
/// one pixel smaller.
///
/// # Errors
/// [`PipelineError::Undecodable`] for truncated or corrupt data.
pub(crate) fn decode(
    bytes: &[u8],
    info: &SourceInfo,
    min_scale: f64,
) -> Result<(DynamicImage, (f64, f64)), PipelineError> {
    let (mut image, scale, icc) = match info.format {
        SourceFormat::Jpeg => {
            let (img, scale) = jpeg::decode(bytes, min_scale)?;
            (img, (scale, scale), icc::jpeg_icc(bytes))
        }
        SourceFormat::Heif | SourceFormat::Avif => heif::decode(bytes, info.format, min_scale)?,
        SourceFormat::Png if shrink::factor(min_scale) > 1 && !png::interlaced(bytes) => {
            png::decode_shrunk(bytes, min_scale)?
        }
        SourceFormat::Webp => match webp::still(bytes) {
            Some(features) => {
                let (img, scale) = webp::decode(bytes, &features, min_scale)?;
                let icc = generic::decoder(bytes)?.icc_profile().ok().flatten();
                (img, scale, icc)
            }
            None => generic::decode(bytes)?,
        },
        SourceFormat::Png | SourceFormat::Gif => generic::decode(bytes)?,
        SourceFormat::Tiff => generic::decode_tiff(bytes)?,
        SourceFormat::Svg => svg::decode(bytes, info, min_scale)?,
    };
    colour::to_srgb(&mut image, icc.as_deref());
    if let Some(o) = Orientation::from_exif(info.orientation) {
        image.apply_orientation(o);
    }
    // Orientations 5 to 8 swap the axes.
    let scale = if info.orientation >= 5 {
        (scale.1, scale.0)
    } else {
        scale
    };
    Ok((image, scale))
}

/// The most pixels a [`decode`] at `min_scale` holds, as (width, height) of the stored
/// orientation, and the bytes of one of them, for the cost model (`cost.rs`): JPEG, PNG (not
/// interlaced), still WebP and SVG shrink on load, to at most twice the needed size (the
/// scale steps round up); the other decoders hold the whole picture. A 16-bit PNG or a TIFF
/// (which may hold 16-bit samples) takes 8 bytes a pixel, the rest 4.
pub(crate) fn decoded_size(bytes: &[u8], info: &SourceInfo, min_scale: f64) -> ((u32, u32), u64) {
    let shrinks = match info.format {
        SourceFormat::Jpeg | SourceFormat::Svg => true,
        SourceFormat::Png => !png::interlaced(bytes),
        SourceFormat::Webp => webp::still(bytes).is_some(),
        _ => false,
    };
    let bpp = match info.format {
        SourceFormat::Tiff => 8,
        // IHDR's bit depth, at byte 24 of every PNG.
        SourceFormat::Png if bytes.get(24) == Some(&16) => 8,
        _ => 4,
    };
    let share = if shrinks && min_scale.is_finite() {
        (min_scale * 2.0).clamp(0.0, 1.0)
    } else {
        1.0
    };
    let side = |v: u32| ((f64::from(v) * share).ceil() + 1.0).min(f64::from(v)) as u32;
    ((side(info.width), side(info.height)), bpp)
}

/// Converts any pixel layout to 8-bit RGB, or RGBA when there is an alpha channel.
pub(crate) fn normalise(img: DynamicImage) -> DynamicImage {
    match img {
        DynamicImage::ImageRgb8(_) | DynamicImage::ImageRgba8(_) => img,
        other if other.color().has_alpha() => DynamicImage::ImageRgba8(other.to_rgba8()),
        other => DynamicImage::ImageRgb8(other.to_rgb8()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heif_is_recognised_by_any_brand_not_only_heic() {
        let mut msf1 = vec![0, 0, 0, 24];
        msf1.extend_from_slice(b"ftypmsf1\0\0\0\0msf1iso8");
        assert_eq!(sniff(&msf1), Some(SourceFormat::Heif));
        let mut mp4 = vec![0, 0, 0, 20];
        mp4.extend_from_slice(b"ftypisom\0\0\0\0mp41");
        assert_eq!(sniff(&mp4), None);
        let mut avif = vec![0, 0, 0, 28];
        avif.extend_from_slice(b"ftypavif\0\0\0\0avifmif1miaf");
        assert_eq!(sniff(&avif), Some(SourceFormat::Avif));
        assert_eq!(SourceFormat::Avif.mime(), "image/avif");
    }
}
