//! Animated GIF and WebP sources (docs/image-service.md §4, Animation): their frames are
//! counted from the file's blocks before anything is decoded, held to MAX_ANIMATION_FRAMES and
//! to MAX_SOURCE_PIXELS over all frames, decoded whole (each frame composed onto the canvas as
//! the format's disposal rules say, by the `image` crate's decoders), and encoded again as an
//! animated WebP (libwebp's animation encoder) or GIF (the `image` crate's encoder), each
//! frame keeping its delay.

use std::io::Cursor;

use image::codecs::gif::{GifDecoder, GifEncoder, Repeat};
use image::codecs::webp::WebPDecoder;
use image::{AnimationDecoder, Delay, DynamicImage, Frame, RgbaImage};

use crate::PipelineError;
use crate::decode::SourceFormat;
use crate::encode::Settings;
use crate::spec::{Limits, OutputFormat};

/// A frame and how long it is shown, in milliseconds.
pub(crate) type Timed = (DynamicImage, u32);

/// Frames of `bytes`: an animation's count for GIF and WebP (from their blocks, without
/// decoding), 1 for every other format.
pub(crate) fn frame_count(bytes: &[u8], format: SourceFormat) -> u32 {
    match format {
        SourceFormat::Gif => crate::info::gif_facts(bytes).0,
        SourceFormat::Webp => crate::info::webp_facts(bytes).0,
        _ => 1,
    }
}

/// Refuses, before decoding, an animation of more than `limits.max_animation_frames` frames
/// or whose frames hold more than `limits.max_source_pixels` pixels together.
///
/// # Errors
/// [`PipelineError::TooManyFrames`] (422).
pub(crate) fn check(frames: u32, (w, h): (u32, u32), limits: &Limits) -> Result<(), PipelineError> {
    let total = u64::from(frames) * u64::from(w) * u64::from(h);
    if frames > limits.max_animation_frames || total > limits.max_source_pixels {
        return Err(PipelineError::TooManyFrames {
            frames,
            width: w,
            height: h,
            max_frames: limits.max_animation_frames,
            max_pixels: limits.max_source_pixels,
        });
    }
    Ok(())
}

fn undecodable(e: impl std::fmt::Display) -> PipelineError {
    PipelineError::Undecodable(e.to_string())
}

/// The frames of an animated GIF or WebP, composed on the canvas, with their delays; at most
/// `take` of them (from the first).
///
/// # Errors
/// [`PipelineError::Undecodable`] for a broken frame.
pub(crate) fn decode(
    bytes: &[u8],
    format: SourceFormat,
    take: usize,
) -> Result<Vec<Timed>, PipelineError> {
    let frames = match format {
        SourceFormat::Gif => GifDecoder::new(Cursor::new(bytes))
            .map_err(undecodable)?
            .into_frames(),
        SourceFormat::Webp => WebPDecoder::new(Cursor::new(bytes))
            .map_err(undecodable)?
            .into_frames(),
        _ => return Err(undecodable("not an animation")),
    };
    frames
        .take(take)
        .map(|frame| {
            let frame = frame.map_err(undecodable)?;
            let (numer, denom) = frame.delay().numer_denom_ms();
            let ms = numer.checked_div(denom).unwrap_or(0);
            Ok((DynamicImage::ImageRgba8(frame.into_buffer()), ms))
        })
        .collect()
}

/// Frame `n` (from 0) of an animation of `count` frames.
///
/// # Errors
/// [`PipelineError::BadParam`] naming `frame` when there is no such frame;
/// [`PipelineError::Undecodable`] for a broken one.
pub(crate) fn nth(
    bytes: &[u8],
    format: SourceFormat,
    n: u32,
    count: u32,
) -> Result<DynamicImage, PipelineError> {
    if n >= count {
        return Err(PipelineError::BadParam {
            name: "frame".into(),
            reason: format!(
                "the image has {count} frame{}",
                if count == 1 { "" } else { "s" }
            ),
        });
    }
    let mut frames = decode(bytes, format, n as usize + 1)?;
    frames
        .pop()
        .map(|(frame, _)| frame)
        .ok_or_else(|| undecodable("the frame is missing"))
}

