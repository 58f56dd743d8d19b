//! The cost model of one transformation (docs/image-service.md §8, "Request cost"):
//! what a request will allocate and compute, worked out from the source's header, the
//! watermark's header and the parameters, before any pixel is decoded, and refused over the
//! per-request budget of [`Limits::max_request_bytes`] (MAX_REQUEST_BYTES) and
//! [`Limits::max_request_pixel_ops`] (MAX_REQUEST_PIXEL_OPS), and, for an animation, over
//! [`Limits::max_animation_output_pixels`] (MAX_ANIMATION_OUTPUT_PIXELS).
//!
//! The estimate is an upper bound of the peak of live buffers, not their sum: the pipeline
//! frees the decoded source once it is resized, and each later step holds its input and its
//! output; an animation is decoded, finished and encoded one frame at a time. Pixel operations
//! are a pixel read, resampled, filtered or encoded once, weighted by how costly the step is
//! per pixel (about a nanosecond each on one core of a 2020s x86 server: WebP at effort 4 is
//! about 40 a pixel, Lanczos resampling about 16). Every figure saturates, so a size of
//! `u32::MAX` by `u32::MAX` is a large cost and never an overflow.

use crate::PipelineError;
use crate::spec::{Limits, OutputFormat};

/// Bytes and pixel operations, saturating.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cost {
    /// Peak bytes of pixel buffers alive at once.
    pub bytes: u64,
    /// Weighted pixel operations.
    pub ops: u64,
}

/// Width times height, saturating (it cannot overflow `u64`, but callers add and multiply).
pub(crate) fn area((w, h): (u32, u32)) -> u64 {
    u64::from(w).saturating_mul(u64::from(h))
}

impl Cost {
    /// `bytes` bytes and `ops` operations.
    pub(crate) const fn new(bytes: u64, ops: u64) -> Self {
        Self { bytes, ops }
    }

    /// Both held or done one after the other: the larger peak, the operations added.
    #[must_use]
    pub(crate) fn then(self, next: Self) -> Self {
        Self {
            bytes: self.bytes.max(next.bytes),
            ops: self.ops.saturating_add(next.ops),
        }
    }

    /// Both alive at once: bytes and operations added.
    #[must_use]
    pub(crate) fn with(self, other: Self) -> Self {
        Self {
            bytes: self.bytes.saturating_add(other.bytes),
            ops: self.ops.saturating_add(other.ops),
        }
    }

    /// The operations done `n` times (frames of an animation), the bytes held once.
    #[must_use]
    pub(crate) fn repeated(self, n: u64) -> Self {
        Self {
            bytes: self.bytes,
            ops: self.ops.saturating_mul(n),
        }
    }
}

/// Bytes of an 8-bit RGBA pixel, the widest layout the steps after the decode hold.
const RGBA: u64 = 4;

/// Operations per output pixel of an encoder (`webp_effort` for WebP), and the bytes per
/// pixel it holds besides its input (libwebp's YUV planes and token buffers, libjpeg-turbo's
/// rows, PNG's filtered rows and deflate window, NeuQuant's palette map, rav1e's frames).
pub(crate) fn encoder(format: OutputFormat, webp_effort: u8) -> (u64, u64) {
    match format {
        OutputFormat::Jpeg => (8, 1),
        OutputFormat::Png => (24, 2),
        OutputFormat::Webp => (16 + 6 * u64::from(webp_effort), 4),
        OutputFormat::Avif => (400, 12),
        OutputFormat::Gif => (60, 2),
        // The placeholders encode a copy of at most 64 px a side.
        OutputFormat::Blurhash | OutputFormat::Lqip => (4, 0),
    }
}

/// What the encoder of `frames` animated frames of `frame` pixels holds at once, per pixel of
/// a frame: libwebp's animation encoder keeps the previous and current canvases and up to
/// four candidate sub-frames; the GIF encoder one frame and its palette map.
pub(crate) fn animation_encoder(format: OutputFormat) -> u64 {
    if format == OutputFormat::Gif { 6 } else { 24 }
}

