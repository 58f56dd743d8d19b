//! The corpus test: every source file of `tests/fixtures` (provenance and licences
//! in fixtures/ATTRIBUTION.md) through every transformation of the URL API (docs/image-service.md
//! §4, "Resize"; apps/image-server/README.md, "URL API"), alone and in a few combinations, as
//! image-server calls the pipeline (a request without `width` or `height` fitted inside the
//! default 1920x1080 box; the full range of a signed URL, `Limits::default()`).
//!
//! What a user can see is asserted: no panic; an answer, or a refusal from the documented list
//! (docs/image-service.md §7: a 400 naming the parameter, 415, 422), never an internal error
//! (`PipelineError::Encode`, a 500); a result that a decoder other than the one that wrote it
//! reads (the `image` crate's pure-Rust PNG, GIF and WebP decoders, zune-jpeg, libheif for
//! AVIF); the size the parameters ask for, computed here from the file's shown size by the
//! rules of §4 (sharp's fit rules); an animation's frames and how long it plays kept; EXIF
//! orientation applied (`exif_orientation_*`). Files that are refused (corrupt, truncated,
//! coded with a codec the HEIF decoder lacks, compact `mini` HEIF, a TIFF compression the
//! `tiff` crate lacks, over MAX_SOURCE_PIXELS) must give their documented refusal for every
//! transformation, and every file is tried as an image watermark too.
//!
//! Run time (debug build, 2 cores): outputs are small (64 to 160 px, and the 1920x1080
//! default box once), and the files are split over a few tests that the harness runs side by
//! side. Three subsets, because a debug build is slow at them:
//! - AVIF output (rav1e takes seconds for a 64 px picture in a debug build) is asked of the
//!   files of [`AVIF_OUTPUT`], one of each kind of source, not of every file;
//! - the HEIC photos of [`HEAVY`] (3 to 12 MP, which libheif decodes at full size for every
//!   request: 2 to 6 s each here) get the combinations of [`HEAVY_QUERIES`] only, and the
//!   pictures over 4 MP of [`LARGE`] (decoded or drawn smaller for small outputs) every request
//!   but `trim`, which decodes at full size; every transformation runs on the smaller files of
//!   the same formats (nokia_bird_burst.heic, the AVIFs, large_image.jpg, lake_bordered.jpg),
//!   through the same code;
//! - pictures over half a megapixel take `fit=cover` at the positions of [`BIG_POSITIONS`]
//!   only (the smaller files take every position);
//! - the long animations of [`LONG_ANIMATIONS`] (12 to 42 frames, all decoded and transformed
//!   for an animated answer: 2 to 4 s a request here) get [`ANIMATION_QUERIES`], and the short
//!   ones (2 to 10 frames) every request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use image_pipeline::image::{self, AnimationDecoder, ImageDecoder, RgbaImage};
use image_pipeline::samples::fixture;
use image_pipeline::{Limits, OutputFormat, PipelineError, TransformSpec, transform};

/// The default box of a request without `width` and `height` (DEFAULT_OUTPUT_WIDTH and
/// DEFAULT_OUTPUT_HEIGHT, docs/configuration.md).
const DEFAULT_BOX: (u32, u32) = (1920, 1080);

/// What a corpus file is, as its own tools (libvips' `vipsheader`, Pillow, libheif) describe it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A still picture (or an APNG or a HEIF collection, of which the first frame or the
    /// primary image is shown), of this size once its orientation is applied.
    Still(u32, u32),
    /// An animated GIF or WebP: frame size and frame count.
    Animated(u32, u32, u32),
    /// Refused for every request, with this refusal.
    Refused(Refusal),
}

/// The documented refusals of a source (docs/image-service.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// 415 `unsupported_image`.
    Unsupported,
    /// 422 `undecodable_image`.
    Undecodable,
    /// 422 `too_many_pixels`.
    TooManyPixels,
}

use Kind::{Animated, Refused, Still};
use Refusal::{TooManyPixels, Undecodable, Unsupported};

