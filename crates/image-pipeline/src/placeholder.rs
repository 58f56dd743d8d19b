//! Placeholders a page shows while the picture loads (docs/image-service.md §4, Placeholders):
//! `format=blurhash`, the BlurHash string of the result (woltapp's algorithm, which imgproxy's
//! users have asked for in its issues #880 and #1072), and `lqip=true`, a tiny blurred WebP of
//! the result as a `data:` URL. Both answer JSON with the size of the full result, so a page
//! can reserve the picture's box before it arrives.

use base64::Engine;
use image::DynamicImage;
use image::imageops::FilterType;
use serde::Serialize;

use crate::PipelineError;
use crate::encode::{self, Settings};
use crate::spec::OutputFormat;

/// Longest side the BlurHash is computed on: its few cosine components see nothing finer, and
/// the cost grows with the pixels (components x pixels).
const BLURHASH_SIDE: u32 = 64;

/// Longest side of the LQIP image, in pixels: a few hundred bytes, scaled up by the browser.
const LQIP_SIDE: u32 = 24;

/// WebP quality of the LQIP image.
const LQIP_QUALITY: u8 = 40;

/// Gaussian sigma of the LQIP's blur, in its own pixels: edges no sharper than the upscaled
/// thumbnail can show.
const LQIP_BLUR: f32 = 1.0;

#[derive(Serialize)]
struct Components {
    x: u8,
    y: u8,
}

#[derive(Serialize)]
struct BlurhashAnswer {
    blurhash: String,
    components: Components,
    width: u32,
    height: u32,
}

#[derive(Serialize)]
struct LqipAnswer {
    lqip: String,
    width: u32,
    height: u32,
}

/// `img` shrunk to fit `side` x `side` (never enlarged), as 8-bit RGBA.
fn small(img: &DynamicImage, side: u32) -> image::RgbaImage {
    if img.width() <= side && img.height() <= side {
        return img.to_rgba8();
    }
    img.resize(side, side, FilterType::Triangle).to_rgba8()
}

fn json(answer: &impl Serialize) -> Result<Vec<u8>, PipelineError> {
    serde_json::to_vec(answer).map_err(|e| PipelineError::Encode(format!("placeholder: {e}")))
}

/// `{"blurhash": "...", "components": {"x", "y"}, "width", "height"}` of `img`, the BlurHash
/// computed on a copy at most 64 px on a side; `components` are 1..=9 each (checked by the
/// query parser).
///
/// # Errors
/// [`PipelineError::Encode`] if the encoder refuses the input (it cannot with checked counts).
pub(crate) fn blurhash(img: &DynamicImage, (x, y): (u8, u8)) -> Result<Vec<u8>, PipelineError> {
    let thumb = small(img, BLURHASH_SIDE);
    let hash = blurhash::encode(
        u32::from(x),
        u32::from(y),
        thumb.width(),
        thumb.height(),
        thumb.as_raw(),
    )
    .map_err(|e| PipelineError::Encode(format!("blurhash: {e:?}")))?;
    json(&BlurhashAnswer {
        blurhash: hash,
        components: Components { x, y },
        width: img.width(),
        height: img.height(),
    })
}

/// `{"lqip": "data:image/webp;base64,...", "width", "height"}`: `img` shrunk to at most 24 px
/// on a side, blurred, encoded as WebP at quality 40.
///
/// # Errors
/// [`PipelineError::Encode`] when WebP encoding fails.
pub(crate) fn lqip(img: &DynamicImage, webp_effort: u8) -> Result<Vec<u8>, PipelineError> {
    let thumb = DynamicImage::ImageRgba8(small(img, LQIP_SIDE)).blur(LQIP_BLUR);
    let thumb = if img.color().has_alpha() {
        thumb
    } else {
        DynamicImage::ImageRgb8(thumb.to_rgb8())
    };
    let webp = encode::encode(
        &thumb,
        OutputFormat::Webp,
        Settings {
            quality: LQIP_QUALITY,
            progressive: false,
            gray: false,
            webp_effort,
        },
    )?;
    let data = base64::engine::general_purpose::STANDARD.encode(webp);
    json(&LqipAnswer {
        lqip: format!("data:image/webp;base64,{data}"),
        width: img.width(),
        height: img.height(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    #[test]
    fn a_flat_picture_has_the_blurhash_of_its_colour() {
        let red = DynamicImage::ImageRgb8(RgbImage::from_pixel(300, 200, Rgb([255, 0, 0])));
        let answer: serde_json::Value =
            serde_json::from_slice(&blurhash(&red, (4, 3)).unwrap()).unwrap();
        let hash = answer["blurhash"].as_str().unwrap();
        assert_eq!(hash.len(), 4 + 2 * 4 * 3, "{hash}");
        assert_eq!(
            (&answer["components"], &answer["width"], &answer["height"]),
            (
                &serde_json::json!({"x": 4, "y": 3}),
                &serde_json::json!(300),
                &serde_json::json!(200)
            )
        );
        let decoded = blurhash::decode(hash, 8, 8, 1.0).unwrap();
        let off = decoded
            .chunks(4)
            .map(|p| (255 - i32::from(p[0])) + i32::from(p[1]) + i32::from(p[2]))
            .max();
        assert!(off < Some(24), "furthest from red: {off:?}");
    }

    #[test]
    fn an_lqip_is_a_small_webp_data_url() {
        let photo = DynamicImage::ImageRgb8(RgbImage::from_fn(640, 360, |x, y| {
            Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        }));
        let answer: serde_json::Value = serde_json::from_slice(&lqip(&photo, 4).unwrap()).unwrap();
        let url = answer["lqip"].as_str().unwrap();
        let data = url.strip_prefix("data:image/webp;base64,").unwrap();
        assert!(url.len() < 1000, "{} bytes", url.len());
        let webp = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        let thumb = image::load_from_memory(&webp).unwrap();
        assert_eq!((thumb.width(), thumb.height()), (24, 14));
        assert_eq!(
            (&answer["width"], &answer["height"]),
            (&serde_json::json!(640), &serde_json::json!(360))
        );
    }
}
