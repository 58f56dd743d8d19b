//! image-pipeline: decode, transform and encode images, bytes in and bytes out, no I/O.
//!
//! This is the engine of image-server's resize endpoint (docs/image-service.md §4;
//! docs/architecture.md, Image server decisions). The server parses the query into a [`TransformSpec`] (whose `Display`
//! is the cache key), fetches the source (and watermark) bytes, and calls [`transform`].
//!
//! Order of operations: decode (JPEG shrink-on-load when the output is small), embedded ICC
//! profile to sRGB, EXIF orient, crop, trim, resize (fit and position), rotate, flip/flop,
//! blur, sharpen, pixelate, grayscale, padding, watermark (an image or text), encode; or,
//! instead of the encode, a placeholder (BlurHash or LQIP, `placeholder`).
//!
//! Decode, colour conversion and resize of an opaque image compute what sharp 0.34 (libvips
//! 8.17) computes, to the bit (`tests/libvips_parity.rs`): the same shrink-on-load, Little CMS
//! to libvips' sRGB profile, and libvips' Lanczos3 arithmetic (`reduce`). With the encoders at
//! sharp's settings (WebP method 4) the output files are sharp's.

mod animation;
mod budget;
mod cancel;
mod colour;
mod cost;
mod decode;
mod encode;
mod error;
mod heif_boxes;
mod info;
mod metadata;
mod ops;
mod placeholder;
mod reduce;
mod shrink;
mod spec;
mod text;
mod trim;

use image::DynamicImage;

pub use cancel::Cancel;
pub use decode::{SourceFormat, SourceInfo, probe, sniff, verify};
pub use error::PipelineError;
pub use info::{ExifFields, ImageInfo, info};
pub use spec::{
    CropRect, Fit, Format, FormatParam, Limits, OutputFormat, Position, Rgba, TransformSpec,
    Watermark, WatermarkMark,
};
pub use text::{MAX_COMBINING_MARKS, MAX_GLYPH_COVERAGE, MAX_WATERMARK_TEXT_CHARS};

/// An encoded result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The encoded file.
    pub bytes: Vec<u8>,
    pub format: OutputFormat,
    /// Output width in pixels.
    pub width: u32,
    /// Output height in pixels.
    pub height: u32,
}

