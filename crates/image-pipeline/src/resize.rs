//! The decode-and-resize step of one transformation: the source decoded no larger than the
//! plan needs (shrink-on-load), the kept region cut and resized; an RGB PNG streamed row by row
//! when it shrinks enough, so its full-size picture is never held.

use image::DynamicImage;

use crate::decode::{self, SourceFormat, SourceInfo};
use crate::error::PipelineError;
use crate::ops;
use crate::reduce;
use crate::shrink;
use crate::spec::{CropRect, Position};

/// The crop rectangle at a decode's `scale` per axis; it may overhang a scaled decode by under
/// a pixel, which the resize centres (`ops::resize`).
fn scaled_region(crop: CropRect, scale: (f64, f64)) -> ops::Region {
    ops::Region {
        left: f64::from(crop.left) * scale.0,
        top: f64::from(crop.top) * scale.1,
        width: f64::from(crop.width) * scale.0,
        height: f64::from(crop.height) * scale.1,
    }
}

/// The decode-and-resize step of one transform.
pub(crate) struct ResizeJob<'a> {
    pub(crate) source: &'a [u8],
    pub(crate) info: &'a SourceInfo,
    /// The crop rectangle of the oriented source.
    pub(crate) crop: CropRect,
    pub(crate) plan: ops::Plan,
    pub(crate) position: Position,
    /// The smallest share of the full size the decode must keep (see `decode::decode`).
    pub(crate) min_scale: f64,
}

impl ResizeJob<'_> {
    /// Decodes the source no larger than `min_scale` needs, then cuts and resizes it as `plan` says.
    pub(crate) fn decode_and_resize(&self) -> Result<DynamicImage, PipelineError> {
        let (img, scale) = decode::decode(self.source, self.info, self.min_scale)?;
        self.resize(&img, scale)
    }

    /// Cuts and resizes `img`, decoded at `scale` of the full size per axis, as `plan` says.
    pub(crate) fn resize(
        &self,
        img: &DynamicImage,
        scale: (f64, f64),
    ) -> Result<DynamicImage, PipelineError> {
        let region = scaled_region(self.crop, scale);
        let region = ops::place(img, region, self.plan.keep, self.position);
        let shrink = self.plan.scale.map(|s| (scale.0 / s, scale.1 / s));
        ops::resize(img, region, self.plan.resize, shrink)
    }

    /// The PNG fast path: an RGB PNG that shrinks by 2 or more is streamed row by row through
    /// libvips' row box and into the reduction ([`reduce::Reducer`]), so the shrunk copy of the
    /// source is never held whole (the 85 MB budget at concurrency 2; the same pixels as the
    /// whole-image path). `None` when the request needs the decoded image first: another format,
    /// an EXIF orientation, an entropy or attention position, an enlargement, or a PNG with alpha,
    /// grey or interlace.
    pub(crate) fn reduce_png_streamed(&self) -> Result<Option<DynamicImage>, PipelineError> {
        let (source, info, plan) = (self.source, self.info, &self.plan);
        let k = shrink::factor(self.min_scale);
        if info.format != SourceFormat::Png || info.orientation != 1 || k < 2 {
            return Ok(None);
        }
        let scale = (1.0, 1.0 / k as f64);
        let Some(region) = ops::place_at(scaled_region(self.crop, scale), plan.keep, self.position)
        else {
            return Ok(None);
        };
        let dst = plan.resize;
        let shrink = plan.scale.map_or_else(
            || ops::fill_shrink(region, dst),
            |s| (scale.0 / s, scale.1 / s),
        );
        if shrink.0 < 1.0 || shrink.1 < 1.0 || reduce::box_factor(shrink.1) > 1 {
            return Ok(None);
        }
        let height = info.height.div_ceil(u32::try_from(k).unwrap_or(1));
        let size = (f64::from(info.width), f64::from(height));
        let reduction = ops::reduction(region, size, dst, shrink);
        let mut reducer = reduce::Reducer::<3>::new(
            info.width as usize,
            height as usize,
            &reduction,
            reduce::box_factor(shrink.0),
        )?;
        if !decode::stream_png_rows(source, k, &mut |row| reducer.push(row))? {
            return Ok(None);
        }
        let pixels = reducer.finish()?;
        image::RgbImage::from_raw(dst.0, dst.1, pixels)
            .map(|img| Some(DynamicImage::ImageRgb8(img)))
            .ok_or_else(|| PipelineError::Encode("resize: bad buffer size".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::probe;
    use crate::spec::Fit;
    use pretty_assertions::assert_eq;

    /// A 640x400 RGB PNG with edges and gradients (a flat picture would hide sampling errors).
    fn png() -> Vec<u8> {
        let img = image::RgbImage::from_fn(640, 400, |x, y| {
            let v = |a: u32| u8::try_from(a % 256).unwrap_or(0);
            image::Rgb([v(x * 7 + y), v((y * 3) ^ x), v((x / 16 + y / 16) * 40)])
        });
        let mut out = std::io::Cursor::new(Vec::new());
        assert!(img.write_to(&mut out, image::ImageFormat::Png).is_ok());
        out.into_inner()
    }

    #[test]
    fn a_streamed_png_gives_the_pixels_of_the_whole_image_path() {
        let source = png();
        let info = probe(&source, u64::MAX).ok();
        let info = info.as_ref();
        for (width, height, fit) in [
            (Some(150), None, Fit::Inside),
            (Some(101), Some(77), Fit::Fill),
            (Some(80), Some(80), Fit::Cover),
        ] {
            let Some(info) = info else {
                panic!("probe failed");
            };
            let crop = CropRect {
                left: 0,
                top: 0,
                width: info.width,
                height: info.height,
            };
            let plan = ops::plan((info.width, info.height), width, height, fit, false);
            let need_x = f64::from(plan.resize.0) / (f64::from(crop.width) * plan.keep.0);
            let need_y = f64::from(plan.resize.1) / (f64::from(crop.height) * plan.keep.1);
            let min_scale = need_x.max(need_y).min(1.0);
            let job = ResizeJob {
                source: &source,
                info,
                crop,
                plan,
                position: Position::Centre,
                min_scale,
            };
            let streamed = job
                .reduce_png_streamed()
                .ok()
                .flatten()
                .map(DynamicImage::into_bytes);
            let whole = job.decode_and_resize().ok().map(DynamicImage::into_bytes);
            assert!(streamed.is_some(), "{width:?}x{height:?} was not streamed");
            assert_eq!(streamed, whole, "{width:?}x{height:?} {fit:?}");
        }
    }
}
