//! SVG through resvg (usvg parses, tiny-skia paints), sanitised: nothing outside the file is
//! read (docs/image-service.md §8, "SVG sources").
//!
//! - External references are never followed: an `<image>` naming a file or a URL is dropped
//!   (usvg's default would read local files), usvg itself makes no network request, and XML
//!   external entities are not loaded by its parser (roxmltree).
//! - Embedded raster images (`data:` URLs) are kept when they are PNG, JPEG, GIF or WebP whose
//!   header says at most [`MAX_EMBEDDED_PIXELS`]; anything else embedded (a nested SVG, a bomb)
//!   is dropped. Text is not rendered: no fonts are read from the system.
//! - The markup is at most [`MAX_SVG_BYTES`], and the canvas size, known once parsed and
//!   before any pixel is allocated, is held to MAX_SOURCE_PIXELS by `probe` like any format's.
//!
//! The size is libvips' (and so sharp's): the SVG's own width and height at 72 dpi, rounded;
//! the picture is painted directly at the scale the output needs, as libvips' `svgload` does
//! with its `scale`.

use std::sync::Arc;

use image::{DynamicImage, RgbaImage};
use resvg::tiny_skia;
use resvg::usvg::{self, roxmltree};

use super::header::{self, SourceInfo};
use super::{Decoded, undecodable};
use crate::error::PipelineError;

/// The most markup an SVG source may have: a drawing of tens of thousands of paths fits in a
/// few megabytes, and parsing is linear in it (docs/image-service.md §8).
pub(crate) const MAX_SVG_BYTES: usize = 10 * 1024 * 1024;

/// The most pixels an embedded raster image may have, from its header, before it is decoded.
pub(crate) const MAX_EMBEDDED_PIXELS: u64 = 16_000_000;

/// Most XML nodes (elements, text) a document may have: entity references, which the parser
/// expands, must not turn a small file into millions of elements.
const MAX_XML_NODES: u32 = 1_000_000;

/// Most text the entity references of a document may expand to. The parser limits how deeply
/// entities nest and how many one reference resolves, not how long the result is: one entity
/// of a few kilobytes named hundreds of times by another, and that one thousands of times in
/// the body, is a small file that expands to gigabytes. Illustrator's namespace entities expand
/// to a few kilobytes.
const MAX_ENTITY_EXPANSION: usize = 1024 * 1024;

/// Most weighted pixel operations drawing the SVG at its full size may take (about a
/// nanosecond each): every path's and image's box filled, every layer composited, and every
/// filter primitive's kernel over its layer (`feMorphology` visits (2r+1)^2 pixels a pixel,
/// `feConvolveMatrix` its order squared, `feTurbulence` its octaves). A 188-byte file with
/// `feMorphology radius=50` on a 2000 px canvas took 47 s; this is about 2 s. Over it: 422,
/// at upload and at every resize, before any pixel is drawn.
pub(crate) const MAX_SVG_RENDER_OPS: u64 = 2_000_000_000;

/// Most bytes of layers (groups with opacity, masks, clip paths and filters, each a canvas of
/// its own as large as its box, up to 25 times the canvas) alive at once while drawing the SVG
/// at its full size, besides the canvas itself. Over it: 422.
pub(crate) const MAX_SVG_LAYER_BYTES: u64 = 256 << 20;

/// libvips' `svgload` density (sharp's default), in dots per inch: 1 px = 1/72 in.
const DPI: f32 = 72.0;

/// Whether `bytes` look like an SVG document: after an optional byte order mark, XML
/// declaration, comments, processing instructions and document type declaration (within the
/// first 64 KiB), the first element is `svg`.
pub(super) fn sniff(bytes: &[u8]) -> bool {
    let window = &bytes[..bytes.len().min(64 * 1024)];
    // The window may cut a character in two: what is valid before it.
    let text = match std::str::from_utf8(window) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&window[..e.valid_up_to()]).unwrap_or_default(),
    };
    // The prolog as the parser reads it (`internal_subset`): a `]>` or `>` inside a quoted
    // entity value does not end the declaration.
    internal_subset(text).is_some_and(|(_, rest)| {
        rest.strip_prefix("<svg").is_some_and(|after| {
            after
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_whitespace() || b == b'>' || b == b'/')
        })
    })
}

