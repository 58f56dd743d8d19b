//! The canonical form of a [`TransformSpec`], its cache key: `key=value` segments joined by
//! `&`, in a fixed order, defaults omitted, each segment named by its parameter's token in
//! [`image_params::PARAMS`] (docs/architecture.md, "Image parameters"). The order and the
//! spelling of every value are frozen: tests/cache_keys.rs holds them to the keys recorded
//! before this form was written this way.

use std::fmt::{self, Display};

use image_params::{DEFAULT_BLURHASH_COMPONENTS, Format, Name};

use super::{FormatParam, Rgba, TransformSpec, WatermarkMark};

/// `token=value` of parameter `name`.
fn segment(name: Name, value: impl Display) -> String {
    format!("{}={value}", name.key())
}

/// The bare token of a switch that is on.
fn on(name: Name, on: bool) -> Option<String> {
    on.then(|| name.key().to_owned())
}

/// A watermark's value with the characters that separate segments and fields escaped.
fn escaped(value: &str) -> String {
    value
        .replace('%', "%25")
        .replace(',', "%2C")
        .replace('&', "%26")
        .replace('|', "%7C")
}

impl FormatParam {
    /// The value printed in the cache key: `format=`'s name, or `lqip`.
    fn key_value(self) -> &'static str {
        match self {
            Self::Format(f) => f.name(),
            Self::Lqip => "lqip",
        }
    }
}

/// Canonical form: `key=value` pairs joined by `&`, in a fixed order, defaults omitted.
/// `format` is printed as given (`auto` included); the server appends the resolved format.
impl fmt::Display for TransformSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = Self::default();
        let side = |v: Option<u32>| v.map_or_else(String::new, |v| v.to_string());
        let watermark = self.watermark.as_ref().map(|w| {
            let (name, value) = match &w.mark {
                WatermarkMark::Image(path) => (Name::Watermark, path),
                WatermarkMark::Text(text) => (Name::WatermarkText, text),
            };
            let (position, opacity, scale) = (w.position.name(), w.opacity, w.scale);
            segment(
                name,
                format_args!("{},{position},{opacity},{scale}", escaped(value)),
            )
        });
        let blurhash = (self.format == Some(FormatParam::Format(Format::Blurhash))
            && self.blurhash_components != DEFAULT_BLURHASH_COMPONENTS)
            .then(|| {
                let (x, y) = self.blurhash_components;
                segment(Name::BlurhashX, format_args!("{x}x{y}"))
            });
        let segments = [
            self.crop.map(|c| {
                let rect = format_args!("{},{},{},{}", c.left, c.top, c.width, c.height);
                segment(Name::CropLeft, rect)
            }),
            self.trim.map(|t| segment(Name::Trim, t)),
            self.width.map(|w| segment(Name::Width, w)),
            self.height.map(|h| segment(Name::Height, h)),
            self.zoom.map(|z| segment(Name::Zoom, z)),
            self.min_width.map(|m| segment(Name::MinWidth, m)),
            self.min_height.map(|m| segment(Name::MinHeight, m)),
            // Not a parameter: the server's DEFAULT_OUTPUT_WIDTH x DEFAULT_OUTPUT_HEIGHT.
            self.default_box
                .map(|(w, h)| format!("box={}x{}", side(w), side(h))),
            (self.fit != d.fit).then(|| segment(Name::Fit, self.fit.name())),
            (self.position != d.position).then(|| segment(Name::Position, self.position.name())),
            on(Name::Enlarge, self.enlarge),
            self.background.map(|Rgba([r, g, b, a])| {
                segment(
                    Name::Background,
                    format_args!("{r:02x}{g:02x}{b:02x}{a:02x}"),
                )
            }),
            (self.rotate != 0.0).then(|| segment(Name::Rotate, self.rotate)),
            on(Name::Flip, self.flip),
            on(Name::Flop, self.flop),
            self.blur.map(|b| segment(Name::Blur, b)),
            on(Name::Sharpen, self.sharpen),
            on(Name::Grayscale, self.grayscale),
            self.pixelate.map(|n| segment(Name::Pixelate, n)),
            self.padding
                .map(|[t, r, b, l]| segment(Name::Padding, format_args!("{t},{r},{b},{l}"))),
            watermark,
            self.format.map(|p| segment(Name::Format, p.key_value())),
            // `q=auto` only for quality=auto (and format=best): no other key changes.
            Some(if self.auto_quality {
                segment(Name::Quality, image_params::AUTO_QUALITY)
            } else {
                segment(Name::Quality, self.quality)
            }),
            self.max_bytes.map(|n| segment(Name::MaxBytes, n)),
            on(Name::Progressive, self.progressive),
            on(Name::KeepCopyright, self.keep_copyright),
            on(Name::Animated, !self.animated),
            self.frame.map(|n| segment(Name::Frame, n)),
            blurhash,
        ];
        f.write_str(&segments.into_iter().flatten().collect::<Vec<_>>().join("&"))
    }
}
