//! Reading the resize endpoint's query into a [`TransformSpec`]: one arm a parameter of
//! [`image_params::PARAMS`], with the bounds and defaults that crate names
//! (docs/architecture.md, "Image parameters").

use image_params::{
    AUTO_QUALITY, BLURHASH_COMPONENTS, DEFAULT_QUALITY, DEFAULT_TRIM, DEFAULT_WATERMARK_OPACITY,
    DEFAULT_WATERMARK_POSITION, DEFAULT_WATERMARK_SCALE, Format, MAX_BLUR, MAX_BYTES, MAX_DPR,
    MAX_FRAME, MAX_ROTATE, Name, PIXELATE, QUALITY,
};

use super::{
    CropRect, Fit, FormatParam, Limits, Position, Rgba, TransformSpec, Watermark, WatermarkMark,
};
use crate::error::PipelineError;

fn bad(name: &str, reason: impl Into<String>) -> PipelineError {
    PipelineError::BadParam {
        name: name.to_owned(),
        reason: reason.into(),
    }
}

/// A switch: on for `true`, `1`, `yes`, `on` or no value, off for `false`, `0`, `no`, `off`
/// (docs/architecture.md, "Image server decisions").
fn switch(name: &str, v: &str) -> Result<bool, PipelineError> {
    match v.to_ascii_lowercase().as_str() {
        "" | "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(bad(name, "expected true, false, 1, 0 or no value")),
    }
}

/// `padding`: one to four pixel counts, comma-separated, in CSS order (`10`; `10,20` top and
/// bottom, left and right; `10,20,30` top, left and right, bottom; `10,20,30,40` top, right,
/// bottom, left). All zero is no padding.
fn padding(name: &str, v: &str, max: u32) -> Result<Option<[u32; 4]>, PipelineError> {
    let sides = v
        .split(',')
        .map(|n| pixels(name, n, 0, max))
        .collect::<Result<Vec<u32>, _>>()?;
    let [t, r, b, l] = match sides[..] {
        [a] => [a, a, a, a],
        [v, h] => [v, h, v, h],
        [t, h, b] => [t, h, b, h],
        [t, r, b, l] => [t, r, b, l],
        _ => return Err(bad(name, "expected 1 to 4 pixel counts, comma-separated")),
    };
    Ok((t | r | b | l != 0).then_some([t, r, b, l]))
}

/// A whole number within `range`, written plainly (no decimals, no sign), as `quality`,
/// `max_bytes` and the BlurHash components take it; `unit` names what it counts in the error
/// (`must be a whole number from 1 to 100`).
fn whole<T>(
    name: &str,
    v: &str,
    range: &std::ops::RangeInclusive<T>,
    unit: &str,
) -> Result<T, PipelineError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    v.trim()
        .parse::<T>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            bad(
                name,
                format!("must be {unit} from {} to {}", range.start(), range.end()),
            )
        })
}

fn number(name: &str, v: &str) -> Result<f64, PipelineError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .ok_or_else(|| bad(name, format!("{v:?} is not a number")))
}

/// A ratio above 0 and at most [`MAX_DPR`] (`dpr`, `zoom`).
fn ratio(name: &str, v: &str) -> Result<f64, PipelineError> {
    let r = number(name, v)?;
    if !(r > 0.0 && r <= MAX_DPR) {
        return Err(bad(name, format!("must be above 0 and at most {MAX_DPR}")));
    }
    Ok(r)
}

/// A number from 0 to `most` (`rotate`, `blur`, `watermark_opacity`); `reason` is the error.
fn between(name: &str, v: &str, most: f64, reason: &str) -> Result<f64, PipelineError> {
    let n = number(name, v)?;
    if !(0.0..=most).contains(&n) {
        return Err(bad(name, reason));
    }
    Ok(n)
}

/// `n` as the `f32` the spec keeps (and the cache key prints).
fn single(n: f64) -> f32 {
    n as f32
}