/// Parses `bytes` into a render tree with the sanitising options above.
///
/// # Errors
/// [`PipelineError::Undecodable`] for markup over [`MAX_SVG_BYTES`], not UTF-8, not well-formed
/// XML, over [`MAX_XML_NODES`], or without a usable size.
fn parse(bytes: &[u8]) -> Result<usvg::Tree, PipelineError> {
    if bytes.len() > MAX_SVG_BYTES {
        return Err(PipelineError::Undecodable(format!(
            "the SVG is {} bytes, above the limit of {MAX_SVG_BYTES} bytes of markup",
            bytes.len()
        )));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| PipelineError::Undecodable("the SVG is not UTF-8 text".into()))?;
    let expansion = entity_expansion(text).ok_or_else(|| {
        PipelineError::Undecodable("the SVG's document type declaration cannot be read".into())
    })?;
    if expansion > MAX_ENTITY_EXPANSION {
        return Err(PipelineError::Undecodable(format!(
            "the SVG's entity references expand to more than {MAX_ENTITY_EXPANSION} bytes"
        )));
    }
    let xml = roxmltree::Document::parse_with_options(
        text,
        roxmltree::ParsingOptions {
            // Illustrator's SVGs declare their namespaces as entities in an internal subset.
            allow_dtd: true,
            nodes_limit: MAX_XML_NODES,
            // External entities (`SYSTEM "file:..."`) are never fetched.
            entity_resolver: None,
        },
    )
    .map_err(|e| PipelineError::Undecodable(format!("the SVG is not well-formed XML: {e}")))?;
    let options = usvg::Options {
        dpi: DPI,
        resources_dir: None,
        image_href_resolver: usvg::ImageHrefResolver {
            resolve_data: Box::new(embedded_image),
            // Paths and URLs: never read.
            resolve_string: Box::new(|_, _| None),
        },
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_xmltree(&xml, &options)
        .map_err(|e| PipelineError::Undecodable(format!("the SVG cannot be drawn: {e}")))?;
    let cost = render_cost(&tree);
    if cost.ops > MAX_SVG_RENDER_OPS {
        return Err(PipelineError::Undecodable(format!(
            "drawing the SVG would take about {} million pixel operations (its filters, \
             layers and shapes at its full size), above the limit of {} million",
            cost.ops.div_ceil(1_000_000),
            MAX_SVG_RENDER_OPS / 1_000_000
        )));
    }
    if cost.bytes > MAX_SVG_LAYER_BYTES {
        return Err(PipelineError::Undecodable(format!(
            "drawing the SVG would hold about {} MiB of layers at once (nested groups, masks \
             and filters), above the limit of {} MiB",
            cost.bytes.div_ceil(1 << 20),
            MAX_SVG_LAYER_BYTES >> 20
        )));
    }
    Ok(tree)
}

/// What drawing `tree` at its full size costs, as resvg draws it: operations summed over the
/// tree, bytes the deepest stack of layers holds (see [`MAX_SVG_RENDER_OPS`] and
/// [`MAX_SVG_LAYER_BYTES`]).
fn render_cost(tree: &usvg::Tree) -> crate::cost::Cost {
    let size = tree.size();
    let canvas = f64::from(size.width()) * f64::from(size.height());
    let mut walk = Walk {
        canvas,
        ops: 0.0,
        peak: 0.0,
    };
    walk.group(tree.root(), 0.0);
    let whole = |v: f64| v.clamp(0.0, u64::MAX as f64) as u64;
    crate::cost::Cost::new(whole(walk.peak), whole(walk.ops))
}

/// The walk of [`render_cost`], in `f64` (a hostile tree's sums are far above `u64`).
struct Walk {
    /// The canvas's area, in pixels.
    canvas: f64,
    ops: f64,
    peak: f64,
}

impl Walk {
    /// A box's area in pixels, at most what resvg draws: the canvas for a shape, 25 canvases
    /// for a layer (resvg clips layers to twice the canvas beyond each side).
    fn area(&self, width: f32, height: f32, most: f64) -> f64 {
        let a = f64::from(width.max(0.0) + 4.0) * f64::from(height.max(0.0) + 4.0);
        if a.is_finite() { a.min(most) } else { most }
    }

    /// Walks `group`'s children, with `held` bytes of layers alive above it.
    fn group(&mut self, group: &usvg::Group, held: f64) {
        for node in group.children() {
            match node {
                usvg::Node::Group(g) => {
                    let mut inner = held;
                    if g.should_isolate() {
                        let b = g.abs_layer_bounding_box();
                        let layer = self.area(b.width(), b.height(), 25.0 * self.canvas);
                        // The layer, and a mask's or clip path's own canvas of its size.
                        let extra = f64::from(u8::from(g.mask().is_some()))
                            + f64::from(u8::from(g.clip_path().is_some()));
                        inner += layer * 4.0 * (1.0 + extra);
                        self.ops += layer * (4.0 + 4.0 * extra);
                        let (sx, sy) = g.abs_transform().get_scale();
                        for filter in g.filters() {
                            let primitives = filter.primitives();
                            // Every primitive's result stays alive until the filter ends.
                            let results = (primitives.len() + 2) as f64;
                            self.peak = self.peak.max(inner + layer * 4.0 * results);
                            for p in primitives {
                                self.ops += layer * kernel(p.kind(), (sx, sy), b);
                            }
                        }
                        self.peak = self.peak.max(inner);
                    }
                    node.subroots(|sub| self.group(sub, inner));
                    self.group(g, inner);
                }
                usvg::Node::Path(_) | usvg::Node::Image(_) | usvg::Node::Text(_) => {
                    let b = node.abs_stroke_bounding_box();
                    self.ops += self.area(b.width(), b.height(), self.canvas) * 4.0;
                    node.subroots(|sub| self.group(sub, held));
                }
            }
        }
    }
}

/// Operations a pixel of a filter primitive's region costs in resvg, its lengths scaled by
/// the group's transform `(sx, sy)` and held to the layer `b` as resvg holds them.
fn kernel(kind: &usvg::filter::Kind, (sx, sy): (f32, f32), b: usvg::NonZeroRect) -> f64 {
    use usvg::filter::Kind;
    let side = |r: f32, s: f32, most: f32| f64::from((r * s).abs().round().min(most.abs() + 1.0));
    match kind {
        Kind::Morphology(m) => {
            let rx = side(m.radius_x().get(), sx, b.width());
            let ry = side(m.radius_y().get(), sy, b.height());
            (2.0 * rx + 1.0) * (2.0 * ry + 1.0)
        }
        Kind::ConvolveMatrix(c) => {
            f64::from(c.matrix().columns()) * f64::from(c.matrix().rows()) + 4.0
        }
        Kind::Turbulence(t) => 40.0 * f64::from(t.num_octaves().max(1)),
        Kind::GaussianBlur(_) | Kind::DropShadow(_) => 16.0,
        Kind::DiffuseLighting(_) | Kind::SpecularLighting(_) => 40.0,
        _ => 8.0,
    }
}

/// How many bytes the entity references of `text` expand to, from the declarations of its
/// internal subset, nested references included; saturating. `None` when the document type
/// declaration cannot be read, so that what this scan cannot follow is refused, not parsed.
///
/// The prolog is read as roxmltree's tokenizer reads it (the parser that expands the
/// entities): the XML declaration (its quoted values may hold `?>`), comments and processing
/// instructions (which may hold `<!DOCTYPE x []>`), then the one `<!DOCTYPE`, whose quoted
/// literals and entity values may hold `]>`. Parameter entities (`<!ENTITY % x "...">`) are
/// counted too: roxmltree keeps them with the general ones, and `&x;` expands them. Of two
/// declarations of one name the first counts, as in roxmltree.
fn entity_expansion(text: &str) -> Option<usize> {
    use std::collections::HashMap;
    let (entities, body) = internal_subset(text)?;
    let mut values: HashMap<&str, &str> = HashMap::new();
    for (name, value) in entities {
        values.entry(name).or_insert(value);
    }
    // Expanded sizes, deepest first; a reference deeper than the parser allows (10) counts as
    // over the limit, as it will be refused anyway.
    fn size<'a>(
        name: &str,
        values: &HashMap<&'a str, &'a str>,
        memo: &mut HashMap<String, usize>,
        depth: u8,
    ) -> usize {
        if let Some(&known) = memo.get(name) {
            return known;
        }
        let Some(value) = values.get(name) else {
            return name.len() + 2;
        };
        if depth > 10 {
            return usize::MAX;
        }
        let total = references(value).fold(value.len(), |total, r| {
            total.saturating_add(size(r, values, memo, depth + 1))
        });
        memo.insert(name.to_owned(), total);
        total
    }
    /// The names of the `&name;` references in `text` (character references left out).
    fn references(text: &str) -> impl Iterator<Item = &str> {
        text.split('&').skip(1).filter_map(|after| {
            let name = &after[..after.find(';')?];
            (!name.starts_with('#') && !name.is_empty() && name.len() < 256).then_some(name)
        })
    }
    let mut memo = HashMap::new();
    Some(
        references(body)
            .filter(|name| values.contains_key(name))
            .fold(0usize, |total, name| {
                total.saturating_add(size(name, &values, &mut memo, 0))
            }),
    )
}