/// Applies `spec` to the `source` image and encodes it as `format`, except that with
/// `format=auto` AVIF outputs over `limits.avif_max_pixels` are encoded as WebP and a JPEG
/// with transparent pixels as PNG ([`Output::format`] says which).
///
/// `watermark` holds the bytes of the image named by `spec.watermark` (the caller fetches it);
/// it is ignored when the spec has no image watermark. A text watermark is drawn here
/// (`text.rs`), `scale` of the output's width wide.
///
/// # Errors
/// - [`PipelineError::NotAnImage`]: the source (or watermark) is not a supported format (415);
/// - [`PipelineError::TooManyPixels`]: above `limits.max_source_pixels`, from the header (422);
/// - [`PipelineError::Undecodable`]: truncated or corrupt (422);
/// - [`PipelineError::BadParam`]: the crop lies outside the image, the planned output
///   exceeds `limits.max_output_dimension`, enlarges more than `limits.max_enlarge` or grows
///   past `limits.max_grown_output_pixels`, or an explicit AVIF output exceeds
///   `limits.avif_max_pixels` (400); all decided from the header, before decoding;
/// - [`PipelineError::Encode`]: the encoder failed (500).
pub fn transform(
    source: &[u8],
    spec: &TransformSpec,
    format: OutputFormat,
    watermark: Option<&[u8]>,
    limits: &Limits,
) -> Result<Output, PipelineError> {
    let info = probe(source, limits.max_source_pixels)?;
    let (ow, oh) = info.oriented_size();

    // The region of the oriented source that is kept, in full-resolution pixels.
    let crop = match spec.crop {
        None => (0, 0, ow, oh),
        Some(c) => {
            let over_x = u64::from(c.left) + u64::from(c.width) > u64::from(ow);
            let over_y = u64::from(c.top) + u64::from(c.height) > u64::from(oh);
            if over_x || over_y {
                // Name the edge that is out.
                let name = match (over_x, c.left >= ow, c.top >= oh) {
                    (true, true, _) => "cropLeft",
                    (true, false, _) => "cropWidth",
                    (false, _, true) => "cropTop",
                    (false, _, false) => "cropHeight",
                };
                return Err(PipelineError::BadParam {
                    name: name.into(),
                    reason: format!("the crop rectangle lies outside the {ow}x{oh} image"),
                });
            }
            (c.left, c.top, c.width, c.height)
        }
    };
    // An animated GIF or WebP (animation.rs): its frames are counted and limited before
    // anything is decoded. It stays animated in WebP and GIF (format=auto picks WebP, or GIF for
    // a client without WebP); a still result shows its first frame, or `frame`'s.
    let frames = animation::frame_count(source, info.format);
    if frames > 1 {
        animation::check(frames, (info.width, info.height), limits)?;
    }
    let moving_format = match format {
        OutputFormat::Avif if spec.format == Some(FormatParam::Format(Format::Auto)) => {
            OutputFormat::Webp
        }
        OutputFormat::Jpeg | OutputFormat::Png
            if spec.format == Some(FormatParam::Format(Format::Auto)) =>
        {
            OutputFormat::Gif
        }
        other => other,
    };
    let animate = frames > 1
        && spec.animated
        && spec.frame.is_none()
        && matches!(moving_format, OutputFormat::Webp | OutputFormat::Gif);
    let mut picked = match spec.frame {
        Some(n) if !animate && (n > 0 || frames > 1) => {
            Some(animation::nth(source, info.format, n, frames)?)
        }
        _ => None,
    };
    // `trim` finds its box on the picture itself: it is decoded whole first (a full-size
    // decode, where the other requests shrink on load), and the box inside the border becomes
    // the crop the plan is made for.
    let (crop, plan, decoded) = match spec.trim {
        None => (crop, output_plan((crop.2, crop.3), spec, limits)?, None),
        Some(threshold) => {
            let (full, scale) = match picked.take() {
                Some(frame) => (frame, (1.0, 1.0)),
                None => decode::decode(source, &info, 1.0)?,
            };
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let at = |v: u32, s: f64| (f64::from(v) * s).round() as u32;
            let region = full.crop_imm(
                at(crop.0, scale.0),
                at(crop.1, scale.1),
                at(crop.2, scale.0).max(1),
                at(crop.3, scale.1).max(1),
            );
            let (l, t, w, h) = trim::content_box(&region, threshold)?;
            // A whole decode is at scale 1 on every path; the division keeps it right if not.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let back = |v: u32, s: f64| (f64::from(v) / s).round() as u32;
            let (l, t) = (back(l, scale.0), back(t, scale.1));
            let crop = (
                crop.0 + l,
                crop.1 + t,
                back(w, scale.0).clamp(1, crop.2 - l.min(crop.2 - 1)),
                back(h, scale.1).clamp(1, crop.3 - t.min(crop.3 - 1)),
            );
            let plan = output_plan((crop.2, crop.3), spec, limits)?;
            (crop, plan, Some((full, scale)))
        }
    };
    if let Some(sides) = spec.padding {
        padding_fits(
            ops::rotated_size(plan.pad_to.unwrap_or(plan.resize), spec.rotate),
            sides,
            (crop.2, crop.3),
            limits,
        )?;
    }
    // An explicit AVIF over the cap is refused from the plan, before anything is decoded.
    if format == OutputFormat::Avif && spec.format == Some(FormatParam::Format(Format::Avif)) {
        avif_fits(
            ops::rotated_size(plan.pad_to.unwrap_or(plan.resize), spec.rotate),
            limits,
        )?;
    }

    // Decode no larger than needed: the kept share of the crop must still cover the output.
    let need_x = f64::from(plan.resize.0) / (f64::from(crop.2) * plan.keep.0);
    let need_y = f64::from(plan.resize.1) / (f64::from(crop.3) * plan.keep.1);
    let min_scale = need_x.max(need_y).min(1.0);
    // The cost model (cost.rs): what this request will hold and do, from the headers and
    // the parameters, refused over the budget before anything is decoded.
    let mark_info = match (&spec.watermark, watermark) {
        (
            Some(Watermark {
                mark: WatermarkMark::Image(_),
                ..
            }),
            Some(bytes),
        ) => Some((
            probe(bytes, limits.max_source_pixels).map_err(unusable_mark)?,
            bytes,
        )),
        _ => None,
    };
    let budget = RequestBudget {
        source,
        info: &info,
        frames: if animate { frames } else { 1 },
        // A trim or a picked frame decodes the whole picture (and the frames before it).
        whole: decoded.is_some() || picked.is_some(),
        frames_before: spec.frame.filter(|_| !animate).unwrap_or(0),
        plan: &plan,
        min_scale,
        format: if animate { moving_format } else { format },
        mark: mark_info,
    };
    budget.check(spec, limits)?;
    cancel::check()?;
    let job = ResizeJob {
        source,
        info: &info,
        crop,
        plan,
        position: spec.position,
        min_scale,
    };
    if animate {
        return animated(&job, spec, moving_format, watermark, limits, frames);
    }
    let mut img = match decoded.or_else(|| picked.map(|frame| (frame, (1.0, 1.0)))) {
        Some((full, scale)) => job.resize(&full, scale)?,
        None => match job.reduce_png_streamed()? {
            Some(img) => img,
            None => job.decode_and_resize()?,
        },
    };
    cancel::check()?;

    // format=auto does not flatten transparency: a client that accepts neither AVIF nor WebP
    // gets PNG for a picture with a transparent pixel (as Cloudinary's f_auto does), and JPEG
    // for an opaque one, alpha channel or not.
    let format = if format == OutputFormat::Jpeg
        && spec.format == Some(FormatParam::Format(Format::Auto))
        && has_transparency(&img)
    {
        OutputFormat::Png
    } else {
        format
    };
    let default_bg = if format == OutputFormat::Jpeg {
        [255, 255, 255, 255]
    } else {
        [0, 0, 0, 0]
    };
    let bg = spec.background.map_or(default_bg, |c| c.0);
    let mut marks = Marks::new(watermark, limits);
    img = finish(img, spec, plan.pad_to, bg, &mut marks)?;
    cancel::check()?;
    if matches!(format, OutputFormat::Blurhash | OutputFormat::Lqip) {
        let bytes = if format == OutputFormat::Blurhash {
            placeholder::blurhash(&img, spec.blurhash_components)?
        } else {
            placeholder::lqip(&img, limits.webp_effort)?
        };
        return Ok(Output {
            bytes,
            format,
            width: img.width(),
            height: img.height(),
        });
    }
    if format == OutputFormat::Jpeg && img.color().has_alpha() {
        img = flatten(&img, bg)?;
    }
    // format=auto: an AVIF over the cap goes out as WebP (an explicit one was refused above).
    let format = match format {
        OutputFormat::Avif if avif_fits((img.width(), img.height()), limits).is_err() => {
            OutputFormat::Webp
        }
        other => other,
    };
    let settings = encode::Settings {
        quality: spec.quality,
        progressive: spec.progressive,
        gray: spec.grayscale,
        webp_effort: limits.webp_effort,
    };
    // keep_copyright: what the result carries over (metadata.rs), counted against max_bytes.
    let kept = if spec.keep_copyright {
        let had_icc = info::info(source).is_ok_and(|i| i.icc_profile.is_some());
        metadata::kept(source, had_icc)
    } else {
        metadata::Kept::default()
    };
    let overhead = kept.exif.as_ref().map_or(0, Vec::len) + kept.icc.map_or(0, <[u8]>::len);
    let bytes = match spec.max_bytes {
        None => encode::encode(&img, format, settings)?,
        Some(budget) => {
            let room = budget.saturating_sub(overhead as u64 + if overhead > 0 { 64 } else { 0 });
            let (bytes, fitted) = budget::encode_within(img, format, settings, room.max(1))?;
            img = fitted;
            bytes
        }
    };
    let bytes = metadata::embed(bytes, format, &kept)?;
    Ok(Output {
        bytes,
        format,
        width: img.width(),
        height: img.height(),
    })
}

