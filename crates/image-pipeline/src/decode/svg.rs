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

use super::{Decoded, SourceInfo, undecodable};
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

/// libvips' `svgload` density (sharp's default), in dots per inch: 1 px = 1/72 in.
const DPI: f32 = 72.0;

/// Whether `bytes` look like an SVG document: after an optional byte order mark, XML
/// declaration, comments, processing instructions and document type declaration (within the
/// first 64 KiB), the first element is `svg`.
pub(super) fn sniff(bytes: &[u8]) -> bool {
    let mut rest = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    rest = &rest[..rest.len().min(64 * 1024)];
    loop {
        rest = rest.trim_ascii_start();
        let skip_to = |rest: &[u8], end: &[u8]| {
            rest.windows(end.len())
                .position(|w| w == end)
                .map(|i| i + end.len())
        };
        let next = if rest.starts_with(b"<?") {
            skip_to(rest, b"?>")
        } else if rest.starts_with(b"<!--") {
            skip_to(rest, b"-->")
        } else if rest.starts_with(b"<!DOCTYPE") {
            // An internal subset (`[...]`) may hold `>` in its declarations.
            match (
                rest.iter().position(|&b| b == b'['),
                rest.iter().position(|&b| b == b'>'),
            ) {
                (Some(open), Some(close)) if open < close => skip_to(rest, b"]>"),
                (_, close) => close.map(|i| i + 1),
            }
        } else {
            return rest.starts_with(b"<svg")
                && rest
                    .get(4)
                    .is_some_and(|&b| b.is_ascii_whitespace() || b == b'>' || b == b'/');
        };
        match next {
            Some(n) => rest = &rest[n..],
            None => return false,
        }
    }
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
    if entity_expansion(text) > MAX_ENTITY_EXPANSION {
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
    usvg::Tree::from_xmltree(&xml, &options)
        .map_err(|e| PipelineError::Undecodable(format!("the SVG cannot be drawn: {e}")))
}

/// How many bytes the general entity references of `text` expand to, from the declarations of
/// its internal subset (`<!ENTITY name "value">`; parameter and external entities, which are
/// not expanded here, are left out), nested references included; saturating.
fn entity_expansion(text: &str) -> usize {
    use std::collections::HashMap;
    let Some(start) = text.find("<!DOCTYPE") else {
        return 0;
    };
    let doctype = &text[start..];
    let (Some(open), Some(close)) = (doctype.find('['), doctype.find("]>")) else {
        return 0;
    };
    if open > close {
        return 0;
    }
    let mut values: HashMap<&str, &str> = HashMap::new();
    for declaration in doctype[open + 1..close].split("<!ENTITY").skip(1) {
        let declaration = declaration.trim_start();
        let Some((name, rest)) = declaration.split_once(|c: char| c.is_ascii_whitespace()) else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue; // a parameter (`%`) or external (`SYSTEM`, `PUBLIC`) entity
        };
        if let Some(end) = rest[1..].find(quote) {
            values.insert(name, &rest[1..=end]);
        }
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
    let body = &doctype[close..];
    references(body)
        .filter(|name| values.contains_key(name))
        .fold(0usize, |total, name| {
            total.saturating_add(size(name, &values, &mut memo, 0))
        })
}

/// An embedded raster image: kept when its bytes (not its declared type) are PNG, JPEG, GIF or
/// WebP of at most [`MAX_EMBEDDED_PIXELS`], from the header.
fn embedded_image(_mime: &str, data: Arc<Vec<u8>>, _: &usvg::Options) -> Option<usvg::ImageKind> {
    use super::SourceFormat as F;
    // Sniffed first, so that an embedded SVG is not parsed (nor one embedded in that).
    if !matches!(super::sniff(&data)?, F::Png | F::Jpeg | F::Gif | F::Webp) {
        return None;
    }
    let info = super::probe(&data, MAX_EMBEDDED_PIXELS).ok()?;
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
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
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
    #[allow(clippy::cast_possible_truncation)]
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