/// The entity declarations (name, quoted value) of `text`'s internal subset, in order, and
/// the text after the document type declaration (all of it when there is none); `None` when
/// the prolog or the declaration cannot be read (see [`entity_expansion`]).
fn internal_subset(text: &str) -> Option<(Vec<(&str, &str)>, &str)> {
    let mut s = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut entities = Vec::new();
    let mut seen_doctype = false;
    if s.starts_with("<?xml") && s[5..].starts_with(|c: char| c.is_ascii_whitespace()) {
        // The declaration's values are quoted: `?>` ends it only outside them.
        let mut rest = &s[5..];
        s = loop {
            let i = rest.find(['?', '"', '\''])?;
            if rest[i..].starts_with("?>") {
                break &rest[i + 2..];
            }
            rest = if rest[i..].starts_with('?') {
                &rest[i + 1..]
            } else {
                quoted(&rest[i..])?.0
            };
        };
    }
    loop {
        s = s.trim_start_matches(|c: char| c.is_ascii_whitespace());
        if s.starts_with("<!--") {
            s = past(&s[4..], "-->")?;
        } else if s.starts_with("<?") {
            s = past(&s[2..], "?>")?;
        } else if let Some(rest) = s.strip_prefix("<!DOCTYPE") {
            if seen_doctype {
                return None;
            }
            seen_doctype = true;
            s = doctype(rest, &mut entities)?;
        } else {
            // The root element.
            return Some((entities, s));
        }
    }
}

