//! The canonical transformation request.
//!
//! The resize endpoint's query (docs/image-service.md §4; docs/architecture.md, Image server decisions) is parsed
//! once into a [`TransformSpec`]. Its [`Display`](fmt::Display) form lists every parameter that
//! differs from its default, in a fixed order and with normalised values, so two queries that
//! ask for the same output print the same string: that string is the cache key.

use std::fmt;

use crate::error::PipelineError;

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
        }
    }
}

/// Requested output format (`format=`). Absent means WebP, as in the original service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormatParam {
    /// `webp`: lossy WebP.
    Webp,
    /// `jpeg` or `jpg`.
    Jpeg,
    /// `png`: lossless.
    Png,
    /// `avif`: AVIF through rav1e, for outputs up to [`Limits::avif_max_pixels`] (an
    /// extension: the spec names webp, jpeg and png; imgproxy and thumbor users expect it).
    Avif,
    /// `auto`: AVIF, WebP or JPEG chosen from the client's Accept header.
    Auto,
    /// `gif`: GIF (256 colours a frame), animated when the source is.
    Gif,
    /// `blurhash`: the BlurHash of the result as JSON (docs/image-service.md §4, Placeholders).
    Blurhash,
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

    /// Lower-case name used in cache keys and file extensions.
    pub fn name(self) -> &'static str {
        match self {
            Self::Webp => "webp",
            Self::Jpeg => "jpeg",
            Self::Png => "png",
            Self::Avif => "avif",
            Self::Gif => "gif",
            Self::Blurhash => "blurhash",
            Self::Lqip => "lqip",
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

/// How the image fits the `width` x `height` box, named as sharp names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Fit {
    /// Preserve aspect ratio, as large as possible inside the box (the default).
    #[default]
    Inside,
    /// Preserve aspect ratio, cover the box, crop the overflow at `position`.
    Cover,
    /// Preserve aspect ratio, fit inside, pad to the exact box with `background`.
    Contain,
    /// Ignore aspect ratio, stretch to the box.
    Fill,
    /// Preserve aspect ratio, as small as possible while covering the box; no crop.
    Outside,
}

impl Fit {
    fn parse(v: &str) -> Option<Self> {
        Some(match v.to_ascii_lowercase().as_str() {
            "inside" => Self::Inside,
            "cover" => Self::Cover,
            "contain" => Self::Contain,
            "fill" => Self::Fill,
            "outside" => Self::Outside,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Inside => "inside",
            Self::Cover => "cover",
            Self::Contain => "contain",
            Self::Fill => "fill",
            Self::Outside => "outside",
        }
    }
}

/// Where the kept region sits (cover, contain padding) or the watermark goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Position {
    /// Centre (the default for cover).
    #[default]
    Centre,
    North,
    NorthEast,
    East,
    SouthEast,
    South,
    SouthWest,
    West,
    NorthWest,
    /// The window with the highest luminance entropy (cover only).
    Entropy,
    /// The window with the most edges and saturated colour (cover only).
    Attention,
}

impl Position {
    fn parse(v: &str) -> Option<Self> {
        Some(
            match v.to_ascii_lowercase().replace(['_', '-', ' '], "").as_str() {
                "centre" | "center" => Self::Centre,
                "north" | "top" => Self::North,
                "northeast" | "righttop" | "topright" => Self::NorthEast,
                "east" | "right" => Self::East,
                "southeast" | "rightbottom" | "bottomright" => Self::SouthEast,
                "south" | "bottom" => Self::South,
                "southwest" | "leftbottom" | "bottomleft" => Self::SouthWest,
                "west" | "left" => Self::West,
                "northwest" | "lefttop" | "topleft" => Self::NorthWest,
                "entropy" => Self::Entropy,
                "attention" => Self::Attention,
                _ => return None,
            },
        )
    }

