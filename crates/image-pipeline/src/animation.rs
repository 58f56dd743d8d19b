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
use crate::spec::{EncodeSettings as Settings, Limits, OutputFormat};

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

/// The frames of an animated GIF or WebP, composed on the canvas, with their delays, decoded
/// one at a time as the iterator is advanced.
///
/// # Errors
/// [`PipelineError::Undecodable`] for a broken header (a broken frame is an error item).
pub(crate) fn frames(
    bytes: &[u8],
    format: SourceFormat,
) -> Result<impl Iterator<Item = Result<Timed, PipelineError>> + '_, PipelineError> {
    let frames = match format {
        SourceFormat::Gif => GifDecoder::new(Cursor::new(bytes))
            .map_err(undecodable)?
            .into_frames(),
        SourceFormat::Webp => WebPDecoder::new(Cursor::new(bytes))
            .map_err(undecodable)?
            .into_frames(),
        _ => return Err(undecodable("not an animation")),
    };
    Ok(frames.map(|frame| {
        crate::cancel::check()?;
        let frame = frame.map_err(undecodable)?;
        let (numer, denom) = frame.delay().numer_denom_ms();
        let ms = numer.checked_div(denom).unwrap_or(0);
        Ok((DynamicImage::ImageRgba8(frame.into_buffer()), ms))
    }))
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
    // Each frame is composed on the one before it: decode them in turn, keeping only the last.
    let mut last = None;
    for frame in frames(bytes, format)?.take(n as usize + 1) {
        last = Some(frame?.0);
    }
    last.ok_or_else(|| undecodable("the frame is missing"))
}

/// Encodes `frames` (all the same size, each with its delay in milliseconds) as an animation
/// in `format` (WebP or GIF), looping forever, taking one frame at a time from the iterator
/// (so that only the encoder's state and one frame are held); returns the file and the frames'
/// size.
///
/// # Errors
/// The first error of `frames`; [`PipelineError::Encode`] when the encoder fails.
pub(crate) fn encode(
    frames: impl Iterator<Item = Result<(RgbaImage, u32), PipelineError>>,
    format: OutputFormat,
    settings: Settings,
) -> Result<(Vec<u8>, (u32, u32)), PipelineError> {
    let mut size = None;
    let mut same_size = |buffer: &RgbaImage| {
        let dims = buffer.dimensions();
        match *size.get_or_insert(dims) {
            first if first == dims => Ok(()),
            first => Err(encode_error(format!(
                "a frame of {}x{} among frames of {}x{}",
                dims.0, dims.1, first.0, first.1
            ))),
        }
    };
    let out = match format {
        OutputFormat::Gif => {
            let mut out = Vec::new();
            {
                let mut encoder = GifEncoder::new_with_speed(&mut out, 10);
                encoder.set_repeat(Repeat::Infinite).map_err(encode_error)?;
                for frame in frames {
                    let (buffer, ms) = frame?;
                    same_size(&buffer)?;
                    encoder
                        .encode_frame(Frame::from_parts(
                            buffer,
                            0,
                            0,
                            Delay::from_numer_denom_ms(ms, 1),
                        ))
                        .map_err(encode_error)?;
                }
            }
            out
        }
        _ => {
            let mut encoder: Option<AnimEncoder> = None;
            let mut timestamp: i32 = 0;
            for frame in frames {
                let (buffer, ms) = frame?;
                same_size(&buffer)?;
                let encoder = match &mut encoder {
                    Some(e) => e,
                    None => encoder.insert(AnimEncoder::new(buffer.dimensions(), settings)?),
                };
                encoder.add(&buffer, timestamp)?;
                timestamp = timestamp.saturating_add(i32::try_from(ms).unwrap_or(i32::MAX));
            }
            encoder
                .ok_or_else(|| encode_error("no frame"))?
                .assemble(timestamp)?
        }
    };
    Ok((out, size.unwrap_or((0, 0))))
}

fn encode_error(e: impl std::fmt::Display) -> PipelineError {
    PipelineError::Encode(format!("animation: {e}"))
}

/// An animated WebP through libwebp's `WebPAnimEncoder`, lossy at `settings.quality`, each
/// frame starting where the previous one's delay ends and the last one shown for its own. The
/// encoder is deleted when this is dropped, on every path.
struct AnimEncoder {
    encoder: *mut libwebp_sys::WebPAnimEncoder,
    config: libwebp_sys::WebPConfig,
    size: (i32, i32),
}