/// `s` after the first `end`.
fn past<'a>(s: &'a str, end: &str) -> Option<&'a str> {
    s.find(end).map(|i| &s[i + end.len()..])
}

/// `s` after its quoted literal (it starts with the quote); the literal.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let quote = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let end = s[1..].find(quote)? + 1;
    Some((&s[end + 1..], &s[1..end]))
}

/// Reads a document type declaration after its `<!DOCTYPE`, pushing its entity
/// declarations onto `entities`; the text after it, or `None` when it cannot be read.
fn doctype<'a>(rest: &'a str, entities: &mut Vec<(&'a str, &'a str)>) -> Option<&'a str> {
    /// `s` after the next `>` outside quoted literals.
    fn past_tag(mut s: &str) -> Option<&str> {
        loop {
            let i = s.find(['>', '"', '\''])?;
            if s[i..].starts_with('>') {
                return Some(&s[i + 1..]);
            }
            s = quoted(&s[i..])?.0;
        }
    }
    // The name and external ID up to `[` or `>`, outside quoted literals.
    let mut d = rest;
    loop {
        let i = d.find(['[', '>', '"', '\''])?;
        match d.as_bytes()[i] {
            b'>' => return Some(&d[i + 1..]),
            b'[' => {
                d = &d[i + 1..];
                break;
            }
            _ => d = quoted(&d[i..])?.0,
        }
    }
    loop {
        d = d.trim_start_matches(|c: char| c.is_ascii_whitespace());
        if let Some(rest) = d.strip_prefix("<!ENTITY") {
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
            let rest = rest
                .strip_prefix('%')
                .unwrap_or(rest)
                .trim_start_matches(|c: char| c.is_ascii_whitespace());
            let end = rest.find(|c: char| c.is_ascii_whitespace())?;
            let (name, rest) = rest.split_at(end);
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
            if rest.starts_with(['"', '\'']) {
                let (after, value) = quoted(rest)?;
                entities.push((name, value));
                d = past_tag(after)?;
            } else {
                // SYSTEM or PUBLIC: never loaded.
                d = past_tag(rest)?;
            }
        } else if d.starts_with("<!--") {
            d = past(&d[4..], "-->")?;
        } else if d.starts_with("<?") {
            d = past(&d[2..], "?>")?;
        } else if let Some(rest) = d.strip_prefix(']') {
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
            return rest.strip_prefix('>');
        } else if ["<!ELEMENT", "<!ATTLIST", "<!NOTATION"]
            .iter()
            .any(|k| d.starts_with(k))
        {
            d = past(d, ">")?;
        } else {
            return None;
        }
    }
}