    fn name(self) -> &'static str {
        match self {
            Self::Centre => "centre",
            Self::North => "north",
            Self::NorthEast => "northeast",
            Self::East => "east",
            Self::SouthEast => "southeast",
            Self::South => "south",
            Self::SouthWest => "southwest",
            Self::West => "west",
            Self::NorthWest => "northwest",
            Self::Entropy => "entropy",
            Self::Attention => "attention",
        }
    }

    /// Fractional placement (0 = left/top, 0.5 = centre, 1 = right/bottom) of a compass
    /// position; entropy and attention answer centre here and are handled by the caller.
    pub(crate) fn fractions(self) -> (f64, f64) {
        match self {
            Self::North => (0.5, 0.0),
            Self::NorthEast => (1.0, 0.0),
            Self::East => (1.0, 0.5),
            Self::SouthEast => (1.0, 1.0),
            Self::South => (0.5, 1.0),
            Self::SouthWest => (0.0, 1.0),
            Self::West => (0.0, 0.5),
            Self::NorthWest => (0.0, 0.0),
            Self::Centre | Self::Entropy | Self::Attention => (0.5, 0.5),
        }
    }
}

/// An RGBA colour from a `background=` hex value (`fff`, `ffffff`, `ffffff80`, `#` optional).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rgba(pub [u8; 4]);

impl Rgba {
    fn parse(v: &str) -> Option<Self> {
        let hex = v.strip_prefix('#').unwrap_or(v);
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let digit = |i: usize| u8::from_str_radix(hex.get(i..i + 1)?, 16).ok();
        let pair = |i: usize| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok();
        Some(match hex.len() {
            3 => Self([digit(0)? * 17, digit(1)? * 17, digit(2)? * 17, 255]),
            6 => Self([pair(0)?, pair(2)?, pair(4)?, 255]),
            8 => Self([pair(0)?, pair(2)?, pair(4)?, pair(6)?]),
            _ => return None,
        })
    }
}

/// A pixel rectangle of the oriented source (`cropLeft`, `cropTop`, `cropWidth`, `cropHeight`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CropRect {
    pub left: u32,
    pub top: u32,
    pub width: u32,
    pub height: u32,
}

/// What a watermark shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatermarkMark {
    /// Object path of a stored image (`watermark`, validated by the server like any path).
    Image(String),
    /// One line of text (`watermarkText`, 1..=200 characters, no control characters), drawn
    /// in the bundled font without any markup (docs/image-service.md §4).
    Text(String),
}

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
    /// 1..=100, default 80.
    pub quality: u8,
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
            quality: 80,
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
            blurhash_components: (4, 3),
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

fn bad(name: &str, reason: impl Into<String>) -> PipelineError {
    PipelineError::BadParam {
        name: name.to_owned(),
        reason: reason.into(),
    }
}

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

/// A BlurHash component count, 1..=9 (the format's limit).
fn component(name: &str, v: &str) -> Result<u8, PipelineError> {
    v.trim()
        .parse::<u8>()
        .ok()
        .filter(|n| (1..=9).contains(n))
        .ok_or_else(|| bad(name, "must be a whole number from 1 to 9"))
}

fn number(name: &str, v: &str) -> Result<f64, PipelineError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .ok_or_else(|| bad(name, format!("{v:?} is not a number")))
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
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let n = x.round() as u64;
            n
        }
    };
    if n < u64::from(min) || n > u64::from(max) {
        return Err(bad(name, format!("must be between {min} and {max}")));
    }
    u32::try_from(n).map_err(|_| bad(name, "too large"))
}

/// Largest accepted `dpr`: no display has a denser screen (phones reach 4), and Cloudinary's
/// `dpr` stops at 5 too.
const MAX_DPR: f64 = 5.0;

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
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(n as u32)
}

