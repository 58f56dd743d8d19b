//! image-params: the URL vocabulary of image-server's resize endpoint, defined once
//! (docs/image-service.md §4; docs/architecture.md, "Image parameters").
//!
//! Every parameter of `GET /images/resize/{path}` is one row of [`PARAMS`]: its [`Name`], the
//! spelling clients send, its other accepted spellings, who reads it, and the token of its
//! segment in the canonical cache key. Its bounds and default are the constants of this crate
//! that its row names. image-pipeline parses a query by [`Name::lookup`] and prints the cache
//! key with [`Name::key`]; image-client writes URLs with [`Name::as_str`]; the tests of this
//! crate hold the docs table and the TypeScript client to the same list. The plain types that
//! both sides of a URL share ([`Format`], [`Fit`], [`Position`], [`Rgba`], [`CropRect`],
//! [`WatermarkMark`]) live here too, with their value spellings. No dependencies.

use std::ops::RangeInclusive;

/// Who reads a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reader {
    /// image-pipeline's `TransformSpec::from_query`: it shapes the output and the cache key.
    Pipeline,
    /// image-server itself (signature, version, presets): never part of the transformation.
    Server,
}

/// One parameter of the resize endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Which parameter.
    pub name: Name,
    /// The spelling the Rust client sends and docs/image-service.md §4 lists first.
    pub spelling: &'static str,
    /// Other accepted spellings beyond case, `_` and `-` (which [`Name::lookup`] ignores):
    /// short forms and synonyms such as `w`, `gravity`, `greyscale`.
    pub aliases: &'static [&'static str],
    /// Who reads it.
    pub reader: Reader,
    /// Token of its segment in the canonical cache key (`w` in `w=400`), `None` when it has
    /// none of its own (`dpr` scales `w` and `h`; the watermark's placement is part of `wm`;
    /// the server's parameters are not transformations).
    pub key: Option<&'static str>,
}

macro_rules! params {
    ($($variant:ident $spelling:literal [$($alias:literal),*] $reader:ident $key:expr;)*) => {
        /// A parameter of the resize endpoint (docs/image-service.md §4); [`PARAMS`] holds its
        /// row.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Name {
            $(
                #[doc = concat!("`", $spelling, "`")]
                $variant,
            )*
        }

        /// Every parameter, in the order of docs/image-service.md §4's table.
        pub const PARAMS: &[Param] = &[
            $(Param {
                name: Name::$variant,
                spelling: $spelling,
                aliases: &[$($alias),*],
                reader: Reader::$reader,
                key: $key,
            },)*
        ];
    };
}

params! {
    Width "width" ["w"] Pipeline Some("w");
    Height "height" ["h"] Pipeline Some("h");
    Format "format" ["f"] Pipeline Some("f");
    Quality "quality" ["q"] Pipeline Some("q");
    Rotate "rotate" [] Pipeline Some("rot");
    Sharpen "sharpen" [] Pipeline Some("sharpen");
    Flip "flip" [] Pipeline Some("flip");
    Flop "flop" [] Pipeline Some("flop");
    Grayscale "grayscale" ["greyscale"] Pipeline Some("gray");
    Blur "blur" [] Pipeline Some("blur");
    Fit "fit" [] Pipeline Some("fit");
    Position "position" ["gravity"] Pipeline Some("pos");
    Background "background" ["bg"] Pipeline Some("bg");
    Enlarge "enlarge" [] Pipeline Some("enlarge");
    Dpr "dpr" [] Pipeline None; // scales `w` and `h`
    CropLeft "cropLeft" [] Pipeline Some("crop");
    CropTop "cropTop" [] Pipeline Some("crop");
    CropWidth "cropWidth" [] Pipeline Some("crop");
    CropHeight "cropHeight" [] Pipeline Some("crop");
    Watermark "watermark" ["watermarkImage"] Pipeline Some("wm");
    WatermarkPosition "watermark_position" [] Pipeline None; // part of `wm`
    WatermarkOpacity "watermark_opacity" [] Pipeline None; // part of `wm`
    WatermarkText "watermark_text" [] Pipeline Some("wmt");
    WatermarkScale "watermark_scale" [] Pipeline None; // part of `wm`
    Zoom "zoom" [] Pipeline Some("zoom");
    MinWidth "min_width" [] Pipeline Some("minw");
    MinHeight "min_height" [] Pipeline Some("minh");
    Trim "trim" [] Pipeline Some("trim");
    Padding "padding" [] Pipeline Some("pad");
    Pixelate "pixelate" [] Pipeline Some("pixelate");
    MaxBytes "max_bytes" [] Pipeline Some("maxb");
    Animated "animated" [] Pipeline Some("still");
    Frame "frame" [] Pipeline Some("frame");
    KeepCopyright "keep_copyright" [] Pipeline Some("keepcr");
    Progressive "progressive" [] Pipeline Some("progressive");
    Signature "signature" [] Server None; // checked before any work
    BlurhashX "blurhash_x" [] Pipeline Some("bh");
    BlurhashY "blurhash_y" [] Pipeline Some("bh");
    Lqip "lqip" [] Pipeline Some("f");
    Version "v" [] Server None; // pins the source version
    Preset "preset" [] Server None; // expands to its preset's pairs
}

