//! Still WebP through libwebp, scaled on load to the output size as libvips' `webpload` does for
//! sharp; an animated WebP is left to the `image` crate (`generic`).

use image::{DynamicImage, RgbImage};

use super::dim;
use crate::error::PipelineError;

/// The header of a still WebP as libwebp reads it (size, alpha); `None` for an animation
/// (whose first frame the generic decoder composes) or a header libwebp cannot read.
pub(super) fn still(bytes: &[u8]) -> Option<libwebp_sys::WebPBitstreamFeatures> {
    // SAFETY: `features` is plain old data that WebPGetFeatures fills in; `bytes` is a valid
    // slice for its whole length, which libwebp reads no further than.
    #[expect(
        unsafe_code,
        reason = "an FFI call into a C library; the SAFETY comment above gives the conditions it needs"
    )]
    unsafe {
        let mut features = std::mem::zeroed::<libwebp_sys::WebPBitstreamFeatures>();
        let status = libwebp_sys::WebPGetFeatures(bytes.as_ptr(), bytes.len(), &raw mut features);
        (status == libwebp_sys::VP8StatusCode::VP8_STATUS_OK && features.has_animation == 0)
            .then_some(features)
    }
}

/// Decodes a still WebP (its `features` from [`still`]) with libwebp, scaled on load to `min_scale` of its size when that is
/// below 1, as libvips' `webpload` does for sharp (`scale = 1 / shrink`, size
/// `round(size * scale)`, libwebp's own rescaler): a 9 MP photo for an 800 px output is never
/// held at full size. Returns the picture (RGB, or RGBA when the file has alpha) and its scale
/// per axis.
///
/// # Errors
/// [`PipelineError::Undecodable`] for a broken or truncated file.
pub(super) fn decode(
    bytes: &[u8],
    features: &libwebp_sys::WebPBitstreamFeatures,
    min_scale: f64,
) -> Result<(DynamicImage, (f64, f64)), PipelineError> {
    use libwebp_sys::{VP8StatusCode, WEBP_CSP_MODE, WebPDecoderConfig};
    let (w, h) = (features.width, features.height);
    if w <= 0 || h <= 0 {
        return Err(PipelineError::Undecodable("bad WebP size".into()));
    }
    let scale = if min_scale > 0.0 && min_scale < 1.0 {
        min_scale
    } else {
        1.0
    };
    // libvips' VIPS_RINT: round half away from zero.
    let scaled = |n: i32| ((f64::from(n) * scale).round() as i32).max(1);
    let (sw, sh) = (scaled(w), scaled(h));
    let alpha = features.has_alpha != 0;
    let channels: usize = if alpha { 4 } else { 3 };
    let (width, height) = (
        dim(sw.unsigned_abs() as usize)?,
        dim(sh.unsigned_abs() as usize)?,
    );
    let stride = width as usize * channels;
    let mut pixels = crate::cost::buffer(
        crate::cost::samples(width as usize, height as usize, channels)?,
        0_u8,
    )?;
    // SAFETY: `config` is plain old data initialised by WebPInitDecoderConfig. The output
    // buffer is ours (`is_external_memory`), `stride * height` bytes for a `sw` x `sh` picture
    // of `channels` bytes per pixel, which is what libwebp writes for that size and mode; it
    // outlives the call, and libwebp keeps no pointer to it or to `bytes` after WebPDecode
    // returns (WebPFreeDecBuffer releases only what libwebp allocated itself: nothing here).
    #[expect(
        unsafe_code,
        reason = "an FFI call into a C library; the SAFETY comment above gives the conditions it needs"
    )]
    let status = unsafe {
        let mut config = std::mem::zeroed::<WebPDecoderConfig>();
        if !libwebp_sys::WebPInitDecoderConfig(&raw mut config) {
            return Err(PipelineError::Undecodable(
                "libwebp version mismatch".into(),
            ));
        }
        config.options.use_threads = 1;
        if (sw, sh) != (w, h) {
            config.options.use_scaling = 1;
            config.options.scaled_width = sw;
            config.options.scaled_height = sh;
        }
        config.output.colorspace = if alpha {
            WEBP_CSP_MODE::MODE_RGBA
        } else {
            WEBP_CSP_MODE::MODE_RGB
        };
        config.output.is_external_memory = 1;
        config.output.u.RGBA.rgba = pixels.as_mut_ptr();
        config.output.u.RGBA.stride = i32::try_from(stride).unwrap_or(i32::MAX);
        config.output.u.RGBA.size = pixels.len();
        let status = libwebp_sys::WebPDecode(bytes.as_ptr(), bytes.len(), &raw mut config);
        libwebp_sys::WebPFreeDecBuffer(&raw mut config.output);
        status
    };
    if status != VP8StatusCode::VP8_STATUS_OK {
        return Err(PipelineError::Undecodable(format!("WebP: {status:?}")));
    }
    let img = if alpha {
        image::RgbaImage::from_raw(width, height, pixels).map(DynamicImage::ImageRgba8)
    } else {
        RgbImage::from_raw(width, height, pixels).map(DynamicImage::ImageRgb8)
    }
    .ok_or_else(|| PipelineError::Undecodable("bad WebP buffer size".into()))?;
    let scale = (f64::from(sw) / f64::from(w), f64::from(sh) / f64::from(h));
    Ok((img, scale))
}
