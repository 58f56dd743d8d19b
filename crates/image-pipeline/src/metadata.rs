//! What a result carries besides its pixels (docs/image-service.md §4, Metadata). Nothing by
//! default: every encoder here writes pixels only, so a photo's EXIF (the camera, the place
//! it was taken), XMP and ICC profile never reach a resized result. With `keep_copyright`
//! the result keeps who owns the picture, as imgproxy's option of that name does: the
//! source's EXIF `Copyright` and `Artist`, written as an EXIF block, and, when the source had
//! an ICC profile, the profile of the pixels the result holds (they were converted to sRGB,
//! so the source's own profile would misdescribe them): libvips' compact sRGB v4 profile.
//!
//! JPEG gets APP1 `Exif` and APP2 `ICC_PROFILE` segments after its SOI marker, PNG `eXIf`
//! and `iCCP` chunks (the png crate writes them), WebP `EXIF` and `ICCP` chunks in an
//! extended (VP8X) file assembled by libwebp's mux. AVIF results carry none (the encoder
//! binding has no metadata API).

use std::io::Cursor;

use crate::PipelineError;
use crate::spec::OutputFormat;

/// The sRGB profile embedded for converted pixels (the one `colour` converts to).
const SRGB_V4: &[u8] = include_bytes!("srgb-v4.icc");

/// What `keep_copyright` carries over from a source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    /// A TIFF-structured EXIF block (no `Exif\0\0` prefix) holding `Copyright` and `Artist`.
    pub exif: Option<Vec<u8>>,
    /// The ICC profile of the result's pixels.
    pub icc: Option<&'static [u8]>,
}

impl Kept {
    /// Whether there is anything to write.
    pub(crate) fn is_empty(&self) -> bool {
        self.exif.is_none() && self.icc.is_none()
    }
}

/// Reads what `keep_copyright` keeps from `source`: its EXIF `Copyright` and `Artist` (when
/// either is present) and whether it had an ICC profile (`had_icc`, known to the decoder).
pub(crate) fn kept(source: &[u8], had_icc: bool) -> Kept {
    use exif::{Field, In, Tag, Value};
    let read = exif::Reader::new()
        .continue_on_error(true)
        .read_from_container(&mut Cursor::new(source));
    let exif = match read {
        Ok(exif) => Some(exif),
        Err(exif::Error::PartialResult(partial)) => Some(partial.into_inner().0),
        Err(_) => None,
    };
    let fields: Vec<Field> = exif
        .iter()
        .flat_map(|e| [Tag::Copyright, Tag::Artist].map(|t| e.get_field(t, In::PRIMARY).cloned()))
        .flatten()
        .filter(|f| matches!(&f.value, Value::Ascii(parts) if parts.iter().any(|p| !p.is_empty())))
        .collect();
    let block = (!fields.is_empty())
        .then(|| {
            let mut writer = exif::experimental::Writer::new();
            for field in &fields {
                writer.push_field(field);
            }
            let mut out = Cursor::new(Vec::new());
            writer
                .write(&mut out, false)
                .ok()
                .map(|()| out.into_inner())
        })
        .flatten();
    Kept {
        exif: block,
        icc: had_icc.then_some(SRGB_V4),
    }
}

fn fail(what: &str) -> PipelineError {
    PipelineError::Encode(format!("writing metadata: {what}"))
}

/// `encoded` (a `format` file) with `kept` written into it; unchanged when `kept` is empty or
/// the format carries none (AVIF, placeholders).
///
/// # Errors
/// [`PipelineError::Encode`] when the file cannot be taken apart and put back together (a
/// broken encoder output).
pub(crate) fn embed(
    encoded: Vec<u8>,
    format: OutputFormat,
    kept: &Kept,
) -> Result<Vec<u8>, PipelineError> {
    if kept.is_empty() {
        return Ok(encoded);
    }
    match format {
        OutputFormat::Jpeg => jpeg(encoded, kept),
        OutputFormat::Png => png(encoded, kept),
        OutputFormat::Webp => webp(&encoded, kept),
        OutputFormat::Avif | OutputFormat::Gif | OutputFormat::Blurhash | OutputFormat::Lqip => {
            Ok(encoded)
        }
    }
}