/// Every source file of the fixtures, with what it is. References (`*_libvips.png`,
/// `*_libavif.png`, `*.blocksN.png`) and the info reference are not sources.
const CORPUS: &[(&str, Kind)] = &[
    // JPEG
    ("lake.jpg", Still(4000, 2250)),
    ("large_image.jpg", Still(2268, 1512)),
    ("lake_p3.jpg", Still(1600, 900)),
    ("lake_cmyk.jpg", Still(240, 135)),
    ("lake_ycck.jpg", Still(240, 135)),
    ("pil_sample_cmyk.jpg", Still(100, 100)),
    ("lake_bordered.jpg", Still(320, 200)),
    ("orient6.jpg", Still(135, 240)),
    ("orientation_rectangle.jpg", Still(1, 2)),
    ("hopper.jpg", Still(128, 128)),
    ("hopper_orientation_2.jpg", Still(128, 128)),
    ("hopper_orientation_3.jpg", Still(128, 128)),
    ("hopper_orientation_4.jpg", Still(128, 128)),
    ("hopper_orientation_5.jpg", Still(128, 128)),
    ("hopper_orientation_6.jpg", Still(128, 128)),
    ("hopper_orientation_7.jpg", Still(128, 128)),
    ("hopper_orientation_8.jpg", Still(128, 128)),
    ("hopper_gray.jpg", Still(128, 128)),
    ("hopper_16bit_qtables.jpg", Still(128, 128)),
    ("app13-multiple.jpg", Still(256, 160)),
    ("parrots.jpg", Still(384, 256)),
    ("rgb.jpg", Still(100, 100)),
    ("corrupt-header.jpg", Refused(Undecodable)),
    // PNG (APNG is read as its first frame)
    ("lake_240.png", Still(240, 135)),
    ("colour_cube.png", Still(1089, 33)),
    ("anim_3f.png", Still(64, 48)),
    ("apng_mode_16bit.png", Still(128, 64)),
    ("apng_dispose_op_previous.png", Still(128, 64)),
    ("pil123p.png", Still(162, 150)),
    ("pil123rgba.png", Still(162, 150)),
    ("i_trns.png", Still(64, 64)),
    ("l_trns.png", Still(64, 64)),
    ("p_trns_single.png", Still(64, 64)),
    ("rgb_trns.png", Still(64, 64)),
    ("1_trns.png", Still(64, 64)),
    // WebP
    ("lake_1600.webp", Still(1600, 900)),
    ("lake_alpha_1600.webp", Still(1600, 900)),
    ("transparent.webp", Still(200, 150)),
    ("flower.webp", Still(480, 360)),
    ("libwebp_test.webp", Still(128, 128)),
    ("hopper_orientation_2.webp", Still(128, 128)),
    ("hopper_orientation_3.webp", Still(128, 128)),
    ("hopper_orientation_4.webp", Still(128, 128)),
    ("hopper_orientation_5.webp", Still(128, 128)),
    ("hopper_orientation_6.webp", Still(128, 128)),
    ("hopper_orientation_7.webp", Still(128, 128)),
    ("hopper_orientation_8.webp", Still(128, 128)),
    ("anim_5f.webp", Animated(64, 48, 5)),
    ("test_anim.webp", Animated(400, 400, 12)),
    // GIF
    ("transparent.gif", Still(200, 150)),
    ("anim_5f.gif", Animated(64, 48, 5)),
    ("dispose_prev.gif", Animated(100, 100, 5)),
    ("iss634.gif", Animated(245, 245, 42)),
    ("chi.gif", Animated(320, 240, 31)),
    ("different_transparency.gif", Animated(100, 100, 2)),
    ("dispose_bgnd_transparency.gif", Animated(38, 32, 10)),
    // HEIC / HEIF
    ("iphone.heic", Still(3024, 4032)),
    ("window.heic", Still(4032, 3024)),
    ("xiaomi.heic", Still(2592, 1944)),
    ("pug.heic", Still(4032, 3024)),
    ("nokia_bird_burst.heic", Still(1280, 720)),
    ("heic_200mp.heic", Refused(TooManyPixels)),
    ("truncated.heic", Refused(Undecodable)),
    ("avc32.heif", Refused(Unsupported)),
    ("jpeg32.heif", Refused(Unsupported)),
    ("unci32.heif", Refused(Unsupported)),
    ("avif32-mini.heif", Refused(Unsupported)),
    ("hevc32-mini.heif", Refused(Unsupported)),
    // AVIF
    ("kimono.rotate90.avif", Still(722, 1024)),
    ("kimono.rotate90.ispe-last.avif", Still(722, 1024)),
    ("kimono.crop.ispe-last.avif", Still(385, 330)),
    (
        "kimono.mirror-vertical.rotate270.crop.ispe-last.avif",
        Still(385, 330),
    ),
    ("kimono.crop.avif", Still(385, 330)),
    (
        "kimono.mirror-vertical.rotate270.crop.avif",
        Still(385, 330),
    ),
    ("fox.profile0.8bpc.yuv420.monochrome.avif", Still(1204, 800)),
    ("lake_irot1.avif", Still(135, 240)),
    ("lake_irot1_clap.avif", Still(100, 160)),
    ("lake_irot1_imir0_clap.avif", Still(100, 160)),
    ("lake_irot2_imir1.avif", Still(240, 135)),
    ("lake_irot3_imir0.avif", Still(135, 240)),
    ("lake_10bit_irot1_imir0_clap.avif", Still(100, 160)),
    ("lake_10bit_irot2_clap.avif", Still(160, 100)),
    ("lake_10bit_irot2_imir1.avif", Still(240, 135)),
    ("lake_mono_8bit.avif", Still(240, 135)),
    ("lake_mono_10bit.avif", Still(240, 135)),
    ("lake_mono_12bit.avif", Still(240, 135)),
    // TIFF
    ("hopper_lzw.tif", Still(128, 128)),
    ("tiff_16bit_RGB.tiff", Still(100, 40)),
    ("tiff_16bit_RGBa.tiff", Still(100, 40)),
    ("16bit.cropped.tif", Still(64, 64)),
    ("g4_orientation_6.tif", Still(590, 88)),
    ("tiff_strip_cmyk_jpeg.tif", Still(100, 100)),
    // WebP strips, which the tiff crate lacks: read through libtiff.
    ("hopper_webp.tif", Still(128, 128)),
    ("ycbcr-cat.tif", Still(250, 325)),
    ("fax2d.tif", Still(1728, 1082)),
    ("g3test.tif", Still(1728, 1103)),
    // SVG
    ("plum-blossom.svg", Still(2835, 2835)),
];

/// The files whose requests include AVIF output: one of each kind of source (an opaque and a
/// transparent PNG, 16-bit gray with transparency, a palette PNG, an oriented JPEG, a CMYK
/// JPEG, lossy WebP with alpha, an animation, 10-bit AVIF, HEIC, TIFF, SVG).
const AVIF_OUTPUT: &[&str] = &[
    "lake_240.png",
    "pil123rgba.png",
    "i_trns.png",
    "pil123p.png",
    "hopper_orientation_6.jpg",
    "lake_ycck.jpg",
    "transparent.webp",
    "anim_5f.gif",
    "lake_10bit_irot2_clap.avif",
    "nokia_bird_burst.heic",
    "tiff_16bit_RGBa.tiff",
    "plum-blossom.svg",
];

