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
pub mod auto_quality;
mod budget;
mod cancel;
mod colour;
mod cost;
mod decode;
mod encode;
mod error;
mod finish;
mod heif_boxes;
mod info;
mod limits;
mod metadata;
mod ops;
mod placeholder;
mod plan;
mod reduce;
mod resize;
mod shrink;
mod spec;
mod text;
mod trim;

use image::DynamicImage;

use finish::{Marks, finish, unusable_mark};
use limits::{RequestBudget, avif_fits, padding_fits};
use plan::output_plan;
use resize::ResizeJob;

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
    let crop = plan::crop_region(spec.crop, (ow, oh))?;
    // An animated GIF or WebP (animation.rs): its frames are counted and limited before
    // anything is decoded. It stays animated in WebP and GIF (format=auto picks WebP, or GIF for
    // a client without WebP); a still result shows its first frame, or `frame`'s.
    let frames = animation::frame_count(source, info.format);
    if frames > 1 {
        animation::check(frames, (info.width, info.height), limits)?;
    }
    let moving_format = match format {
        OutputFormat::Avif if spec.negotiated() => OutputFormat::Webp,
        OutputFormat::Jpeg | OutputFormat::Png if spec.negotiated() => OutputFormat::Gif,
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
        None => (
            crop,
            output_plan((crop.width, crop.height), spec, limits)?,
            None,
        ),
        Some(threshold) => {
            let (full, scale) = match picked.take() {
                Some(frame) => (frame, (1.0, 1.0)),
                None => decode::decode(source, &info, 1.0)?,
            };
            let at = |v: u32, s: f64| (f64::from(v) * s).round() as u32;
            let region = full.crop_imm(
                at(crop.left, scale.0),
                at(crop.top, scale.1),
                at(crop.width, scale.0).max(1),
                at(crop.height, scale.1).max(1),
            );
            let (l, t, w, h) = trim::content_box(&region, threshold)?;
            // A whole decode is at scale 1 on every path; the division keeps it right if not.
            let back = |v: u32, s: f64| (f64::from(v) / s).round() as u32;
            let (l, t) = (back(l, scale.0), back(t, scale.1));
            let crop = CropRect {
                left: crop.left + l,
                top: crop.top + t,
                width: back(w, scale.0).clamp(1, crop.width - l.min(crop.width - 1)),
                height: back(h, scale.1).clamp(1, crop.height - t.min(crop.height - 1)),
            };
            let plan = output_plan((crop.width, crop.height), spec, limits)?;
            (crop, plan, Some((full, scale)))
        }
    };
    if let Some(sides) = spec.padding {
        padding_fits(
            ops::rotated_size(plan.pad_to.unwrap_or(plan.resize), spec.rotate),
            sides,
            (crop.width, crop.height),
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
    let need_x = f64::from(plan.resize.0) / (f64::from(crop.width) * plan.keep.0);
    let need_y = f64::from(plan.resize.1) / (f64::from(crop.height) * plan.keep.1);
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
    let transparent = spec.negotiated() && has_transparency(&img);
    let format = if format == OutputFormat::Jpeg && transparent {
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
    // quality=auto: the quality searched per format; format=best: the smallest of the
    // candidates, each at its searched quality (auto_quality.rs).
    let (format, settings) = if spec.auto_quality {
        let mut candidates: Vec<OutputFormat> = if spec.best() {
            format.candidates().to_vec()
        } else {
            vec![format]
        };
        let (w, h) = (img.width(), img.height());
        candidates.retain(|f| match f {
            OutputFormat::Avif => avif_fits((w, h), limits).is_ok(),
            OutputFormat::Jpeg => !transparent,
            _ => true,
        });
        let mut best: Option<(OutputFormat, auto_quality::Found)> = None;
        for f in candidates {
            let flat;
            let pic = if f == OutputFormat::Jpeg && img.color().has_alpha() {
                flat = flatten(&img, bg)?;
                &flat
            } else {
                &img
            };
            let found = auto_quality::search(pic, f, settings, limits.auto_quality_target)?;
            if best
                .as_ref()
                .is_none_or(|(_, b)| found.bytes.len() < b.bytes.len())
            {
                best = Some((f, found));
            }
        }
        match best {
            Some((f, found)) if spec.max_bytes.is_none() => {
                if f == OutputFormat::Jpeg && img.color().has_alpha() {
                    img = flatten(&img, bg)?;
                }
                let bytes = metadata::embed(found.bytes, f, &kept)?;
                return Ok(Output {
                    bytes,
                    format: f,
                    width: img.width(),
                    height: img.height(),
                });
            }
            Some((f, found)) => (
                f,
                encode::Settings {
                    quality: found.quality,
                    ..settings
                },
            ),
            None => (format, settings),
        }
    } else {
        (format, settings)
    };
    if format == OutputFormat::Jpeg && img.color().has_alpha() {
        img = flatten(&img, bg)?;
    }
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