/// What one transformation holds and does, from the headers and the parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request {
    /// The stored source's size, in pixels (one frame's canvas for an animation).
    pub source: (u32, u32),
    /// Bytes a decoded source pixel takes (8 for 16-bit PNG and TIFF, else 4).
    pub source_bpp: u64,
    /// The size the decode holds (smaller than `source` when it shrinks on load).
    pub decoded: (u32, u32),
    /// Whether the decode turns the picture (an EXIF orientation), holding it twice.
    pub turned: bool,
    /// Frames decoded, finished and encoded: 1 for a still.
    pub frames: u32,
    /// The size the resize makes.
    pub resized: (u32, u32),
    /// The largest picture a later step makes (`contain`'s box, a rotation's bounding box,
    /// `padding`).
    pub largest: (u32, u32),
    /// The result's size.
    pub output: (u32, u32),
    /// Operations a result pixel costs in the steps after the resize (rotate, blur, ...).
    pub finish_ops: u64,
    /// Whether a blur or sharpen holds a third copy of the picture.
    pub filtered: bool,
    pub format: OutputFormat,
    pub webp_effort: u8,
    /// Times the result is encoded (`max_bytes` tries qualities and sizes).
    pub encodes: u64,
    /// `quality=auto` / `format=best` (`auto_quality.rs`): the trial encodes of the search
    /// (beyond `encodes`), the pixels each is decoded and scored at, and the operations per
    /// output pixel of all its encodes together (each candidate format's encoder, not
    /// `format`'s); (0, 0, 0) without.
    pub trials: (u64, u64, u64),
    /// An image watermark: the size its decode holds, and its fitted size.
    pub mark: Option<((u32, u32), (u32, u32))>,
    /// A text watermark: its raster's size and its glyphs' coverage.
    pub text: Option<((u32, u32), u64)>,
    /// Operations on the whole source besides the decode (trim, entropy or attention).
    pub extra_ops: u64,
}