/// Whether `spelling`, without `_` and `-` and in lower case, is `folded`.
fn folds_to(spelling: &str, folded: &str) -> bool {
    spelling
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .eq(folded.chars())
}

impl Name {
    /// The parameter a query key names, in any case and with or without `_` and `-`
    /// (`cropLeft`, `crop_left` and `CROP-LEFT` are one), by its spelling or an alias; `None`
    /// for a key that names none (the server ignores it).
    pub fn lookup(key: &str) -> Option<Self> {
        let folded: String = key
            .chars()
            .filter(|c| *c != '_' && *c != '-')
            .collect::<String>()
            .to_ascii_lowercase();
        PARAMS
            .iter()
            .find(|p| {
                folds_to(p.spelling, &folded) || p.aliases.iter().any(|a| folds_to(a, &folded))
            })
            .map(|p| p.name)
    }

    /// Its row of [`PARAMS`].
    pub const fn param(self) -> &'static Param {
        // The macro writes the rows in the order of the variants.
        &PARAMS[self as usize]
    }

    /// The spelling clients send (`min_width`, `cropLeft`).
    pub const fn as_str(self) -> &'static str {
        self.param().spelling
    }

    /// Token of its segment in the canonical cache key; `""` for one without (see
    /// [`Param::key`]).
    pub fn key(self) -> &'static str {
        self.param().key.unwrap_or("")
    }
}

// ---- bounds and defaults ---------------------------------------------------------------------

