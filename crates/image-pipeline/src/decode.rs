//! Format sniffing, header probing and decoding.
//!
//! The format is always sniffed from the bytes (never taken from a name or a client's
//! Content-Type). Dimensions come from the header first so that decompression bombs are refused
//! before any pixel is decoded. JPEG goes through libjpeg-turbo with shrink-on-load (scaled
//! IDCT at 1/2, 1/4 or 1/8 when the output is small), still WebP through libwebp scaled on load
//! to the output size (as sharp does), HEIC/HEIF through libheif, the rest (and animated WebP)
//! through `image`. The result is always 8-bit sRGB or sRGBA (an embedded ICC profile is
//! converted, see `colour`), with EXIF orientation applied.

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageReader, RgbImage, metadata::Orientation};

use crate::colour;
use crate::error::PipelineError;
use crate::heif_boxes;
use crate::shrink::{self, BoxShrink};

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
        }
    }
}

const HEIF_BRANDS: &[&[u8; 4]] = &[
    b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs", b"mif1", b"msf1",
    b"mif2", b"avif", b"avis", b"miaf",
];

/// Recognises a supported image from its first bytes; `None` for anything else.
///
/// HEIF is recognised by any of its brands (major or compatible), not only `ftypheic`.
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
            let avif = major == b"avif" || major == b"avis";
            return Some(if avif {
                SourceFormat::Avif
            } else {
                SourceFormat::Heif
            });
        }
    }
    None
}

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

fn undecodable(e: impl std::fmt::Display) -> PipelineError {
    PipelineError::Undecodable(e.to_string())
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
            let h = turbojpeg::read_header(bytes).map_err(undecodable)?;
            (
                dim(h.width)?,
                dim(h.height)?,
                jpeg_orientation(bytes).unwrap_or(1),
            )
        }
        SourceFormat::Heif | SourceFormat::Avif => {
            let ctx = libheif_rs::HeifContext::read_from_bytes(bytes).map_err(undecodable)?;
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
            (handle.width(), handle.height(), 1)
        }
        SourceFormat::Png | SourceFormat::Gif | SourceFormat::Webp => {
            let mut decoder = generic_decoder(bytes)?;
            let (w, h) = decoder.dimensions();
            let o = decoder.orientation().map_or(1, orientation_to_exif);
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

fn dim(v: usize) -> Result<u32, PipelineError> {
    u32::try_from(v).map_err(|_| PipelineError::Undecodable("dimension overflow".into()))
}

fn generic_decoder(bytes: &[u8]) -> Result<Box<dyn ImageDecoder + '_>, PipelineError> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(undecodable)?;
    // The pixel limit is enforced from the header by `probe`; this only guards allocations.
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(2 * 1024 * 1024 * 1024);
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(undecodable)?;
    Ok(Box::new(decoder))
}

fn orientation_to_exif(o: Orientation) -> u8 {
    match o {
        Orientation::NoTransforms => 1,
        Orientation::FlipHorizontal => 2,
        Orientation::Rotate180 => 3,
        Orientation::FlipVertical => 4,
        Orientation::Rotate90FlipH => 5,
        Orientation::Rotate90 => 6,
        Orientation::Rotate270FlipH => 7,
        Orientation::Rotate270 => 8,
    }
}

/// The marker segments of a JPEG before its scan data, as (marker, payload after the length).
fn jpeg_segments(bytes: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut i = 2;
    std::iter::from_fn(move || {
        if i + 4 > bytes.len() || bytes[i] != 0xFF {
            return None;
        }
        let marker = bytes[i + 1];
        if marker == 0xDA || marker == 0xD9 {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]));
        let seg = bytes.get(i + 4..i + 2 + len)?;
        i += 2 + len;
        Some((marker, seg))
    })
}

/// EXIF orientation of a JPEG (tag 0x0112 of IFD0 in the APP1 `Exif` segment), 1..=8.
fn jpeg_orientation(bytes: &[u8]) -> Option<u8> {
    jpeg_segments(bytes)
        .find(|(m, seg)| *m == 0xE1 && seg.starts_with(b"Exif\0\0"))
        .and_then(|(_, seg)| tiff_orientation(&seg[6..]))
}