/// APP1 `Exif\0\0` + TIFF and APP2 `ICC_PROFILE\0` + sequence 1 of 1 + profile, right after
/// SOI (before the JFIF APP0 is allowed: readers look for the markers by name).
fn jpeg(encoded: Vec<u8>, kept: &Kept) -> Result<Vec<u8>, PipelineError> {
    if !encoded.starts_with(&[0xFF, 0xD8]) {
        return Err(fail("not a JPEG"));
    }
    let mut segments = Vec::new();
    let mut segment = |marker: u8, header: &[u8], body: &[u8]| -> Result<(), PipelineError> {
        let len = u16::try_from(2 + header.len() + body.len())
            .map_err(|_| fail("segment over 64 KiB"))?;
        segments.extend_from_slice(&[0xFF, marker]);
        segments.extend_from_slice(&len.to_be_bytes());
        segments.extend_from_slice(header);
        segments.extend_from_slice(body);
        Ok(())
    };
    if let Some(exif) = &kept.exif {
        segment(0xE1, b"Exif\0\0", exif)?;
    }
    if let Some(icc) = kept.icc {
        segment(0xE2, b"ICC_PROFILE\0\x01\x01", icc)?;
    }
    let mut out = Vec::with_capacity(encoded.len() + segments.len());
    out.extend_from_slice(&encoded[..2]);
    out.extend_from_slice(&segments);
    out.extend_from_slice(&encoded[2..]);
    Ok(out)
}

/// Decodes the PNG's rows and writes them again with `iCCP` and `eXIf` (the png crate compresses
/// the profile); the pixels and their layout are unchanged.
fn png(encoded: Vec<u8>, kept: &Kept) -> Result<Vec<u8>, PipelineError> {
    let mut reader = png::Decoder::new(Cursor::new(&encoded))
        .read_info()
        .map_err(|e| fail(&e.to_string()))?;
    let mut pixels = crate::cost::buffer(
        reader
            .output_buffer_size()
            .ok_or_else(|| fail("PNG too large"))?,
        0_u8,
    )?;
    let frame = reader
        .next_frame(&mut pixels)
        .map_err(|e| fail(&e.to_string()))?;
    pixels.truncate(frame.buffer_size());
    let mut info = png::Info::with_size(frame.width, frame.height);
    info.color_type = frame.color_type;
    info.bit_depth = frame.bit_depth;
    info.icc_profile = kept.icc.map(std::borrow::Cow::Borrowed);
    info.exif_metadata = kept.exif.as_deref().map(std::borrow::Cow::Borrowed);
    let mut out = Vec::with_capacity(encoded.len() + 1024);
    {
        let mut encoder =
            png::Encoder::with_info(&mut out, info).map_err(|e| fail(&e.to_string()))?;
        encoder.set_compression(png::Compression::Balanced);
        let mut writer = encoder.write_header().map_err(|e| fail(&e.to_string()))?;
        writer
            .write_image_data(&pixels)
            .map_err(|e| fail(&e.to_string()))?;
        writer.finish().map_err(|e| fail(&e.to_string()))?;
    }
    Ok(out)
}

/// The WebP re-assembled by libwebp's mux with `ICCP` and `EXIF` chunks (an extended file).
fn webp(encoded: &[u8], kept: &Kept) -> Result<Vec<u8>, PipelineError> {
    use libwebp_sys as w;
    let data = |bytes: &[u8]| w::WebPData {
        bytes: bytes.as_ptr(),
        size: bytes.len(),
    };
    // SAFETY: every pointer handed to libwebp points into a slice that outlives the call
    // (`copy_data` = 1 makes the mux copy what it keeps); the mux is deleted on every path,
    // and the assembled data is copied out and freed with WebPFree as libwebp requires.
    #[expect(
        unsafe_code,
        reason = "an FFI call into a C library; the SAFETY comment above gives the conditions it needs"
    )]
    unsafe {
        let bitstream = data(encoded);
        let mux = w::WebPMuxCreateInternal(&raw const bitstream, 1, w::WEBP_MUX_ABI_VERSION as i32);
        if mux.is_null() {
            return Err(fail("libwebp cannot read its own output"));
        }
        let mut ok = true;
        for (fourcc, bytes) in [(c"ICCP", kept.icc), (c"EXIF", kept.exif.as_deref())] {
            if let Some(bytes) = bytes {
                let chunk = data(bytes);
                ok &= w::WebPMuxSetChunk(mux, fourcc.as_ptr(), &raw const chunk, 1)
                    == w::WebPMuxError::WEBP_MUX_OK;
            }
        }
        let mut assembled = w::WebPData {
            bytes: std::ptr::null(),
            size: 0,
        };
        ok &= w::WebPMuxAssemble(mux, &raw mut assembled) == w::WebPMuxError::WEBP_MUX_OK;
        w::WebPMuxDelete(mux);
        if !ok || assembled.bytes.is_null() {
            return Err(fail("libwebp's mux refused the chunks"));
        }
        let out = std::slice::from_raw_parts(assembled.bytes, assembled.size).to_vec();
        w::WebPFree(assembled.bytes.cast_mut().cast());
        Ok(out)
    }
}
