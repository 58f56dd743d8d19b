//! The canonical transformation request.
//!
//! The resize endpoint's query (docs/image-service.md §4; docs/architecture.md, Image server decisions) is parsed
//! once into a [`TransformSpec`] (`query.rs`). Its [`Display`](std::fmt::Display) form
//! (`key.rs`) lists every parameter that differs from its default, in a fixed order and with
//! normalised values, so two queries that ask for the same output print the same string: that
//! string is the cache key. The names, aliases, bounds, defaults and key tokens of the
//! parameters are defined once, in the image-params crate (docs/architecture.md, "Image parameters").

mod key;
mod query;

use image_params::{DEFAULT_BLURHASH_COMPONENTS, DEFAULT_QUALITY};

/// Limits that parsing and decoding enforce (docs/configuration.md).
///
/// `max_enlarge` and `max_grown_output_pixels` bound what a request may cost beyond its source
/// (image-server sets them for unsigned resize URLs only: its README "Deployment"). Without
/// them a 77-byte PNG asked for `width=8192&height=8192&fit=fill&enlarge=true&blur=100&
/// format=png` took 24 s of CPU and 410 MB in a security review (8.5 s of CPU and 399 MB here:
/// bench/image/AMPLIFICATION.md). Every step after
/// the decode (resize, padding, rotation, blur, sharpen, watermark, encode) costs in proportion
/// to the output's area, whatever its parameters, so the area bound bounds them all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Largest accepted width or height of the output, in pixels (MAX_OUTPUT_DIMENSION).
    pub max_output_dimension: u32,
    /// Largest accepted source, in pixels (width x height, MAX_SOURCE_PIXELS), checked from the
    /// header before any pixel is decoded.
    pub max_source_pixels: u64,
    /// libwebp `method` (0..=6, sharp calls it effort) for lossy WebP output (WEBP_EFFORT).
    /// 4 is libwebp's and sharp's default; 2 encodes about 2.3x faster for 2-5% more bytes.
    pub webp_effort: u8,
    /// Largest output, in pixels, encoded as AVIF (AVIF_MAX_PIXELS): with `format=auto` larger
    /// outputs are sent as WebP, which every client that accepts AVIF also accepts (see
    /// [`OutputFormat::negotiate`]); an explicit `format=avif` over it is a 400. rav1e's time
    /// and memory grow with the output: a server request took 0.37 s and peaked at 72 MB at
    /// 1600x900, 1.9 s and 330 MB at 4000x2250 (bench/image/BURST.md). 0 turns AVIF off.
    pub avif_max_pixels: u64,
    /// Largest enlargement with `enlarge`, per side: the output's width (height) over the width
    /// (height) of the source region it shows, at least 1 (MAX_UNSIGNED_ENLARGE). `None`: no
    /// limit. A larger one is a 400 naming `enlarge`, from the header, before decoding.
    pub max_enlarge: Option<f64>,
    /// Largest output, in pixels (width x height after padding and rotation), that is larger
    /// than the source region it shows (MAX_UNSIGNED_OUTPUT_PIXELS): an output no larger than
    /// its region is always allowed, since it costs what the stored source costs (which
    /// `max_source_pixels` bounds). `None`: no limit. A size that comes from the source alone
    /// (no `width` or `height`, turned by `rotate`) is shrunk to fit; an asked-for one over it
    /// is a 400 naming `width`, `height` or `rotate`, before decoding.
    pub max_grown_output_pixels: Option<u64>,
    /// Most frames of an animated source decoded (MAX_ANIMATION_FRAMES); more: 422 before
    /// decoding. Their pixels together are held to `max_source_pixels` too.
    pub max_animation_frames: u32,
    /// Budget of one request's pixel buffers alive at once, in bytes (MAX_REQUEST_BYTES): the
    /// decoded source, the intermediates of the steps, every output frame, the scaled
    /// watermark, the text raster and the encoder's own buffers, estimated from the headers and
    /// the parameters before anything is decoded (`cost.rs`). Over it: 400 naming the
    /// parameter that asked for the most. Default 536870912 (512 MiB).
    pub max_request_bytes: u64,
    /// Budget of one request's work, in weighted pixel operations (about a nanosecond each on
    /// one core: WebP at effort 4 costs 40 an output pixel, Lanczos resampling 16), estimated
    /// like `max_request_bytes` (MAX_REQUEST_PIXEL_OPS). Default 8000000000 (about 8 s).
    pub max_request_pixel_ops: u64,
    /// Most pixels an animated result may hold over all its frames, frames x output width x
    /// output height (MAX_ANIMATION_OUTPUT_PIXELS); more: 400 naming `animated`. Default
    /// 50000000, as many as MAX_SOURCE_PIXELS lets into the decoder.
    pub max_animation_output_pixels: u64,
    /// The SSIMULACRA2 score `quality=auto` and `format=best` aim at (AUTO_QUALITY_TARGET,
    /// 30..=95, default 80): 90 is visually lossless, 80 high quality, 70 medium, 50 low.
    pub auto_quality_target: f64,
}