/// The ICC profile of a JPEG: the APP2 `ICC_PROFILE` chunks joined in their sequence order.
fn jpeg_icc(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut chunks: Vec<(u8, &[u8])> = jpeg_segments(bytes)
        .filter(|(m, seg)| *m == 0xE2 && seg.len() > 14 && seg.starts_with(b"ICC_PROFILE\0"))
        .map(|(_, seg)| (seg[12], &seg[14..]))
        .collect();
    chunks.sort_by_key(|&(seq, _)| seq);
    let icc: Vec<u8> = chunks
        .into_iter()
        .flat_map(|(_, data)| data)
        .copied()
        .collect();
    (!icc.is_empty()).then_some(icc)
}

fn tiff_orientation(t: &[u8]) -> Option<u8> {
    let le = match t.get(0..2)? {
        b"II" => true,
        b"MM" => false,
        _ => return None,
    };
    let u16_at = |o: usize| -> Option<u16> {
        let b = t.get(o..o + 2)?;
        Some(if le {
            u16::from_le_bytes([b[0], b[1]])
        } else {
            u16::from_be_bytes([b[0], b[1]])
        })
    };
    let u32_at = |o: usize| -> Option<u32> {
        let b = t.get(o..o + 4)?;
        Some(if le {
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        } else {
            u32::from_be_bytes([b[0], b[1], b[2], b[3]])
        })
    };
    let ifd = u32_at(4)? as usize;
    let count = usize::from(u16_at(ifd)?);
    (0..count)
        .map(|n| ifd + 2 + n * 12)
        .find(|&e| u16_at(e) == Some(0x0112))
        .and_then(|e| u16_at(e + 8))
        .and_then(|v| u8::try_from(v).ok())
        .filter(|v| (1..=8).contains(v))
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
            let (img, scale) = decode_jpeg(bytes, min_scale)?;
            (img, (scale, scale), jpeg_icc(bytes))
        }
        SourceFormat::Heif => decode_heif(bytes, min_scale)?,
        SourceFormat::Avif => {
            let (mut img, scale, icc) = decode_heif(bytes, min_scale)?;
            if heif_boxes::primary_av1_monochrome(bytes) && !heif_full_range(bytes) {
                expand_limited_range(&mut img);
            }
            (img, scale, icc)
        }
        SourceFormat::Png if shrink::factor(min_scale) > 1 && !png_interlaced(bytes) => {
            decode_png_shrunk(bytes, min_scale)?
        }
        SourceFormat::Webp => match still_webp(bytes) {
            Some(features) => {
                let (img, scale) = decode_webp(bytes, &features, min_scale)?;
                let icc = generic_decoder(bytes)?.icc_profile().ok().flatten();
                (img, scale, icc)
            }
            None => decode_generic(bytes)?,
        },
        SourceFormat::Png | SourceFormat::Gif => decode_generic(bytes)?,
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

/// Decodes whole through `image` (PNG, GIF's first frame, animated WebP's first frame), with
/// the embedded ICC profile.
fn decode_generic(bytes: &[u8]) -> Result<Decoded, PipelineError> {
    let mut decoder = generic_decoder(bytes)?;
    let icc = decoder.icc_profile().ok().flatten();
    let img = DynamicImage::from_decoder(decoder).map_err(undecodable)?;
    Ok((normalise(img), (1.0, 1.0), icc))
}

/// Converts any pixel layout to 8-bit RGB, or RGBA when there is an alpha channel.
pub(crate) fn normalise(img: DynamicImage) -> DynamicImage {
    match img {
        DynamicImage::ImageRgb8(_) | DynamicImage::ImageRgba8(_) => img,
        other if other.color().has_alpha() => DynamicImage::ImageRgba8(other.to_rgba8()),
        other => DynamicImage::ImageRgb8(other.to_rgb8()),
    }
}

/// Most scans a progressive JPEG may have, as libjpeg-turbo advises for untrusted input
/// (`djpeg -maxscans`; its report "Two Issues with the JPEG Standard"). Every scan passes over
/// the whole image, so a small file of thousands of scans costs minutes of CPU; encoders
/// write about 10.
const JPEG_MAX_SCANS: u32 = 500;

