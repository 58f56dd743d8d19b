//! HEIC, HEIF and AVIF through libheif 1.15: the header size, and the decode of the primary
//! image, with the rules every libheif call here keeps.
//!
//! 1. libheif is initialised once for the process ([`libheif`]) and never deinitialised:
//!    `heif_init` and `heif_deinit` keep an unsynchronised count in libheif 1.15, and the call
//!    that brings it to zero unregisters every decoder and encoder plugin, which a `LibHeif` made
//!    and dropped per decode did on every decode while other threads read files with libheif.
//! 2. Decoding options reach libheif intact: libheif-rs 0.20.0 freed them before libheif read
//!    them, so `ignore_transformations` (which deep mirrored images need, see [`decode`]) was
//!    random and such an upload was refused about one time in eight; the workspace uses a
//!    patched copy (third_party/libheif-rs/PATCHED.md, tests/libheif_threads.rs).
//! 3. One decode at a time ([`HEIF_GATE`]): see there. Reading a file's boxes (the header size)
//!    holds no pixel and does not wait for it.

use std::sync::LazyLock;

use image::DynamicImage;

use super::{Decoded, SourceFormat, icc, undecodable};
use crate::error::PipelineError;
use crate::shrink::{self, BoxShrink};
use crate::{cost, heif_boxes};

/// libheif, initialised for the life of the process (rule 1 above).
static LIBHEIF: LazyLock<libheif_rs::LibHeif> = LazyLock::new(libheif_rs::LibHeif::new);

/// The process's libheif, initialised on first use. Everything in this crate that calls
/// libheif (tests and samples included) goes through it or [`context`], never through a
/// `LibHeif` of its own.
pub(crate) fn libheif() -> &'static libheif_rs::LibHeif {
    &LIBHEIF
}

/// A libheif context over `bytes` (the boxes parsed, nothing decoded), with libheif initialised.
///
/// # Errors
/// [`PipelineError::Undecodable`] when libheif cannot read the boxes.
pub(crate) fn context(bytes: &[u8]) -> Result<libheif_rs::HeifContext<'_>, PipelineError> {
    LazyLock::force(&LIBHEIF);
    libheif_rs::HeifContext::read_from_bytes(bytes).map_err(undecodable)
}

/// The size of the primary image (after its own `irot`/`clap`, as libheif reports it), from the
/// file's boxes, without decoding. Refuses what libheif would allocate beyond
/// `max_source_pixels` whatever the primary image's `ispe` says.
///
/// # Errors
/// [`PipelineError::Unsupported`] for what libheif 1.15 cannot decode, named
/// ([`refuse_unsupported`]), [`PipelineError::Undecodable`] for broken boxes or a grid of tiny
/// tiles, [`PipelineError::TooManyPixels`] for a derived canvas above the limit.
pub(super) fn header_size(
    bytes: &[u8],
    max_source_pixels: u64,
) -> Result<(u32, u32), PipelineError> {
    refuse_unsupported(bytes)?;
    let ctx = context(bytes)?;
    let handle = ctx.primary_image_handle().map_err(undecodable)?;
    // libheif allocates a grid's or overlay's canvas from the item's data, whatever
    // `ispe` (the handle's size) says, for the primary image and for the items it
    // decodes with it (an alpha plane): the limit holds for those canvases too.
    let declared = u64::from(handle.width()) * u64::from(handle.height());
    for canvas in heif_boxes::derived_canvases(bytes) {
        let (w, h) = (canvas.width, canvas.height);
        let pixels = u64::from(w) * u64::from(h);
        // (A primary canvas that agrees with `ispe` is checked below, which names the
        // upright size, as for any file.)
        if pixels > max_source_pixels && (pixels > declared || !canvas.primary) {
            return Err(PipelineError::TooManyPixels {
                width: w.into(),
                height: h.into(),
                limit: max_source_pixels,
            });
        }
        if let (true, Some((rows, columns))) = (canvas.has_too_many_tiles(), canvas.grid) {
            return Err(PipelineError::Undecodable(format!(
                "a grid of {rows} x {columns} tiles for a {w}x{h} canvas: tiles under 64 pixels (MIAF allows none)"
            )));
        }
    }
    let (mut width, mut height) = (handle.width(), handle.height());
    // Transformations libheif ignores (listed before `ispe`) are applied by [`decode`]: the
    // shown size is theirs.
    if heif_boxes::transforms_precede_ispe(bytes) {
        for t in heif_boxes::primary_transforms(bytes) {
            match t {
                heif_boxes::ItemTransform::Rotate(1 | 3) => (width, height) = (height, width),
                crop @ heif_boxes::ItemTransform::Crop { .. } => {
                    if let Some((_, _, w, h)) = crop.crop_rect(width, height) {
                        (width, height) = (w, h);
                    }
                }
                _ => {}
            }
        }
    }
    Ok((width, height))
}

