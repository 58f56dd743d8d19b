//! Encoders: lossy WebP (libwebp), JPEG (libjpeg-turbo, optimised Huffman, optional
//! progressive), PNG (`image`) and AVIF (rav1e through ravif, feature `avif`).

use image::{DynamicImage, ImageEncoder};

use crate::error::PipelineError;
use crate::spec::OutputFormat;

fn enc(e: impl std::fmt::Display) -> PipelineError {
    PipelineError::Encode(e.to_string())
}

/// Encoder settings of one request ([`crate::spec::EncodeSettings`], defined there so that
/// `animation`, which this module calls for GIF, need not import this module back).
pub(crate) use crate::spec::EncodeSettings as Settings;

/// Encodes RGB/RGBA pixels. JPEG has no alpha: callers flatten first.
///
/// # Errors
/// [`PipelineError::Encode`] when the encoder refuses the image (for example WebP above
/// 16383 px).
pub(crate) fn encode(
    img: &DynamicImage,
    format: OutputFormat,
    settings: Settings,
) -> Result<Vec<u8>, PipelineError> {
    let Settings {
        quality,
        progressive,
        gray,
        webp_effort,
    } = settings;
    let (w, h) = (img.width(), img.height());
    match format {
        OutputFormat::Webp => {
            let encoder = match img {
                DynamicImage::ImageRgba8(b) => webp::Encoder::from_rgba(b.as_raw(), w, h),
                DynamicImage::ImageRgb8(b) => webp::Encoder::from_rgb(b.as_raw(), w, h),
                _ => return Err(enc("unexpected pixel layout")),
            };
            // sharp's other defaults are libwebp's: preset default, no sharp YUV, alpha q 100.
            let mut config = webp::WebPConfig::new().map_err(|()| enc("webp: config"))?;
            config.quality = f32::from(quality);
            config.alpha_compression = 1;
            config.method = i32::from(webp_effort.min(6));
            let out = encoder
                .encode_advanced(&config)
                .map_err(|e| enc(format!("webp: {e:?}")))?;
            Ok(out.to_vec())
        }
        OutputFormat::Jpeg => {
            let mut c = turbojpeg::Compressor::new().map_err(enc)?;
            c.set_quality(i32::from(quality)).map_err(enc)?;
            c.set_optimize(true).map_err(enc)?;
            c.set_progressive(progressive).map_err(enc)?;
            let luma;
            let rgb;
            let image = if gray {
                luma = img.to_luma8();
                c.set_subsamp(turbojpeg::Subsamp::Gray).map_err(enc)?;
                turbojpeg::Image {
                    pixels: luma.as_raw().as_slice(),
                    width: w as usize,
                    pitch: w as usize,
                    height: h as usize,
                    format: turbojpeg::PixelFormat::GRAY,
                }
            } else {
                rgb = match img {
                    DynamicImage::ImageRgb8(b) => std::borrow::Cow::Borrowed(b),
                    other => std::borrow::Cow::Owned(other.to_rgb8()),
                };
                c.set_subsamp(turbojpeg::Subsamp::Sub2x2).map_err(enc)?;
                turbojpeg::Image {
                    pixels: rgb.as_raw().as_slice(),
                    width: w as usize,
                    pitch: w as usize * 3,
                    height: h as usize,
                    format: turbojpeg::PixelFormat::RGB,
                }
            };
            c.compress_to_vec(image).map_err(enc)
        }
        OutputFormat::Png => {
            let mut out = Vec::new();
            let encoder = image::codecs::png::PngEncoder::new_with_quality(
                &mut out,
                image::codecs::png::CompressionType::Fast,
                image::codecs::png::FilterType::Adaptive,
            );
            match (img, gray) {
                (DynamicImage::ImageRgb8(_), true) => {
                    let l = img.to_luma8();
                    encoder.write_image(l.as_raw(), w, h, image::ExtendedColorType::L8)
                }
                (DynamicImage::ImageRgba8(b), _) => {
                    encoder.write_image(b.as_raw(), w, h, image::ExtendedColorType::Rgba8)
                }
                (other, _) => {
                    let b = other.to_rgb8();
                    encoder.write_image(b.as_raw(), w, h, image::ExtendedColorType::Rgb8)
                }
            }
            .map_err(enc)?;
            Ok(out)
        }
        OutputFormat::Avif => avif(img, quality),
        OutputFormat::Gif => {
            crate::animation::encode(std::iter::once(Ok((img.to_rgba8(), 0))), format, settings)
                .map(|(bytes, _)| bytes)
        }
        // Answered by `placeholder` before any image encoder runs.
        OutputFormat::Blurhash | OutputFormat::Lqip => {
            Err(enc("a placeholder is not an image encoding"))
        }
    }
}

#[cfg(feature = "avif")]
fn avif(img: &DynamicImage, quality: u8) -> Result<Vec<u8>, PipelineError> {
    use ravif::{Encoder, Img, RGBA8};
    let rgba = img.to_rgba8();
    let pixels: Vec<RGBA8> = crate::cost::collect(
        rgba.as_raw().len() / 4,
        rgba.pixels()
            .map(|p| RGBA8::new(p.0[0], p.0[1], p.0[2], p.0[3])),
    )?;
    let encoded = Encoder::new()
        .with_quality(f32::from(quality))
        .with_speed(10)
        .encode_rgba(Img::new(
            pixels.as_slice(),
            rgba.width() as usize,
            rgba.height() as usize,
        ))
        .map_err(enc)?;
    Ok(encoded.avif_file)
}

#[cfg(not(feature = "avif"))]
fn avif(_img: &DynamicImage, _quality: u8) -> Result<Vec<u8>, PipelineError> {
    Err(enc("built without the avif feature"))
}
