//! What a stored image is, read from its header and metadata without decoding a pixel
//! (`GET /images/info/{path}`, docs/image-service.md §4, Info): format, size as libvips
//! reports it, EXIF orientation, frames, alpha, the ICC profile's name, and the EXIF fields a
//! CMS shows. The fields are those of libvips' `vipsheader` and exiftool for the same file
//! (tests/info.rs compares with their committed answers).

use std::io::Cursor;

use serde::Serialize;

use crate::PipelineError;
use crate::decode::{self, SourceFormat};

/// The answer of the info endpoint (its JSON in camelCase, as the upload answer's).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageInfo {
    /// `jpeg`, `png`, `gif`, `webp`, `heif`, `avif`, `tiff` or `svg`.
    pub format: &'static str,
    /// Media type of the format (`image/jpeg`...).
    pub content_type: &'static str,
    /// Width in pixels as stored (HEIF/AVIF: after their own `irot`/`clap`, as libheif and
    /// libvips give it), before EXIF orientation.
    pub width: u32,
    /// Height in pixels, as `width`.
    pub height: u32,
    /// EXIF orientation 1..=8 (1 when absent); resizing applies it.
    pub orientation: u8,
    /// Frames of an animation (GIF, WebP, APNG) or images of a HEIF sequence or burst; 1 for
    /// a still.
    pub frames: u32,
    /// Whether the image has an alpha channel (or a transparent colour, for GIF and PNG).
    pub alpha: bool,
    /// The embedded ICC profile's description (`Display P3`), when there is one.
    pub icc_profile: Option<String>,
    /// Size of the stored file in bytes.
    pub size: u64,
    /// EXIF fields, those present.
    pub exif: ExifFields,
}

/// The EXIF fields a CMS shows, in exiftool's units (`-n`): seconds, f-number, millimetres,
/// signed decimal degrees.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExifFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub make: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lens_model: Option<String>,
    /// `YYYY:MM:DD HH:MM:SS`, as EXIF writes it (no time zone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date_time_original: Option<String>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure_time: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub f_number: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iso: Option<u32>,
    /// Millimetres.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focal_length: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artist: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copyright: Option<String>,
    /// Degrees, north positive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gps_latitude: Option<f64>,
    /// Degrees, east positive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gps_longitude: Option<f64>,
}

/// Reads what `bytes` is. No pixel is decoded and no size limit applies: a picture too large
/// to resize can still be described.
///
/// # Errors
/// [`PipelineError::NotAnImage`] for bytes of no supported format, [`PipelineError::Undecodable`]
/// for a broken header.
pub fn info(bytes: &[u8]) -> Result<ImageInfo, PipelineError> {
    let probed = decode::probe(bytes, u64::MAX)?;
    let (frames, alpha, icc) = match probed.format {
        SourceFormat::Jpeg => (1, false, decode::icc::jpeg_icc(bytes)),
        SourceFormat::Png => png_facts(bytes)?,
        SourceFormat::Gif => gif_facts(bytes),
        SourceFormat::Webp => webp_facts(bytes),
        SourceFormat::Heif | SourceFormat::Avif => heif_facts(bytes)?,
        SourceFormat::Tiff => tiff_facts(bytes)?,
        // A drawing: one frame on a transparent canvas, colours in sRGB by definition.
        SourceFormat::Svg => (1, true, None),
    };
    Ok(ImageInfo {
        format: format_name(probed.format),
        content_type: probed.format.mime(),
        width: probed.width,
        height: probed.height,
        orientation: probed.orientation,
        frames,
        alpha,
        icc_profile: icc.as_deref().and_then(profile_description),
        size: bytes.len() as u64,
        exif: exif_fields(bytes),
    })
}

fn format_name(format: SourceFormat) -> &'static str {
    match format {
        SourceFormat::Jpeg => "jpeg",
        SourceFormat::Png => "png",
        SourceFormat::Gif => "gif",
        SourceFormat::Webp => "webp",
        SourceFormat::Heif => "heif",
        SourceFormat::Avif => "avif",
        SourceFormat::Tiff => "tiff",
        SourceFormat::Svg => "svg",
    }
}