impl Default for Limits {
    /// The full range (signed URLs): no bound on enlargement or on grown outputs.
    fn default() -> Self {
        Self {
            max_output_dimension: 8192,
            max_source_pixels: 50_000_000,
            webp_effort: 4,
            avif_max_pixels: 1_440_000,
            max_enlarge: None,
            max_grown_output_pixels: None,
            max_animation_frames: 100,
            max_request_bytes: 512 << 20,
            max_request_pixel_ops: 8_000_000_000,
            max_animation_output_pixels: 50_000_000,
            auto_quality_target: image_params::DEFAULT_AUTO_QUALITY_TARGET,
        }
    }
}

/// Requested output (`format=` or `lqip=true`). Absent means WebP, as in the original service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormatParam {
    /// `format=`: one of [`Format`]'s values (`avif` only for outputs up to
    /// [`Limits::avif_max_pixels`]; `blurhash` is the BlurHash of the result as JSON,
    /// docs/image-service.md §4, Placeholders).
    Format(Format),
    /// `lqip=true`: a tiny blurred WebP of the result as a `data:` URL in JSON.
    Lqip,
}

/// A concrete output format, after `auto` has been resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    /// Lossy WebP through libwebp.
    Webp,
    /// Baseline or progressive JPEG through libjpeg-turbo.
    Jpeg,
    /// PNG.
    Png,
    /// AVIF through rav1e (only with the `avif` feature; otherwise `auto` never picks it).
    Avif,
    /// GIF through the `image` crate's encoder (NeuQuant palettes), still or animated.
    Gif,
    /// `{"blurhash", "components": {"x", "y"}, "width", "height"}` (JSON, not an image).
    Blurhash,
    /// `{"lqip": "data:image/webp;base64,...", "width", "height"}` (JSON, not an image).
    Lqip,
}

impl OutputFormat {
    /// The media type sent as Content-Type.
    pub fn mime(self) -> &'static str {
        match self {
            Self::Webp => "image/webp",
            Self::Jpeg => "image/jpeg",
            Self::Png => "image/png",
            Self::Avif => "image/avif",
            Self::Gif => "image/gif",
            Self::Blurhash | Self::Lqip => "application/json",
        }
    }

    /// The output format an encoded file is in, from its first bytes (the signatures of JPEG,
    /// PNG, WebP's RIFF header and AVIF's `ftypavif` box); `None` for anything else.
    pub fn of(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Self::Jpeg)
        } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else if bytes.get(4..12) == Some(b"ftypavif") {
            Some(Self::Avif)
        } else if bytes.starts_with(b"GIF89a") || bytes.starts_with(b"GIF87a") {
            Some(Self::Gif)
        } else if bytes.starts_with(b"{\"blurhash\":") {
            Some(Self::Blurhash)
        } else if bytes.starts_with(b"{\"lqip\":") {
            Some(Self::Lqip)
        } else {
            None
        }
    }

    /// Lower-case name used in cache keys and file extensions: the `format=` value of
    /// image-params' [`Format`] that asks for it, or `lqip`.
    pub fn name(self) -> &'static str {
        self.requested().map_or("lqip", Format::name)
    }

    /// The `format=` value that asks for this format; `None` for `lqip`, asked for by
    /// `lqip=true`.
    fn requested(self) -> Option<Format> {
        Some(match self {
            Self::Webp => Format::Webp,
            Self::Jpeg => Format::Jpeg,
            Self::Png => Format::Png,
            Self::Avif => Format::Avif,
            Self::Gif => Format::Gif,
            Self::Blurhash => Format::Blurhash,
            Self::Lqip => return None,
        })
    }

    /// The formats `format=best` compares when `format=auto` would pick `self`: AVIF, WebP and
    /// JPEG under AVIF; WebP and JPEG under WebP; JPEG alone under JPEG (every client is taken
    /// to accept JPEG, as [`OutputFormat::negotiate`] does).
    pub fn candidates(self) -> &'static [Self] {
        match self {
            Self::Avif => &[Self::Avif, Self::Webp, Self::Jpeg],
            Self::Webp => &[Self::Webp, Self::Jpeg],
            Self::Jpeg => &[Self::Jpeg],
            Self::Png => &[Self::Png],
            Self::Gif => &[Self::Gif],
            Self::Blurhash => &[Self::Blurhash],
            Self::Lqip => &[Self::Lqip],
        }
    }

    /// Picks the best format the client accepts, for `format=auto`: AVIF, then WebP, then JPEG.
    ///
    /// `accept` is the raw Accept header (empty when absent). Entries with `q=0` are refused.
    /// AVIF is picked only when WebP is accepted too, because outputs over
    /// [`Limits::avif_max_pixels`] are sent as WebP instead; every browser that decodes AVIF
    /// (Chrome 85, Firefox 93, Safari 16 and later) sends both.
    pub fn negotiate(accept: &str) -> Self {
        let accepts = |mime: &str| {
            accept.split(',').any(|entry| {
                let mut parts = entry.split(';').map(str::trim);
                let ty = parts.next().unwrap_or("");
                let refused = parts.any(|p| {
                    p.strip_prefix("q=")
                        .and_then(|q| q.parse::<f32>().ok())
                        .is_some_and(|q| q <= 0.0)
                });
                ty.eq_ignore_ascii_case(mime) && !refused
            })
        };
        let webp = accepts("image/webp");
        if cfg!(feature = "avif") && webp && accepts("image/avif") {
            Self::Avif
        } else if webp {
            Self::Webp
        } else {
            Self::Jpeg
        }
    }
}