/// A pixel count. The spec types width and height as "number" (section 4), and a client that
/// computes `400 * devicePixelRatio` sends `533.3333333333334`, so a decimal is rounded to the
/// nearest pixel (and shares the cache entry of that whole number) rather than refused.
fn pixels(name: &str, v: &str, min: u32, max: u32) -> Result<u32, PipelineError> {
    let t = v.trim();
    let n = match t.parse::<u64>() {
        Ok(n) => n,
        Err(_) => {
            let x = number(name, v)?;
            if x < 0.0 {
                return Err(bad(name, format!("must be between {min} and {max}")));
            }
            // Saturating: anything over u64 is over `max` too.

            x.round() as u64
        }
    };
    if n < u64::from(min) || n > u64::from(max) {
        return Err(bad(name, format!("must be between {min} and {max}")));
    }
    u32::try_from(n).map_err(|_| bad(name, "too large"))
}

/// `size` (a width or height) times the device pixel ratio `dpr`, rounded to the nearest pixel
/// (at least 1); over `max` is an error naming `dpr` (`name`), which made it too large.
fn scaled(name: &str, size: u32, dpr: f64, max: u32) -> Result<u32, PipelineError> {
    let n = (f64::from(size) * dpr).round().max(1.0);
    if n > f64::from(max) {
        return Err(bad(
            name,
            format!("{size} x {dpr} = {n} pixels is over the output limit of {max}"),
        ));
    }
    Ok(n as u32)
}

/// `format=`: a [`Format`], AVIF only when this build and `limits` allow it.
fn format(name: &str, v: &str, limits: &Limits) -> Result<FormatParam, PipelineError> {
    match Format::parse(v) {
        Some(Format::Avif) if !cfg!(feature = "avif") => {
            Err(bad(name, "this server is built without AVIF output"))
        }
        Some(Format::Avif) if limits.avif_max_pixels == 0 => {
            Err(bad(name, "AVIF output is off (AVIF_MAX_PIXELS=0)"))
        }
        Some(f) => Ok(FormatParam::Format(f)),
        None => Err(bad(
            name,
            // Worded as recorded in tests/cache_keys.jsonl (whose lines never change);
            // `best` is listed in docs/image-service.md §4.
            "expected webp, jpeg, png, avif, gif, auto or blurhash",
        )),
    }
}