/// The HEIC photos over 2 MP, which get [`HEAVY_QUERIES`] only.
const HEAVY: &[&str] = &["iphone.heic", "window.heic", "pug.heic", "xiaomi.heic"];

/// The pictures over 4 MP that get every request but `trim` (a full-size decode: 5 to 30 s
/// each in a debug build).
const LARGE: &[&str] = &["lake.jpg", "plum-blossom.svg"];

/// The requests made of [`HEAVY`] files: combinations of `cover` at `attention`, a turn, both
/// mirrors, grayscale, trim, pixelate, `contain` on a background and a text watermark.
const HEAVY_QUERIES: &[&str] = &[
    "width=100&height=100&fit=cover&position=attention&rotate=90&flip=true&grayscale=true&format=png",
    "trim=true&width=90&pixelate=4&flop=true&format=gif",
    "width=120&height=60&fit=contain&background=ff000080&watermarkText=Hi&watermark_position=northwest&flop=true",
];

/// The positions of `fit=cover` asked of pictures over half a megapixel (HEIF and AVIF are
/// decoded at full size for every request).
const BIG_POSITIONS: &[&str] = &["north", "southeast", "entropy", "attention"];

/// The animations of more than 10 frames, which get [`ANIMATION_QUERIES`] only.
const LONG_ANIMATIONS: &[&str] = &["test_anim.webp", "iss634.gif", "chi.gif"];

/// The requests made of [`LONG_ANIMATIONS`]: animated WebP and GIF answers with geometry,
/// filters and both watermarks, stills of a frame, and `format=auto`.
const ANIMATION_QUERIES: &[&str] = &[
    "width=96",
    "width=96&format=gif",
    "width=120&height=60&fit=contain&background=ff000080&watermarkText=Hi&watermark_position=northwest&flop=true",
    "trim=true&width=90&pixelate=4&flop=true&format=gif",
    "width=96&watermark=logos/mark.png&watermark_position=southwest&watermark_opacity=0.8&watermark_scale=0.5",
    "width=96&frame=1&format=png",
    "width=96&animated=false",
    "width=96&format=auto",
];

/// The image watermark of the watermark cases: an RGBA PNG with transparency.
const MARK: &str = "pil123rgba.png";

/// What the size of a result must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    /// Exactly this.
    Exact(u32, u32),
    /// Within a pixel of this on each side (a turn by an angle other than a right one).
    Near(u32, u32),
    /// At most this on each side (`trim`, whose box depends on the pixels).
    AtMost(u32, u32),
}

/// One request: the query, the Accept header, and what its answer must be.
struct Case {
    query: String,
    accept: &'static str,
    size: Size,
    /// The formats the answer may come in.
    formats: Vec<OutputFormat>,
    /// Frames of the answer (1: a still).
    frames: u32,
    /// How long an animated answer plays, in milliseconds: the source's (set by `run`).
    duration: u64,
    /// A refusal that this request may get instead of an answer, named (docs §4).
    may_refuse: Option<&'static str>,
    /// Every pixel of a PNG answer is gray.
    gray: bool,
    /// The answer has at most this many bytes.
    budget: Option<usize>,
}

fn round_px(v: f64) -> u32 {
    (v.round() as u32).max(1)
}

/// `(w, h)` scaled by `s`, rounded to whole pixels, at least 1.
fn scaled((w, h): (u32, u32), s: f64) -> (u32, u32) {
    (round_px(f64::from(w) * s), round_px(f64::from(h) * s))
}

/// `fit=inside` (and a lone `width` or `height`): the largest size of the same shape inside
/// the box, never larger than the source unless `enlarge` (docs §4, as sharp).
fn inside(src: (u32, u32), w: Option<u32>, h: Option<u32>, enlarge: bool) -> (u32, u32) {
    let sx = w.map(|w| f64::from(w) / f64::from(src.0));
    let sy = h.map(|h| f64::from(h) / f64::from(src.1));
    let s = match (sx, sy) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => 1.0,
    };
    scaled(src, if enlarge { s } else { s.min(1.0) })
}

/// `fit=cover`: the box filled and the overflow cropped; without `enlarge` a smaller source
/// gives at most its own size on each side.
fn cover(src: (u32, u32), w: u32, h: u32, enlarge: bool) -> (u32, u32) {
    let s = (f64::from(w) / f64::from(src.0)).max(f64::from(h) / f64::from(src.1));
    let (sw, sh) = scaled(src, if enlarge { s } else { s.min(1.0) });
    (w.min(sw), h.min(sh))
}

/// `fit=outside`: the smallest size of the same shape that covers the box.
fn outside(src: (u32, u32), w: u32, h: u32) -> (u32, u32) {
    let s = (f64::from(w) / f64::from(src.0)).max(f64::from(h) / f64::from(src.1));
    scaled(src, s.min(1.0))
}

/// The bounding box of `size` turned by `degrees`.
fn turned((w, h): (u32, u32), degrees: f64) -> (u32, u32) {
    let (sin, cos) = degrees.to_radians().sin_cos();
    let (w, h) = (f64::from(w), f64::from(h));
    (
        round_px((w * cos).abs() + (h * sin).abs()),
        round_px((w * sin).abs() + (h * cos).abs()),
    )
}

