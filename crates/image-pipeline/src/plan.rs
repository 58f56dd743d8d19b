//! The output planner: what region of the source is kept (the crop rectangle, checked against
//! the oriented source), what size it is resized to (`width`, `height`, `fit`, `zoom`, the
//! default box, `min_width` and `min_height`), held to MAX_OUTPUT_DIMENSION, and on unsigned
//! URLs to MAX_UNSIGNED_ENLARGE and MAX_UNSIGNED_OUTPUT_PIXELS (docs/image-service.md §8), and
//! how large a watermark is drawn. Everything here is decided from the header, before decoding.

use image_params::Name;

use crate::cost;
use crate::error::PipelineError;
use crate::ops;
use crate::spec::{CropRect, Fit, Limits, TransformSpec};

/// The region of an `oriented`-sized source that is kept: `crop`, or the whole picture.
///
/// # Errors
/// [`PipelineError::BadParam`] when the rectangle lies outside the picture, naming the edge
/// that is out (`cropLeft`, `cropWidth`, `cropTop` or `cropHeight`).
pub(crate) fn crop_region(
    crop: Option<CropRect>,
    (ow, oh): (u32, u32),
) -> Result<CropRect, PipelineError> {
    let Some(c) = crop else {
        return Ok(CropRect {
            left: 0,
            top: 0,
            width: ow,
            height: oh,
        });
    };
    let over_x = u64::from(c.left) + u64::from(c.width) > u64::from(ow);
    let over_y = u64::from(c.top) + u64::from(c.height) > u64::from(oh);
    if over_x || over_y {
        // Name the edge that is out.
        let name = match (over_x, c.left >= ow, c.top >= oh) {
            (true, true, _) => Name::CropLeft,
            (true, false, _) => Name::CropWidth,
            (false, _, true) => Name::CropTop,
            (false, _, false) => Name::CropHeight,
        };
        return Err(PipelineError::BadParam {
            name: name.as_str().into(),
            reason: format!("the crop rectangle lies outside the {ow}x{oh} image"),
        });
    }
    Ok(c)
}

/// The resize plan for a `crop`-sized region, held to `limits.max_output_dimension` pixels a
/// side after padding and rotation (MAX_OUTPUT_DIMENSION, apps/image-server/README.md
/// "Configuration"), and to `limits.max_enlarge` and `limits.max_grown_output_pixels` when they
/// are set (image-server's caps for unsigned URLs, README "Deployment").
///
/// Without `width` and `height` the size comes from the source, so a larger source (a
/// panorama, a rotation's bounding box) is shrunk to fit rather than refused: every parameter
/// is optional (docs/image-service.md §4).
///
/// # Errors
/// [`PipelineError::BadParam`] naming the parameter that asked for more: `enlarge` when the
/// enlargement is over its cap, `rotate` when only the turned bounding box is too large,
/// otherwise `width` or `height`.
pub(crate) fn output_plan(
    crop: (u32, u32),
    spec: &TransformSpec,
    limits: &Limits,
) -> Result<ops::Plan, PipelineError> {
    let max = limits.max_output_dimension;
    // Any output up to the size of the region it shows; a larger one only up to the cap.
    let max_area = limits
        .max_grown_output_pixels
        .map(|cap| cap.max(cost::area(crop)));
    let fits = |size: (u32, u32)| {
        size.0.max(size.1) <= max && max_area.is_none_or(|most| cost::area(size) <= most)
    };
    let plan = |w, h, fit, enlarge| ops::plan(crop, w, h, fit, enlarge);
    let mut enlarge = spec.enlarge;
    // A request without a size is fitted inside the default box, if the server has one; with
    // `zoom` alone it is the source region times the zoom.
    let mut chosen = match (spec.width, spec.height, spec.default_box, spec.zoom) {
        (None, None, _, Some(z)) => {
            enlarge |= z > 1.0;
            let w = (f64::from(crop.0) * z)
                .round()
                .max(1.0)
                .min(f64::from(u32::MAX)) as u32;
            plan(Some(w), None, Fit::Inside, enlarge)
        }
        (None, None, Some((w, h)), None) => plan(w, h, Fit::Inside, false),
        _ => plan(spec.width, spec.height, spec.fit, spec.enlarge),
    };
    // `min_width` and `min_height`: a result smaller than them (with the padding of
    // `contain`, which is part of it) is scaled up, its shape kept.
    let (rw, rh) = chosen.pad_to.unwrap_or(chosen.resize);
    let need_w = spec.min_width.map_or(1.0, |m| f64::from(m) / f64::from(rw));
    let need_h = spec
        .min_height
        .map_or(1.0, |m| f64::from(m) / f64::from(rh));
    let grow = need_w.max(need_h);
    if grow > 1.0 {
        enlarge = true;
        chosen = match (spec.width, spec.height) {
            (Some(w), Some(h)) if spec.fit != Fit::Inside => {
                // A box that crops, pads or stretches: the fit stays, in the smallest box of
                // its shape that holds the minimums (the box itself when it already does and
                // only a source smaller than it, not enlarged, fell short).
                let (w, h) = grown_box((w, h), (spec.min_width, spec.min_height));
                plan(Some(w), Some(h), spec.fit, true)
            }
            _ if need_w >= need_h => plan(spec.min_width, None, Fit::Inside, true),
            _ => plan(None, spec.min_height, Fit::Inside, true),
        };
    }
    let asked = spec.width.is_some() || spec.height.is_some() || spec.zoom.is_some() || grow > 1.0;
    let outer = |p: &ops::Plan| ops::rotated_size(p.pad_to.unwrap_or(p.resize), spec.rotate);
    let (ow, oh) = outer(&chosen);
    if !fits((ow, oh)) && !asked {
        // The turned box grows in proportion to the picture: scale the picture by the share
        // of the limits the box may take, rounded down.
        let mut share = f64::from(max) / f64::from(ow.max(oh));
        if let Some(most) = max_area {
            let by_area = (most as f64 / cost::area((ow, oh)) as f64).sqrt();
            share = share.min(by_area);
        }
        let from = chosen.resize;
        // The turned box's sides are rounded to whole pixels, which can leave it a sliver over
        // an area; a percent less then fits.
        for _ in 0..8 {
            let (w, h) = (
                ((f64::from(from.0) * share).floor() as u32).max(1),
                ((f64::from(from.1) * share).floor() as u32).max(1),
            );
            chosen = plan(Some(w), Some(h), Fit::Inside, false);
            if fits(outer(&chosen)) {
                break;
            }
            share *= 0.99;
        }
    }
    if enlarge && let Some(most) = limits.max_enlarge {
        enlargement_fits(&chosen, crop, most)?;
    }
    let (pw, ph) = chosen.pad_to.unwrap_or(chosen.resize);
    let (ow, oh) = outer(&chosen);
    if fits((ow, oh)) {
        return Ok(chosen);
    }
    let name = if fits((pw, ph)) {
        "rotate"
    } else if spec.height.is_some() && (ph > pw || spec.width.is_none()) {
        "height"
    } else {
        "width"
    };
    let reason = if ow.max(oh) > max {
        format!("the output would be {ow}x{oh}, above the limit of {max} pixels a side")
    } else {
        format!(
            "the output would be {ow}x{oh} ({} pixels) from a {}x{} source region; an \
             unsigned URL may ask for an output larger than its source only up to {} pixels \
             (MAX_UNSIGNED_OUTPUT_PIXELS): ask for less, or sign the URL",
            cost::area((ow, oh)),
            crop.0,
            crop.1,
            limits.max_grown_output_pixels.unwrap_or(0),
        )
    };
    Err(PipelineError::BadParam {
        name: name.into(),
        reason,
    })
}