impl AnimEncoder {
    fn new((width, height): (u32, u32), settings: Settings) -> Result<Self, PipelineError> {
        use libwebp_sys as w;
        let size = (
            i32::try_from(width).map_err(encode_error)?,
            i32::try_from(height).map_err(encode_error)?,
        );
        let mut config = webp::WebPConfig::new().map_err(|()| encode_error("webp: config"))?;
        config.quality = f32::from(settings.quality);
        config.alpha_compression = 1;
        config.method = i32::from(settings.webp_effort.min(6));
        // SAFETY: the options are initialised by WebPAnimEncoderOptionsInitInternal before
        // they are read; the encoder it creates is owned by `Self` and deleted in `drop`.
        #[expect(
            unsafe_code,
            reason = "an FFI call into a C library; the SAFETY comment above gives the conditions it needs"
        )]
        unsafe {
            let mut options = std::mem::MaybeUninit::<w::WebPAnimEncoderOptions>::uninit();
            let abi = w::WEBP_MUX_ABI_VERSION as i32;
            if w::WebPAnimEncoderOptionsInitInternal(options.as_mut_ptr(), abi) == 0 {
                return Err(encode_error("webp: options"));
            }
            let mut options = options.assume_init();
            options.anim_params.loop_count = 0;
            let encoder = w::WebPAnimEncoderNewInternal(size.0, size.1, &raw const options, abi);
            if encoder.is_null() {
                return Err(encode_error("webp: encoder"));
            }
            Ok(Self {
                encoder,
                config,
                size,
            })
        }
    }

    /// Adds `buffer` (of the encoder's size) shown from `timestamp` milliseconds.
    fn add(&mut self, buffer: &RgbaImage, timestamp: i32) -> Result<(), PipelineError> {
        use libwebp_sys as w;
        if buffer.dimensions() != (self.size.0.unsigned_abs(), self.size.1.unsigned_abs()) {
            return Err(encode_error("webp: a frame of another size"));
        }
        // SAFETY: the picture is initialised by WebPPictureInit, imports from `buffer`, which
        // outlives the call and holds width x height x 4 bytes (checked above), and is freed
        // after it was added (the encoder keeps its own copy).
        #[expect(
            unsafe_code,
            reason = "an FFI call into a C library; the SAFETY comment above gives the conditions it needs"
        )]
        unsafe {
            let mut picture = std::mem::MaybeUninit::<w::WebPPicture>::uninit();
            let version = w::WEBP_ENCODER_ABI_VERSION as i32;
            if w::WebPPictureInitInternal(picture.as_mut_ptr(), version) == 0 {
                return Err(encode_error("webp: picture"));
            }
            let mut picture = picture.assume_init();
            picture.use_argb = 1;
            picture.width = self.size.0;
            picture.height = self.size.1;
            let stride = self.size.0.saturating_mul(4);
            let mut ok =
                w::WebPPictureImportRGBA(&raw mut picture, buffer.as_raw().as_ptr(), stride) != 0;
            ok = ok
                && w::WebPAnimEncoderAdd(
                    self.encoder,
                    &raw mut picture,
                    timestamp,
                    &raw const self.config,
                ) != 0;
            w::WebPPictureFree(&raw mut picture);
            if ok {
                Ok(())
            } else {
                Err(encode_error("webp: libwebp's animation encoder failed"))
            }
        }
    }

    /// Ends the last frame at `end` milliseconds and returns the file.
    fn assemble(self, end: i32) -> Result<Vec<u8>, PipelineError> {
        use libwebp_sys as w;
        // SAFETY: the encoder is live until `self` drops; the assembled data is copied out and
        // released with WebPDataClear, as libwebp's API requires.
        #[expect(
            unsafe_code,
            reason = "an FFI call into a C library; the SAFETY comment above gives the conditions it needs"
        )]
        unsafe {
            let mut ok =
                w::WebPAnimEncoderAdd(self.encoder, std::ptr::null_mut(), end, std::ptr::null())
                    != 0;
            let mut data = w::WebPData {
                bytes: std::ptr::null(),
                size: 0,
            };
            ok = ok && w::WebPAnimEncoderAssemble(self.encoder, &raw mut data) != 0;
            if !ok || data.bytes.is_null() {
                w::WebPDataClear(&mut data);
                return Err(encode_error("webp: libwebp's animation encoder failed"));
            }
            let out = std::slice::from_raw_parts(data.bytes, data.size).to_vec();
            w::WebPDataClear(&mut data);
            Ok(out)
        }
    }
}

impl Drop for AnimEncoder {
    fn drop(&mut self) {
        // SAFETY: created by WebPAnimEncoderNewInternal, deleted once, here.
        #[expect(
            unsafe_code,
            reason = "an FFI call into a C library; the SAFETY comment above gives the conditions it needs"
        )]
        unsafe {
            libwebp_sys::WebPAnimEncoderDelete(self.encoder);
        }
    }
}