/// An embedded raster image: kept when its bytes (not its declared type) are PNG, JPEG, GIF or
/// WebP of at most [`MAX_EMBEDDED_PIXELS`], from the header.
fn embedded_image(_mime: &str, data: Arc<Vec<u8>>, _: &usvg::Options) -> Option<usvg::ImageKind> {
    use super::SourceFormat as F;
    // Sniffed first, so that an embedded SVG is not parsed (nor one embedded in that).
    let format = super::sniff(&data)?;
    if !matches!(format, F::Png | F::Jpeg | F::Gif | F::Webp) {
        return None;
    }
    let info = header::raster(&data, format, MAX_EMBEDDED_PIXELS).ok()?;
    match info.format {
        F::Png => Some(usvg::ImageKind::PNG(data)),
        F::Jpeg => Some(usvg::ImageKind::JPEG(data)),
        F::Gif => Some(usvg::ImageKind::GIF(data)),
        F::Webp => Some(usvg::ImageKind::WEBP(data)),
        _ => None,
    }
}

/// The full-size canvas of a parsed tree, in whole pixels (at least 1 each way).
fn canvas(tree: &usvg::Tree) -> (f64, f64) {
    let size = tree.size();
    (
        f64::from(size.width()).round().max(1.0),
        f64::from(size.height()).round().max(1.0),
    )
}

/// The size of the SVG at 72 dpi, for `probe`.
///
/// # Errors
/// As [`parse`].
pub(super) fn size(bytes: &[u8]) -> Result<(u32, u32), PipelineError> {
    let (w, h) = canvas(&parse(bytes)?);
    Ok((pixels(w)?, pixels(h)?))
}

/// A side in whole pixels as `u32`; larger is undecodable (probe refuses far less as too many
/// pixels first).
fn pixels(side: f64) -> Result<u32, PipelineError> {
    if side.is_finite() && side <= f64::from(u32::MAX) {
        return Ok(side as u32);
    }
    Err(PipelineError::Undecodable(
        "the SVG's size is out of range".into(),
    ))
}