/// An animated result: every frame resized and finished as `job` and `spec` say, encoded as
/// an animation in `format` (WebP or GIF) with the source's delays. One frame at a time: each
/// is decoded, finished and handed to the encoder before the next is decoded, so the memory
/// held is one frame's and the encoder's, not every frame's (the budget, `cost.rs`, counts
/// every frame's work).
fn animated(
    job: &ResizeJob<'_>,
    spec: &TransformSpec,
    format: OutputFormat,
    watermark: Option<&[u8]>,
    limits: &Limits,
    frames: u32,
) -> Result<Output, PipelineError> {
    if spec.max_bytes.is_some() {
        return Err(PipelineError::BadParam {
            name: "max_bytes".into(),
            reason: "not applied to animations: add animated=false for a still, or leave it out"
                .into(),
        });
    }
    let bg = spec.background.map_or([0, 0, 0, 0], |c| c.0);
    let settings = encode::Settings {
        quality: spec.quality,
        progressive: false,
        gray: false,
        webp_effort: limits.webp_effort,
    };
    let mut marks = Marks::new(watermark, limits);
    let frames = animation::frames(job.source, job.info.format)?
        // No more than were counted (and budgeted) before decoding.
        .take(frames as usize)
        .map(|frame| {
            let (frame, delay) = frame?;
            let img = job.resize(&frame, (1.0, 1.0))?;
            drop(frame);
            let img = finish(img, spec, job.plan.pad_to, bg, &mut marks)?;
            Ok((img.into_rgba8(), delay))
        });
    let (bytes, (width, height)) = animation::encode(frames, format, settings)?;
    Ok(Output {
        bytes,
        format,
        width,
        height,
    })
}