fn decode_jpeg(bytes: &[u8], min_scale: f64) -> Result<(DynamicImage, f64), PipelineError> {
    let mut d = turbojpeg::Decompressor::new().map_err(undecodable)?;
    d.set_scan_limit(JPEG_MAX_SCANS).map_err(undecodable)?;
    let header = d.read_header(bytes).map_err(undecodable)?;
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
    let denom = jpeg_denominator(min_scale);
    let factor = turbojpeg::ScalingFactor::new(1, denom);
    d.set_scaling_factor(factor).map_err(undecodable)?;
    let scaled = header.scaled(factor);
    let (w, h) = (scaled.width, scaled.height);
    let mut pixels = vec![0u8; w * h * channels];
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
        pixels = jpeg_cmyk_to_srgb(bytes, pixels)?;
    }
    let img = RgbImage::from_raw(dim(kw)?, dim(kh)?, pixels)
        .ok_or_else(|| PipelineError::Undecodable("bad JPEG buffer size".into()))?;
    Ok((DynamicImage::ImageRgb8(img), 1.0 / denom as f64))
}

/// sRGB pixels of a CMYK or YCCK JPEG's CMYK samples (see `colour::cmyk_to_srgb`: its embedded
/// CMYK profile, else libvips' built-in one). A file with an Adobe APP14 segment stores its
/// samples inverted (255 = no ink), as Photoshop writes them; libjpeg returns them as stored,
/// so they are turned back first, as libvips' `jpegload` does when it sees that segment.
fn jpeg_cmyk_to_srgb(bytes: &[u8], mut cmyk: Vec<u8>) -> Result<Vec<u8>, PipelineError> {
    let adobe = jpeg_segments(bytes).any(|(m, seg)| m == 0xEE && seg.starts_with(b"Adobe"));
    if adobe {
        for v in &mut cmyk {
            *v = 255 - *v;
        }
    }
    colour::cmyk_to_srgb(&cmyk, jpeg_icc(bytes).as_deref()).ok_or_else(|| {
        PipelineError::Undecodable("CMYK JPEG: its colour profile cannot be applied".into())
    })
}

/// The scaled-IDCT denominator (1, 2, 4 or 8) for a decode that must keep `min_scale` of the
/// full size: sharp's choice (`pipeline.cc`, shrink-on-load), the largest that fits, halved
/// when the shrink's integer part equals it (libjpeg's reduced IDCT at exactly the output
/// size aliases; one more Lanczos3 step does not).
fn jpeg_denominator(min_scale: f64) -> usize {
    if min_scale.is_nan() || min_scale <= 0.0 {
        return 8;
    }
    let shrink = 1.0 / min_scale;
    let denom = [8usize, 4, 2]
        .into_iter()
        .find(|&den| shrink >= den as f64)
        .unwrap_or(1);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if denom > 1 && shrink.floor() as usize == denom {
        return denom / 2;
    }
    denom
}

/// The header of a still WebP as libwebp reads it (size, alpha); `None` for an animation
/// (whose first frame the generic decoder composes) or a header libwebp cannot read.
fn still_webp(bytes: &[u8]) -> Option<libwebp_sys::WebPBitstreamFeatures> {
    // SAFETY: `features` is plain old data that WebPGetFeatures fills in; `bytes` is a valid
    // slice for its whole length, which libwebp reads no further than.
    #[allow(unsafe_code)]
    unsafe {
        let mut features = std::mem::zeroed::<libwebp_sys::WebPBitstreamFeatures>();
        let status = libwebp_sys::WebPGetFeatures(bytes.as_ptr(), bytes.len(), &raw mut features);
        (status == libwebp_sys::VP8StatusCode::VP8_STATUS_OK && features.has_animation == 0)
            .then_some(features)
    }
}