/// Every request the corpus asks of a file whose frames are `src` pixels (`frames` of them).
fn cases(src: (u32, u32), frames: u32, with_avif: bool) -> Vec<Case> {
    use OutputFormat::{Avif, Blurhash, Gif, Jpeg, Lqip, Png, Webp};
    let moving = frames > 1;
    // A WebP or GIF answer of an animation is animated; every other answer is a still.
    let anim = |f: OutputFormat| {
        if moving && matches!(f, Webp | Gif) {
            frames
        } else {
            1
        }
    };
    let case = |query: String, size: Size, format: OutputFormat| Case {
        frames: anim(format),
        duration: 0,
        query,
        accept: "",
        size,
        formats: vec![format],
        may_refuse: None,
        gray: false,
        budget: None,
    };
    let e = Size::Exact;
    let w96 = inside(src, Some(96), None, false);
    let (w96x, w96y) = w96;
    let mut all = vec![
        case(
            String::new(),
            {
                let (w, h) = inside(src, Some(DEFAULT_BOX.0), Some(DEFAULT_BOX.1), false);
                e(w, h)
            },
            Webp,
        ),
        case("width=96".into(), e(w96x, w96y), Webp),
        case(
            "height=72".into(),
            {
                let (w, h) = inside(src, None, Some(72), false);
                e(w, h)
            },
            Webp,
        ),
    ];
    let boxed = |fit: &str| -> (u32, u32) {
        match fit {
            "inside" => inside(src, Some(120), Some(80), false),
            "cover" => cover(src, 120, 80, false),
            "contain" => (120, 80),
            "fill" => (120.min(src.0), 80.min(src.1)),
            _ => outside(src, 120, 80),
        }
    };
    for fit in ["inside", "cover", "contain", "fill", "outside"] {
        let (w, h) = boxed(fit);
        all.push(case(
            format!("width=120&height=80&fit={fit}&background=20406080"),
            e(w, h),
            Webp,
        ));
    }
    let (cw, ch) = cover(src, 120, 80, false);
    for position in [
        "north",
        "northeast",
        "east",
        "southeast",
        "south",
        "southwest",
        "west",
        "northwest",
        "entropy",
        "attention",
    ] {
        all.push(case(
            format!("width=120&height=80&fit=cover&position={position}&format=png"),
            e(cw, ch),
            Png,
        ));
    }
    let sized = |w: Option<u32>, h: Option<u32>, enlarge: bool| {
        let (w, h) = inside(src, w, h, enlarge);
        e(w, h)
    };
    all.push(case(
        "width=160&enlarge=true".into(),
        sized(Some(160), None, true),
        Webp,
    ));
    all.push(case(
        "width=100&dpr=1.5".into(),
        sized(Some(150), None, false),
        Webp,
    ));
    all.push(case(
        "width=80&zoom=1.5".into(),
        sized(Some(120), None, false),
        Webp,
    ));
    // `zoom` alone scales the source (enlarging when above 1).
    let zoomed = round_px(f64::from(src.0) * 0.05);
    all.push(case(
        "zoom=0.05".into(),
        sized(Some(zoomed), None, false),
        Webp,
    ));
    // `min_height` scales a smaller result up, shape kept; a box of `cover` grows.
    let min_h = if w96y < 100 {
        inside(src, None, Some(100), true)
    } else {
        w96
    };
    all.push(case(
        "width=96&min_height=100".into(),
        e(min_h.0, min_h.1),
        Webp,
    ));
    // A `cover` box smaller than `min_width` grows to the smallest box of its shape that
    // holds it: 200 x 133.3, rounded up, whatever the source's size.
    all.push(case(
        "width=120&height=80&fit=cover&min_width=200".into(),
        e(200, 134),
        Webp,
    ));
    // A crop of the middle of the shown picture.
    let crop = (src.0 / 4, src.1 / 4, (src.0 / 2).max(1), (src.1 / 2).max(1));
    let crop_query = format!(
        "cropLeft={}&cropTop={}&cropWidth={}&cropHeight={}",
        crop.0, crop.1, crop.2, crop.3
    );
    let cropped = inside((crop.2, crop.3), Some(64), None, false);
    all.push(case(
        format!("{crop_query}&width=64"),
        e(cropped.0, cropped.1),
        Webp,
    ));
    for degrees in [90, 180, 270] {
        let (w, h) = if degrees == 180 { w96 } else { (w96y, w96x) };
        all.push(case(format!("width=96&rotate={degrees}"), e(w, h), Webp));
    }
    let (tw, th) = turned(w96, 30.0);
    all.push(case(
        "width=96&rotate=30&background=336699".into(),
        Size::Near(tw, th),
        Webp,
    ));
    for filter in [
        "flip=true",
        "flop=true",
        "blur=2",
        "blur=0.3",
        "sharpen=true",
        "pixelate=8",
        "watermarkText=\u{a9} corpus 2026&watermark_position=northwest",
        "watermark=logos/mark.png&watermark_position=southwest&watermark_opacity=0.8&watermark_scale=0.5",
        "keep_copyright=true",
        "progressive=true&format=jpeg&quality=20",
        "quality=100",
        "format=jpeg",
        "format=png",
        "format=gif",
        "format=webp",
    ] {
        let format = match filter {
            f if f.contains("format=jpeg") => Jpeg,
            f if f.contains("format=png") => Png,
            f if f.contains("format=gif") => Gif,
            _ => Webp,
        };
        all.push(case(format!("width=96&{filter}"), e(w96x, w96y), format));
    }
    let mut gray = case(
        "width=96&grayscale=true&format=png".into(),
        e(w96x, w96y),
        Png,
    );
    gray.gray = true;
    all.push(gray);
    all.push(case(
        "width=96&padding=4,8".into(),
        e(w96x + 16, w96y + 8),
        Webp,
    ));
    for threshold in ["true", "40"] {
        all.push(case(
            format!("trim={threshold}&width=96"),
            Size::AtMost(w96x, src.1),
            Webp,
        ));
    }
    // format=auto: AVIF to a client that takes AVIF and WebP (WebP for an animation), WebP to
    // one that takes WebP, else JPEG, or PNG for transparent pixels (GIF for an animation).
    let mut auto_webp = case("width=96&format=auto".into(), e(w96x, w96y), Webp);
    auto_webp.accept = "image/webp,*/*";
    all.push(auto_webp);
    let mut auto_plain = case("width=96&format=auto".into(), e(w96x, w96y), Jpeg);
    auto_plain.accept = "image/jpeg,image/png,*/*";
    auto_plain.formats = if moving { vec![Gif] } else { vec![Jpeg, Png] };
    auto_plain.frames = frames;
    all.push(auto_plain);
    if with_avif {
        let mut auto_avif = case("width=64&format=auto".into(), Size::Exact(0, 0), Avif);
        let (w, h) = inside(src, Some(64), None, false);
        auto_avif.size = e(w, h);
        auto_avif.accept = "image/avif,image/webp,*/*";
        if moving {
            auto_avif.formats = vec![Webp];
            auto_avif.frames = frames;
        }
        all.push(auto_avif);
        all.push(case("width=64&format=avif".into(), e(w, h), Avif));
    }
    // max_bytes: the highest quality that fits, then smaller; never on an animation (400).
    for format in ["jpeg", "webp", "png"] {
        let f = match format {
            "jpeg" => Jpeg,
            "webp" => Webp,
            _ => Png,
        };
        let (w, h) = inside(src, Some(120), None, false);
        let mut c = case(
            format!("width=120&max_bytes=2500&format={format}"),
            Size::AtMost(w, h),
            f,
        );
        c.budget = Some(2500);
        c.may_refuse = Some("max_bytes");
        c.frames = 1;
        all.push(c);
    }
    // Placeholders: the size of the full result.
    all.push(case(
        "width=96&format=blurhash".into(),
        e(w96x, w96y),
        Blurhash,
    ));
    all.push(case(
        "width=96&format=blurhash&blurhash_x=9&blurhash_y=1".into(),
        e(w96x, w96y),
        Blurhash,
    ));
    all.push(case("width=96&lqip=true".into(), e(w96x, w96y), Lqip));
    // Stills of an animation: a frame (400 naming `frame` when there is no such frame), or the
    // first one with animated=false.
    let mut framed = case("width=96&frame=1&format=png".into(), e(w96x, w96y), Png);
    if !moving {
        framed.may_refuse = Some("frame");
    }
    all.push(framed);
    let mut still = case("width=96&animated=false".into(), e(w96x, w96y), Webp);
    still.frames = 1;
    all.push(still);
    // A few combinations.
    let c1 = cover(src, 100, 100, false);
    let mut combo = case(
        "width=100&height=100&fit=cover&position=attention&rotate=90&flip=true&grayscale=true&format=png"
            .into(),
        e(c1.1, c1.0),
        Png,
    );
    combo.gray = true;
    all.push(combo);
    all.push(case(
        format!(
            "{crop_query}&width=64&blur=1&sharpen=true&padding=2&format=jpeg&quality=50&progressive=true"
        ),
        e(cropped.0 + 4, cropped.1 + 4),
        Jpeg,
    ));
    all.push(case(
        "width=120&height=60&fit=contain&background=ff000080&watermarkText=Hi&watermark_position=northwest&flop=true"
            .into(),
        e(120, 60),
        Webp,
    ));
    all.push(case(
        "trim=true&width=90&pixelate=4&flop=true&format=gif".into(),
        Size::AtMost(90.min(src.0), src.1),
        Gif,
    ));
    let tenth = inside(src, Some(round_px(f64::from(src.0) * 0.1)), None, false);
    let z = if tenth.0 < 64 {
        inside(src, Some(64), None, true)
    } else {
        tenth
    };
    all.push(case(
        "zoom=0.1&min_width=64&keep_copyright=true&format=jpeg".into(),
        e(z.0, z.1),
        Jpeg,
    ));
    let o = outside(src, 150, 100);
    all.push(case(
        "width=150&height=100&fit=outside&rotate=270&flop=true&watermark=logos/mark.png&padding=3&format=png"
            .into(),
        e(o.1 + 6, o.0 + 6),
        Png,
    ));
    all
}

