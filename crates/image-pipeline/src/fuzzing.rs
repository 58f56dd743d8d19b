//! The properties the fuzz targets check (feature `samples`; `fuzz/README.md`), shared with
//! `tests/fuzz_corpus.rs`, which replays the committed corpus and every past finding in the
//! ordinary test run.

use crate::{Limits, OutputFormat, TransformSpec, transform};

/// Transformations covering every stage: shrink-on-load, each fit, crop, any-angle rotate,
/// flips, blur, sharpen, grayscale, padding with a background.
const QUERIES: [&str; 8] = [
    "width=40",
    "width=31&height=17&fit=cover&position=entropy",
    "width=50&height=50&fit=contain&background=ff000080",
    "cropLeft=1&cropTop=2&cropWidth=9&cropHeight=7&width=20",
    "rotate=33&flip=true&width=24",
    "height=30&flop=true&blur=1.5&sharpen=true",
    "width=64&height=12&fit=fill&grayscale=true&rotate=270",
    "width=20&height=20&fit=inside&enlarge=true",
];

const FORMATS: [OutputFormat; 3] = [OutputFormat::Jpeg, OutputFormat::Webp, OutputFormat::Png];

fn pairs(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query
        .split('&')
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// `data[0]` picks one of eight transformations and an output format, the rest is the source
/// image: [`transform`] must return an error or an output of the format it names, at least
/// 1x1. Returns whether an output was made; panics when a property fails (that is the finding).
pub fn check_transform(data: &[u8]) -> bool {
    let Some((&pick, source)) = data.split_first() else {
        return false;
    };
    // Small limits keep each run fast; the checks against them are part of what is fuzzed.
    let limits = Limits {
        max_output_dimension: 256,
        max_source_pixels: 1 << 20,
        ..Limits::default()
    };
    let query = QUERIES[usize::from(pick) % QUERIES.len()];
    let format = FORMATS[usize::from(pick / 8) % FORMATS.len()];
    let Ok(spec) = TransformSpec::from_query(pairs(query), &limits) else {
        panic!("fixed query {query} must parse");
    };
    let Ok(out) = transform(source, &spec, format, None, &limits) else {
        return false;
    };
    assert_eq!(OutputFormat::of(&out.bytes), Some(out.format), "{query}");
    assert!(out.width >= 1 && out.height >= 1, "{query}");
    true
}

/// `data` as the resize endpoint's query string, applied to `source` (with `watermark` for a
/// query that names one): parsing and planning must return an error or an output within the
/// 300 px output limit, of the format it names. Returns whether an output was made; panics
/// when a property fails.
pub fn check_query(data: &[u8], source: &[u8], watermark: &[u8]) -> bool {
    let limits = Limits {
        max_output_dimension: 300,
        ..Limits::default()
    };
    let Ok(query) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok(spec) = TransformSpec::from_query(pairs(query), &limits) else {
        return false;
    };
    let format = spec.output_format("image/webp");
    let mark = spec.watermark.as_ref().map(|_| watermark);
    let Ok(out) = transform(source, &spec, format, mark, &limits) else {
        return false;
    };
    assert!(
        out.width <= 300 && out.height <= 300,
        "{query}: {}x{}",
        out.width,
        out.height
    );
    assert_eq!(OutputFormat::of(&out.bytes), Some(out.format), "{query}");
    check_capped(query, source, mark, &limits);
    true
}

/// The same query as an unsigned URL, under the caps image-server sets for those (here 2 times
/// a side and 20,000 pixels): refused, or an output no larger than the caps allow, which is
/// at most 20,000 pixels unless the source itself is larger.
fn check_capped(query: &str, source: &[u8], mark: Option<&[u8]>, limits: &Limits) {
    let capped = Limits {
        max_enlarge: Some(2.0),
        max_grown_output_pixels: Some(20_000),
        ..*limits
    };
    let Ok(spec) = TransformSpec::from_query(pairs(query), &capped) else {
        return;
    };
    let Ok(out) = transform(
        source,
        &spec,
        spec.output_format("image/webp"),
        mark,
        &capped,
    ) else {
        return;
    };
    let (w, h) = crate::probe(source, capped.max_source_pixels)
        .map(|info| info.oriented_size())
        .unwrap_or((0, 0));
    let most = (u64::from(w) * u64::from(h)).max(20_000);
    assert!(
        u64::from(out.width) * u64::from(out.height) <= most,
        "{query}: {}x{} from {w}x{h}",
        out.width,
        out.height
    );
}

/// Longest a hostile input may take in [`check_hostile`], in seconds: generous for a sanitizer
/// build (ten times slower); the release pipeline's own budget is a few seconds.
pub const HOSTILE_MAX_SECONDS: u64 = 10;

/// The limits of [`check_hostile`]: outputs up to 2048 px a side and a budget of 64 MiB and
/// two billion pixel operations, so that the budget, not the size cap, is what holds.
pub fn hostile_limits() -> Limits {
    Limits {
        max_output_dimension: 2048,
        max_request_bytes: 64 << 20,
        max_request_pixel_ops: 2_000_000_000,
        ..Limits::default()
    }
}

/// The cost-model target (docs/image-service.md §8): `data[0]` picks what the rest is, and the transform must
/// finish within [`HOSTILE_MAX_SECONDS`] (the fuzz target also holds its peak allocation):
/// - 0 mod 3: an SVG source (entities, filters, layers), resized to `width=256` PNG;
/// - 1 mod 3: the rest of a query after `watermark=m&` (`watermark_scale`, `width`, `height`,
///   `fit`, `rotate`, `padding`...), applied to `source` with a tall, narrow 2x600 PNG mark;
/// - 2 mod 3: a `watermarkText` (the rest as UTF-8), on `source` at `width=1024`.
///
/// Returns whether an output was made; panics when a property fails.
pub fn check_hostile(data: &[u8], source: &[u8]) -> bool {
    use std::sync::OnceLock;
    static MARK: OnceLock<Vec<u8>> = OnceLock::new();
    let Some((&pick, rest)) = data.split_first() else {
        return false;
    };
    let limits = hostile_limits();
    let started = std::time::Instant::now();
    let made = match pick % 3 {
        0 => TransformSpec::from_query(pairs("width=256&format=png"), &limits)
            .ok()
            .and_then(|spec| transform(rest, &spec, OutputFormat::Png, None, &limits).ok()),
        1 => {
            let Ok(tail) = std::str::from_utf8(rest) else {
                return false;
            };
            let query = format!("watermark=m&{tail}");
            let mark = MARK.get_or_init(|| {
                crate::samples::png(&image::RgbaImage::from_pixel(
                    2,
                    600,
                    image::Rgba([255, 0, 0, 200]),
                ))
            });
            TransformSpec::from_query(pairs(&query), &limits)
                .ok()
                .and_then(|spec| {
                    let format = spec.output_format("image/webp");
                    transform(source, &spec, format, Some(mark), &limits).ok()
                })
        }
        _ => {
            let Ok(text) = std::str::from_utf8(rest) else {
                return false;
            };
            let text: String = text.chars().filter(|c| !matches!(c, '&' | '=')).collect();
            let query = format!("width=1024&format=jpeg&watermarkText={text}");
            TransformSpec::from_query(pairs(&query), &limits)
                .ok()
                .and_then(|spec| transform(source, &spec, OutputFormat::Jpeg, None, &limits).ok())
        }
    };
    let took = started.elapsed();
    assert!(
        took.as_secs() < HOSTILE_MAX_SECONDS,
        "mode {}: {took:?}",
        pick % 3
    );
    if let Some(out) = &made {
        assert_eq!(OutputFormat::of(&out.bytes), Some(out.format));
    }
    made.is_some()
}