/// The smallest box of the shape of `(width, height)`, no smaller than it, whose sides reach
/// `min_width` and `min_height` (`min_width`, `min_height` of docs/image-service.md §4): both
/// sides times the larger of the ratios minimum / side, rounded up in whole numbers, so the
/// side that sets the ratio is its minimum exactly (in floating point, 7 x (29 / 7) rounds up
/// to 30).
fn grown_box(
    (width, height): (u32, u32),
    (min_width, min_height): (Option<u32>, Option<u32>),
) -> (u32, u32) {
    // The ratio as a fraction (numerator, denominator), at least 1.
    let mut ratio = (1_u64, 1_u64);
    for (min, side) in [(min_width, width), (min_height, height)] {
        if let Some(m) = min
            && u64::from(m) * ratio.1 > ratio.0 * u64::from(side)
        {
            ratio = (u64::from(m), u64::from(side).max(1));
        }
    }
    let by = |v: u32| u32::try_from((u64::from(v) * ratio.0).div_ceil(ratio.1)).unwrap_or(u32::MAX);
    (by(width), by(height))
}

/// Refuses a `plan` that enlarges the source region it shows (`crop`, of which the plan keeps
/// its `keep` share) more than `most` times on either side, naming `enlarge`. Each side may
/// reach its region's size times `most`, rounded to the nearest pixel.
fn enlargement_fits(plan: &ops::Plan, crop: (u32, u32), most: f64) -> Result<(), PipelineError> {
    let region = (
        f64::from(crop.0) * plan.keep.0,
        f64::from(crop.1) * plan.keep.1,
    );
    let over = |size: u32, region: f64| f64::from(size) > (region * most).round().max(1.0);
    if !over(plan.resize.0, region.0) && !over(plan.resize.1, region.1) {
        return Ok(());
    }
    let factor = (f64::from(plan.resize.0) / region.0).max(f64::from(plan.resize.1) / region.1);
    Err(PipelineError::BadParam {
        name: "enlarge".into(),
        reason: format!(
            "the output would enlarge the {:.0}x{:.0} source region {factor:.1} times to {}x{}; \
             an unsigned URL may enlarge at most {most} times a side (MAX_UNSIGNED_ENLARGE): \
             ask for a smaller size, leave enlarge out, or sign the URL",
            region.0, region.1, plan.resize.0, plan.resize.1,
        ),
    })
}

/// The width a text watermark is drawn at on an output `width` pixels wide.
pub(crate) fn text_width(width: u32, scale: f32) -> u32 {
    (f64::from(width) * f64::from(scale))
        .round()
        .clamp(1.0, f64::from(u32::MAX)) as u32
}

/// The share of a `mark`-sized watermark's full size its decode must keep for `fitted`.
pub(crate) fn mark_scale(mark: (u32, u32), fitted: (u32, u32)) -> f64 {
    let need_x = f64::from(fitted.0) / f64::from(mark.0.max(1));
    let need_y = f64::from(fitted.1) / f64::from(mark.1.max(1));
    need_x.max(need_y).min(1.0)
}
