//! The limit checks made once the output is planned and before anything is decoded
//! (docs/image-service.md §8): the padded output against MAX_OUTPUT_DIMENSION and
//! MAX_UNSIGNED_OUTPUT_PIXELS, an explicit AVIF against AVIF_MAX_PIXELS, and the request's
//! estimated memory and work (`cost.rs`) against MAX_REQUEST_BYTES, MAX_REQUEST_PIXEL_OPS and
//! MAX_ANIMATION_OUTPUT_PIXELS. The planner's own caps (enlargement, grown outputs) are in
//! `plan.rs`.

use crate::auto_quality;
use crate::cost;
use crate::decode::{self, SourceInfo};
use crate::error::PipelineError;
use crate::ops;
use crate::plan::{mark_scale, text_width};
use crate::spec::{Limits, OutputFormat, Position, TransformSpec, WatermarkMark};
use crate::text;

/// The inputs of the cost model (`cost.rs`) that [`crate::transform`] knows before decoding.
pub(crate) struct RequestBudget<'a> {
    pub(crate) source: &'a [u8],
    pub(crate) info: &'a SourceInfo,
    /// Frames decoded, finished and encoded (1 for a still).
    pub(crate) frames: u32,
    /// Whether the whole picture is decoded (trim, or one frame of an animation).
    pub(crate) whole: bool,
    /// Frames decoded before the picked one.
    pub(crate) frames_before: u32,
    pub(crate) plan: &'a ops::Plan,
    pub(crate) min_scale: f64,
    pub(crate) format: OutputFormat,
    /// The watermark image's header and bytes.
    pub(crate) mark: Option<(SourceInfo, &'a [u8])>,
}

impl RequestBudget<'_> {
    /// The trial encodes `quality=auto` (every candidate of `format=best`) may make for an
    /// `output`-sized still, the pixels each is scored at, and the operations per output pixel
    /// of those encodes together: [`auto_quality::MAX_ENCODES`] per candidate with a quality to
    /// search, each at its own encoder's cost. (0, 0, 0) without auto, for an animation
    /// (encoded at `quality`'s fixed 80) and for PNG and GIF.
    fn search_trials(
        &self,
        spec: &TransformSpec,
        output: (u32, u32),
        webp_effort: u8,
    ) -> (u64, u64, u64) {
        if !spec.auto_quality || self.frames > 1 {
            return (0, 0, 0);
        }
        let candidates = if spec.best() {
            self.format.candidates()
        } else {
            std::slice::from_ref(&self.format)
        };
        let per_format = u64::from(auto_quality::MAX_ENCODES);
        let (mut trials, mut ops) = (0u64, 0u64);
        for f in candidates.iter().filter(|f| auto_quality::searchable(**f)) {
            trials += per_format;
            ops = ops.saturating_add(per_format.saturating_mul(cost::encoder(*f, webp_effort).0));
        }
        if trials == 0 {
            return (0, 0, 0);
        }
        (trials, cost::area(auto_quality::scored_size(output)), ops)
    }

    /// Refuses the request over MAX_ANIMATION_OUTPUT_PIXELS, MAX_REQUEST_BYTES or
    /// MAX_REQUEST_PIXEL_OPS, or a text whose glyphs pile up (`text::layout_for`), naming the
    /// parameter that asked for the most.
    pub(crate) fn check(&self, spec: &TransformSpec, limits: &Limits) -> Result<(), PipelineError> {
        let plan = self.plan;
        let turned = ops::rotated_size(plan.pad_to.unwrap_or(plan.resize), spec.rotate);
        let output = spec.padding.map_or(turned, |[t, r, b, l]| {
            (
                turned.0.saturating_add(l).saturating_add(r),
                turned.1.saturating_add(t).saturating_add(b),
            )
        });
        let size_name = if spec.width.is_none() && spec.height.is_some() {
            "height"
        } else {
            "width"
        };
        if self.frames > 1 {
            let total = cost::area(output).saturating_mul(u64::from(self.frames));
            if total > limits.max_animation_output_pixels {
                return Err(PipelineError::BadParam {
                    name: size_name.into(),
                    reason: format!(
                        "the animation would be {} frames of {}x{}, {total} pixels over all \
                         frames, above the limit of {} (MAX_ANIMATION_OUTPUT_PIXELS): ask for a \
                         smaller size, or animated=false for a still",
                        self.frames, output.0, output.1, limits.max_animation_output_pixels
                    ),
                });
            }
        }
        let (decoded, bpp) = if self.whole || self.frames > 1 {
            let (_, bpp) = decode::decoded_size(self.source, self.info, 1.0);
            ((self.info.width, self.info.height), bpp)
        } else {
            decode::decoded_size(self.source, self.info, self.min_scale)
        };
        let largest = [
            plan.resize,
            plan.pad_to.unwrap_or(plan.resize),
            turned,
            output,
        ]
        .into_iter()
        .max_by_key(|&size| cost::area(size))
        .unwrap_or(output);
        let mut finish_ops = 4;
        for (on, ops) in [
            (plan.pad_to.is_some(), 2),
            (spec.rotate != 0.0, 8),
            (spec.flip || spec.flop, 1),
            (spec.blur.is_some(), 12),
            (spec.sharpen, 12),
            (spec.pixelate.is_some(), 2),
            (spec.grayscale, 4),
            (spec.padding.is_some(), 2),
        ] {
            if on {
                finish_ops += ops;
            }
        }
        let source_px = cost::area((self.info.width, self.info.height));
        let mut extra_ops = source_px.saturating_mul(2 * u64::from(self.frames_before));
        if spec.trim.is_some() {
            extra_ops = extra_ops.saturating_add(source_px.saturating_mul(20));
        }
        if matches!(spec.position, Position::Entropy | Position::Attention) {
            extra_ops = extra_ops.saturating_add(cost::area(decoded).saturating_mul(20));
        }
        let wm = spec.watermark.as_ref();
        let mark = match (self.mark, wm) {
            (Some((info, bytes)), Some(wm)) => {
                let fitted = cost::fitted_mark(info.oriented_size(), output, wm.scale);
                let need = mark_scale(info.oriented_size(), fitted);
                Some((decode::decoded_size(bytes, &info, need).0, fitted))
            }
            _ => None,
        };
        let text = match wm.map(|wm| (&wm.mark, wm.scale)) {
            Some((WatermarkMark::Text(text), scale)) => {
                let laid = text::layout_for(text, text_width(output.0, scale), output.1)?;
                Some((laid.size, laid.coverage))
            }
            _ => None,
        };
        let request = cost::Request {
            source: (self.info.width, self.info.height),
            source_bpp: bpp,
            decoded,
            turned: self.info.orientation > 1,
            frames: self.frames,
            resized: plan.resize,
            largest,
            output,
            finish_ops,
            filtered: spec.blur.is_some() || spec.sharpen,
            format: self.format,
            webp_effort: limits.webp_effort,
            encodes: if spec.max_bytes.is_some() { 12 } else { 1 },
            trials: self.search_trials(spec, output, limits.webp_effort),
            mark,
            text,
            extra_ops,
        };
        let bare = cost::Request {
            mark: None,
            text: None,
            ..request
        };
        let what = format!(
            "a {}x{} result{}",
            output.0,
            output.1,
            if self.frames > 1 {
                format!(" of {} frames", self.frames)
            } else {
                String::new()
            }
        );
        cost::within(cost::estimate(&bare), limits, size_name, &what)?;
        let mark_name = match wm.map(|wm| &wm.mark) {
            Some(WatermarkMark::Text(_)) => "watermarkText",
            _ => "watermark",
        };
        cost::within(
            cost::estimate(&request),
            limits,
            mark_name,
            &format!("{what} with its watermark"),
        )
    }
}