impl TransformSpec {
    /// Parses the resize endpoint's query pairs (already percent-decoded).
    ///
    /// Accepts the spec's names (docs/image-service.md §4) plus those of docs/architecture.md,
    /// Image server decisions (`fit`, `position`, `background`, `enlarge`, crop as `cropLeft`/`cropTop`/`cropWidth`/`cropHeight`, `watermark*`) and `dpr`, the
    /// device pixel ratio of imgproxy, imgix and Cloudinary (0 < dpr <= 5; it multiplies width
    /// and height, so `width=400&dpr=2` is `width=800`, cache entry included); snake_case and
    /// camelCase spellings of the multi-word names are both accepted. Unknown names are ignored
    /// (and so never reach the cache key), so clients sending extra parameters keep working.
    /// The original SDK's `watermarkImage`, `watermarkText`, `watermarkPosition`
    /// (`top-left`...) and `watermarkOpacity` are accepted.
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
        let mut spec = Self::default();
        let mut crop = [None::<u32>; 4];
        let mut wm_position = Position::SouthEast;
        let mut wm_opacity = 0.5_f32;
        let mut wm_scale = 0.25_f32;
        let mut wm_path = None;
        let mut wm_text = None;
        let mut lqip = None;
        let mut zoom = None;
        let mut dpr = None;
        let max = limits.max_output_dimension;
        for (key, v) in pairs {
            let canon: String = key
                .chars()
                .filter(|c| *c != '_' && *c != '-')
                .collect::<String>()
                .to_ascii_lowercase();
            match canon.as_str() {
                "width" | "w" => spec.width = Some(pixels(key, v, 1, max)?),
                "dpr" => {
                    let d = number(key, v)?;
                    if !(d > 0.0 && d <= MAX_DPR) {
                        return Err(bad(key, format!("must be above 0 and at most {MAX_DPR}")));
                    }
                    dpr = Some((key, d));
                }
                "height" | "h" => spec.height = Some(pixels(key, v, 1, max)?),
                "format" | "f" => {
                    spec.format = Some(match v.to_ascii_lowercase().as_str() {
                        "webp" => FormatParam::Webp,
                        "jpeg" | "jpg" => FormatParam::Jpeg,
                        "png" => FormatParam::Png,
                        "avif" if !cfg!(feature = "avif") => {
                            return Err(bad(key, "this server is built without AVIF output"));
                        }
                        "avif" if limits.avif_max_pixels == 0 => {
                            return Err(bad(key, "AVIF output is off (AVIF_MAX_PIXELS=0)"));
                        }
                        "avif" => FormatParam::Avif,
                        "auto" => FormatParam::Auto,
                        "blurhash" => FormatParam::Blurhash,
                        "gif" => FormatParam::Gif,
                        _ => {
                            return Err(bad(
                                key,
                                "expected webp, jpeg, png, avif, gif, auto or blurhash",
                            ));
                        }
                    });
                }
                "quality" | "q" => {
                    let q = v
                        .trim()
                        .parse::<u8>()
                        .ok()
                        .filter(|q| (1..=100).contains(q))
                        .ok_or_else(|| bad(key, "must be a whole number from 1 to 100"))?;
                    spec.quality = q;
                }
                "rotate" => {
                    let r = number(key, v)?;
                    if !(0.0..=360.0).contains(&r) {
                        return Err(bad(key, "must be between 0 and 360 degrees"));
                    }
                    #[allow(clippy::cast_possible_truncation)]
                    let r = (r % 360.0) as f32;
                    spec.rotate = r;
                }
                "sharpen" => spec.sharpen = switch(key, v)?,
                "flip" => spec.flip = switch(key, v)?,
                "flop" => spec.flop = switch(key, v)?,
                "grayscale" | "greyscale" => spec.grayscale = switch(key, v)?,
                "enlarge" => spec.enlarge = switch(key, v)?,
                "progressive" => spec.progressive = switch(key, v)?,
                "keepcopyright" => spec.keep_copyright = switch(key, v)?,
                "animated" => spec.animated = switch(key, v)?,
                "frame" => spec.frame = Some(pixels(key, v, 0, 100_000)?),
                "lqip" => lqip = Some((key, switch(key, v)?)),
                "trim" => {
                    spec.trim = match v.trim().parse::<u8>() {
                        Ok(threshold) => Some(threshold),
                        Err(_) => switch(key, v)
                            .map_err(|_| bad(key, "expected a threshold 0..=255, true or false"))?
                            .then_some(10),
                    };
                }
                "padding" => spec.padding = padding(key, v, max)?,
                "zoom" => {
                    let z = number(key, v)?;
                    if !(z > 0.0 && z <= MAX_DPR) {
                        return Err(bad(key, format!("must be above 0 and at most {MAX_DPR}")));
                    }
                    zoom = Some((key, z));
                }
                "minwidth" => spec.min_width = Some(pixels(key, v, 1, max)?),
                "minheight" => spec.min_height = Some(pixels(key, v, 1, max)?),
                "maxbytes" => {
                    let n = v
                        .trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|n| (100..=1 << 31).contains(n));
                    spec.max_bytes =
                        Some(n.ok_or_else(|| {
                            bad(key, "must be a byte count from 100 to 2147483648")
                        })?);
                }
                "pixelate" => {
                    let n = pixels(key, v, 1, 256)?;
                    spec.pixelate = (n > 1).then_some(n);
                }
                "blurhashx" => {
                    spec.blurhash_components.0 = component(key, v)?;
                }
                "blurhashy" => {
                    spec.blurhash_components.1 = component(key, v)?;
                }
                "blur" => {
                    let s = number(key, v)?;
                    if !(0.0..=100.0).contains(&s) {
                        return Err(bad(key, "sigma must be between 0 and 100"));
                    }
                    #[allow(clippy::cast_possible_truncation)]
                    let s = s as f32;
                    spec.blur = (s > 0.0).then_some(s);
                }
                "fit" => {
                    spec.fit = Fit::parse(v).ok_or_else(|| {
                        bad(key, "expected inside, cover, contain, fill or outside")
                    })?;
                }
                "position" | "gravity" => {
                    spec.position = Position::parse(v).ok_or_else(|| {
                        bad(
                            key,
                            "expected centre, a compass point, entropy or attention",
                        )
                    })?;
                }
                "background" | "bg" => {
                    spec.background = Some(
                        Rgba::parse(v)
                            .ok_or_else(|| bad(key, "expected a hex colour such as ffffff"))?,
                    );
                }
                "cropleft" => crop[0] = Some(pixels(key, v, 0, u32::MAX)?),
                "croptop" => crop[1] = Some(pixels(key, v, 0, u32::MAX)?),
                "cropwidth" => crop[2] = Some(pixels(key, v, 1, u32::MAX)?),
                "cropheight" => crop[3] = Some(pixels(key, v, 1, u32::MAX)?),
                "watermark" | "watermarkimage" => {
                    wm_path = Some(v.to_owned()).filter(|p| !p.is_empty())
                }
                "watermarktext" => {
                    wm_text = Some(crate::text::checked(key, v)?);
                }
                "watermarkposition" => {
                    wm_position = Position::parse(v)
                        .filter(|p| !matches!(p, Position::Entropy | Position::Attention))
                        .ok_or_else(|| bad(key, "expected centre or a compass point"))?;
                }
                "watermarkopacity" => {
                    let o = number(key, v)?;
                    if !(0.0..=1.0).contains(&o) {
                        return Err(bad(key, "must be between 0 and 1"));
                    }
                    #[allow(clippy::cast_possible_truncation)]
                    let o = o as f32;
                    wm_opacity = o;
                }
                "watermarkscale" => {
                    let s = number(key, v)?;
                    if !(s > 0.0 && s <= 1.0) {
                        return Err(bad(key, "must be above 0 and at most 1"));
                    }
                    #[allow(clippy::cast_possible_truncation)]
                    let s = s as f32;
                    wm_scale = s;
                }
                _ => {}
            }
        }
        if let Some((key, true)) = lqip {
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
        if let Some((key, d)) = dpr {
            spec.width = spec.width.map(|w| scaled(key, w, d, max)).transpose()?;
            spec.height = spec.height.map(|h| scaled(key, h, d, max)).transpose()?;
        }
        if let Some((key, z)) = zoom {
            if spec.width.is_none() && spec.height.is_none() {
                spec.zoom = Some(z);
            }
            spec.width = spec.width.map(|w| scaled(key, w, z, max)).transpose()?;
            spec.height = spec.height.map(|h| scaled(key, h, z, max)).transpose()?;
        }
        spec.crop = match crop {
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
        let mark = match (wm_path, wm_text) {
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
            position: wm_position,
            opacity: wm_opacity,
            scale: wm_scale,
        });
        Ok(spec)
    }

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

    /// The concrete output format: `auto` resolved against the Accept header, absent = WebP.
    pub fn output_format(&self, accept: &str) -> OutputFormat {
        match self.format {
            None | Some(FormatParam::Webp) => OutputFormat::Webp,
            Some(FormatParam::Jpeg) => OutputFormat::Jpeg,
            Some(FormatParam::Png) => OutputFormat::Png,
            Some(FormatParam::Avif) => OutputFormat::Avif,
            Some(FormatParam::Auto) => OutputFormat::negotiate(accept),
            Some(FormatParam::Blurhash) => OutputFormat::Blurhash,
            Some(FormatParam::Gif) => OutputFormat::Gif,
            Some(FormatParam::Lqip) => OutputFormat::Lqip,
        }
    }
}