/// A query being read: the spec so far, and what is settled only once every pair is read
/// (parameters that act together, and those that scale others).
struct Query<'a> {
    spec: TransformSpec,
    limits: &'a Limits,
    /// `cropLeft`, `cropTop`, `cropWidth`, `cropHeight`.
    crop: [Option<u32>; 4],
    wm_path: Option<String>,
    wm_text: Option<String>,
    wm_position: Position,
    wm_opacity: f32,
    wm_scale: f32,
    /// Each with the key it came as, which its errors name.
    lqip: Option<(&'a str, bool)>,
    zoom: Option<(&'a str, f64)>,
    dpr: Option<(&'a str, f64)>,
    /// A numeric `quality`, with the key it came as (`format=best` refuses one).
    fixed_quality: Option<&'a str>,
}

impl<'a> Query<'a> {
    fn new(limits: &'a Limits) -> Self {
        Self {
            spec: TransformSpec::default(),
            limits,
            crop: [None; 4],
            wm_path: None,
            wm_text: None,
            wm_position: DEFAULT_WATERMARK_POSITION,
            wm_opacity: DEFAULT_WATERMARK_OPACITY,
            wm_scale: DEFAULT_WATERMARK_SCALE,
            lqip: None,
            zoom: None,
            dpr: None,
            fixed_quality: None,
        }
    }

    /// Reads parameter `name`, sent as `key`, of value `v`.
    fn read(&mut self, name: Name, key: &'a str, v: &str) -> Result<(), PipelineError> {
        let max = self.limits.max_output_dimension;
        let spec = &mut self.spec;
        match name {
            Name::Width => spec.width = Some(pixels(key, v, 1, max)?),
            Name::Height => spec.height = Some(pixels(key, v, 1, max)?),
            Name::Format => spec.format = Some(format(key, v, self.limits)?),
            Name::Quality if v.eq_ignore_ascii_case(AUTO_QUALITY) => {
                spec.auto_quality = true;
                spec.quality = DEFAULT_QUALITY;
                self.fixed_quality = None;
            }
            Name::Quality => {
                spec.quality = whole(key, v, &QUALITY, "a whole number")?;
                spec.auto_quality = false;
                self.fixed_quality = Some(key);
            }
            Name::Rotate => {
                let degrees = format!("must be between 0 and {MAX_ROTATE} degrees");
                spec.rotate = single(between(key, v, MAX_ROTATE, &degrees)? % MAX_ROTATE);
            }
            Name::Sharpen => spec.sharpen = switch(key, v)?,
            Name::Flip => spec.flip = switch(key, v)?,
            Name::Flop => spec.flop = switch(key, v)?,
            Name::Grayscale => spec.grayscale = switch(key, v)?,
            Name::Blur => {
                let sigma = format!("sigma must be between 0 and {MAX_BLUR}");
                let s = single(between(key, v, MAX_BLUR, &sigma)?);
                spec.blur = (s > 0.0).then_some(s);
            }
            Name::Fit => {
                spec.fit = Fit::parse(v)
                    .ok_or_else(|| bad(key, "expected inside, cover, contain, fill or outside"))?;
            }
            Name::Position => {
                spec.position = Position::parse(v).ok_or_else(|| {
                    bad(
                        key,
                        "expected centre, a compass point, entropy or attention",
                    )
                })?;
            }
            Name::Background => {
                let colour = Rgba::parse(v);
                spec.background =
                    Some(colour.ok_or_else(|| bad(key, "expected a hex colour such as ffffff"))?);
            }
            Name::Enlarge => spec.enlarge = switch(key, v)?,
            Name::Dpr => self.dpr = Some((key, ratio(key, v)?)),
            Name::CropLeft => self.crop[0] = Some(pixels(key, v, 0, u32::MAX)?),
            Name::CropTop => self.crop[1] = Some(pixels(key, v, 0, u32::MAX)?),
            Name::CropWidth => self.crop[2] = Some(pixels(key, v, 1, u32::MAX)?),
            Name::CropHeight => self.crop[3] = Some(pixels(key, v, 1, u32::MAX)?),
            Name::Watermark => self.wm_path = Some(v.to_owned()).filter(|p| !p.is_empty()),
            Name::WatermarkText => self.wm_text = Some(crate::text::checked(key, v)?),
            Name::WatermarkPosition => {
                self.wm_position = Position::parse(v)
                    .filter(|p| !matches!(p, Position::Entropy | Position::Attention))
                    .ok_or_else(|| bad(key, "expected centre or a compass point"))?;
            }
            Name::WatermarkOpacity => {
                self.wm_opacity = single(between(key, v, 1.0, "must be between 0 and 1")?);
            }
            Name::WatermarkScale => {
                let s = number(key, v)?;
                if !(s > 0.0 && s <= 1.0) {
                    return Err(bad(key, "must be above 0 and at most 1"));
                }
                self.wm_scale = single(s);
            }
            Name::Zoom => self.zoom = Some((key, ratio(key, v)?)),
            Name::MinWidth => spec.min_width = Some(pixels(key, v, 1, max)?),
            Name::MinHeight => spec.min_height = Some(pixels(key, v, 1, max)?),
            Name::Trim => {
                spec.trim = match v.trim().parse::<u8>() {
                    Ok(threshold) => Some(threshold),
                    Err(_) => switch(key, v)
                        .map_err(|_| bad(key, "expected a threshold 0..=255, true or false"))?
                        .then_some(DEFAULT_TRIM),
                };
            }
            Name::Padding => spec.padding = padding(key, v, max)?,
            Name::Pixelate => {
                let n = pixels(key, v, *PIXELATE.start(), *PIXELATE.end())?;
                spec.pixelate = (n > 1).then_some(n);
            }
            Name::MaxBytes => spec.max_bytes = Some(whole(key, v, &MAX_BYTES, "a byte count")?),
            Name::Animated => spec.animated = switch(key, v)?,
            Name::Frame => spec.frame = Some(pixels(key, v, 0, MAX_FRAME)?),
            Name::KeepCopyright => spec.keep_copyright = switch(key, v)?,
            Name::Progressive => spec.progressive = switch(key, v)?,
            Name::BlurhashX => {
                spec.blurhash_components.0 = whole(key, v, &BLURHASH_COMPONENTS, "a whole number")?;
            }
            Name::BlurhashY => {
                spec.blurhash_components.1 = whole(key, v, &BLURHASH_COMPONENTS, "a whole number")?;
            }
            Name::Lqip => self.lqip = Some((key, switch(key, v)?)),
            // The server's own (docs/image-service.md §5, "Caching", "Presets").
            Name::Signature | Name::Version | Name::Preset => {}
        }
        Ok(())
    }

    /// The spec once every pair is read: `lqip` against `format`, `dpr` then `zoom` applied to
    /// the size, the crop rectangle and the watermark assembled.
    fn finish(self) -> Result<TransformSpec, PipelineError> {
        let mut spec = self.spec;
        let max = self.limits.max_output_dimension;
        if let Some((key, true)) = self.lqip {
            match spec.format {
                None | Some(FormatParam::Lqip) => spec.format = Some(FormatParam::Lqip),
                Some(_) => {
                    return Err(bad(
                        key,
                        "a placeholder is a small WebP: leave out `format`",
                    ));
                }
            }
        }
        if spec.format == Some(FormatParam::Format(Format::Best)) {
            // The formats are compared at one look: each one's quality is searched.
            if let Some(key) = self.fixed_quality {
                return Err(bad(
                    key,
                    "format=best searches the quality itself: leave it out or say auto",
                ));
            }
            spec.auto_quality = true;
        }
        if let Some((key, d)) = self.dpr {
            spec.width = spec.width.map(|w| scaled(key, w, d, max)).transpose()?;
            spec.height = spec.height.map(|h| scaled(key, h, d, max)).transpose()?;
        }
        if let Some((key, z)) = self.zoom {
            if spec.width.is_none() && spec.height.is_none() {
                spec.zoom = Some(z);
            }
            spec.width = spec.width.map(|w| scaled(key, w, z, max)).transpose()?;
            spec.height = spec.height.map(|h| scaled(key, h, z, max)).transpose()?;
        }
        spec.crop = match self.crop {
            [None, None, None, None] => None,
            [left, top, Some(width), Some(height)] => Some(CropRect {
                left: left.unwrap_or(0),
                top: top.unwrap_or(0),
                width,
                height,
            }),
            _ => {
                return Err(bad(
                    "cropWidth",
                    "cropWidth and cropHeight are both required",
                ));
            }
        };
        let mark = match (self.wm_path, self.wm_text) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "watermarkText",
                    "give a watermark image or a watermark text, not both",
                ));
            }
            (Some(path), None) => Some(WatermarkMark::Image(path)),
            (None, Some(text)) => Some(WatermarkMark::Text(text)),
            (None, None) => None,
        };
        spec.watermark = mark.map(|mark| Watermark {
            mark,
            position: self.wm_position,
            opacity: self.wm_opacity,
            scale: self.wm_scale,
        });
        Ok(spec)
    }
}