/// Refuses, with the reason, the HEIF and AVIF files that libheif 1.15 would refuse with an
/// error about their boxes: a compact file (a `mini` box instead of `meta`: "no meta box"), and
/// a primary image coded as H.264, JPEG, JPEG 2000 or uncompressed, for which libheif 1.15 has no
/// decoder and so no image item ("Non-existing item ID referenced: 'pitm' box").
///
/// # Errors
/// [`PipelineError::Unsupported`] naming the layout or the coding (415,
/// docs/image-service.md §7 `unsupported_image`).
fn refuse_unsupported(bytes: &[u8]) -> Result<(), PipelineError> {
    if heif_boxes::is_compact(bytes) {
        return Err(PipelineError::Unsupported(
            "a compact HEIF/AVIF file (a `mini` box, brand mif3): the HEIF decoder here \
             (libheif 1.15) reads files with a `meta` box only; save it as a regular HEIF/AVIF"
                .into(),
        ));
    }
    if let Some(coding) = heif_boxes::unsupported_coding(bytes) {
        return Err(PipelineError::Unsupported(format!(
            "a HEIF image coded as {coding}: HEIF images are decoded here when coded as HEVC \
             (HEIC) or AV1 (AVIF) only"
        )));
    }
    Ok(())
}

/// One HEIF decode at a time per process. libheif 1.15 decodes the whole image (every grid tile
/// pasted into one full-size planar RGB picture: 36 MB for a 12 MP photo, whatever the output
/// size, plus the tile decoders), so two at once alone pass an 85 MB budget. libheif spreads the
/// tiles of one image over several threads itself, so on a small machine little throughput is
/// lost.
static HEIF_GATE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Waits for and holds [`HEIF_GATE`] until the guard is dropped (a panic in an earlier decode
/// does not close it).
pub(crate) fn hold_gate() -> std::sync::MutexGuard<'static, ()> {
    HEIF_GATE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Decodes the primary image of a HEIF file, box-shrunk for `min_scale` as it is copied out of
/// libheif's buffer; returns it with its scale and ICC profile (from an ICC `colr` box, or built
/// from an nclx `colr` box whose primaries are not sRGB's).
///
/// 8-bit images are taken as libheif's planar RGB (4:4:4, plus an alpha plane when there is
/// one) and interleaved here row by row. libheif 1.15 converts every coded image, and pastes
/// every grid tile, into that layout itself; asking for anything else adds a full-size
/// conversion after it (YCbCr 4:2:0 out: a float pass and an 18 MB buffer for a 12 MP photo,
/// then our pass back to RGB; interleaved RGB: a 36 MB copy). Deeper images are asked for as
/// interleaved 8-bit RGB(A), which libheif reduces.
///
/// For an AVIF (`format`) whose primary image is monochrome and in limited range, the grey is
/// expanded to full range ([`expand_limited_range`]).
///
/// The buffers made here at the image's size (the interleaved row, the shrinker's) are sized
/// with checked arithmetic and reserved fallibly; libheif's own planes are bounded by the cost
/// model.
///
/// # Errors
/// [`PipelineError::Undecodable`] for a file libheif cannot decode or a plane shorter than its
/// size; [`PipelineError::Encode`] when a buffer's size overflows or cannot be reserved.
pub(super) fn decode(
    bytes: &[u8],
    format: SourceFormat,
    min_scale: f64,
) -> Result<Decoded, PipelineError> {
    use libheif_rs::{ColorSpace, RgbChroma};
    let _one_at_a_time = hold_gate();
    let ctx = context(bytes)?;
    let handle = ctx.primary_image_handle().map_err(undecodable)?;
    // Without an nclx `colr` box, the AV1 default (limited range) holds.
    let expand = format == SourceFormat::Avif
        && heif_boxes::primary_av1_monochrome(bytes)
        && handle
            .color_profile_nclx()
            .is_none_or(|nclx| nclx.full_range_flag() == 0);
    let alpha = handle.has_alpha_channel();
    let icc = icc::heif_icc(&handle);
    let planar = handle.luma_bits_per_pixel() == 8 && handle.chroma_bits_per_pixel() == 8;
    // libheif 1.15 refuses to mirror (`imir`) an image deeper than 8 bits ("Can currently only
    // mirror images with 8 bits per pixel"), and ignores the transformations a file lists
    // before its `ispe` (heif_boxes::transforms_precede_ispe): such an image is decoded
    // untransformed, whole, and its clap/irot/imir applied here, in the item's order.
    let own_transforms = {
        let t = heif_boxes::primary_transforms(bytes);
        let deep_mirror = !planar
            && t.iter()
                .any(|t| matches!(t, heif_boxes::ItemTransform::Mirror(_)));
        if deep_mirror || heif_boxes::transforms_precede_ispe(bytes) {
            t
        } else {
            Vec::new()
        }
    };
    let k = if own_transforms.is_empty() {
        shrink::factor(min_scale)
    } else {
        1
    };
    // libheif's defaults (transformations applied) unless we apply them.
    let options = if own_transforms.is_empty() {
        None
    } else {
        let mut options = libheif_rs::DecodingOptions::new();
        if let Some(o) = options.as_mut() {
            o.set_ignore_transformations(true);
        }
        options
    };
    let colour_space = if planar {
        ColorSpace::Rgb(RgbChroma::C444)
    } else if alpha {
        ColorSpace::Rgb(RgbChroma::Rgba)
    } else {
        ColorSpace::Rgb(RgbChroma::Rgb)
    };
    let decoded = libheif()
        .decode(&handle, colour_space, options)
        .map_err(undecodable)?;
    let short = || PipelineError::Undecodable("short HEIF plane".into());
    let planes = decoded.planes();
    let channels = if alpha { 4 } else { 3 };
    let img = if let (Some(r), Some(g), Some(b)) = (planes.r, planes.g, planes.b) {
        let a = if alpha {
            Some(planes.a.ok_or_else(short)?)
        } else {
            None
        };
        let width = r.width as usize;
        let mut shrink = BoxShrink::new(r.width, r.height, channels, k)?;
        let mut row = cost::buffer(cost::samples(width, 1, channels)?, 0_u8)?;
        for y in 0..r.height as usize {
            let sources = [Some(&r), Some(&g), Some(&b), a.as_ref()];
            for (c, plane) in sources.into_iter().take(channels).enumerate() {
                let plane = plane.ok_or_else(short)?;
                let src = plane_row(plane, y, width).ok_or_else(short)?;
                for (px, &v) in row.chunks_exact_mut(channels).zip(src) {
                    px[c] = v;
                }
            }
            shrink.push(&row);
        }
        shrink.finish()
    } else {
        let plane = planes.interleaved.ok_or_else(|| {
            PipelineError::Undecodable("libheif returned no interleaved plane".into())
        })?;
        let row = cost::samples(plane.width as usize, 1, channels)?;
        let mut shrink = BoxShrink::new(plane.width, plane.height, channels, k)?;
        for y in 0..plane.height as usize {
            shrink.push(plane_row(&plane, y, row).ok_or_else(short)?);
        }
        shrink.finish()
    };
    let mut img = img.ok_or_else(|| PipelineError::Undecodable("bad HEIF buffer size".into()))?;
    for t in own_transforms {
        img = match t {
            heif_boxes::ItemTransform::Rotate(1) => img.rotate270(),
            heif_boxes::ItemTransform::Rotate(2) => img.rotate180(),
            heif_boxes::ItemTransform::Rotate(3) => img.rotate90(),
            heif_boxes::ItemTransform::Mirror(0) => img.flipv(),
            heif_boxes::ItemTransform::Mirror(_) => img.fliph(),
            crop @ heif_boxes::ItemTransform::Crop { .. } => {
                let (l, t, w, h) = crop
                    .crop_rect(img.width(), img.height())
                    .ok_or_else(|| PipelineError::Undecodable("bad HEIF clean aperture".into()))?;
                img.crop_imm(l, t, w, h)
            }
            heif_boxes::ItemTransform::Rotate(_) => img,
        };
    }
    if expand {
        expand_limited_range(&mut img);
    }
    let scale = 1.0 / k as f64;
    Ok((img, (scale, scale), icc))
}

/// Stretches limited-range grey (16 black, 235 white, in 8 bits) to full range, in place,
/// alpha untouched. libheif 1.15 turns a monochrome AV1 image into RGB by copying its luma
/// whatever the range (libheif 1.20, and so sharp, and libavif expand it); without this a
/// grey AVIF comes out washed out (black at 16). 10- and 12-bit images are narrowed to 8 bits
/// by libheif first, so they are within one level of an expansion at full depth.
fn expand_limited_range(img: &mut DynamicImage) {
    let lut: [u8; 256] = std::array::from_fn(|v| {
        let full = (v as f64 - 16.0) * 255.0 / 219.0;

        full.round().clamp(0.0, 255.0) as u8
    });
    let (buf, channels): (&mut [u8], usize) = match img {
        DynamicImage::ImageRgb8(b) => (b.as_mut(), 3),
        DynamicImage::ImageRgba8(b) => (b.as_mut(), 4),
        _ => return,
    };
    for px in buf.chunks_exact_mut(channels) {
        for v in &mut px[..3] {
            *v = lut[usize::from(*v)];
        }
    }
}

/// The first `len` bytes of row `r` of a libheif plane; `None` when the plane's buffer is
/// shorter, or the row's offset (`r * stride`) or end overflows.
fn plane_row<'a>(p: &libheif_rs::Plane<&'a [u8]>, r: usize, len: usize) -> Option<&'a [u8]> {
    let start = r.checked_mul(p.stride)?;
    p.data.get(start..start.checked_add(len)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plane_row_past_usize_is_missing_not_a_panic() {
        let data = [1_u8, 2, 3, 4, 5, 6, 7, 8];
        let plane = |stride: usize| libheif_rs::Plane {
            data: &data[..],
            width: 3,
            height: 2,
            stride,
            bits_per_pixel: 8,
            storage_bits_per_pixel: 8,
        };
        assert_eq!(plane_row(&plane(4), 1, 3), Some(&[5_u8, 6, 7][..]));
        assert_eq!(plane_row(&plane(4), 1, 5), None);
        // A stride whose row offset overflows usize, and a length whose end does.
        assert_eq!(plane_row(&plane(usize::MAX / 2), 3, 1), None);
        assert_eq!(plane_row(&plane(4), 1, usize::MAX), None);
    }
}