pub use image_params::{CropRect, Fit, Format, Position, Rgba, WatermarkMark};

/// A watermark: a stored image or a line of text composited onto the output.
#[derive(Debug, Clone, PartialEq)]
pub struct Watermark {
    /// The image or the text.
    pub mark: WatermarkMark,
    /// Corner or edge it sits at; default south-east.
    pub position: Position,
    /// 0..=1, default 0.5.
    pub opacity: f32,
    /// Width as a share of the output width, (0, 1], default 0.25.
    pub scale: f32,
}

impl Watermark {
    /// The stored image's path, when the watermark is one.
    pub fn image_path(&self) -> Option<&str> {
        match &self.mark {
            WatermarkMark::Image(path) => Some(path),
            WatermarkMark::Text(_) => None,
        }
    }
}

/// Every transformation of one request, validated and normalised.
///
/// Built by [`TransformSpec::from_query`]; applied by [`crate::transform`] in the order
/// decode, orient, crop, trim, resize, rotate, flip/flop, blur, sharpen, pixelate, grayscale,
/// padding, watermark, encode.
#[derive(Debug, Clone, PartialEq)]
pub struct TransformSpec {
    /// Target width in pixels, 1..=max_output_dimension, `dpr` already applied.
    pub width: Option<u32>,
    /// Target height in pixels, 1..=max_output_dimension, `dpr` already applied.
    pub height: Option<u32>,
    /// Requested format; `None` encodes WebP.
    pub format: Option<FormatParam>,
    /// 1..=100, default 80; with `auto_quality` the quality of outputs that have none to search
    /// (animations).
    pub quality: u8,
    /// `quality=auto` (and `format=best`, which implies it): each lossy still output's quality
    /// is searched to meet [`Limits::auto_quality_target`] (`auto_quality.rs`;
    /// docs/image-service.md, "Automatic quality"). Printed as `q=auto` in the cache key.
    pub auto_quality: bool,
    /// Clockwise degrees in [0, 360), normalised (360 is 0).
    pub rotate: f32,
    pub sharpen: bool,
    /// Mirror left to right.
    pub flip: bool,
    /// Mirror top to bottom.
    pub flop: bool,
    pub grayscale: bool,
    /// Gaussian sigma in (0, 100]; `None` for no blur.
    pub blur: Option<f32>,
    pub crop: Option<CropRect>,
    pub fit: Fit,
    pub position: Position,
    /// Padding (contain) and rotation corner colour; default transparent, white for JPEG.
    pub background: Option<Rgba>,
    /// Allow upscaling beyond the source size (default false, as in the original).
    pub enlarge: bool,
    /// Progressive JPEG (default false).
    pub progressive: bool,
    /// The box a request without `width` and `height` is fitted inside, never enlarged
    /// ([`TransformSpec::fit_unsized_into`]); `None` sides are free.
    pub default_box: Option<(Option<u32>, Option<u32>)>,
    /// Keep the source's EXIF `Copyright` and `Artist` and describe the pixels with an sRGB
    /// ICC profile (`keep_copyright`, as imgproxy's); otherwise a result carries no metadata
    /// (`metadata.rs`).
    pub keep_copyright: bool,
    /// Keep an animated source's frames (`animated`, default true); false gives its first
    /// frame (or `frame`'s) as a still.
    pub animated: bool,
    /// The frame (from 0) of an animated source a still result shows (`frame`).
    pub frame: Option<u32>,
    /// `zoom`, above 0 and at most 5: multiplies `width` and `height` (as `dpr` does, with
    /// which it combines), or, without them, scales the source region (imgproxy's `zoom`).
    pub zoom: Option<f64>,
    /// Smallest width of the result (`min_width`): a smaller one is scaled up, its shape kept,
    /// enlarging if needed (held to MAX_UNSIGNED_ENLARGE on unsigned URLs).
    pub min_width: Option<u32>,
    /// Smallest height of the result (`min_height`), as `min_width`.
    pub min_height: Option<u32>,
    /// Byte budget of the encoded result (`max_bytes`, 100..=2^31): the quality is lowered,
    /// then the picture shrunk, until it fits (`budget.rs`).
    pub max_bytes: Option<u64>,
    /// Remove a uniform border before resizing (`trim`): pixels that differ from the top-left
    /// one by at most this much (0..=255 per channel, after a 3x3 median) are border, as
    /// libvips' `find_trim`; `trim=true` is 10, its default. Applied to the crop rectangle.
    pub trim: Option<u8>,
    /// Border added around the result in the background colour (`padding`), in pixels:
    /// top, right, bottom, left (CSS order).
    pub padding: Option<[u32; 4]>,
    /// Block size of the pixelate filter in pixels, 2..=256 (`pixelate`).
    pub pixelate: Option<u32>,
    /// BlurHash components across and down, 1..=9 each (`blurhash_x`, `blurhash_y`; default
    /// 4 and 3, BlurHash's own); used by `format=blurhash` only.
    pub blurhash_components: (u8, u8),
    pub watermark: Option<Watermark>,
}