/// A result read back: size, frames, and the first frame's pixels when the decoder gives them.
struct Read {
    size: (u32, u32),
    frames: u32,
    /// How long an animation plays, in milliseconds (0 for a still).
    duration: u64,
    pixels: Option<RgbaImage>,
}

/// How long `frames` play, in milliseconds.
fn total_ms(frames: &[image::Frame]) -> u64 {
    frames
        .iter()
        .map(|f| {
            let (numer, denom) = f.delay().numer_denom_ms();
            u64::from(numer.checked_div(denom).unwrap_or(0))
        })
        .sum()
}

/// Reads `bytes` as `format` with a decoder other than the one that wrote it.
fn read_back(bytes: &[u8], format: OutputFormat) -> Result<Read, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    match format {
        OutputFormat::Png => {
            let img = image::load_from_memory_with_format(bytes, image::ImageFormat::Png)
                .map_err(|e| err(&e))?
                .to_rgba8();
            Ok(Read {
                size: img.dimensions(),
                frames: 1,
                duration: 0,
                pixels: Some(img),
            })
        }
        OutputFormat::Jpeg => {
            let mut decoder = zune_jpeg::JpegDecoder::new(Cursor::new(bytes));
            decoder.decode().map_err(|e| format!("{e:?}"))?;
            let (w, h) = decoder.dimensions().ok_or("no dimensions")?;
            Ok(Read {
                size: (w as u32, h as u32),
                frames: 1,
                duration: 0,
                pixels: None,
            })
        }
        OutputFormat::Webp => {
            let decoder =
                image::codecs::webp::WebPDecoder::new(Cursor::new(bytes)).map_err(|e| err(&e))?;
            let size = decoder.dimensions();
            if decoder.has_animation() {
                let frames = decoder
                    .into_frames()
                    .collect_frames()
                    .map_err(|e| err(&e))?;
                let first = frames.first().ok_or("no frame")?.buffer().clone();
                return Ok(Read {
                    size,
                    frames: frames.len() as u32,
                    duration: total_ms(&frames),
                    pixels: Some(first),
                });
            }
            let img = image::DynamicImage::from_decoder(decoder)
                .map_err(|e| err(&e))?
                .to_rgba8();
            Ok(Read {
                size,
                frames: 1,
                duration: 0,
                pixels: Some(img),
            })
        }
        OutputFormat::Gif => {
            let decoder =
                image::codecs::gif::GifDecoder::new(Cursor::new(bytes)).map_err(|e| err(&e))?;
            let size = decoder.dimensions();
            let frames = decoder
                .into_frames()
                .collect_frames()
                .map_err(|e| err(&e))?;
            let first = frames.first().ok_or("no frame")?.buffer().clone();
            Ok(Read {
                size,
                frames: frames.len() as u32,
                duration: total_ms(&frames),
                pixels: Some(first),
            })
        }
        OutputFormat::Avif => {
            let _heif = image_pipeline::samples::hold_heif_decoder();
            let ctx = libheif_rs::HeifContext::read_from_bytes(bytes).map_err(|e| err(&e))?;
            let handle = ctx.primary_image_handle().map_err(|e| err(&e))?;
            let decoded = image_pipeline::samples::libheif()
                .decode(
                    &handle,
                    libheif_rs::ColorSpace::Rgb(libheif_rs::RgbChroma::Rgba),
                    None,
                )
                .map_err(|e| err(&e))?;
            Ok(Read {
                size: (decoded.width(), decoded.height()),
                frames: 1,
                duration: 0,
                pixels: None,
            })
        }
        OutputFormat::Blurhash => {
            let answer: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| err(&e))?;
            let hash = answer["blurhash"].as_str().ok_or("no blurhash")?;
            blurhash::decode(hash, 8, 8, 1.0).map_err(|e| format!("{e:?}"))?;
            let (x, y) = (&answer["components"]["x"], &answer["components"]["y"]);
            let (x, y) = (x.as_u64().ok_or("x")?, y.as_u64().ok_or("y")?);
            // The hash's first character counts the components: (x - 1) + (y - 1) * 9.
            let digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~";
            let first = hash.chars().next().ok_or("empty hash")?;
            let n = digits.find(first).ok_or("not base 83")? as u64;
            if n != (x - 1) + (y - 1) * 9 {
                return Err(format!("hash {hash} does not hold {x}x{y} components"));
            }
            let w = answer["width"].as_u64().ok_or("width")? as u32;
            let h = answer["height"].as_u64().ok_or("height")? as u32;
            Ok(Read {
                size: (w, h),
                frames: 1,
                duration: 0,
                pixels: None,
            })
        }
        OutputFormat::Lqip => {
            use base64::Engine as _;
            let answer: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| err(&e))?;
            let url = answer["lqip"].as_str().ok_or("no lqip")?;
            let data = url
                .strip_prefix("data:image/webp;base64,")
                .ok_or("not a WebP data URL")?;
            let webp = base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| err(&e))?;
            let tiny = read_back(&webp, OutputFormat::Webp)?;
            if tiny.size.0.max(tiny.size.1) > 24 {
                return Err(format!("placeholder of {:?}", tiny.size));
            }
            let w = answer["width"].as_u64().ok_or("width")? as u32;
            let h = answer["height"].as_u64().ok_or("height")? as u32;
            Ok(Read {
                size: (w, h),
                frames: 1,
                duration: 0,
                pixels: None,
            })
        }
    }
}