/// The first image's alpha and ICC profile, from the TIFF's first directory (the image that
/// resizing reads; further pages are not counted).
fn tiff_facts(bytes: &[u8]) -> Result<Facts, PipelineError> {
    use image::ImageDecoder;
    let mut decoder = image::codecs::tiff::TiffDecoder::new(Cursor::new(bytes))
        .map_err(|e| PipelineError::Undecodable(e.to_string()))?;
    let alpha = decoder.color_type().has_alpha();
    let icc = decoder.icc_profile().ok().flatten();
    Ok((1, alpha, icc))
}

pub(crate) type Facts = (u32, bool, Option<Vec<u8>>);

/// Frames (`acTL`), alpha (an alpha colour type or `tRNS`) and the `iCCP` profile, from the
/// chunks before the first `IDAT`.
fn png_facts(bytes: &[u8]) -> Result<Facts, PipelineError> {
    let reader = png::Decoder::new(Cursor::new(bytes))
        .read_info()
        .map_err(|e| PipelineError::Undecodable(e.to_string()))?;
    let info = reader.info();
    let frames = info.animation_control.map_or(1, |a| a.num_frames.max(1));
    let alpha = info.color_type.samples() % 2 == 0 || info.trns.is_some();
    Ok((frames, alpha, info.icc_profile.as_ref().map(|p| p.to_vec())))
}

/// Frames (image descriptors) and whether any graphic control extension names a transparent
/// colour, by walking the blocks without decompressing them. A truncated file counts what
/// it holds.
pub(crate) fn gif_facts(bytes: &[u8]) -> Facts {
    let mut frames = 0;
    let mut alpha = false;
    let colour_table = |flags: u8| {
        if flags & 0x80 != 0 {
            3usize << ((flags & 7) + 1)
        } else {
            0
        }
    };
    // Header (6), logical screen descriptor (7), global colour table.
    let mut at = 13 + bytes.get(10).map_or(0, |&f| colour_table(f));
    // Skips data sub-blocks from `at`; returns the position after the terminator.
    let skip_blocks = |mut at: usize| -> Option<usize> {
        loop {
            let len = usize::from(*bytes.get(at)?);
            at += 1 + len;
            if len == 0 {
                return Some(at);
            }
        }
    };
    while let Some(&block) = bytes.get(at) {
        match block {
            0x21 => {
                let label = bytes.get(at + 1).copied();
                if label == Some(0xF9) && bytes.get(at + 3).is_some_and(|f| f & 1 != 0) {
                    alpha = true;
                }
                let Some(next) = skip_blocks(at + 2) else {
                    break;
                };
                at = next;
            }
            0x2C => {
                frames += 1;
                let flags = bytes.get(at + 9).copied().unwrap_or(0);
                // Descriptor (10), local colour table, LZW minimum code size (1), data.
                let Some(next) = skip_blocks(at + 10 + colour_table(flags) + 1) else {
                    break;
                };
                at = next;
            }
            _ => break, // 0x3B trailer, or garbage after the image
        }
    }
    (frames.max(1), alpha, None)
}

/// Frames (`ANMF` chunks), alpha (the `VP8X` flag, an `ALPH` chunk, or a lossless stream's
/// alpha bit) and the `ICCP` chunk, by walking the RIFF chunks.
pub(crate) fn webp_facts(bytes: &[u8]) -> Facts {
    let mut frames = 0;
    let mut alpha = false;
    let mut icc = None;
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let len = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])
            as usize;
        let body = &bytes[at + 8..(at + 8).saturating_add(len).min(bytes.len())];
        match id {
            b"VP8X" => alpha |= body.first().is_some_and(|f| f & 0x10 != 0),
            b"ANMF" => frames += 1,
            b"ALPH" => alpha = true,
            b"ICCP" => icc = Some(body.to_vec()),
            // Lossless: signature 0x2f, then 14-bit width and height, then the alpha bit.
            b"VP8L" => alpha |= body.len() >= 5 && body[0] == 0x2f && body[4] & 0x10 != 0,
            _ => {}
        }
        // Chunks are padded to an even length.
        at = at
            .saturating_add(8)
            .saturating_add(len)
            .saturating_add(len & 1);
    }
    (frames.max(1), alpha, icc)
}