/// Decodes a still WebP (its `features` from [`still_webp`]) with libwebp, scaled on load to `min_scale` of its size when that is
/// below 1, as libvips' `webpload` does for sharp (`scale = 1 / shrink`, size
/// `round(size * scale)`, libwebp's own rescaler): a 9 MP photo for an 800 px output is never
/// held at full size. Returns the picture (RGB, or RGBA when the file has alpha) and its scale
/// per axis.
///
/// # Errors
/// [`PipelineError::Undecodable`] for a broken or truncated file.
fn decode_webp(
    bytes: &[u8],
    features: &libwebp_sys::WebPBitstreamFeatures,
    min_scale: f64,
) -> Result<(DynamicImage, (f64, f64)), PipelineError> {
    use libwebp_sys::{VP8StatusCode, WEBP_CSP_MODE, WebPDecoderConfig};
    let (w, h) = (features.width, features.height);
    if w <= 0 || h <= 0 {
        return Err(PipelineError::Undecodable("bad WebP size".into()));
    }
    let scale = if min_scale > 0.0 && min_scale < 1.0 {
        min_scale
    } else {
        1.0
    };
    // libvips' VIPS_RINT: round half away from zero.
    #[allow(clippy::cast_possible_truncation)]
    let scaled = |n: i32| ((f64::from(n) * scale).round() as i32).max(1);
    let (sw, sh) = (scaled(w), scaled(h));
    let alpha = features.has_alpha != 0;
    let channels: usize = if alpha { 4 } else { 3 };
    let (width, height) = (
        dim(sw.unsigned_abs() as usize)?,
        dim(sh.unsigned_abs() as usize)?,
    );
    let stride = width as usize * channels;
    let mut pixels = vec![0u8; stride * height as usize];
    // SAFETY: `config` is plain old data initialised by WebPInitDecoderConfig. The output
    // buffer is ours (`is_external_memory`), `stride * height` bytes for a `sw` x `sh` picture
    // of `channels` bytes per pixel, which is what libwebp writes for that size and mode; it
    // outlives the call, and libwebp keeps no pointer to it or to `bytes` after WebPDecode
    // returns (WebPFreeDecBuffer releases only what libwebp allocated itself: nothing here).
    #[allow(unsafe_code)]
    let status = unsafe {
        let mut config = std::mem::zeroed::<WebPDecoderConfig>();
        if !libwebp_sys::WebPInitDecoderConfig(&raw mut config) {
            return Err(PipelineError::Undecodable(
                "libwebp version mismatch".into(),
            ));
        }
        config.options.use_threads = 1;
        if (sw, sh) != (w, h) {
            config.options.use_scaling = 1;
            config.options.scaled_width = sw;
            config.options.scaled_height = sh;
        }
        config.output.colorspace = if alpha {
            WEBP_CSP_MODE::MODE_RGBA
        } else {
            WEBP_CSP_MODE::MODE_RGB
        };
        config.output.is_external_memory = 1;
        config.output.u.RGBA.rgba = pixels.as_mut_ptr();
        config.output.u.RGBA.stride = i32::try_from(stride).unwrap_or(i32::MAX);
        config.output.u.RGBA.size = pixels.len();
        let status = libwebp_sys::WebPDecode(bytes.as_ptr(), bytes.len(), &raw mut config);
        libwebp_sys::WebPFreeDecBuffer(&raw mut config.output);
        status
    };
    if status != VP8StatusCode::VP8_STATUS_OK {
        return Err(PipelineError::Undecodable(format!("WebP: {status:?}")));
    }
    let img = if alpha {
        image::RgbaImage::from_raw(width, height, pixels).map(DynamicImage::ImageRgba8)
    } else {
        RgbImage::from_raw(width, height, pixels).map(DynamicImage::ImageRgb8)
    }
    .ok_or_else(|| PipelineError::Undecodable("bad WebP buffer size".into()))?;
    let scale = (f64::from(sw) / f64::from(w), f64::from(sh) / f64::from(h));
    Ok((img, scale))
}