/// The pipeline's answer to `query` on `source`, as image-server asks for it.
fn answer(
    source: &[u8],
    query: &str,
    accept: &str,
    mark: &[u8],
) -> Result<Result<image_pipeline::Output, PipelineError>, String> {
    let limits = Limits::default();
    let pairs = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| kv.split_once('=').unwrap_or((kv, "")));
    let mut spec = TransformSpec::from_query(pairs, &limits)
        .map_err(|e| format!("the corpus query does not parse: {e}"))?;
    spec.fit_unsized_into(DEFAULT_BOX.0, DEFAULT_BOX.1);
    let format = spec.output_format(accept);
    let with_mark = spec
        .watermark
        .as_ref()
        .and_then(|w| w.image_path())
        .is_some();
    catch_unwind(AssertUnwindSafe(|| {
        transform(source, &spec, format, with_mark.then_some(mark), &limits)
    }))
    .map_err(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        format!("PANIC {what}")
    })
}

/// Whether `e` is the documented refusal `want`.
fn is_refusal(e: &PipelineError, want: Refusal) -> bool {
    matches!(
        (e, want),
        (PipelineError::Unsupported(_), Refusal::Unsupported)
            | (PipelineError::Undecodable(_), Refusal::Undecodable)
            | (PipelineError::TooManyPixels { .. }, Refusal::TooManyPixels)
    )
}

