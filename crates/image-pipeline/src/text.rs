//! Text watermarks (`watermarkText`, docs/image-service.md §4): one line of text rasterised
//! with ab_glyph from the bundled DejaVu Sans Bold (fonts/, Bitstream Vera licence), white with
//! a dark shadow so it reads on light and dark pictures alike.
//!
//! The original service built an SVG document around the client's text and let librsvg draw
//! it, unescaped: markup in the text was markup in the document. Here the text is never parsed:
//! each character is looked up in the font and its outline filled, so any string is drawn as
//! the characters it holds (a character the font lacks is its empty-box glyph).

use ab_glyph::{Font, FontRef, Glyph, GlyphId, PxScale, ScaleFont, point};
use image::{Rgba, RgbaImage};

use crate::PipelineError;

/// The font every text watermark is drawn in.
static FONT: &[u8] = include_bytes!("../fonts/DejaVuSans-Bold.ttf");

/// Longest accepted `watermarkText`, in characters; longer: 400.
pub const MAX_WATERMARK_TEXT_CHARS: usize = 200;

/// Smallest text height drawn, in pixels: below it a watermark is unreadable noise.
const MIN_PX: f32 = 6.0;

/// Most combining marks (Unicode general category M: accents, diacritics, overlays) that may
/// follow one character; more: 400. Every mark is a glyph drawn over its base at the full
/// text size, so "." and 199 U+0338 drew 199 glyphs as tall as the picture on one spot (14.8 s
/// instead of 1.0 s). Written languages stack at most three or four (Vietnamese two, Hebrew
/// with points and cantillation three, Tibetan four).
pub const MAX_COMBINING_MARKS: usize = 4;

/// How many times over the glyphs' boxes may cover the text's own box: letters side by side
/// cover it about once; only marks stacked on one spot (or a font's wide overhangs) cover it
/// more. More: 400, before anything is drawn.
pub const MAX_GLYPH_COVERAGE: u64 = 4;

/// Checks a `watermarkText` value: 1..=[`MAX_WATERMARK_TEXT_CHARS`] characters after trimming,
/// none of them a control character (a line break or tab would not be drawn as the client
/// meant). Returns the trimmed text.
///
/// # Errors
/// [`PipelineError::BadParam`] naming `watermarkText`.
pub(crate) fn checked(name: &str, text: &str) -> Result<String, PipelineError> {
    let text = text.trim();
    let bad = |reason: String| PipelineError::BadParam {
        name: name.to_owned(),
        reason,
    };
    let count = text.chars().count();
    if count == 0 {
        return Err(bad("must not be empty".into()));
    }
    if count > MAX_WATERMARK_TEXT_CHARS {
        return Err(bad(format!(
            "{count} characters, at most {MAX_WATERMARK_TEXT_CHARS}"
        )));
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(bad(format!(
            "control character U+{:04X} cannot be drawn: one line of text",
            u32::from(c)
        )));
    }
    let mut run = 0_usize;
    for c in text.chars() {
        use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};
        run = if c.general_category_group() == GeneralCategoryGroup::Mark {
            run + 1
        } else {
            0
        };
        if run > MAX_COMBINING_MARKS {
            return Err(bad(format!(
                "more than {MAX_COMBINING_MARKS} combining marks (U+{:04X}) on one character: \
                 each is drawn over it at full size",
                u32::from(c)
            )));
        }
    }
    Ok(text.to_owned())
}

fn font() -> Result<FontRef<'static>, PipelineError> {
    FontRef::try_from_slice(FONT)
        .map_err(|e| PipelineError::Encode(format!("the watermark font cannot be read: {e}")))
}

/// Glyphs of `text` laid out on one line at `px` pixels, starting at the origin's baseline
/// `ascent` below the top; and the line's advance width.
fn layout(font: &FontRef<'_>, text: &str, px: f32) -> (Vec<Glyph>, f32) {
    let scaled = font.as_scaled(PxScale::from(px));
    let mut glyphs = Vec::with_capacity(text.len());
    let mut x = 0.0_f32;
    let mut previous: Option<GlyphId> = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = previous {
            x += scaled.kern(p, id);
        }
        glyphs.push(id.with_scale_and_position(px, point(x, scaled.ascent())));
        x += scaled.h_advance(id);
        previous = Some(id);
    }
    (glyphs, x)
}

