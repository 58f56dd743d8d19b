//! The steps after the resize, on one picture or one frame of an animation, in the order of
//! docs/image-service.md §4: `contain`'s padding, rotate, flip/flop, blur, sharpen, pixelate,
//! grayscale, padding, watermark; and the watermark itself, made once a request.

use image::DynamicImage;

use crate::cost;
use crate::decode::{self, probe};
use crate::error::PipelineError;
use crate::ops;
use crate::plan::{mark_scale, text_width};
use crate::spec::{Limits, TransformSpec, Watermark, WatermarkMark};
use crate::text;

/// The watermark of one request, made once when the first picture (or frame) is finished and
/// composited onto every frame after it: all frames are the same size.
pub(crate) struct Marks<'a> {
    bytes: Option<&'a [u8]>,
    limits: &'a Limits,
    made: Option<image::RgbaImage>,
}

impl<'a> Marks<'a> {
    pub(crate) fn new(bytes: Option<&'a [u8]>, limits: &'a Limits) -> Self {
        Self {
            bytes,
            limits,
            made: None,
        }
    }

    /// The mark for a picture of `canvas` size, made on first use; `None` for an image
    /// watermark whose bytes the caller did not pass.
    fn get(
        &mut self,
        wm: &Watermark,
        canvas: (u32, u32),
    ) -> Result<Option<&image::RgbaImage>, PipelineError> {
        if self.made.is_none() {
            self.made = match (&wm.mark, self.bytes) {
                (WatermarkMark::Image(_), Some(bytes)) => {
                    Some(image_mark(canvas, bytes, wm, self.limits)?)
                }
                (WatermarkMark::Image(_), None) => None,
                (WatermarkMark::Text(text), _) => Some(text::render(
                    text,
                    text_width(canvas.0, wm.scale),
                    canvas.1,
                )?),
            };
        }
        Ok(self.made.as_ref())
    }
}

/// The steps after the resize, on one picture (or one frame): `contain`'s padding to
/// `pad_to`, rotate, flip/flop, blur, sharpen, pixelate, grayscale, padding, watermark.
pub(crate) fn finish(
    mut img: DynamicImage,
    spec: &TransformSpec,
    pad_to: Option<(u32, u32)>,
    bg: [u8; 4],
    marks: &mut Marks<'_>,
) -> Result<DynamicImage, PipelineError> {
    if let Some(size) = pad_to {
        img = ops::pad(&img, size, bg, spec.position)?;
    }
    if spec.rotate != 0.0 {
        img = ops::rotate(img, spec.rotate, bg)?;
    }
    if spec.flip {
        img = img.fliph();
    }
    if spec.flop {
        img = img.flipv();
    }
    if let Some(sigma) = spec.blur {
        img = ops::blur(img, sigma)?;
    }
    if spec.sharpen {
        img = ops::sharpen(img)?;
    }
    if let Some(block) = spec.pixelate {
        img = ops::pixelate(img, block);
    }
    if spec.grayscale {
        img = ops::grayscale(img);
    }
    if let Some(sides) = spec.padding {
        img = ops::extend(&img, sides, bg)?;
    }
    if let Some(wm) = &spec.watermark
        && let Some(mark) = marks.get(wm, (img.width(), img.height()))?
    {
        img = ops::composite(img, mark, wm.position, wm.opacity);
    }
    Ok(img)
}

/// Errors of the watermark's own bytes name the `watermark` parameter (400), so they do not
/// read as if the source were at fault.
pub(crate) fn unusable_mark(e: PipelineError) -> PipelineError {
    PipelineError::BadParam {
        name: "watermark".into(),
        reason: format!("the watermark image is unusable: {e}"),
    }
}

/// The watermark image `bytes` for a picture of `canvas` size: `scale` of its width wide and
/// fitted inside it both ways (`cost::fitted_mark`), decoded no larger than that needs.
fn image_mark(
    canvas: (u32, u32),
    bytes: &[u8],
    wm: &Watermark,
    limits: &Limits,
) -> Result<image::RgbaImage, PipelineError> {
    let info = probe(bytes, limits.max_source_pixels).map_err(unusable_mark)?;
    let size = info.oriented_size();
    let target = cost::fitted_mark(size, canvas, wm.scale);
    let (mark, _) =
        decode::decode(bytes, &info, mark_scale(size, target)).map_err(unusable_mark)?;
    let region = ops::Region {
        left: 0.0,
        top: 0.0,
        width: f64::from(mark.width()),
        height: f64::from(mark.height()),
    };
    Ok(ops::resize(&decode::normalise(mark), region, target, None)?.to_rgba8())
}