/// Encodes `frames` (all the same size) as an animation in `format` (WebP or GIF), looping
/// forever, each frame shown for its delay.
///
/// # Errors
/// [`PipelineError::Encode`] when the encoder fails.
pub(crate) fn encode(
    frames: &[Timed],
    format: OutputFormat,
    settings: Settings,
) -> Result<Vec<u8>, PipelineError> {
    let rgba: Vec<(RgbaImage, u32)> = frames
        .iter()
        .map(|(img, ms)| (img.to_rgba8(), *ms))
        .collect();
    match format {
        OutputFormat::Gif => {
            let mut out = Vec::new();
            {
                let mut encoder = GifEncoder::new_with_speed(&mut out, 10);
                encoder.set_repeat(Repeat::Infinite).map_err(encode_error)?;
                encoder
                    .encode_frames(rgba.into_iter().map(|(buffer, ms)| {
                        Frame::from_parts(buffer, 0, 0, Delay::from_numer_denom_ms(ms, 1))
                    }))
                    .map_err(encode_error)?;
            }
            Ok(out)
        }
        _ => webp(&rgba, settings),
    }
}

fn encode_error(e: impl std::fmt::Display) -> PipelineError {
    PipelineError::Encode(format!("animation: {e}"))
}

/// An animated WebP through libwebp's `WebPAnimEncoder`, lossy at `settings.quality`, each
/// frame starting where the previous one's delay ends and the last one shown for its own.
fn webp(frames: &[(RgbaImage, u32)], settings: Settings) -> Result<Vec<u8>, PipelineError> {
    use libwebp_sys as w;
    let Some((first, _)) = frames.first() else {
        return Err(encode_error("no frame"));
    };
    let (width, height) = first.dimensions();
    let (iw, ih) = (
        i32::try_from(width).map_err(encode_error)?,
        i32::try_from(height).map_err(encode_error)?,
    );
    let mut config = webp::WebPConfig::new().map_err(|()| encode_error("webp: config"))?;
    config.quality = f32::from(settings.quality);
    config.alpha_compression = 1;
    config.method = i32::from(settings.webp_effort.min(6));
    // SAFETY: the encoder is created, fed and deleted here, on every path; each picture is
    // initialised by WebPPictureInit, imports from a buffer that outlives the call, and is freed
    // after it was added (the encoder keeps its own copy); the assembled data is copied out and
    // released with WebPDataClear, as libwebp's API requires.
    #[allow(unsafe_code)]
    unsafe {
        let mut options = std::mem::MaybeUninit::<w::WebPAnimEncoderOptions>::uninit();
        #[allow(clippy::cast_possible_wrap)]
        let abi = w::WEBP_MUX_ABI_VERSION as i32;
        if w::WebPAnimEncoderOptionsInitInternal(options.as_mut_ptr(), abi) == 0 {
            return Err(encode_error("webp: options"));
        }
        let mut options = options.assume_init();
        options.anim_params.loop_count = 0;
        let encoder = w::WebPAnimEncoderNewInternal(iw, ih, &raw const options, abi);
        if encoder.is_null() {
            return Err(encode_error("webp: encoder"));
        }
        let mut timestamp: i32 = 0;
        let mut ok = true;
        for (buffer, ms) in frames {
            let mut picture = std::mem::MaybeUninit::<w::WebPPicture>::uninit();
            #[allow(clippy::cast_possible_wrap)]
            let version = w::WEBP_ENCODER_ABI_VERSION as i32;
            if w::WebPPictureInitInternal(picture.as_mut_ptr(), version) == 0 {
                ok = false;
                break;
            }
            let mut picture = picture.assume_init();
            picture.use_argb = 1;
            picture.width = iw;
            picture.height = ih;
            let stride = iw * 4;
            ok &= w::WebPPictureImportRGBA(&raw mut picture, buffer.as_raw().as_ptr(), stride) != 0;
            ok &= ok
                && w::WebPAnimEncoderAdd(encoder, &raw mut picture, timestamp, &raw const config)
                    != 0;
            w::WebPPictureFree(&raw mut picture);
            if !ok {
                break;
            }
            timestamp = timestamp.saturating_add(i32::try_from(*ms).unwrap_or(i32::MAX));
        }
        // The end of the last frame: its delay is kept.
        ok = ok
            && w::WebPAnimEncoderAdd(encoder, std::ptr::null_mut(), timestamp, std::ptr::null())
                != 0;
        let mut data = w::WebPData {
            bytes: std::ptr::null(),
            size: 0,
        };
        ok = ok && w::WebPAnimEncoderAssemble(encoder, &raw mut data) != 0;
        w::WebPAnimEncoderDelete(encoder);
        if !ok || data.bytes.is_null() {
            w::WebPDataClear(&mut data);
            return Err(encode_error("webp: libwebp's animation encoder failed"));
        }
        let out = std::slice::from_raw_parts(data.bytes, data.size).to_vec();
        w::WebPDataClear(&mut data);
        Ok(out)
    }
}