impl TransformSpec {
    /// Parses the resize endpoint's query pairs (already percent-decoded).
    ///
    /// Accepts every parameter of [`image_params::PARAMS`] (docs/image-service.md §4) by its
    /// spelling or an alias, in any case and with or without `_` and `-`, so snake_case and
    /// camelCase spellings of the multi-word names are both accepted (the original SDK's
    /// `watermarkImage`, `watermarkText`, `watermarkPosition` with `top-left`..., and
    /// `watermarkOpacity` among them). `dpr`, the device pixel ratio of imgproxy, imgix and
    /// Cloudinary (0 < dpr <= 5), multiplies width and height, so `width=400&dpr=2` is
    /// `width=800`, cache entry included. Unknown names, and the server's own (`signature`,
    /// `v`, `preset`), are ignored (and so never reach the cache key), so clients sending
    /// extra parameters keep working.
    ///
    /// # Errors
    /// [`PipelineError::BadParam`] naming the first invalid parameter: a width or height of 0,
    /// not a number or above `limits.max_output_dimension` (`dpr` when the ratio takes it
    /// there); a dpr outside (0, 5]; quality outside 1..=100; rotate
    /// outside 0..=360; an unknown format, fit or position; an incomplete crop rectangle; a
    /// `watermarkText` that is empty, over 200 characters, holds a control character, or comes
    /// with a watermark image.
    pub fn from_query<'a, I>(pairs: I, limits: &Limits) -> Result<Self, PipelineError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut query = Query::new(limits);
        for (key, v) in pairs {
            if let Some(name) = Name::lookup(key) {
                query.read(name, key, v)?;
            }
        }
        query.finish()
    }
}
