//! PNG row by row through the `png` crate: rows converted to sRGB and box-averaged as they
//! arrive (libvips' order), so a large PNG is never held at full size; streamed straight into
//! the reduction for the fast path of `transform`.

use std::io::Cursor;

use super::{Decoded, undecodable};
use crate::colour;
use crate::error::PipelineError;
use crate::shrink::{self, BoxShrink};

/// True for an Adam7-interlaced PNG (byte 28 of the IHDR chunk), whose rows do not arrive in
/// order: those are decoded whole.
pub(super) fn interlaced(bytes: &[u8]) -> bool {
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

fn rows(bytes: &[u8]) -> Result<PngRows<'_>, PipelineError> {
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
fn read_rows(
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
/// [`PipelineError::Undecodable`] for truncated or corrupt data; [`PipelineError::Encode`] when
/// the shrinker's buffers cannot be reserved ([`BoxShrink::rows_only`]).
pub(crate) fn stream_rows(
    bytes: &[u8],
    k: usize,
    sink: &mut dyn FnMut(&[u8]),
) -> Result<bool, PipelineError> {
    if interlaced(bytes) {
        return Ok(false);
    }
    let mut png = rows(bytes)?;
    if png.channels != 3 {
        return Ok(false);
    }
    let mut shrink = BoxShrink::rows_only(png.width, png.height, 3, k)?;
    read_rows(&mut png, &mut shrink, Some(sink))?;
    Ok(true)
}

/// Decodes a non-interlaced PNG row by row into a box shrinker that averages rows (see
/// `shrink`), so that only the shrunk image is ever held; returns it with its scale per axis
/// (1 across), already converted to sRGB (so with no profile left to apply).
pub(super) fn decode_shrunk(bytes: &[u8], min_scale: f64) -> Result<Decoded, PipelineError> {
    let mut png = rows(bytes)?;
    let k = shrink::factor(min_scale);
    let mut shrink = BoxShrink::rows_only(png.width, png.height, png.channels, k)?;
    read_rows(&mut png, &mut shrink, None)?;
    let img = shrink
        .finish()
        .ok_or_else(|| PipelineError::Undecodable("bad PNG buffer size".into()))?;
    // Already in sRGB: the rows were converted before they were averaged.
    Ok((img, (1.0, 1.0 / k as f64), None))
}
