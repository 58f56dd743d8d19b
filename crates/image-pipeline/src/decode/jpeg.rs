//! JPEG through libjpeg-turbo: shrink-on-load (scaled IDCT at 1/2, 1/4 or 1/8, sharp's choice),
//! a cap on progressive scans, and CMYK/YCCK converted to sRGB (with the profile `icc` reads
//! from the marker segments, `markers`).

use image::{DynamicImage, RgbImage};

use super::markers::segments;
use super::{dim, icc, undecodable};
use crate::colour;
use crate::error::PipelineError;

/// Most scans a progressive JPEG may have, as libjpeg-turbo advises for untrusted input
/// (`djpeg -maxscans`; its report "Two Issues with the JPEG Standard"). Every scan passes over
/// the whole image, so a small file of thousands of scans costs minutes of CPU; encoders
/// write about 10.
const JPEG_MAX_SCANS: u32 = 500;

/// Decodes to 8-bit sRGB at the scaled-IDCT size [`denominator`] picks for `min_scale`;
/// returns the picture and its scale (1/denominator, both axes).
///
/// # Errors
/// [`PipelineError::Undecodable`] for a truncated or corrupt file, more than
/// [`JPEG_MAX_SCANS`] scans, or a CMYK profile that cannot be applied.
pub(super) fn decode(bytes: &[u8], min_scale: f64) -> Result<(DynamicImage, f64), PipelineError> {
    let mut d = turbojpeg::Decompressor::new().map_err(undecodable)?;
    d.set_scan_limit(JPEG_MAX_SCANS).map_err(undecodable)?;
    let header = d.read_header(bytes).map_err(header_error)?;
    // CMYK and YCCK (print and stock photography) come out as CMYK and are converted below;
    // every other JPEG straight to RGB, the hot path, unchanged.
    let cmyk = matches!(
        header.colorspace,
        turbojpeg::Colorspace::CMYK | turbojpeg::Colorspace::YCCK
    );
    let (format, channels) = if cmyk {
        (turbojpeg::PixelFormat::CMYK, 4)
    } else {
        (turbojpeg::PixelFormat::RGB, 3)
    };
    let denom = denominator(min_scale);
    let factor = turbojpeg::ScalingFactor::new(1, denom);
    d.set_scaling_factor(factor).map_err(undecodable)?;
    let scaled = header.scaled(factor);
    let (w, h) = (scaled.width, scaled.height);
    let mut pixels = crate::cost::buffer(crate::cost::samples(w, h, channels)?, 0_u8)?;
    let out = turbojpeg::Image {
        pixels: pixels.as_mut_slice(),
        width: w,
        pitch: w * channels,
        height: h,
        format,
    };
    d.decompress(bytes, out).map_err(undecodable)?;
    // libjpeg rounds a scaled size up; the last row or column then stands for less than a
    // whole 1/denom of the source. libvips (and so sharp) drops it, and the resize centres the
    // region over what is left: the same here, so that both resample the same pixels.
    let (kw, kh) = (
        (header.width / denom).max(1),
        (header.height / denom).max(1),
    );
    if kw < w {
        for row in 1..kh {
            pixels.copy_within(
                row * w * channels..(row * w + kw) * channels,
                row * kw * channels,
            );
        }
    }
    pixels.truncate(kw * kh * channels);
    if cmyk {
        pixels = cmyk_to_srgb(bytes, pixels)?;
    }
    let img = RgbImage::from_raw(dim(kw)?, dim(kh)?, pixels)
        .ok_or_else(|| PipelineError::Undecodable("bad JPEG buffer size".into()))?;
    Ok((DynamicImage::ImageRgb8(img), 1.0 / denom as f64))
}

/// The header of a JPEG (size, colour space), read by libjpeg-turbo without decoding.
///
/// # Errors
/// [`PipelineError::Undecodable`]; see [`header_error`].
pub(super) fn header(bytes: &[u8]) -> Result<turbojpeg::DecompressHeader, PipelineError> {
    turbojpeg::read_header(bytes).map_err(header_error)
}

/// A header error of libjpeg-turbo, said plainly. When the markers end (or the file is cut)
/// before a frame header (SOF), TurboJPEG 3 reads the file as a "tables-only" stream and
/// reports success with no size; the `turbojpeg` crate then fails to convert that missing
/// size and says `integer value "width" overflowed`, which names neither the file nor the fault.
fn header_error(e: turbojpeg::Error) -> PipelineError {
    match e {
        turbojpeg::Error::IntegerOverflow(_) => PipelineError::Undecodable(
            "the JPEG header is corrupt or cut short: its markers end before the frame header \
             (SOF) that gives the picture's size"
                .into(),
        ),
        other => undecodable(other),
    }
}

/// sRGB pixels of a CMYK or YCCK JPEG's CMYK samples (see `colour::cmyk_to_srgb`: its embedded
/// CMYK profile, else libvips' built-in one). A file with an Adobe APP14 segment stores its
/// samples inverted (255 = no ink), as Photoshop writes them; libjpeg returns them as stored,
/// so they are turned back first, as libvips' `jpegload` does when it sees that segment.
fn cmyk_to_srgb(bytes: &[u8], mut cmyk: Vec<u8>) -> Result<Vec<u8>, PipelineError> {
    let adobe = segments(bytes).any(|(m, seg)| m == 0xEE && seg.starts_with(b"Adobe"));
    if adobe {
        for v in &mut cmyk {
            *v = 255 - *v;
        }
    }
    colour::cmyk_to_srgb(&cmyk, icc::jpeg_icc(bytes).as_deref())?.ok_or_else(|| {
        PipelineError::Undecodable("CMYK JPEG: its colour profile cannot be applied".into())
    })
}

/// The scaled-IDCT denominator (1, 2, 4 or 8) for a decode that must keep `min_scale` of the
/// full size: sharp's choice (`pipeline.cc`, shrink-on-load), the largest that fits, halved
/// when the shrink's integer part equals it (libjpeg's reduced IDCT at exactly the output
/// size aliases; one more Lanczos3 step does not).
fn denominator(min_scale: f64) -> usize {
    if min_scale.is_nan() || min_scale <= 0.0 {
        return 8;
    }
    let shrink = 1.0 / min_scale;
    let denom = [8usize, 4, 2]
        .into_iter()
        .find(|&den| shrink >= den as f64)
        .unwrap_or(1);
    if denom > 1 && shrink.floor() as usize == denom {
        return denom / 2;
    }
    denom
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jpeg_shrink_on_load_keeps_a_lanczos_step_as_sharp_does() {
        // 4032 -> 800 (5.04): 1/4; 4000 -> 1000 (exactly 4): 1/2, then a reduce by 2; a shrink
        // of 2.2 decodes whole, one of 3.3 at 1/2.
        let cases = [
            (800.0 / 4032.0, 4),
            (0.25, 2),
            (0.1, 8),
            (0.5, 1),
            (0.6, 1),
            (0.45, 1),
            (0.3, 2),
        ];
        for (scale, want) in cases {
            assert_eq!(denominator(scale), want, "scale {scale}");
        }
    }
}