/// Images of the file (a sequence, a burst), the primary image's alpha and its ICC profile,
/// from libheif's parse of the boxes.
fn heif_facts(bytes: &[u8]) -> Result<Facts, PipelineError> {
    let ctx = decode::heif::context(bytes)?;
    let handle = ctx
        .primary_image_handle()
        .map_err(|e| PipelineError::Undecodable(e.to_string()))?;
    let frames = u32::try_from(ctx.number_of_top_level_images()).unwrap_or(u32::MAX);
    let icc = handle
        .color_profile_raw()
        .map(|raw| raw.data)
        .filter(|d| d.len() > 128);
    Ok((frames.max(1), handle.has_alpha_channel(), icc))
}

/// The profile's description (`desc` tag), as Little CMS reads it.
fn profile_description(icc: &[u8]) -> Option<String> {
    let profile = lcms2::Profile::new_icc(icc).ok()?;
    let text = profile.info(lcms2::InfoType::Description, lcms2::Locale::none())?;
    let text = text.trim_end_matches('\0').trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// EXIF of any container kamadak-exif reads (JPEG, PNG, WebP, HEIF); empty when there is none.
fn exif_fields(bytes: &[u8]) -> ExifFields {
    use exif::{In, Tag};
    // Cameras write odd entries (DJI's maker notes, out-of-range offsets): keep every field
    // that parses rather than none.
    let read = exif::Reader::new()
        .continue_on_error(true)
        .read_from_container(&mut Cursor::new(bytes));
    let exif = match read {
        Ok(exif) => exif,
        Err(exif::Error::PartialResult(partial)) => partial.into_inner().0,
        Err(_) => return ExifFields::default(),
    };
    let text = |tag: Tag| {
        let field = exif.get_field(tag, In::PRIMARY)?;
        match &field.value {
            exif::Value::Ascii(parts) => {
                let joined: Vec<String> = parts
                    .iter()
                    .map(|p| {
                        String::from_utf8_lossy(p)
                            .trim_end_matches('\0')
                            .trim()
                            .to_owned()
                    })
                    .filter(|p| !p.is_empty())
                    .collect();
                (!joined.is_empty()).then(|| joined.join(" "))
            }
            _ => None,
        }
    };
    let number = |tag: Tag| {
        let field = exif.get_field(tag, In::PRIMARY)?;
        match &field.value {
            exif::Value::Rational(v) => v.first().map(exif::Rational::to_f64),
            exif::Value::SRational(v) => v.first().map(exif::SRational::to_f64),
            exif::Value::Short(v) => v.first().map(|&n| f64::from(n)),
            exif::Value::Long(v) => v.first().map(|&n| f64::from(n)),
            _ => None,
        }
        .filter(|n| n.is_finite())
    };
    let degrees = |value: Tag, reference: Tag, negative: &str| {
        let field = exif.get_field(value, In::PRIMARY)?;
        let exif::Value::Rational(dms) = &field.value else {
            return None;
        };
        let [d, m, s] = [dms.first()?, dms.get(1)?, dms.get(2)?].map(exif::Rational::to_f64);
        let unsigned = d + m / 60.0 + s / 3600.0;
        let sign = if text(reference).is_some_and(|r| r.eq_ignore_ascii_case(negative)) {
            -1.0
        } else {
            1.0
        };
        Some(sign * unsigned).filter(|n| n.is_finite())
    };
    ExifFields {
        make: text(Tag::Make),
        model: text(Tag::Model),
        lens_model: text(Tag::LensModel),
        date_time_original: text(Tag::DateTimeOriginal),
        exposure_time: number(Tag::ExposureTime),
        f_number: number(Tag::FNumber),
        iso: number(Tag::PhotographicSensitivity).map(|n| n as u32),
        focal_length: number(Tag::FocalLength),
        artist: text(Tag::Artist),
        copyright: text(Tag::Copyright),
        gps_latitude: degrees(Tag::GPSLatitude, Tag::GPSLatitudeRef, "S"),
        gps_longitude: degrees(Tag::GPSLongitude, Tag::GPSLongitudeRef, "W"),
    }
}