/// The peak bytes and the operations of `r` (see the module's documentation).
pub(crate) fn estimate(r: &Request) -> Cost {
    let decoded = area(r.decoded);
    let resized = area(r.resized).saturating_mul(RGBA);
    let largest = area(r.largest).max(area(r.resized)).max(area(r.output));
    let output = area(r.output);
    let (encode_ops, encode_bytes) = encoder(r.format, r.webp_effort);
    let frames = u64::from(r.frames.max(1));
    let animated = frames > 1;

    // The source: a still's decode (twice when it is turned) while the resize makes its
    // result; an animation's decoder keeps its canvas, the previous one and the frame.
    let held = decoded.saturating_mul(r.source_bpp);
    let decode_bytes = if animated {
        held.saturating_mul(3)
    } else if r.turned {
        held.saturating_mul(2)
    } else {
        held
    };
    let decode = Cost::new(
        decode_bytes.saturating_add(resized),
        area(r.source)
            .saturating_mul(2)
            .saturating_add(decoded.saturating_mul(2))
            .saturating_add(area(r.resized).saturating_mul(16)),
    );
    // The steps after the resize hold their input and their output (a filter a third copy).
    let copies = if r.filtered { 3 } else { 2 };
    let finish = Cost::new(
        largest.saturating_mul(RGBA).saturating_mul(copies),
        largest.saturating_mul(r.finish_ops),
    );
    // A watermark is made once (for every frame) and composited onto a copy of the picture.
    let mark = r.mark.map_or_else(Cost::default, |(held, fitted)| {
        Cost::new(
            area(held)
                .saturating_mul(8)
                .saturating_add(area(fitted).saturating_mul(RGBA * 2)),
            area(held)
                .saturating_mul(4)
                .saturating_add(area(fitted).saturating_mul(20)),
        )
    });
    // The raster of a text, its two coverage layers of f32, and the glyphs drawn into them
    // (tens of nanoseconds a visited pixel).
    let text = r.text.map_or_else(Cost::default, |(raster, coverage)| {
        Cost::new(
            area(raster).saturating_mul(12),
            area(raster)
                .saturating_mul(8)
                .saturating_add(coverage.saturating_mul(32)),
        )
    });
    let composite = Cost::new(
        output.saturating_mul(RGBA * 2),
        if r.mark.is_some() || r.text.is_some() {
            output.saturating_mul(4)
        } else {
            0
        },
    );
    let encode = if animated {
        Cost::new(
            output.saturating_mul(animation_encoder(r.format)),
            output.saturating_mul(encode_ops),
        )
    } else {
        Cost::new(
            output.saturating_mul(RGBA * 2 + encode_bytes),
            output
                .saturating_mul(encode_ops)
                .saturating_mul(r.encodes.max(1)),
        )
    };
    // The search: its trial encodes, each decoded (a copy of the output) and scored.
    let (trials, scored, trial_encode_ops) = r.trials;
    let search = Cost::new(
        if trials > 0 {
            scored
                .saturating_mul(crate::auto_quality::SCORE_BYTES_PER_PIXEL)
                .saturating_add(output.saturating_mul(RGBA * 2))
        } else {
            0
        },
        output.saturating_mul(trial_encode_ops).saturating_add(
            trials
                .saturating_mul(scored)
                .saturating_mul(crate::auto_quality::TRIAL_OPS_PER_PIXEL),
        ),
    );
    let encode = encode.with(search);
    let once = mark.with(text).with(Cost::new(0, r.extra_ops));
    // Per frame: decode and resize, then finish, then composite, then encode; an animation's
    // decoder and encoder stay alive through every frame's steps.
    let frame = decode.then(finish).then(composite);
    if animated {
        let state = Cost::new(decode_bytes.saturating_add(encode.bytes), 0);
        let per_frame = frame.then(Cost::new(0, encode.ops));
        once.with(state).with(per_frame.repeated(frames))
    } else {
        once.with(frame.then(encode))
    }
}

/// Refuses `cost` over the budget of `limits`, naming `name` (the parameter that asked for
/// the most: `width`, `watermark`, `watermarkText`, `animated`) and describing `what`.
///
/// # Errors
/// [`PipelineError::BadParam`] (400) naming `name`, whose message names the setting.
pub(crate) fn within(
    cost: Cost,
    limits: &Limits,
    name: &str,
    what: &str,
) -> Result<(), PipelineError> {
    let bad = |reason: String| PipelineError::BadParam {
        name: name.to_owned(),
        reason,
    };
    if cost.bytes > limits.max_request_bytes {
        return Err(bad(format!(
            "{what} would hold about {} MiB of pixels at once, above the budget of {} MiB a \
             request (MAX_REQUEST_BYTES): ask for a smaller output, fewer frames or a smaller \
             watermark",
            cost.bytes.div_ceil(1 << 20),
            limits.max_request_bytes >> 20
        )));
    }
    if cost.ops > limits.max_request_pixel_ops {
        return Err(bad(format!(
            "{what} would take about {} million pixel operations, above the budget of {} \
             million a request (MAX_REQUEST_PIXEL_OPS): ask for a smaller output, fewer frames \
             or fewer filters",
            cost.ops.div_ceil(1_000_000),
            limits.max_request_pixel_ops / 1_000_000
        )));
    }
    Ok(())
}

/// The size of a watermark of `mark` pixels drawn on an output of `canvas` pixels at `scale`
/// of its width: `scale` of the width wide, its height following its shape, then scaled down
/// (its shape kept) until it fits inside the canvas both ways; at least 1x1. A tall, narrow
/// mark is as high as the output, never higher (a 1x600 mark on a 4032 px wide output was
/// asked to be 4032x2419200).
pub(crate) fn fitted_mark((mw, mh): (u32, u32), (cw, ch): (u32, u32), scale: f32) -> (u32, u32) {
    let (mw, mh) = (f64::from(mw.max(1)), f64::from(mh.max(1)));
    let (cw, ch) = (f64::from(cw.max(1)), f64::from(ch.max(1)));
    let want_w = (cw * f64::from(scale).clamp(0.0, 1.0)).round().max(1.0);
    // The largest size of the mark's shape within want_w by ch.
    let by = (want_w / mw).min(ch / mh);
    let side = |v: f64, most: f64| (v * by).round().clamp(1.0, most) as u32;
    (side(mw, want_w), side(mh, ch))
}