impl Default for TransformSpec {
    fn default() -> Self {
        Self {
            width: None,
            height: None,
            format: None,
            quality: DEFAULT_QUALITY,
            auto_quality: false,
            rotate: 0.0,
            sharpen: false,
            flip: false,
            flop: false,
            grayscale: false,
            blur: None,
            crop: None,
            fit: Fit::Inside,
            position: Position::Centre,
            background: None,
            enlarge: false,
            progressive: false,
            blurhash_components: DEFAULT_BLURHASH_COMPONENTS,
            default_box: None,
            keep_copyright: false,
            animated: true,
            frame: None,
            zoom: None,
            min_width: None,
            min_height: None,
            max_bytes: None,
            trim: None,
            padding: None,
            pixelate: None,
            watermark: None,
        }
    }
}

impl TransformSpec {
    /// Gives a request that names neither `width` nor `height` the default box: the output is
    /// fitted inside `width` x `height` and never enlarged, whatever `fit` and `enlarge` say
    /// (without a size they had nothing to act on). A 0 side is left free; 0 x 0 changes
    /// nothing. The original service capped such requests at 1920x1080 (DEFAULT_OUTPUT_WIDTH
    /// and DEFAULT_OUTPUT_HEIGHT, docs/image-service.md §4). The box is a size the source
    /// gives, not one asked for: a turned picture is shrunk to the output limits as before.
    pub fn fit_unsized_into(&mut self, width: u32, height: u32) {
        if self.width.is_some()
            || self.height.is_some()
            || self.zoom.is_some()
            || (width == 0 && height == 0)
        {
            return;
        }
        self.default_box = Some(((width > 0).then_some(width), (height > 0).then_some(height)));
    }

    /// Whether the output format is chosen from the Accept header (`format=auto` or
    /// `format=best`): the response varies with it.
    pub fn negotiated(&self) -> bool {
        matches!(
            self.format,
            Some(FormatParam::Format(Format::Auto | Format::Best))
        )
    }

    /// Whether `format=best` asks for the smallest of the formats the client accepts.
    pub fn best(&self) -> bool {
        self.format == Some(FormatParam::Format(Format::Best))
    }

    /// The concrete output format: `auto` (and `best`, whose candidates it heads: see
    /// [`OutputFormat::candidates`]) resolved against the Accept header, absent = WebP.
    pub fn output_format(&self, accept: &str) -> OutputFormat {
        match self.format {
            None | Some(FormatParam::Format(Format::Webp)) => OutputFormat::Webp,
            Some(FormatParam::Format(Format::Jpeg)) => OutputFormat::Jpeg,
            Some(FormatParam::Format(Format::Png)) => OutputFormat::Png,
            Some(FormatParam::Format(Format::Avif)) => OutputFormat::Avif,
            Some(FormatParam::Format(Format::Auto | Format::Best)) => {
                OutputFormat::negotiate(accept)
            }
            Some(FormatParam::Format(Format::Blurhash)) => OutputFormat::Blurhash,
            Some(FormatParam::Format(Format::Gif)) => OutputFormat::Gif,
            Some(FormatParam::Lqip) => OutputFormat::Lqip,
        }
    }
}