/// Checks one answer against its case; the failure, if any.
fn check(case: &Case, out: Result<image_pipeline::Output, PipelineError>) -> Result<(), String> {
    let out = match out {
        Ok(out) => out,
        Err(PipelineError::BadParam { name, .. }) if case.may_refuse == Some(name.as_str()) => {
            return Ok(());
        }
        Err(e) => return Err(format!("refused: {e:?}")),
    };
    if !case.formats.contains(&out.format) {
        return Err(format!(
            "answered {:?}, asked {:?}",
            out.format, case.formats
        ));
    }
    if OutputFormat::of(&out.bytes) != Some(out.format) {
        return Err(format!("the bytes are not {:?}", out.format));
    }
    if let Some(budget) = case.budget
        && out.bytes.len() > budget
    {
        return Err(format!(
            "{} bytes over a budget of {budget}",
            out.bytes.len()
        ));
    }
    let read = read_back(&out.bytes, out.format).map_err(|e| format!("unreadable: {e}"))?;
    if read.size != (out.width, out.height) {
        return Err(format!(
            "reads as {:?}, reported {:?}",
            read.size,
            (out.width, out.height)
        ));
    }
    let (w, h) = read.size;
    let sized = match case.size {
        Size::Exact(ew, eh) => (w, h) == (ew, eh),
        Size::Near(ew, eh) => w.abs_diff(ew) <= 1 && h.abs_diff(eh) <= 1,
        Size::AtMost(ew, eh) => w <= ew && h <= eh,
    };
    if !sized {
        return Err(format!("{w}x{h}, expected {:?}", case.size));
    }
    // An animation keeps its frames and how long it plays. libwebp's animation encoder merges a
    // frame into the one before when they are the same (within the lossy encoding's
    // tolerance), adding their delays, so an animated WebP may have fewer frames.
    let frames_kept = match (out.format, case.frames) {
        (OutputFormat::Webp, n) if n > 1 => (1..=n).contains(&read.frames),
        (_, n) => read.frames == n,
    };
    if !frames_kept {
        return Err(format!("{} frames, expected {}", read.frames, case.frames));
    }
    // GIF counts delays in hundredths of a second.
    let slack = 10 * u64::from(case.frames);
    if case.frames > 1 && read.duration.abs_diff(case.duration) > slack {
        return Err(format!(
            "plays {} ms, the source {} ms",
            read.duration, case.duration
        ));
    }
    if case.gray
        && let Some(px) = &read.pixels
        && let Some(p) = px.pixels().find(|p| p.0[0] != p.0[1] || p.0[1] != p.0[2])
    {
        return Err(format!("a pixel is not gray: {:?}", p.0));
    }
    Ok(())
}