/// `quality`: 1 to 100 (docs/image-service.md §8).
pub const QUALITY: RangeInclusive<u8> = 1..=100;
/// `quality` when absent, as the original service's.
pub const DEFAULT_QUALITY: u8 = 80;
/// `quality=auto`: the encoder's quality searched to meet a SSIMULACRA2 score
/// (docs/image-service.md, "Automatic quality"); printed as `q=auto` in the cache key.
pub const AUTO_QUALITY: &str = "auto";
/// The SSIMULACRA2 score `quality=auto` aims at when the server sets none
/// (AUTO_QUALITY_TARGET): 90 is visually lossless, 80 high quality, 70 medium, 50 low.
pub const DEFAULT_AUTO_QUALITY_TARGET: f64 = 80.0;
/// The targets AUTO_QUALITY_TARGET accepts.
pub const AUTO_QUALITY_TARGET: RangeInclusive<f64> = 30.0..=95.0;
/// Largest `dpr` and `zoom`: no display has a denser screen (phones reach 4), and Cloudinary's
/// `dpr` stops at 5 too. Both must be above 0.
pub const MAX_DPR: f64 = 5.0;
/// Largest `rotate`, in degrees clockwise; 360 is 0.
pub const MAX_ROTATE: f64 = 360.0;
/// Largest `blur` sigma; 0 is no blur.
pub const MAX_BLUR: f64 = 100.0;
/// Largest `frame` index accepted by the parser (the source decides what exists).
pub const MAX_FRAME: u32 = 100_000;
/// `trim=true`'s threshold, libvips' `find_trim` default; a number gives it, 0..=255.
pub const DEFAULT_TRIM: u8 = 10;
/// `pixelate` block size in pixels; 1 is no pixelation.
pub const PIXELATE: RangeInclusive<u32> = 1..=256;
/// `max_bytes`: the byte budget of a result.
pub const MAX_BYTES: RangeInclusive<u64> = 100..=1 << 31;
/// `blurhash_x`, `blurhash_y`: BlurHash's own limit on components per axis.
pub const BLURHASH_COMPONENTS: RangeInclusive<u8> = 1..=9;
/// `blurhash_x`, `blurhash_y` when absent: BlurHash's own default, 4 across and 3 down.
pub const DEFAULT_BLURHASH_COMPONENTS: (u8, u8) = (4, 3);
/// `watermark_position` when absent.
pub const DEFAULT_WATERMARK_POSITION: Position = Position::SouthEast;
/// `watermark_opacity`, 0..=1, when absent.
pub const DEFAULT_WATERMARK_OPACITY: f32 = 0.5;
/// `watermark_scale`, a share of the output width in (0, 1], when absent.
pub const DEFAULT_WATERMARK_SCALE: f32 = 0.25;

// ---- the values ------------------------------------------------------------------------------

/// Output format asked for with `format=` (docs/image-service.md §4). Absent means WebP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `webp`: lossy WebP.
    Webp,
    /// `jpeg` or `jpg`.
    Jpeg,
    /// `png`: lossless.
    Png,
    /// `avif`, up to the server's AVIF_MAX_PIXELS (larger: 400).
    Avif,
    /// `auto`: AVIF, WebP or JPEG chosen from the Accept header.
    Auto,
    /// `best`: the smallest of the formats `auto` may pick for the Accept header (AVIF, WebP,
    /// JPEG), each encoded at the quality `quality=auto` finds for it; implies `quality=auto`
    /// (docs/image-service.md, "Automatic quality").
    Best,
    /// `gif`, animated when the source is.
    Gif,
    /// `blurhash`: not a picture but `{"blurhash", "components": {"x", "y"}, "width",
    /// "height"}` as JSON, components set by `blurhash_x` and `blurhash_y`.
    Blurhash,
}

impl Format {
    /// Every format, in the order docs/image-service.md §4 lists them.
    pub const ALL: [Self; 8] = [
        Self::Webp,
        Self::Jpeg,
        Self::Png,
        Self::Avif,
        Self::Gif,
        Self::Auto,
        Self::Best,
        Self::Blurhash,
    ];

    /// `format=`'s value in any case (`jpg` is `jpeg`); `None` for anything else.
    pub fn parse(v: &str) -> Option<Self> {
        Some(match v.to_ascii_lowercase().as_str() {
            "webp" => Self::Webp,
            "jpeg" | "jpg" => Self::Jpeg,
            "png" => Self::Png,
            "avif" => Self::Avif,
            "auto" => Self::Auto,
            "best" => Self::Best,
            "blurhash" => Self::Blurhash,
            "gif" => Self::Gif,
            _ => return None,
        })
    }

    /// The value sent and printed in the cache key (`jpeg`, never `jpg`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Webp => "webp",
            Self::Jpeg => "jpeg",
            Self::Png => "png",
            Self::Avif => "avif",
            Self::Auto => "auto",
            Self::Best => "best",
            Self::Gif => "gif",
            Self::Blurhash => "blurhash",
        }
    }
}