/// A text laid out for drawing: its glyphs at `px` pixels, the raster's size, the shadow's
/// offset, and how many pixels the glyphs' boxes cover together.
pub(crate) struct Layout {
    glyphs: Vec<Glyph>,
    /// Width and height of the raster, in pixels.
    pub size: (u32, u32),
    shadow: f32,
    /// The sum of the glyphs' pixel boxes: what drawing them visits.
    pub coverage: u64,
}

/// Lays `text` (already [`checked`]) out about `width` pixels wide, its height following the
/// font and at most `max_height` (a long text on a wide, short picture gets smaller letters
/// instead of leaving the picture), without drawing anything.
///
/// # Errors
/// [`PipelineError::Encode`] when the bundled font cannot be read (a broken build);
/// [`PipelineError::BadParam`] naming `watermarkText` when its glyphs would cover the raster
/// more than [`MAX_GLYPH_COVERAGE`] times over.
pub(crate) fn layout_for(text: &str, width: u32, max_height: u32) -> Result<Layout, PipelineError> {
    let font = font()?;
    // Measure at 100 px, then scale to the asked width: advances are linear in the size.
    let (_, at_100) = layout(&font, text, 100.0);
    let line_height_at_100 = {
        let s = font.as_scaled(PxScale::from(100.0));
        s.ascent() - s.descent()
    };
    let by_width = if at_100 > 0.0 {
        100.0 * width as f32 / at_100
    } else {
        MIN_PX
    };
    let by_height = 100.0 * max_height as f32 / line_height_at_100;
    let px = by_width.min(by_height).max(MIN_PX);
    let (glyphs, advance) = layout(&font, text, px);
    let scaled = font.as_scaled(PxScale::from(px));
    let shadow = (px / 16.0).round().max(1.0);
    let size = (
        (advance + shadow).ceil().clamp(1.0, u32::MAX as f32) as u32,
        (scaled.ascent() - scaled.descent() + shadow)
            .ceil()
            .clamp(1.0, u32::MAX as f32) as u32,
    );
    let coverage = glyphs
        .iter()
        .filter_map(|g| font.outline_glyph(g.clone()))
        .fold(0_u64, |total, outline| {
            let b = outline.px_bounds();
            let box_area = (f64::from(b.width().max(0.0)) * f64::from(b.height().max(0.0)))
                .min(u64::MAX as f64) as u64;
            total.saturating_add(box_area)
        });
    let most = crate::cost::area(size).saturating_mul(MAX_GLYPH_COVERAGE);
    if coverage > most.max(1024) {
        return Err(PipelineError::BadParam {
            name: "watermarkText".into(),
            reason: format!(
                "its glyphs would cover the text's {}x{} box {} times over, at most \
                 {MAX_GLYPH_COVERAGE}: fewer marks stacked on one character",
                size.0,
                size.1,
                coverage / crate::cost::area(size).max(1)
            ),
        });
    }
    Ok(Layout {
        glyphs,
        size,
        shadow,
        coverage,
    })
}

/// Draws `text` (already [`checked`]) as [`layout_for`] lays it out. The result is sized to
/// the text plus its shadow.
///
/// # Errors
/// As [`layout_for`].
pub(crate) fn render(text: &str, width: u32, max_height: u32) -> Result<RgbaImage, PipelineError> {
    draw(layout_for(text, width, max_height)?)
}