/// Refuses `padding` that takes the `output` (after rotation) past MAX_OUTPUT_DIMENSION, or, on
/// an unsigned URL, past MAX_UNSIGNED_OUTPUT_PIXELS when it grows larger than its source
/// region `crop`, naming `padding`; decided before decoding.
pub(crate) fn padding_fits(
    output: (u32, u32),
    [t, r, b, l]: [u32; 4],
    crop: (u32, u32),
    limits: &Limits,
) -> Result<(), PipelineError> {
    let padded = (
        u64::from(output.0) + u64::from(l) + u64::from(r),
        u64::from(output.1) + u64::from(t) + u64::from(b),
    );
    let bad = |reason: String| PipelineError::BadParam {
        name: "padding".into(),
        reason,
    };
    let max = u64::from(limits.max_output_dimension);
    if padded.0.max(padded.1) > max {
        return Err(bad(format!(
            "the padded output would be {}x{}, above the limit of {max} pixels a side",
            padded.0, padded.1
        )));
    }
    if let Some(cap) = limits.max_grown_output_pixels {
        let most = cap.max(cost::area(crop));
        if padded.0 * padded.1 > most {
            return Err(bad(format!(
                "the padded output would be {}x{}, more than the {most} pixels an unsigned URL \
                 may ask for (MAX_UNSIGNED_OUTPUT_PIXELS): pad less, or sign the URL",
                padded.0, padded.1
            )));
        }
    }
    Ok(())
}

/// Refuses an AVIF output of `(width, height)` over `limits.avif_max_pixels`, naming `format`.
pub(crate) fn avif_fits((width, height): (u32, u32), limits: &Limits) -> Result<(), PipelineError> {
    if u64::from(width) * u64::from(height) <= limits.avif_max_pixels {
        return Ok(());
    }
    Err(PipelineError::BadParam {
        name: "format".into(),
        reason: format!(
            "AVIF output is limited to {} pixels (AVIF_MAX_PIXELS) and this one is \
             {width}x{height}; ask for a smaller size or another format",
            limits.avif_max_pixels
        ),
    })
}