/// Runs every case on every corpus file whose name `pick` accepts; the failures, one a line.
fn run(pick: impl Fn(&str) -> bool) -> Vec<String> {
    let mark = fixture(MARK);
    let mut failures = Vec::new();
    for &(file, kind) in CORPUS.iter().filter(|(f, _)| pick(f)) {
        let started = std::time::Instant::now();
        let source = fixture(file);
        let (src, frames) = match kind {
            Still(w, h) => ((w, h), 1),
            Animated(w, h, n) => ((w, h), n),
            Refused(_) => ((64, 64), 1),
        };
        // How long the source plays, read by the `image` crate's decoders.
        let duration = match (kind, file.ends_with(".gif")) {
            (Animated(..), true) => read_back(&source, OutputFormat::Gif).unwrap().duration,
            (Animated(..), false) => read_back(&source, OutputFormat::Webp).unwrap().duration,
            _ => 0,
        };
        let mut count = 0;
        let (heavy, large) = (HEAVY.contains(&file), LARGE.contains(&file));
        let long = LONG_ANIMATIONS.contains(&file);
        let chosen = cases(src, frames, AVIF_OUTPUT.contains(&file))
            .into_iter()
            .filter(|c| !heavy || HEAVY_QUERIES.contains(&c.query.as_str()))
            .filter(|c| !long || ANIMATION_QUERIES.contains(&c.query.as_str()))
            .filter(|c| !large || !c.query.contains("trim="))
            .filter(|c| {
                let big = u64::from(src.0) * u64::from(src.1) > 500_000;
                !big || !c.query.contains("&position=")
                    || BIG_POSITIONS
                        .iter()
                        .any(|p| c.query.contains(&format!("&position={p}&")))
            });
        for mut case in chosen {
            case.duration = duration;
            count += 1;
            let got = match answer(&source, &case.query, case.accept, &mark) {
                Ok(got) => got,
                Err(e) => {
                    failures.push(format!("{file} ?{}: {e}", case.query));
                    continue;
                }
            };
            let verdict = match kind {
                Refused(want) => match got {
                    Err(e) if is_refusal(&e, want) => Ok(()),
                    // A file whose header reads (a TIFF compressed with a method we lack) may
                    // be refused for a parameter first: `frame=1` of its one frame.
                    Err(PipelineError::BadParam { name, .. })
                        if case.may_refuse == Some(name.as_str()) =>
                    {
                        Ok(())
                    }
                    Err(e) => Err(format!("refused as {e:?}, documented {want:?}")),
                    Ok(out) => Err(format!("answered {:?}, documented {want:?}", out.format)),
                },
                _ => check(&case, got),
            };
            if let Err(e) = verdict {
                failures.push(format!("{file} ?{} [{}]: {e}", case.query, case.accept));
            }
        }
        eprintln!(
            "corpus: {file}: {count} requests in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    failures
}

fn assert_none(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn is(ext: &[&str]) -> impl Fn(&str) -> bool {
    move |f: &str| ext.iter().any(|e| f.ends_with(e))
}

#[test]
fn every_jpeg_of_the_corpus_answers_every_transformation() {
    assert_none(run(is(&[".jpg"])));
}

#[test]
fn every_png_tiff_and_svg_of_the_corpus_answers_every_transformation() {
    assert_none(run(is(&[".png", ".tif", ".tiff", ".svg"])));
}

#[test]
fn every_webp_and_gif_of_the_corpus_answers_every_transformation_animations_stay_animated() {
    assert_none(run(is(&[".webp", ".gif"])));
}

#[test]
fn every_heif_and_avif_of_the_corpus_answers_every_transformation() {
    assert_none(run(|f| {
        is(&[".heif", ".avif"])(f) || f == "nokia_bird_burst.heic"
    }));
}

#[test]
fn the_heic_photos_of_the_corpus_answer_every_transformation() {
    assert_none(run(|f| {
        f.ends_with(".heic") && f != "nokia_bird_burst.heic"
    }));
}

#[test]
fn the_corpus_table_lists_every_source_file_of_the_fixtures() {
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let reference = |f: &str| {
        f.ends_with("_libvips.png")
            || f.ends_with("_libavif.png")
            || f.contains(".blocks")
            || f.ends_with(".json")
            || f.ends_with(".sh")
            || f.ends_with(".md")
    };
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if !reference(&name) && !CORPUS.iter().any(|(f, _)| *f == name) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "not in CORPUS: {missing:?}");
}

/// `file` through `query` (a PNG result), read back.
fn png_of(file: &str, query: &str) -> RgbaImage {
    let out = answer(&fixture(file), query, "", &[]).unwrap().unwrap();
    read_back(&out.bytes, OutputFormat::Png)
        .unwrap()
        .pixels
        .unwrap()
}

/// Mean absolute difference of the samples of two images of one size.
fn mean_difference(a: &RgbaImage, b: &RgbaImage) -> f64 {
    assert_eq!(a.dimensions(), b.dimensions());
    let sum: u64 = a
        .as_raw()
        .iter()
        .zip(b.as_raw())
        .map(|(x, y)| u64::from(x.abs_diff(*y)))
        .sum();
    sum as f64 / a.as_raw().len() as f64
}

/// EXIF orientations 2 to 8 are applied, in JPEG and WebP alike (docs/image-service.md §4,
/// order of operations: EXIF orientation first). Pillow's `hopper_orientation_N` files are
/// hopper.jpg stored turned or mirrored with the tag that undoes it, so each must come out as
/// hopper.jpg does; a rectangle stored 2x1 with orientation 8 comes out 1x2, and orient6.jpg
/// is lake_240.png turned a quarter clockwise.
#[test]
fn exif_orientation_is_applied_to_every_oriented_jpeg_and_webp_of_the_corpus() {
    use image_pipeline::image::imageops;
    let upright = png_of("hopper.jpg", "width=64&format=png");
    // How far a wrong orientation is: the mirror image, and the quarter turns.
    let wrong = [
        imageops::flip_horizontal(&upright),
        imageops::flip_vertical(&upright),
        imageops::rotate90(&upright),
        imageops::rotate270(&upright),
    ];
    let nearest_wrong = wrong
        .iter()
        .map(|w| mean_difference(w, &upright))
        .fold(f64::MAX, f64::min);
    for n in 2..=8 {
        for ext in ["jpg", "webp"] {
            let file = format!("hopper_orientation_{n}.{ext}");
            let img = png_of(&file, "width=64&format=png");
            let d = mean_difference(&img, &upright);
            assert!(
                d < 6.0 && d < nearest_wrong / 4.0,
                "{file}: {d} from upright, a wrong orientation is {nearest_wrong}"
            );
        }
    }
    let turned = png_of("orientation_rectangle.jpg", "format=png");
    assert_eq!(turned.dimensions(), (1, 2));
    let lake = image::load_from_memory(&fixture("lake_240.png"))
        .unwrap()
        .to_rgba8();
    let oriented = png_of("orient6.jpg", "format=png");
    let d = mean_difference(&oriented, &imageops::rotate90(&lake));
    assert!(d < 4.0, "orient6.jpg: {d} from lake_240.png turned");
}

/// Every corpus file as the image watermark of a small photo: it is drawn (the result keeps the
/// photo's size) or refused as 400 `invalid_parameter` naming `watermark` (docs/image-service.md
/// §4: "a watermark image that cannot be used"), never as if the photo were at fault. The HEIC
/// photos of [`HEAVY`] are left out: a watermark is decoded at full size, 2 to 6 s each in a
/// debug build, through the code nokia_bird_burst.heic takes.
#[test]
fn every_corpus_file_is_drawn_as_an_image_watermark_or_refused_naming_watermark() {
    let photo = fixture("lake_240.png");
    let mut failures = Vec::new();
    for &(file, kind) in CORPUS.iter().filter(|(f, _)| !HEAVY.contains(f)) {
        let query = "width=120&watermark=logos/mark.png&watermark_scale=0.5&format=png";
        let verdict = match (answer(&photo, query, "", &fixture(file)), kind) {
            (Err(e), _) => Err(e),
            (Ok(Ok(out)), Still(..) | Animated(..)) => {
                match read_back(&out.bytes, OutputFormat::Png) {
                    Ok(read) if read.size == (120, 68) => Ok(()),
                    Ok(read) => Err(format!("{:?}, expected 120x68", read.size)),
                    Err(e) => Err(format!("unreadable: {e}")),
                }
            }
            (Ok(Err(PipelineError::BadParam { name, .. })), Refused(_)) if name == "watermark" => {
                Ok(())
            }
            (Ok(Err(e)), _) => Err(format!("refused: {e:?}")),
            (Ok(Ok(_)), Refused(want)) => Err(format!("drawn, though refused as {want:?}")),
        };
        if let Err(e) = verdict {
            failures.push(format!("{file} as a watermark: {e}"));
        }
    }
    assert_none(failures);
}