/// Draws a laid-out text: white letters over a dark shadow.
fn draw(laid: Layout) -> Result<RgbaImage, PipelineError> {
    let font = font()?;
    let Layout {
        glyphs,
        size: (w, h),
        shadow,
        ..
    } = laid;
    // Coverage of the letters and of their shadow, 0..=1 per pixel.
    let len = (w as usize)
        .checked_mul(h as usize)
        .ok_or_else(|| PipelineError::BadParam {
            name: "watermarkText".into(),
            reason: format!("a text raster of {w}x{h} pixels"),
        })?;
    let mut fill = crate::cost::buffer(len, 0.0_f32)?;
    let mut dark = crate::cost::buffer(len, 0.0_f32)?;
    for glyph in glyphs {
        let Some(outline) = font.outline_glyph(glyph) else {
            continue; // a space
        };
        let bounds = outline.px_bounds();
        outline.draw(|gx, gy, coverage| {
            let (x, y) = (
                bounds.min.x as i64 + i64::from(gx),
                bounds.min.y as i64 + i64::from(gy),
            );
            let d = shadow as i64;
            for (layer, (lx, ly)) in [(&mut fill, (x, y)), (&mut dark, (x + d, y + d))] {
                if lx >= 0 && ly >= 0 && lx < i64::from(w) && ly < i64::from(h) {
                    let i = ly as usize * w as usize + lx as usize;
                    layer[i] = (layer[i] + coverage).min(1.0);
                }
            }
        });
    }
    let mut out = RgbaImage::from_raw(w, h, crate::cost::buffer(len.saturating_mul(4), 0_u8)?)
        .ok_or_else(|| PipelineError::Encode("text: bad buffer size".into()))?;
    for (i, pixel) in out.pixels_mut().enumerate() {
        // White letters over a black shadow at 60%: "over" compositing of the two layers.
        let (a_fill, a_dark) = (fill[i], dark[i] * 0.6);
        let alpha = a_fill + a_dark * (1.0 - a_fill);
        if alpha <= 0.0 {
            continue;
        }
        let value = 255.0 * a_fill / alpha;
        let (v, a) = (
            value.round().clamp(0.0, 255.0) as u8,
            (alpha * 255.0).round().clamp(0.0, 255.0) as u8,
        );
        *pixel = Rgba([v, v, v, a]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_one_trimmed_line_of_bounded_length() {
        assert_eq!(checked("watermarkText", "  © Acme  ").unwrap(), "© Acme");
        for bad in ["", "   ", "a\nb", "tab\there", "\u{7}"] {
            assert!(checked("watermarkText", bad).is_err(), "{bad:?}");
        }
        let longest = "x".repeat(MAX_WATERMARK_TEXT_CHARS);
        assert!(checked("watermarkText", &longest).is_ok());
        assert!(checked("watermarkText", &format!("{longest}x")).is_err());
    }

    #[test]
    fn combining_marks_are_bounded_per_character() {
        let pile = format!(".{}", "\u{338}".repeat(199));
        let e = checked("watermarkText", &pile).unwrap_err().to_string();
        assert!(
            e.contains("combining marks") && e.contains("watermarkText"),
            "{e}"
        );
        // Vietnamese (two stacked) and four marks pass; five on one character do not.
        assert!(checked("watermarkText", "Vie\u{323}\u{302}t").is_ok());
        assert!(checked("watermarkText", &format!("a{}", "\u{301}".repeat(4))).is_ok());
        assert!(checked("watermarkText", &format!("a{}", "\u{301}".repeat(5))).is_err());
        // The glyph coverage is checked on its own, before anything is drawn.
        let started = std::time::Instant::now();
        assert!(layout_for(&pile, 2000, 3000).is_err());
        assert!(render(&pile, 2000, 3000).is_err());
        assert!(started.elapsed().as_millis() < 500);
    }

    #[test]
    fn text_is_drawn_at_the_asked_width_with_white_letters() {
        let mark = render("Acme", 200, 1000).unwrap();
        assert!((195..=215).contains(&mark.width()), "{}", mark.width());
        let white = mark
            .pixels()
            .filter(|p| p.0 == [255, 255, 255, 255])
            .count();
        assert!(white > 500, "{white} opaque white pixels");
        let clear = mark.pixels().filter(|p| p.0[3] == 0).count();
        assert!(clear > white, "the letters leave most of the box clear");
    }

    #[test]
    fn a_long_text_on_a_short_picture_gets_smaller_letters() {
        let mark = render("a long watermark line", 4000, 40).unwrap();
        assert!(mark.height() <= 45, "{}", mark.height());
        assert!(mark.width() < 4000);
    }

    #[test]
    fn markup_is_drawn_as_its_characters() {
        // The SVG the original built around this text would have loaded an external image;
        // here each of its 31 characters is one glyph on the line, and nothing else happens.
        let text = "<image href='http://x/a.png'/>";
        let font = font().unwrap();
        let (glyphs, advance) = layout(&font, text, 100.0);
        assert_eq!(glyphs.len(), text.chars().count());
        let (_, one) = layout(&font, "<", 100.0);
        assert!(advance > 10.0 * one);
        assert!(render(text, 600, 1000).unwrap().width() > 500);
    }
}