/// The inputs of the cost model (`cost.rs`) that [`transform`] knows before decoding.
struct RequestBudget<'a> {
    source: &'a [u8],
    info: &'a SourceInfo,
    /// Frames decoded, finished and encoded (1 for a still).
    frames: u32,
    /// Whether the whole picture is decoded (trim, or one frame of an animation).
    whole: bool,
    /// Frames decoded before the picked one.
    frames_before: u32,
    plan: &'a ops::Plan,
    min_scale: f64,
    format: OutputFormat,
    /// The watermark image's header and bytes.
    mark: Option<(SourceInfo, &'a [u8])>,
}

impl RequestBudget<'_> {
    /// Refuses the request over MAX_ANIMATION_OUTPUT_PIXELS, MAX_REQUEST_BYTES or
    /// MAX_REQUEST_PIXEL_OPS, or a text whose glyphs pile up (`text::layout_for`), naming the
    /// parameter that asked for the most.
    fn check(&self, spec: &TransformSpec, limits: &Limits) -> Result<(), PipelineError> {
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

/// The width a text watermark is drawn at on an output `width` pixels wide.
fn text_width(width: u32, scale: f32) -> u32 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let w = (f64::from(width) * f64::from(scale))
        .round()
        .clamp(1.0, f64::from(u32::MAX)) as u32;
    w
}

/// The share of a `mark`-sized watermark's full size its decode must keep for `fitted`.
fn mark_scale(mark: (u32, u32), fitted: (u32, u32)) -> f64 {
    let need_x = f64::from(fitted.0) / f64::from(mark.0.max(1));
    let need_y = f64::from(fitted.1) / f64::from(mark.1.max(1));
    need_x.max(need_y).min(1.0)
}

/// The watermark of one request, made once when the first picture (or frame) is finished and
/// composited onto every frame after it: all frames are the same size.
struct Marks<'a> {
    bytes: Option<&'a [u8]>,
    limits: &'a Limits,
    made: Option<image::RgbaImage>,
}

