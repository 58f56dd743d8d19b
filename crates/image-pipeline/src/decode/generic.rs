//! Decoding through the `image` crate, whole: GIF's first frame, an animated WebP's first frame
//! (composed), TIFF's first image, and PNGs that the row-by-row path (`png`) does not take;
//! also the header reader `probe` uses for PNG, GIF, WebP and TIFF.

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
    let (img, icc) = whole(bytes)?;
    Ok((normalise(img), (1.0, 1.0), icc))
}

/// The picture as `image` decodes it, at its own depth, and its ICC profile.
fn whole(bytes: &[u8]) -> Result<(DynamicImage, Option<Vec<u8>>), PipelineError> {
    let mut decoder = decoder(bytes)?;
    let icc = decoder.icc_profile().ok().flatten();
    let img = DynamicImage::from_decoder(decoder).map_err(refusal)?;
    Ok((img, icc))
}

/// Decodes a TIFF's first image as [`decode`] does, with premultiplied ("associated") alpha,
/// which `image` hands over as it is stored, divided back out: straight alpha is what every
/// later step and encoder expects, and libvips un-premultiplies such a TIFF on load too (a
/// half-transparent pixel came out at a sixth of its brightness, Pillow's
/// tiff_16bit_RGBa.tiff).
pub(super) fn decode_tiff(bytes: &[u8]) -> Result<Decoded, PipelineError> {
    // What the `tiff` crate refuses as unsupported (CCITT Group 3, YCbCr with subsampled chroma
    // outside JPEG, WebP strips, ...), libtiff reads (docs/image-service.md, "TIFF through
    // libtiff"). The crate refuses before it decodes pixels: at the header, the readout layout
    // or the first strip's decompressor. A broken file stays the crate's 422.
    match decode_tiff_with_crate(bytes) {
        Err(PipelineError::Unsupported(_)) => {
            let img = super::libtiff::decode(bytes)?;
            Ok((DynamicImage::ImageRgba8(img), (1.0, 1.0), None))
        }
        other => other,
    }
}

/// [`decode_tiff`] through the `tiff` crate (by way of `image`).
fn decode_tiff_with_crate(bytes: &[u8]) -> Result<Decoded, PipelineError> {
    if let Some(rgb) = cmyk_tiff(bytes)? {
        return Ok((DynamicImage::ImageRgb8(rgb), (1.0, 1.0), None));
    }
    let (mut img, icc) = whole(bytes)?;
    if associated_alpha(bytes) {
        img = unpremultiply(img);
    }
    Ok((normalise(img), (1.0, 1.0), icc))
}

/// The sRGB pixels of a TIFF whose first image is 8-bit CMYK, converted through its embedded
/// CMYK profile or libvips' built-in one as a CMYK JPEG is (`colour::cmyk_to_srgb`), where the
/// `image` crate would subtract the inks from white (Pillow's tiff_strip_cmyk_jpeg.tif came out
/// tens of levels off sharp's conversion of the same picture as a JPEG); `None` for any other
/// TIFF.
fn cmyk_tiff(bytes: &[u8]) -> Result<Option<image::RgbImage>, PipelineError> {
    let mut tiff = tiff::decoder::Decoder::new(Cursor::new(bytes)).map_err(undecodable)?;
    // A colour type the crate cannot name is no 8-bit CMYK: `whole` then says why.
    if !matches!(tiff.colortype(), Ok(tiff::ColorType::CMYK(8))) {
        return Ok(None);
    }
    let (width, height) = tiff.dimensions().map_err(undecodable)?;
    let tiff::decoder::DecodingResult::U8(cmyk) = tiff.read_image().map_err(undecodable)? else {
        return Ok(None);
    };
    let icc = decoder(bytes)?.icc_profile().ok().flatten();
    let rgb = crate::colour::cmyk_to_srgb(&cmyk, icc.as_deref())?.ok_or_else(|| {
        PipelineError::Undecodable("CMYK TIFF: its colour profile cannot be applied".into())
    })?;
    image::RgbImage::from_raw(width, height, rgb)
        .map(Some)
        .ok_or_else(|| undecodable("CMYK TIFF: the image is shorter than its header says"))
}

/// Whether the first image's alpha is associated (TIFF ExtraSamples = 1, premultiplied).
fn associated_alpha(bytes: &[u8]) -> bool {
    tiff::decoder::Decoder::new(Cursor::new(bytes))
        .and_then(|mut d| d.find_tag(tiff::tags::Tag::ExtraSamples))
        .ok()
        .flatten()
        .and_then(|v| v.into_u16_vec().ok())
        .is_some_and(|samples| samples.first() == Some(&1))
}

/// Divides the colour of each pixel by its alpha (rounded, at most full scale); a fully
/// transparent pixel keeps no colour.
fn unpremultiply(img: DynamicImage) -> DynamicImage {
    fn divide<T: Copy + Into<u64> + TryFrom<u64>>(pixels: &mut [T], channels: usize, full: u64) {
        for px in pixels.chunks_exact_mut(channels) {
            let Some((alpha, colour)) = px.split_last_mut() else {
                continue;
            };
            let a: u64 = (*alpha).into();
            if a == full {
                continue;
            }
            for c in colour {
                let v: u64 = (*c).into();
                let straight = (v * full + a / 2).checked_div(a).unwrap_or(0).min(full);
                if let Ok(s) = T::try_from(straight) {
                    *c = s;
                }
            }
        }
    }
    match img {
        DynamicImage::ImageRgba8(mut b) => {
            divide(&mut b, 4, 0xFF);
            DynamicImage::ImageRgba8(b)
        }
        DynamicImage::ImageRgba16(mut b) => {
            divide(&mut b, 4, 0xFFFF);
            DynamicImage::ImageRgba16(b)
        }
        DynamicImage::ImageLumaA8(mut b) => {
            divide(&mut b, 2, 0xFF);
            DynamicImage::ImageLumaA8(b)
        }
        DynamicImage::ImageLumaA16(mut b) => {
            divide(&mut b, 2, 0xFFFF);
            DynamicImage::ImageLumaA16(b)
        }
        other => other,
    }
}