/// How the image fits the `width` x `height` box (`fit=`), named as sharp names them.
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
    /// Every fit, in the order docs/image-service.md §4 lists them.
    pub const ALL: [Self; 5] = [
        Self::Inside,
        Self::Cover,
        Self::Contain,
        Self::Fill,
        Self::Outside,
    ];

    /// `fit=`'s value in any case; `None` for anything else.
    pub fn parse(v: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(v))
    }

    /// The value sent and printed in the cache key.
    pub fn name(self) -> &'static str {
        match self {
            Self::Inside => "inside",
            Self::Cover => "cover",
            Self::Contain => "contain",
            Self::Fill => "fill",
            Self::Outside => "outside",
        }
    }
}

/// Where the kept region sits (`position=` for cover, contain padding) or the watermark goes
/// (`watermark_position=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Position {
    /// Centre (the default for cover).
    #[default]
    Centre,
    /// Top edge, centred.
    North,
    /// Top right corner.
    NorthEast,
    /// Right edge, centred.
    East,
    /// Bottom right corner.
    SouthEast,
    /// Bottom edge, centred.
    South,
    /// Bottom left corner.
    SouthWest,
    /// Left edge, centred.
    West,
    /// Top left corner.
    NorthWest,
    /// The window with the highest luminance entropy (cover only).
    Entropy,
    /// The window with the most edges and saturated colour (cover only).
    Attention,
}

impl Position {
    /// A position in any case, without `_`, `-` and spaces: `centre` or `center`, a compass
    /// point (`northeast`) or the original SDK's edge names (`top-right`, `right_top`),
    /// `entropy`, `attention`; `None` for anything else.
    pub fn parse(v: &str) -> Option<Self> {
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

    /// The name printed in the cache key (`northeast`).
    pub fn name(self) -> &'static str {
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
    /// position, `(x, y)`; entropy and attention answer centre here (the pipeline searches the
    /// window itself).
    pub fn fractions(self) -> (f64, f64) {
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
    /// `rgb`, `rrggbb` or `rrggbbaa` in hex digits of any case, `#` optional (alpha 255 when
    /// absent); `None` for anything else.
    pub fn parse(v: &str) -> Option<Self> {
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

/// A pixel rectangle of the oriented source (`cropLeft`, `cropTop`, `cropWidth`,
/// `cropHeight`), applied before the resize. Width and height are at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CropRect {
    /// Pixels from the left edge.
    pub left: u32,
    /// Pixels from the top edge.
    pub top: u32,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// What a watermark shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatermarkMark {
    /// Object path of a stored image (`watermark`, validated by the server like any path).
    Image(String),
    /// One line of text (`watermark_text`, 1 to 200 characters, no control characters), drawn
    /// by the server in its bundled font without any markup (docs/image-service.md §4).
    Text(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_its_own_variant_and_no_two_spellings_collide() {
        for (i, p) in PARAMS.iter().enumerate() {
            assert_eq!(p.name as usize, i);
            assert_eq!(Name::lookup(p.spelling), Some(p.name), "{}", p.spelling);
            for alias in p.aliases {
                assert_eq!(Name::lookup(alias), Some(p.name), "{alias}");
            }
        }
        assert_eq!(Name::lookup("CROP-LEFT"), Some(Name::CropLeft));
        assert_eq!(Name::lookup("watermarkText"), Some(Name::WatermarkText));
        assert_eq!(Name::lookup("unknown"), None);
        assert_eq!(Name::lookup(""), None);
    }

    #[test]
    fn every_value_name_parses_back() {
        for f in Format::ALL {
            assert_eq!(Format::parse(&f.name().to_ascii_uppercase()), Some(f));
        }
        assert_eq!(Format::parse("jpg"), Some(Format::Jpeg));
        assert_eq!(Format::parse("lqip"), None);
        for f in Fit::ALL {
            assert_eq!(Fit::parse(f.name()), Some(f));
        }
        assert_eq!(Fit::parse(""), None);
    }
}