/// A buffer of `len` copies of `fill`, reserved fallibly: an allocation the system refuses is
/// an error of the request (500), where `vec![fill; len]` would abort the process.
///
/// # Errors
/// [`PipelineError::Encode`] when the memory cannot be reserved.
pub(crate) fn buffer<T: Clone>(len: usize, fill: T) -> Result<Vec<T>, PipelineError> {
    let mut v = reserve(len)?;
    v.resize(len, fill);
    Ok(v)
}

/// An empty vector with room for `len` items of `T`, reserved fallibly: for a buffer filled by
/// `extend` or `push` up to a size that depends on the request or the source, which
/// `Vec::with_capacity` or `collect` would abort on when the system refuses it.
///
/// # Errors
/// [`PipelineError::Encode`] when the memory cannot be reserved (including `len` items whose
/// bytes overflow `isize`).
pub(crate) fn reserve<T>(len: usize) -> Result<Vec<T>, PipelineError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        PipelineError::Encode(format!(
            "cannot reserve a buffer of {len} x {} bytes",
            std::mem::size_of::<T>()
        ))
    })?;
    Ok(v)
}

/// The items of `items`, collected into a vector whose room for `len` of them (the count the
/// caller expects, such as a picture's pixels) is reserved fallibly first ([`reserve`]): the
/// fallible `collect`. More items than `len` grow it as `extend` does.
///
/// # Errors
/// [`PipelineError::Encode`] when the memory cannot be reserved.
pub(crate) fn collect<T>(
    len: usize,
    items: impl IntoIterator<Item = T>,
) -> Result<Vec<T>, PipelineError> {
    let mut v = reserve(len)?;
    v.extend(items);
    Ok(v)
}

/// The number of samples of a `width` x `height` buffer of `channels` samples a pixel, computed
/// with checked arithmetic: a product that does not fit in `usize` is an error of the request
/// (500), never a wrapped size.
///
/// # Errors
/// [`PipelineError::Encode`] when the product overflows.
pub(crate) fn samples(
    width: usize,
    height: usize,
    channels: usize,
) -> Result<usize, PipelineError> {
    width
        .checked_mul(height)
        .and_then(|n| n.checked_mul(channels))
        .ok_or_else(|| {
            PipelineError::Encode(format!(
                "cannot reserve a buffer of {width}x{height} pixels of {channels} samples: its \
                 size overflows"
            ))
        })
}

/// A `width` x `height` picture of `fill`, its size computed with checked arithmetic and its
/// pixels reserved fallibly ([`buffer`]): a size that overflows or an allocation the system
/// refuses is an error of the request (500), where `ImageBuffer::new` or `from_pixel` would
/// panic or abort the process. Every picture the pipeline itself makes at a size that depends
/// on the request or the source (the canvases of `contain`, `padding` and `rotate`, the
/// Lanczos resize's output, the flattened JPEG) is made here, and the JPEG and WebP decoders'
/// buffers with [`samples`] and [`buffer`].
///
/// Allocations inside the libraries the pipeline calls (the `image` crate's conversions such
/// as `to_rgba8`, its right-angle rotations, crops and placeholder resizes, the codecs,
/// `fast_image_resize`'s scratch buffers, resvg) cannot be made fallible from outside: they
/// are bounded instead by the cost model above, which refuses a request over the budget
/// before any pixel is decoded.
///
/// # Errors
/// [`PipelineError::Encode`] when the size overflows or the memory cannot be reserved.
pub(crate) fn canvas<P: image::Pixel>(
    width: u32,
    height: u32,
    fill: P,
) -> Result<image::ImageBuffer<P, Vec<P::Subpixel>>, PipelineError> {
    let channels = fill.channels();
    let len = samples(width as usize, height as usize, channels.len())?;
    let mut raw = buffer(len, channels[0])?;
    if channels.iter().any(|c| *c != channels[0]) {
        for px in raw.chunks_exact_mut(channels.len()) {
            px.copy_from_slice(channels);
        }
    }
    image::ImageBuffer::from_raw(width, height, raw)
        .ok_or_else(|| PipelineError::Encode(format!("bad canvas size {width}x{height}")))
}