/// Paints the SVG at the smallest size that still keeps `min_scale` of `info`'s (probe's) size,
/// RGBA, not premultiplied; returns it with its scale per axis.
///
/// # Errors
/// As [`parse`]; [`PipelineError::Undecodable`] when the canvas cannot be allocated.
pub(super) fn decode(
    bytes: &[u8],
    info: &SourceInfo,
    min_scale: f64,
) -> Result<Decoded, PipelineError> {
    let tree = parse(bytes)?;
    let (full_w, full_h) = (f64::from(info.width), f64::from(info.height));
    let scale = if min_scale.is_finite() {
        min_scale.clamp(f64::MIN_POSITIVE, 1.0)
    } else {
        1.0
    };
    let (w, h) = (
        pixels((full_w * scale).ceil().max(1.0))?,
        pixels((full_h * scale).ceil().max(1.0))?,
    );
    let mut pixmap = tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| PipelineError::Undecodable(format!("an SVG canvas of {w}x{h}")))?;
    let size = tree.size();
    let transform = tiny_skia::Transform::from_scale(
        (f64::from(w) / f64::from(size.width())) as f32,
        (f64::from(h) / f64::from(size.height())) as f32,
    );
    resvg::render(&tree, transform, &mut pixmap.as_mut());
    let rgba: Vec<u8> = pixmap
        .pixels()
        .iter()
        .flat_map(|p| {
            let c = p.demultiply();
            [c.red(), c.green(), c.blue(), c.alpha()]
        })
        .collect();
    let img = RgbaImage::from_raw(w, h, rgba).ok_or_else(|| undecodable("bad SVG buffer size"))?;
    let scale = (f64::from(w) / full_w, f64::from(h) / full_h);
    Ok((DynamicImage::ImageRgba8(img), scale, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A billion-laughs document: `levels` entities each naming the one before `fan` times.
    fn laughs(prefix: &str, levels: usize, fan: usize) -> String {
        let mut dtd = String::from("<!ENTITY l0 \"lol\">");
        for i in 1..=levels {
            let refs = format!("&l{};", i - 1).repeat(fan);
            dtd.push_str(&format!("<!ENTITY l{i} \"{refs}\">"));
        }
        format!(
            "{prefix}<!DOCTYPE svg [{dtd}]><svg xmlns='http://www.w3.org/2000/svg' \
             width='10' height='10'><text>&l{levels};</text></svg>"
        )
    }

    fn refused(text: &str) -> bool {
        matches!(parse(text.as_bytes()), Err(PipelineError::Undecodable(_)))
    }

    #[test]
    fn nested_entities_are_refused_before_parsing() {
        assert!(refused(&laughs("", 6, 10)));
        let started = std::time::Instant::now();
        assert!(refused(&laughs("", 9, 10)));
        assert!(started.elapsed().as_secs() < 2);
    }

    #[test]
    fn a_doctype_in_a_comment_does_not_hide_the_real_one() {
        assert!(refused(&laughs("<!-- <!DOCTYPE x []> -->\n", 7, 10)));
        assert!(refused(&laughs(
            "<?xml version='1.0' encoding='UTF-8'?><?pi <!DOCTYPE y []>?>",
            7,
            10
        )));
    }

    #[test]
    fn a_bracket_inside_an_entity_value_does_not_end_the_subset() {
        let text = laughs("", 7, 10).replacen("\"lol\"", "\"lol]>\"", 1);
        assert!(refused(&text));
        let text =
            laughs("", 7, 10).replacen("<!ENTITY l0", "<!ENTITY early \"]>\"><!ENTITY l0", 1);
        assert!(refused(&text));
    }

    #[test]
    fn parameter_entities_count_as_roxmltree_expands_them() {
        let text = laughs("", 7, 10).replace("<!ENTITY l", "<!ENTITY % l");
        assert!(refused(&text));
    }

    #[test]
    fn namespace_entities_still_parse() {
        let ok = "<?xml version='1.0'?><!-- Illustrator --><!DOCTYPE svg PUBLIC '-//W3C//DTD SVG 1.1//EN' \
                  'http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd' [<!ENTITY ns_svg \"http://www.w3.org/2000/svg\">]>\
                  <svg xmlns='&ns_svg;' width='20' height='10'><rect width='5' height='5'/></svg>";
        assert!(parse(ok.as_bytes()).is_ok());
        assert_eq!(entity_expansion(ok), Some(26));
        assert_eq!(entity_expansion("<svg/>"), Some(0));
        assert_eq!(entity_expansion("<!DOCTYPE svg [<!BOGUS>]><svg/>"), None);
    }

    #[test]
    fn expensive_filters_are_refused_before_drawing() {
        let morph = |r: u32| {
            format!(
                "<svg xmlns='http://www.w3.org/2000/svg' width='2000' height='2000'><filter id='f'>\
                 <feMorphology operator='dilate' radius='{r}'/></filter>\
                 <rect width='2000' height='2000' filter='url(#f)'/></svg>"
            )
        };
        let started = std::time::Instant::now();
        assert!(refused(&morph(50)));
        assert!(refused(&morph(500)));
        assert!(started.elapsed().as_secs() < 2);
        assert!(parse(morph(2).as_bytes()).is_ok());
        let convolve = "<svg xmlns='http://www.w3.org/2000/svg' width='2000' height='2000'><filter id='f'>\
             <feConvolveMatrix order='50' kernelMatrix='1'/></filter>\
             <rect width='2000' height='2000' filter='url(#f)'/></svg>";
        // An order of 50 with one value is invalid (usvg drops it); the cost is not the point.
        let _ = parse(convolve.as_bytes());
    }

    #[test]
    fn deeply_nested_layers_are_refused() {
        let mut text =
            String::from("<svg xmlns='http://www.w3.org/2000/svg' width='2000' height='2000'>");
        for _ in 0..40 {
            text.push_str("<g opacity='0.9'><rect width='2000' height='2000'/>");
        }
        text.push_str(&"</g>".repeat(40));
        text.push_str("</svg>");
        assert!(refused(&text));
    }

    #[test]
    fn svg_is_sniffed_by_its_root_element_after_the_prologue() {
        let yes: [&[u8]; 5] = [
            b"<svg xmlns='http://www.w3.org/2000/svg'/>",
            b"\xEF\xBB\xBF<?xml version='1.0'?>\n<!-- Inkscape -->\n<svg>",
            b"<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"x.dtd\" [<!ENTITY ns \"a>b\">]>\n<svg\n",
            b"  <?xml version='1.0'?><!DOCTYPE svg><svg/>",
            b"<svg>",
        ];
        for bytes in yes {
            assert!(sniff(bytes), "{}", String::from_utf8_lossy(bytes));
        }
        let no: [&[u8]; 5] = [
            b"<html><svg></svg></html>",
            b"<svgx>",
            b"<?xml version='1.0'?>",
            b"<!-- <svg> -->",
            b"plain text",
        ];
        for bytes in no {
            assert!(!sniff(bytes), "{}", String::from_utf8_lossy(bytes));
        }
    }
}