impl<'a> Marks<'a> {
    fn new(bytes: Option<&'a [u8]>, limits: &'a Limits) -> Self {
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
fn finish(
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

/// The crop rectangle `(left, top, width, height)` at a decode's `scale` per axis; it may
/// overhang a scaled decode by under a pixel, which the resize centres (`ops::resize`).
fn scaled_region(crop: (u32, u32, u32, u32), scale: (f64, f64)) -> ops::Region {
    ops::Region {
        left: f64::from(crop.0) * scale.0,
        top: f64::from(crop.1) * scale.1,
        width: f64::from(crop.2) * scale.0,
        height: f64::from(crop.3) * scale.1,
    }
}

/// The decode-and-resize step of one transform.
struct ResizeJob<'a> {
    source: &'a [u8],
    info: &'a SourceInfo,
    /// The crop rectangle `(left, top, width, height)` of the oriented source.
    crop: (u32, u32, u32, u32),
    plan: ops::Plan,
    position: Position,
    /// The smallest share of the full size the decode must keep (see `decode::decode`).
    min_scale: f64,
}

impl ResizeJob<'_> {
    /// Decodes the source no larger than `min_scale` needs, then cuts and resizes it as `plan` says.
    fn decode_and_resize(&self) -> Result<DynamicImage, PipelineError> {
        let (img, scale) = decode::decode(self.source, self.info, self.min_scale)?;
        self.resize(&img, scale)
    }

    /// Cuts and resizes `img`, decoded at `scale` of the full size per axis, as `plan` says.
    fn resize(&self, img: &DynamicImage, scale: (f64, f64)) -> Result<DynamicImage, PipelineError> {
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
    fn reduce_png_streamed(&self) -> Result<Option<DynamicImage>, PipelineError> {
        let (source, info, plan) = (self.source, self.info, &self.plan);
        let k = shrink::factor(self.min_scale);
        if info.format != SourceFormat::Png || info.orientation != 1 || k < 2 {
            return Ok(None);
        }
        #[allow(clippy::cast_precision_loss)]
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
fn output_plan(
    crop: (u32, u32),
    spec: &TransformSpec,
    limits: &Limits,
) -> Result<ops::Plan, PipelineError> {
    let max = limits.max_output_dimension;
    // Any output up to the size of the region it shows; a larger one only up to the cap.
    let max_area = limits
        .max_grown_output_pixels
        .map(|cap| cap.max(area(crop)));
    let fits = |size: (u32, u32)| {
        size.0.max(size.1) <= max && max_area.is_none_or(|most| area(size) <= most)
    };
    let plan = |w, h, fit, enlarge| ops::plan(crop, w, h, fit, enlarge);
    let mut enlarge = spec.enlarge;
    // A request without a size is fitted inside the default box, if the server has one; with
    // `zoom` alone it is the source region times the zoom.
    let mut chosen = match (spec.width, spec.height, spec.default_box, spec.zoom) {
        (None, None, _, Some(z)) => {
            enlarge |= z > 1.0;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
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
            #[allow(clippy::cast_precision_loss)]
            let by_area = (most as f64 / area((ow, oh)) as f64).sqrt();
            share = share.min(by_area);
        }
        let from = chosen.resize;
        // The turned box's sides are rounded to whole pixels, which can leave it a sliver over
        // an area; a percent less then fits.
        for _ in 0..8 {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
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
            area((ow, oh)),
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

/// Refuses `padding` that takes the `output` (after rotation) past MAX_OUTPUT_DIMENSION, or, on
/// an unsigned URL, past MAX_UNSIGNED_OUTPUT_PIXELS when it grows larger than its source
/// region `crop`, naming `padding`; decided before decoding.
fn padding_fits(
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
        let most = cap.max(area(crop));
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

/// Width times height, in pixels.
fn area((w, h): (u32, u32)) -> u64 {
    u64::from(w) * u64::from(h)
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

/// Errors of the watermark's own bytes name the `watermark` parameter (400), so they do not
/// read as if the source were at fault.
fn unusable_mark(e: PipelineError) -> PipelineError {
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

/// Refuses an AVIF output of `(width, height)` over `limits.avif_max_pixels`, naming `format`.
fn avif_fits((width, height): (u32, u32), limits: &Limits) -> Result<(), PipelineError> {
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

/// Whether any pixel is less than fully opaque.
fn has_transparency(img: &DynamicImage) -> bool {
    match img {
        DynamicImage::ImageRgba8(b) => b.as_raw().chunks_exact(4).any(|p| p[3] < u8::MAX),
        DynamicImage::ImageLumaA8(b) => b.as_raw().chunks_exact(2).any(|p| p[1] < u8::MAX),
        other if other.color().has_alpha() => other.to_rgba8().pixels().any(|p| p.0[3] < u8::MAX),
        _ => false,
    }
}

/// `img` over `bg`, without alpha (a JPEG's); its picture reserved fallibly ([`cost::canvas`]).
fn flatten(img: &DynamicImage, bg: [u8; 4]) -> Result<DynamicImage, PipelineError> {
    let mut rgb = cost::canvas(img.width(), img.height(), image::Rgb([0_u8; 3]))?;
    let bg_a = f32::from(bg[3]) / 255.0;
    for (dst, src) in rgb.pixels_mut().zip(img.to_rgba8().pixels()) {
        let a = f32::from(src.0[3]) / 255.0;
        for ((d, &s), &b) in dst.0.iter_mut().zip(&src.0[..3]).zip(&bg[..3]) {
            let under = f32::from(b) * bg_a + 255.0 * (1.0 - bg_a);
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let v = (f32::from(s) * a + under * (1.0 - a))
                .round()
                .clamp(0.0, 255.0) as u8;
            *d = v;
        }
    }
    Ok(DynamicImage::ImageRgb8(rgb))
}

/// Decodes any supported image to RGBA with its orientation applied, at full size.
///
/// Used by tests and by the benchmark's SSIM tool to compare outputs pixel by pixel.
///
/// # Errors
/// As [`transform`] for the source: not an image, too many pixels, undecodable.
pub fn decode_to_rgba(
    bytes: &[u8],
    max_source_pixels: u64,
) -> Result<image::RgbaImage, PipelineError> {
    let info = probe(bytes, max_source_pixels)?;
    let (img, _) = decode::decode(bytes, &info, 1.0)?;
    Ok(img.to_rgba8())
}

/// Re-exported so callers can name the pixel buffers of [`decode_to_rgba`].
pub use image;

#[cfg(feature = "samples")]
pub mod fuzzing;
#[cfg(feature = "samples")]
pub mod samples;

#[cfg(test)]
mod tests {
    use super::*;
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
            let crop = (0, 0, info.width, info.height);
            let plan = ops::plan((info.width, info.height), width, height, fit, false);
            let need_x = f64::from(plan.resize.0) / (f64::from(crop.2) * plan.keep.0);
            let need_y = f64::from(plan.resize.1) / (f64::from(crop.3) * plan.keep.1);
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