/// Encoder settings of one request, derived from its parameters (quality, progressive, the
/// gray flag, the WebP effort); the encoders and the animation encoder read them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EncodeSettings {
    /// 1..=100.
    pub quality: u8,
    /// Progressive JPEG.
    pub progressive: bool,
    /// The channels are equal, so JPEG and PNG store one channel.
    pub gray: bool,
    /// libwebp method 0..=6.
    pub webp_effort: u8,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::PipelineError;
    use pretty_assertions::assert_eq;

    fn parse(q: &[(&str, &str)]) -> Result<TransformSpec, PipelineError> {
        TransformSpec::from_query(q.iter().copied(), &Limits::default())
    }

    #[test]
    fn a_request_without_a_size_is_fitted_inside_the_default_box_and_never_enlarged() {
        let boxed = |q: &[(&str, &str)], w, h| {
            let mut spec = parse(q).unwrap();
            spec.fit_unsized_into(w, h);
            spec.to_string()
        };
        assert_eq!(boxed(&[], 1920, 1080), "box=1920x1080&q=80");
        assert_eq!(boxed(&[], 1920, 0), "box=1920x&q=80");
        assert_eq!(boxed(&[], 0, 0), "q=80");
        // A size named by the URL wins, on either side.
        assert_eq!(boxed(&[("width", "300")], 1920, 1080), "w=300&q=80");
        assert_eq!(boxed(&[("height", "200")], 1920, 1080), "h=200&q=80");
    }

    #[test]
    fn parameter_order_and_spelling_do_not_change_the_key() {
        let a = parse(&[
            ("width", "800"),
            ("flip", "true"),
            ("format", "jpg"),
            ("quality", "80"),
        ])
        .unwrap();
        let b = parse(&[
            ("format", "jpeg"),
            ("flip", ""),
            ("width", "800"),
            ("unknown", "x"),
        ])
        .unwrap();
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(a.to_string(), "w=800&flip&f=jpeg&q=80");
    }

    #[test]
    fn decimal_sizes_round_to_the_nearest_pixel() {
        let s = parse(&[("width", "533.3333333333334"), ("height", " 299.5")]).unwrap();
        assert_eq!((s.width, s.height), (Some(533), Some(300)));
        assert_eq!(
            s.to_string(),
            parse(&[("width", "533"), ("height", "300")])
                .unwrap()
                .to_string()
        );
        assert_eq!(
            parse(&[
                ("cropWidth", "10.2"),
                ("cropHeight", "9.6"),
                ("cropLeft", "0.0"),
                ("cropTop", "1")
            ])
            .unwrap()
            .crop
            .unwrap()
            .width,
            10
        );
    }

    #[test]
    fn dpr_multiplies_width_and_height_and_shares_their_cache_key() {
        let s = parse(&[("dpr", "2"), ("width", "400"), ("height", "301")]).unwrap();
        assert_eq!((s.width, s.height), (Some(800), Some(602)));
        let plain = parse(&[("width", "800"), ("height", "602")]).unwrap();
        assert_eq!(s.to_string(), plain.to_string());
        // Android's 2.625 and a ratio under 1; rounding to the nearest pixel, at least 1.
        let s = parse(&[("width", "411"), ("dpr", "2.625")]).unwrap();
        assert_eq!(s.width, Some(1079));
        let s = parse(&[("width", "1"), ("height", "300"), ("dpr", "0.1")]).unwrap();
        assert_eq!((s.width, s.height), (Some(1), Some(30)));
        // Without a size it changes nothing.
        assert_eq!(
            parse(&[("dpr", "3"), ("rotate", "90")]).unwrap(),
            parse(&[("rotate", "90")]).unwrap()
        );
    }

    #[test]
    fn a_bad_dpr_or_one_that_passes_the_output_limit_is_refused_naming_dpr() {
        for v in ["0", "-1", "abc", "5.01", "NaN", "inf", ""] {
            match parse(&[("width", "100"), ("dpr", v)]) {
                Err(PipelineError::BadParam { name, .. }) => assert_eq!(name, "dpr", "{v}"),
                other => panic!("dpr={v}: {other:?}"),
            }
        }
        match parse(&[("height", "5000"), ("dpr", "2")]) {
            Err(PipelineError::BadParam { name, reason }) => {
                assert_eq!(name, "dpr");
                assert!(reason.contains("8192"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&[("width", "4096"), ("dpr", "2")]).is_ok());
    }

    #[test]
    fn rotate_360_is_rotate_0() {
        assert_eq!(parse(&[("rotate", "360")]).unwrap().rotate, 0.0);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (k, v) in [
            ("width", "0"),
            ("width", "abc"),
            ("width", "100000"),
            ("width", "0.4"),
            ("width", "1e9"),
            ("width", "inf"),
            ("width", "12px"),
            ("height", "-5"),
            ("height", "-0.5"),
            ("quality", "0"),
            ("quality", "101"),
            ("rotate", "361"),
            ("rotate", "-1"),
            ("format", "bmp"),
            ("fit", "squash"),
            ("blur", "nan"),
            ("flip", "maybe"),
            ("background", "zzz"),
        ] {
            match parse(&[(k, v)]) {
                Err(PipelineError::BadParam { name, .. }) => assert_eq!(name, k),
                other => panic!("{k}={v} gave {other:?}"),
            }
        }
    }

    #[test]
    fn crop_uses_the_original_sdk_names_and_needs_a_size() {
        let s = parse(&[
            ("cropLeft", "10"),
            ("cropTop", "20"),
            ("cropWidth", "30"),
            ("cropHeight", "40"),
        ])
        .unwrap();
        assert_eq!(
            s.crop,
            Some(CropRect {
                left: 10,
                top: 20,
                width: 30,
                height: 40
            })
        );
        assert!(parse(&[("cropLeft", "10")]).is_err());
    }

    #[test]
    fn auto_prefers_avif_then_webp_then_jpeg() {
        let avif = if cfg!(feature = "avif") {
            OutputFormat::Avif
        } else {
            OutputFormat::Webp
        };
        assert_eq!(OutputFormat::negotiate("image/avif,image/webp,*/*"), avif);
        assert_eq!(
            OutputFormat::negotiate("image/avif;q=0, image/webp"),
            OutputFormat::Webp
        );
        assert_eq!(OutputFormat::negotiate("image/png,*/*"), OutputFormat::Jpeg);
        assert_eq!(OutputFormat::negotiate(""), OutputFormat::Jpeg);
        // AVIF without WebP: large outputs could not fall back, so no AVIF at all.
        assert_eq!(OutputFormat::negotiate("image/avif"), OutputFormat::Jpeg);
        // An explicit format=avif does not negotiate.
        if cfg!(feature = "avif") {
            let s = parse(&[("format", "AVIF")]).unwrap();
            assert_eq!(s.output_format(""), OutputFormat::Avif);
            assert_eq!(s.to_string(), "f=avif&q=80");
        } else {
            assert!(parse(&[("format", "avif")]).is_err());
        }
    }

    #[test]
    fn background_accepts_short_long_and_alpha_hex() {
        assert_eq!(Rgba::parse("#fff"), Some(Rgba([255, 255, 255, 255])));
        assert_eq!(Rgba::parse("ff000080"), Some(Rgba([255, 0, 0, 128])));
        assert_eq!(Rgba::parse("ff00"), None);
    }

    #[test]
    fn every_fit_name_parses_in_any_case_and_names_itself() {
        let all = [
            Fit::Inside,
            Fit::Cover,
            Fit::Contain,
            Fit::Fill,
            Fit::Outside,
        ];
        let names: Vec<_> = all.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["inside", "cover", "contain", "fill", "outside"]);
        for fit in all {
            assert_eq!(Fit::parse(fit.name()), Some(fit));
            assert_eq!(Fit::parse(&fit.name().to_ascii_uppercase()), Some(fit));
        }
        assert_eq!(Fit::parse("stretch"), None);
        assert_eq!(Fit::parse(""), None);
    }

    #[test]
    fn every_position_alias_parses_to_its_compass_point() {
        let table = [
            (
                &["centre", "center", "CENTER"][..],
                Position::Centre,
                "centre",
                (0.5, 0.5),
            ),
            (&["north", "top"][..], Position::North, "north", (0.5, 0.0)),
            (
                &["northeast", "right_top", "top-right", "North East"][..],
                Position::NorthEast,
                "northeast",
                (1.0, 0.0),
            ),
            (&["east", "right"][..], Position::East, "east", (1.0, 0.5)),
            (
                &["southeast", "rightbottom", "bottom_right"][..],
                Position::SouthEast,
                "southeast",
                (1.0, 1.0),
            ),
            (
                &["south", "bottom"][..],
                Position::South,
                "south",
                (0.5, 1.0),
            ),
            (
                &["southwest", "left-bottom", "bottomleft"][..],
                Position::SouthWest,
                "southwest",
                (0.0, 1.0),
            ),
            (&["west", "left"][..], Position::West, "west", (0.0, 0.5)),
            (
                &["northwest", "lefttop", "top left"][..],
                Position::NorthWest,
                "northwest",
                (0.0, 0.0),
            ),
            (&["entropy"][..], Position::Entropy, "entropy", (0.5, 0.5)),
            (
                &["attention", "Attention"][..],
                Position::Attention,
                "attention",
                (0.5, 0.5),
            ),
        ];
        for (aliases, position, name, fractions) in table {
            for alias in aliases {
                assert_eq!(Position::parse(alias), Some(position), "{alias}");
            }
            assert_eq!((position.name(), position.fractions()), (name, fractions));
            assert_eq!(Position::parse(position.name()), Some(position));
        }
        assert_eq!(Position::parse("middle"), None);
        assert_eq!(Position::parse(""), None);
    }

    #[test]
    fn output_formats_are_told_by_their_signatures_only() {
        let riff_webp = b"RIFF\x10\x00\x00\x00WEBPVP8 ";
        let cases: [(&[u8], Option<OutputFormat>); 11] = [
            (b"\xFF\xD8\xFF\xE0rest", Some(OutputFormat::Jpeg)),
            (b"\xFF\xD8\xFE", None),
            (b"\x89PNG\r\n\x1a\nIHDR", Some(OutputFormat::Png)),
            (b"\x89PNG\r\n\x1a", None),
            (riff_webp, Some(OutputFormat::Webp)),
            (b"RIFF\x10\x00\x00\x00WEBP", Some(OutputFormat::Webp)),
            (b"RIFF\x10\x00\x00\x00WEB", None),
            (b"RIFX\x10\x00\x00\x00WEBPVP8 ", None),
            (b"RIFF\x10\x00\x00\x00WAVEfmt ", None),
            (
                b"\x00\x00\x00\x20ftypavif\x00\x00",
                Some(OutputFormat::Avif),
            ),
            (b"\x00\x00\x00\x20ftypheic\x00\x00", None),
        ];
        for (bytes, format) in cases {
            assert_eq!(OutputFormat::of(bytes), format, "{bytes:?}");
        }
        assert_eq!(OutputFormat::of(b"ftypavif"), None);
        let all = [
            OutputFormat::Webp,
            OutputFormat::Jpeg,
            OutputFormat::Png,
            OutputFormat::Avif,
        ];
        let named: Vec<_> = all.iter().map(|f| (f.name(), f.mime())).collect();
        assert_eq!(
            named,
            [
                ("webp", "image/webp"),
                ("jpeg", "image/jpeg"),
                ("png", "image/png"),
                ("avif", "image/avif"),
            ]
        );
    }

    /// `Ok(key)` for a query that parses, `Err(name)` naming the refused parameter.
    fn key_of(query: &str, limits: &Limits) -> Result<String, String> {
        let pairs = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")));
        TransformSpec::from_query(pairs, limits)
            .map(|spec| spec.to_string())
            .map_err(|e| match e {
                PipelineError::BadParam { name, .. } => name,
                other => panic!("{other}"),
            })
    }

    /// Every parameter of docs/image-service.md §4 reaches the cache key, and every bound is
    /// where the docs put it: one row per rule, the query on the left, the canonical key (or
    /// the parameter named in the 400) on the right.
    #[test]
    fn every_parameter_reaches_the_key_and_every_bound_is_exact() {
        let limits = Limits::default();
        let table: &[(&str, Result<&str, &str>)] = &[
            ("", Ok("q=80")),
            ("width=8192", Ok("w=8192&q=80")),
            ("width=8193", Err("width")),
            ("width=0", Err("width")),
            ("width=-3.5", Err("width")),
            ("h=1", Ok("h=1&q=80")),
            ("height=8192.4", Ok("h=8192&q=80")),
            ("height=8192.6", Err("height")),
            ("width=400&dpr=2", Ok("w=800&q=80")),
            ("width=400&dpr=5", Ok("w=2000&q=80")),
            ("width=400&dpr=5.01", Err("dpr")),
            ("width=400&dpr=0", Err("dpr")),
            ("width=2000&dpr=4.1", Err("dpr")),
            ("width=2048&dpr=4", Ok("w=8192&q=80")),
            ("format=webp", Ok("f=webp&q=80")),
            ("format=JPG", Ok("f=jpeg&q=80")),
            ("format=png", Ok("f=png&q=80")),
            ("format=avif", Ok("f=avif&q=80")),
            ("format=auto", Ok("f=auto&q=80")),
            ("format=bmp", Err("format")),
            ("quality=1", Ok("q=1")),
            ("quality=100", Ok("q=100")),
            ("quality=0", Err("quality")),
            ("quality=101", Err("quality")),
            ("rotate=360", Ok("q=80")),
            ("rotate=90", Ok("rot=90&q=80")),
            ("rotate=360.5", Err("rotate")),
            ("rotate=-1", Err("rotate")),
            ("sharpen", Ok("sharpen&q=80")),
            ("sharpen=off", Ok("q=80")),
            ("flip=1", Ok("flip&q=80")),
            ("flop=yes", Ok("flop&q=80")),
            ("flop=no", Ok("q=80")),
            ("greyscale=true", Ok("gray&q=80")),
            ("grayscale=0", Ok("q=80")),
            ("grayscale=maybe", Err("grayscale")),
            ("enlarge", Ok("enlarge&q=80")),
            ("enlarge=false", Ok("q=80")),
            ("progressive=on", Ok("q=80&progressive")),
            ("blur=0", Ok("q=80")),
            ("blur=100", Ok("blur=100&q=80")),
            ("blur=100.1", Err("blur")),
            ("fit=cover", Ok("fit=cover&q=80")),
            ("fit=inside", Ok("q=80")),
            ("fit=crop", Err("fit")),
            ("gravity=north", Ok("pos=north&q=80")),
            ("position=entropy", Ok("pos=entropy&q=80")),
            ("position=middle", Err("position")),
            ("bg=fff", Ok("bg=ffffffff&q=80")),
            ("background=#10203040", Ok("bg=10203040&q=80")),
            ("background=102030", Ok("bg=102030ff&q=80")),
            ("background=12345", Err("background")),
            ("background=ggg", Err("background")),
            ("cropWidth=10&cropHeight=20", Ok("crop=0,0,10,20&q=80")),
            (
                "crop_left=1&crop_top=2&crop_width=3&crop_height=4",
                Ok("crop=1,2,3,4&q=80"),
            ),
            ("cropLeft=1&cropWidth=3", Err("cropWidth")),
            ("cropWidth=0&cropHeight=4", Err("cropWidth")),
            (
                "watermark=logo.png",
                Ok("wm=logo.png,southeast,0.5,0.25&q=80"),
            ),
            (
                "watermarkImage=a,b.png",
                Ok("wm=a%2Cb.png,southeast,0.5,0.25&q=80"),
            ),
            ("watermark=", Ok("q=80")),
            (
                "watermark=l.png&watermarkPosition=top-left",
                Ok("wm=l.png,northwest,0.5,0.25&q=80"),
            ),
            (
                "watermark=l.png&watermarkPosition=entropy",
                Err("watermarkPosition"),
            ),
            (
                "watermark=l.png&watermarkOpacity=1",
                Ok("wm=l.png,southeast,1,0.25&q=80"),
            ),
            (
                "watermark=l.png&watermarkOpacity=0",
                Ok("wm=l.png,southeast,0,0.25&q=80"),
            ),
            (
                "watermark=l.png&watermarkOpacity=1.5",
                Err("watermarkOpacity"),
            ),
            (
                "watermark=l.png&watermarkScale=1",
                Ok("wm=l.png,southeast,0.5,1&q=80"),
            ),
            ("watermark=l.png&watermarkScale=0", Err("watermarkScale")),
            ("watermark=l.png&watermarkScale=1.01", Err("watermarkScale")),
            ("unknown=1", Ok("q=80")),
            ("format=gif", Ok("f=gif&q=80")),
            ("animated=false", Ok("q=80&still")),
            ("animated=true", Ok("q=80")),
            ("frame=3", Ok("q=80&frame=3")),
            ("frame=-1", Err("frame")),
            ("keep_copyright=true", Ok("q=80&keepcr")),
            ("keepCopyright=0", Ok("q=80")),
            ("keep_copyright=maybe", Err("keep_copyright")),
            ("width=100&zoom=2", Ok("w=200&q=80")),
            ("width=100&dpr=2&zoom=1.5", Ok("w=300&q=80")),
            ("zoom=0.5", Ok("zoom=0.5&q=80")),
            ("zoom=0", Err("zoom")),
            ("zoom=6", Err("zoom")),
            ("width=5000&zoom=2", Err("zoom")),
            ("min_width=300", Ok("minw=300&q=80")),
            ("minWidth=300&min_height=200", Ok("minw=300&minh=200&q=80")),
            ("min_height=0", Err("min_height")),
            ("max_bytes=20000", Ok("q=80&maxb=20000")),
            ("maxBytes=100", Ok("q=80&maxb=100")),
            ("max_bytes=99", Err("max_bytes")),
            ("max_bytes=lots", Err("max_bytes")),
            ("trim", Ok("trim=10&q=80")),
            ("trim=true", Ok("trim=10&q=80")),
            ("trim=false", Ok("q=80")),
            ("trim=0", Ok("trim=0&q=80")),
            ("trim=40&width=100", Ok("trim=40&w=100&q=80")),
            ("trim=256", Err("trim")),
            ("trim=lots", Err("trim")),
            ("padding=10", Ok("pad=10,10,10,10&q=80")),
            ("padding=1,2", Ok("pad=1,2,1,2&q=80")),
            ("padding=1,2,3", Ok("pad=1,2,3,2&q=80")),
            ("padding=1,2,3,4", Ok("pad=1,2,3,4&q=80")),
            ("padding=0", Ok("q=80")),
            ("padding=1,2,3,4,5", Err("padding")),
            ("padding=-1", Err("padding")),
            ("padding=9000", Err("padding")),
            ("pixelate=8", Ok("pixelate=8&q=80")),
            ("pixelate=1", Ok("q=80")),
            ("pixelate=0", Err("pixelate")),
            ("pixelate=257", Err("pixelate")),
            ("format=blurhash", Ok("f=blurhash&q=80")),
            (
                "format=blurhash&blurhash_x=9&blurhashY=1",
                Ok("f=blurhash&q=80&bh=9x1"),
            ),
            (
                "format=blurhash&blurhash_x=4&blurhash_y=3",
                Ok("f=blurhash&q=80"),
            ),
            ("blurhash_x=5", Ok("q=80")),
            ("format=blurhash&blurhash_x=10", Err("blurhash_x")),
            ("format=blurhash&blurhash_y=0", Err("blurhash_y")),
            ("lqip=true", Ok("f=lqip&q=80")),
            ("lqip=false", Ok("q=80")),
            ("lqip=true&width=400", Ok("w=400&f=lqip&q=80")),
            ("lqip=1&format=png", Err("lqip")),
            ("watermarkText=hi", Ok("wmt=hi,southeast,0.5,0.25&q=80")),
            (
                "watermark_text=a,b|c&watermark_position=north",
                Ok("wmt=a%2Cb%7Cc,north,0.5,0.25&q=80"),
            ),
            ("watermarkText=", Err("watermarkText")),
            ("watermark=l.png&watermarkText=hi", Err("watermarkText")),
        ];
        let got: Vec<(&str, Result<String, String>)> = table
            .iter()
            .map(|(q, _)| (*q, key_of(q, &limits)))
            .collect();
        let want: Vec<(&str, Result<String, String>)> = table
            .iter()
            .map(|(q, r)| (*q, r.map(str::to_owned).map_err(str::to_owned)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn avif_can_be_switched_off() {
        let off = Limits {
            avif_max_pixels: 0,
            ..Limits::default()
        };
        assert_eq!(key_of("format=avif", &off), Err("format".to_owned()));
        assert_eq!(key_of("format=webp", &off), Ok("f=webp&q=80".to_owned()));
    }
}