/// A `width` x `height` picture of `color`, all samples zero, made by [`canvas`]: the
/// fallible `DynamicImage::new`. A colour type this build of `image` adds later falls back to
/// `DynamicImage::new`.
///
/// # Errors
/// As [`canvas`].
pub(crate) fn dynamic_canvas(
    width: u32,
    height: u32,
    color: image::ColorType,
) -> Result<image::DynamicImage, PipelineError> {
    use image::{ColorType as C, DynamicImage as D, Luma, LumaA, Rgb, Rgba};
    Ok(match color {
        C::L8 => D::ImageLuma8(canvas(width, height, Luma([0_u8]))?),
        C::La8 => D::ImageLumaA8(canvas(width, height, LumaA([0_u8; 2]))?),
        C::Rgb8 => D::ImageRgb8(canvas(width, height, Rgb([0_u8; 3]))?),
        C::Rgba8 => D::ImageRgba8(canvas(width, height, Rgba([0_u8; 4]))?),
        C::L16 => D::ImageLuma16(canvas(width, height, Luma([0_u16]))?),
        C::La16 => D::ImageLumaA16(canvas(width, height, LumaA([0_u16; 2]))?),
        C::Rgb16 => D::ImageRgb16(canvas(width, height, Rgb([0_u16; 3]))?),
        C::Rgba16 => D::ImageRgba16(canvas(width, height, Rgba([0_u16; 4]))?),
        C::Rgb32F => D::ImageRgb32F(canvas(width, height, Rgb([0_f32; 3]))?),
        C::Rgba32F => D::ImageRgba32F(canvas(width, height, Rgba([0_f32; 4]))?),
        other => D::new(width, height, other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn costs_saturate_instead_of_overflowing() {
        let huge = area((u32::MAX, u32::MAX));
        assert_eq!(huge, u64::from(u32::MAX) * u64::from(u32::MAX));
        let c = Cost::new(huge, huge).with(Cost::new(huge, huge));
        assert_eq!(c, Cost::new(u64::MAX, u64::MAX));
        assert_eq!(c.repeated(u64::MAX).ops, u64::MAX);
        assert_eq!(
            Cost::new(1, u64::MAX).then(Cost::new(2, 1)),
            Cost::new(2, u64::MAX)
        );
        let refused = within(c, &Limits::default(), "width", "this output");
        assert!(
            matches!(&refused, Err(PipelineError::BadParam { name, reason })
                if name == "width" && reason.contains("MAX_REQUEST_BYTES")),
            "{refused:?}"
        );
    }

    #[test]
    fn the_budget_names_the_setting_that_is_exceeded() {
        let limits = Limits::default();
        let ops = Cost::new(1, limits.max_request_pixel_ops + 1);
        let e = within(ops, &limits, "animated", "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("MAX_REQUEST_PIXEL_OPS") && e.contains("animated"),
            "{e}"
        );
        let fits = Cost::new(limits.max_request_bytes, limits.max_request_pixel_ops);
        assert_eq!(within(fits, &limits, "width", "x"), Ok(()));
    }

    #[test]
    fn an_impossible_buffer_is_an_error_not_an_abort() {
        assert!(buffer(usize::MAX / 2, 0_u64).is_err());
        assert_eq!(buffer(3, 7_u8).ok(), Some(vec![7, 7, 7]));
        assert!(reserve::<u32>(usize::MAX / 2).is_err());
        let room = reserve::<u16>(5).ok();
        assert!(room.is_some_and(|v| v.is_empty() && v.capacity() >= 5));
        assert!(collect(usize::MAX / 4, std::iter::empty::<[u8; 8]>()).is_err());
        assert_eq!(collect(2, [4_u8, 5]).ok(), Some(vec![4, 5]));
    }

    #[test]
    fn an_impossible_canvas_is_an_error_not_an_abort() {
        use image::{ColorType, Rgb, Rgba};
        // u32::MAX squared times 4 overflows usize: refused before any reservation.
        let e = canvas(u32::MAX, u32::MAX, Rgba([0_u8; 4]));
        assert!(
            matches!(&e, Err(PipelineError::Encode(m)) if m.contains("overflows")),
            "{e:?}"
        );
        assert!(samples(usize::MAX, 2, 1).is_err());
        // A size that fits in usize but whose bytes exceed isize::MAX: try_reserve refuses it
        // deterministically, whatever the machine's memory and overcommit.
        let e = canvas(u32::MAX, u32::MAX / 4, Rgba([0_u8; 4]));
        assert!(
            matches!(&e, Err(PipelineError::Encode(m)) if m.contains("cannot reserve")),
            "{e:?}"
        );
        assert!(dynamic_canvas(u32::MAX, u32::MAX, ColorType::Rgba16).is_err());
        assert!(dynamic_canvas(u32::MAX, u32::MAX, ColorType::L8).is_err());
        // A small one is the picture `from_pixel` makes.
        let bg = Rgba([10, 20, 30, 40]);
        assert_eq!(
            canvas(3, 2, bg).ok(),
            Some(image::RgbaImage::from_pixel(3, 2, bg))
        );
        let grey = Rgb([9_u8; 3]);
        assert_eq!(
            canvas(2, 5, grey).ok(),
            Some(image::RgbImage::from_pixel(2, 5, grey))
        );
        assert_eq!(canvas(0, 7, bg).map(|c| c.dimensions()).ok(), Some((0, 7)));
        let d = dynamic_canvas(4, 3, ColorType::La16).ok();
        assert_eq!(
            d.as_ref().map(|d| (d.width(), d.height(), d.color())),
            Some((4, 3, ColorType::La16))
        );
        assert!(d.is_some_and(|d| d.as_bytes().iter().all(|&b| b == 0)));
    }

    #[test]
    fn a_watermark_is_fitted_inside_the_output_both_ways() {
        // The review's marks: 1x600 and 100x20000 on a 4032 px wide output.
        assert_eq!(fitted_mark((1, 600), (4032, 3024), 1.0), (5, 3024));
        assert_eq!(fitted_mark((100, 20000), (4032, 3024), 1.0), (15, 3024));
        assert_eq!(fitted_mark((100, 20000), (4032, 3024), 0.25), (15, 3024));
        // A wide mark keeps the asked share of the width.
        assert_eq!(fitted_mark((400, 100), (1000, 800), 0.25), (250, 63));
        // Extremes stay inside the canvas and at least 1x1.
        assert_eq!(fitted_mark((u32::MAX, 1), (10, 10), 1.0), (10, 1));
        assert_eq!(fitted_mark((1, u32::MAX), (10, 10), 1.0), (1, 10));
        assert_eq!(fitted_mark((0, 0), (0, 0), 0.0), (1, 1));
        assert_eq!(
            fitted_mark((u32::MAX, u32::MAX), (u32::MAX, u32::MAX), 1.0),
            (u32::MAX, u32::MAX)
        );
        for (mark, canvas) in [((7, 3000), (300, 200)), ((3000, 7), (300, 200))] {
            let (w, h) = fitted_mark(mark, canvas, 1.0);
            assert!(
                w <= canvas.0 && h <= canvas.1,
                "{mark:?} {canvas:?}: {w}x{h}"
            );
        }
    }
}