/// One HEIF decode at a time per process. libheif 1.15 decodes the whole image (every grid tile
/// pasted into one full-size planar RGB picture: 36 MB for a 12 MP photo, whatever the output
/// size, plus the tile decoders), so two at once alone pass an 85 MB budget. libheif spreads the
/// tiles of one image over several threads itself, so on a small machine little throughput is
/// lost.
static HEIF_GATE: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
fn decode_heif(bytes: &[u8], min_scale: f64) -> Result<Decoded, PipelineError> {
    use libheif_rs::{ColorSpace, HeifContext, LibHeif, RgbChroma};
    let _one_at_a_time = HEIF_GATE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let lib = LibHeif::new();
    let ctx = HeifContext::read_from_bytes(bytes).map_err(undecodable)?;
    let handle = ctx.primary_image_handle().map_err(undecodable)?;
    let alpha = handle.has_alpha_channel();
    let icc = heif_icc(&handle);
    let planar = handle.luma_bits_per_pixel() == 8 && handle.chroma_bits_per_pixel() == 8;
    // libheif 1.15 refuses to mirror (`imir`) an image deeper than 8 bits ("Can currently only
    // mirror images with 8 bits per pixel"): such an image is decoded untransformed, whole,
    // and its clap/irot/imir applied here after the reduction to 8 bits, in the item's order.
    let own_transforms = if planar {
        Vec::new()
    } else {
        let t = heif_boxes::primary_transforms(bytes);
        if t.iter()
            .any(|t| matches!(t, heif_boxes::ItemTransform::Mirror(_)))
        {
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
    let decoded = lib
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
        let mut shrink = BoxShrink::new(r.width, r.height, channels, k);
        let mut row = vec![0u8; width * channels];
        for y in 0..r.height as usize {
            let sources = [Some(&r), Some(&g), Some(&b), a.as_ref()];
            for (c, plane) in sources.into_iter().take(channels).enumerate() {
                let plane = plane.ok_or_else(short)?;
                let src = plane_row(plane, y)
                    .and_then(|s| s.get(..width))
                    .ok_or_else(short)?;
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
        let row = plane.width as usize * channels;
        let mut shrink = BoxShrink::new(plane.width, plane.height, channels, k);
        for y in 0..plane.height as usize {
            let start = y * plane.stride;
            shrink.push(plane.data.get(start..start + row).ok_or_else(short)?);
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
    let scale = 1.0 / k as f64;
    Ok((img, (scale, scale), icc))
}

/// Whether the primary image says its samples use the full range (`colr` nclx
/// `full_range_flag`). Without an nclx box the AV1 default, limited (studio) range, holds.
fn heif_full_range(bytes: &[u8]) -> bool {
    libheif_rs::HeifContext::read_from_bytes(bytes)
        .ok()
        .and_then(|ctx| ctx.primary_image_handle().ok())
        .and_then(|h| h.color_profile_nclx())
        .is_some_and(|nclx| nclx.full_range_flag() != 0)
}

/// Stretches limited-range grey (16 black, 235 white, in 8 bits) to full range, in place,
/// alpha untouched. libheif 1.15 turns a monochrome AV1 image into RGB by copying its luma
/// whatever the range (libheif 1.20, and so sharp, and libavif expand it); without this a
/// grey AVIF comes out washed out (black at 16). 10- and 12-bit images are narrowed to 8 bits
/// by libheif first, so they are within one level of an expansion at full depth.
fn expand_limited_range(img: &mut DynamicImage) {
    let lut: [u8; 256] = std::array::from_fn(|v| {
        let full = (v as f64 - 16.0) * 255.0 / 219.0;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let full = full.round().clamp(0.0, 255.0) as u8;
        full
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

/// Row `r` of a libheif plane (and whatever follows it in the buffer).
fn plane_row<'a>(p: &libheif_rs::Plane<&'a [u8]>, r: usize) -> Option<&'a [u8]> {
    p.data.get(r * p.stride..)
}

/// True for an Adam7-interlaced PNG (byte 28 of the IHDR chunk), whose rows do not arrive in
/// order: those are decoded whole.
fn png_interlaced(bytes: &[u8]) -> bool {
    bytes.get(28).is_some_and(|&b| b != 0)
}

/// A PNG reader with 8-bit output, its size, samples per pixel and ICC profile.
struct PngRows<'a> {
    reader: png::Reader<Cursor<&'a [u8]>>,
    width: u32,
    height: u32,
    channels: usize,
    icc: Option<Vec<u8>>,
}

fn png_rows(bytes: &[u8]) -> Result<PngRows<'_>, PipelineError> {
    let mut decoder = png::Decoder::new_with_limits(
        Cursor::new(bytes),
        png::Limits {
            bytes: 256 * 1024 * 1024,
        },
    );
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let reader = decoder.read_info().map_err(undecodable)?;
    let (width, height) = (reader.info().width, reader.info().height);
    let icc = reader.info().icc_profile.as_ref().map(|p| p.to_vec());
    let channels = match reader.output_color_type().0 {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb | png::ColorType::Indexed => 3,
        png::ColorType::Rgba => 4,
    };
    Ok(PngRows {
        reader,
        width,
        height,
        channels,
        icc,
    })
}

/// Where finished rows go when they are streamed on rather than kept.
type RowSink<'s> = &'s mut dyn FnMut(&[u8]);

/// Reads every row into `shrink`, converting RGB and RGBA rows from the ICC profile to sRGB
/// first (libvips converts before it shrinks), and checks that no row is missing.
fn read_png_rows(
    png: &mut PngRows<'_>,
    shrink: &mut BoxShrink,
    mut sink: Option<RowSink<'_>>,
) -> Result<(), PipelineError> {
    let converter = if png.channels >= 3 {
        colour::RowConverter::new(png.icc.as_deref(), png.channels == 4)
    } else {
        None
    };
    let mut converted = Vec::new();
    let mut rows = 0u32;
    while let Some(row) = png.reader.next_row().map_err(undecodable)? {
        match &converter {
            Some(c) => {
                converted.clear();
                converted.extend_from_slice(row.data());
                c.convert(&mut converted);
                shrink.push(&converted);
            }
            None => shrink.push(row.data()),
        }
        if let Some(sink) = sink.as_mut() {
            shrink.drain_rows(*sink);
        }
        rows += 1;
    }
    if rows != png.height {
        return Err(PipelineError::Undecodable(format!(
            "PNG ended after {rows} of {} rows",
            png.height
        )));
    }
    if let Some(sink) = sink {
        shrink.flush();
        shrink.drain_rows(sink);
    }
    Ok(())
}

/// Streams a PNG into `sink` as sRGB RGB rows averaged down by `k` (libvips' `shrinkv`),
/// holding one source row at a time; `false` without reading any row when the PNG is
/// interlaced or has alpha or is grey (the caller decodes it whole instead).
///
/// # Errors
/// [`PipelineError::Undecodable`] for truncated or corrupt data.
pub(crate) fn stream_png_rows(
    bytes: &[u8],
    k: usize,
    sink: &mut dyn FnMut(&[u8]),
) -> Result<bool, PipelineError> {
    if png_interlaced(bytes) {
        return Ok(false);
    }
    let mut png = png_rows(bytes)?;
    if png.channels != 3 {
        return Ok(false);
    }
    let mut shrink = BoxShrink::rows_only(png.width, png.height, 3, k);
    read_png_rows(&mut png, &mut shrink, Some(sink))?;
    Ok(true)
}

/// Decodes a non-interlaced PNG row by row into a box shrinker that averages rows (see
/// `shrink`), so that only the shrunk image is ever held; returns it with its scale per axis
/// (1 across), already converted to sRGB (so with no profile left to apply).
fn decode_png_shrunk(bytes: &[u8], min_scale: f64) -> Result<Decoded, PipelineError> {
    let mut png = png_rows(bytes)?;
    let k = shrink::factor(min_scale);
    let mut shrink = BoxShrink::rows_only(png.width, png.height, png.channels, k);
    read_png_rows(&mut png, &mut shrink, None)?;
    let img = shrink
        .finish()
        .ok_or_else(|| PipelineError::Undecodable("bad PNG buffer size".into()))?;
    // Already in sRGB: the rows were converted before they were averaged.
    Ok((img, (1.0, 1.0 / k as f64), None))
}

fn heif_icc(handle: &libheif_rs::ImageHandle) -> Option<Vec<u8>> {
    if let Some(raw) = handle.color_profile_raw()
        && raw.data.len() > 128
    {
        return Some(raw.data);
    }
    let nclx = handle.color_profile_nclx()?;
    let primaries = nclx.color_primaries() as u8;
    // 1 (BT.709), 2 (unspecified) and 0 (reserved) are sRGB's primaries or nothing said.
    if primaries <= 2 {
        return None;
    }
    // Only the primaries and the transfer matter (libheif already turned YCbCr into RGB). Still
    // images that say "unspecified" or a BT.709-family video curve are treated as sRGB-encoded,
    // as browsers do.
    let transfer = match nclx.transfer_characteristics() as u8 {
        0..=3 | 6 | 14 | 15 => moxcms::TransferCharacteristics::Srgb,
        t => moxcms::TransferCharacteristics::try_from(t).ok()?,
    };
    let cicp = moxcms::CicpProfile {
        color_primaries: moxcms::CicpColorPrimaries::try_from(primaries).ok()?,
        transfer_characteristics: transfer,
        matrix_coefficients: moxcms::MatrixCoefficients::Identity,
        full_range: true,
    };
    moxcms::ColorProfile::new_from_cicp(cicp).encode().ok()
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
            assert_eq!(jpeg_denominator(scale), want, "scale {scale}");
        }
    }

    #[test]
    fn text_is_not_an_image() {
        assert_eq!(sniff(b"hello, world"), None);
        assert!(matches!(
            probe(b"hello", 100),
            Err(PipelineError::NotAnImage)
        ));
    }

    #[test]
    fn exif_orientation_is_read_from_big_and_little_endian_tiff() {
        // IFD0 with one entry: Orientation (0x0112), SHORT, count 1, value 6.
        let le = [
            b'I', b'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0,
        ];
        assert_eq!(tiff_orientation(&le), Some(6));
        let be = [
            b'M', b'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 8, 0, 0,
        ];
        assert_eq!(tiff_orientation(&be), Some(8));
    }
}