/// Canonical form: `key=value` pairs joined by `&`, in a fixed order, defaults omitted.
/// `format` is printed as given (`auto` included); the server appends the resolved format.
impl fmt::Display for TransformSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = Self::default();
        let mut parts: Vec<String> = Vec::new();
        if let Some(c) = self.crop {
            parts.push(format!(
                "crop={},{},{},{}",
                c.left, c.top, c.width, c.height
            ));
        }
        if let Some(t) = self.trim {
            parts.push(format!("trim={t}"));
        }
        if let Some(w) = self.width {
            parts.push(format!("w={w}"));
        }
        if let Some(h) = self.height {
            parts.push(format!("h={h}"));
        }
        if let Some(z) = self.zoom {
            parts.push(format!("zoom={z}"));
        }
        for (min, name) in [(self.min_width, "minw"), (self.min_height, "minh")] {
            if let Some(m) = min {
                parts.push(format!("{name}={m}"));
            }
        }
        if let Some((w, h)) = self.default_box {
            let side = |v: Option<u32>| v.map_or_else(String::new, |v| v.to_string());
            parts.push(format!("box={}x{}", side(w), side(h)));
        }
        if self.fit != d.fit {
            parts.push(format!("fit={}", self.fit.name()));
        }
        if self.position != d.position {
            parts.push(format!("pos={}", self.position.name()));
        }
        if self.enlarge {
            parts.push("enlarge".into());
        }
        if let Some(Rgba([r, g, b, a])) = self.background {
            parts.push(format!("bg={r:02x}{g:02x}{b:02x}{a:02x}"));
        }
        if self.rotate != 0.0 {
            parts.push(format!("rot={}", self.rotate));
        }
        for (on, name) in [(self.flip, "flip"), (self.flop, "flop")] {
            if on {
                parts.push(name.into());
            }
        }
        if let Some(b) = self.blur {
            parts.push(format!("blur={b}"));
        }
        for (on, name) in [(self.sharpen, "sharpen"), (self.grayscale, "gray")] {
            if on {
                parts.push(name.into());
            }
        }
        if let Some(n) = self.pixelate {
            parts.push(format!("pixelate={n}"));
        }
        if let Some([t, r, b, l]) = self.padding {
            parts.push(format!("pad={t},{r},{b},{l}"));
        }
        if let Some(w) = &self.watermark {
            let (name, value) = match &w.mark {
                WatermarkMark::Image(path) => ("wm", path),
                WatermarkMark::Text(text) => ("wmt", text),
            };
            parts.push(format!(
                "{name}={},{},{},{}",
                value
                    .replace('%', "%25")
                    .replace(',', "%2C")
                    .replace('&', "%26")
                    .replace('|', "%7C"),
                w.position.name(),
                w.opacity,
                w.scale
            ));
        }
        match self.format {
            None => {}
            Some(FormatParam::Webp) => parts.push("f=webp".into()),
            Some(FormatParam::Jpeg) => parts.push("f=jpeg".into()),
            Some(FormatParam::Png) => parts.push("f=png".into()),
            Some(FormatParam::Avif) => parts.push("f=avif".into()),
            Some(FormatParam::Auto) => parts.push("f=auto".into()),
            Some(FormatParam::Blurhash) => parts.push("f=blurhash".into()),
            Some(FormatParam::Gif) => parts.push("f=gif".into()),
            Some(FormatParam::Lqip) => parts.push("f=lqip".into()),
        }
        parts.push(format!("q={}", self.quality));
        if let Some(n) = self.max_bytes {
            parts.push(format!("maxb={n}"));
        }
        if self.progressive {
            parts.push("progressive".into());
        }
        if self.keep_copyright {
            parts.push("keepcr".into());
        }
        if !self.animated {
            parts.push("still".into());
        }
        if let Some(n) = self.frame {
            parts.push(format!("frame={n}"));
        }
        if self.format == Some(FormatParam::Blurhash) && self.blurhash_components != (4, 3) {
            let (x, y) = self.blurhash_components;
            parts.push(format!("bh={x}x{y}"));
        }
        f.write_str(&parts.join("&"))
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
