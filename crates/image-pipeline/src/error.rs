//! The one error type of the pipeline; the server maps each variant to an HTTP status.

/// Why a transformation could not be produced. Cloneable, so that one failure can answer every
/// request that waited for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// A query parameter is invalid (HTTP 400). `name` is the parameter as the client sent it.
    #[error("invalid parameter {name}: {reason}")]
    BadParam { name: String, reason: String },
    /// The bytes are not an image format we read (HTTP 415).
    #[error("not a supported image (expected JPEG, PNG, WebP, GIF, HEIC/HEIF, AVIF, TIFF or SVG)")]
    NotAnImage,
    /// An image in a container we read, stored in a way our decoders do not support: a HEIF
    /// coded as H.264/AVC, JPEG, JPEG 2000 or uncompressed, a compact (`mini`) HEIF or AVIF
    /// (HTTP 415). The message names what and why (docs/image-service.md §7).
    #[error("unsupported image: {0}")]
    Unsupported(String),
    /// The source has more pixels than allowed, known from its header (HTTP 422).
    #[error("source is {width}x{height} pixels, above the limit of {limit} pixels")]
    TooManyPixels { width: u64, height: u64, limit: u64 },
    /// An animation with more frames than MAX_ANIMATION_FRAMES, or whose frames together hold
    /// more than MAX_SOURCE_PIXELS, known from its blocks before decoding (HTTP 422).
    #[error(
        "animation of {frames} frames of {width}x{height} pixels: at most {max_frames} frames and \
         {max_pixels} pixels over all frames are decoded (ask for one frame with frame=N or \
         animated=false)"
    )]
    TooManyFrames {
        frames: u32,
        width: u32,
        height: u32,
        max_frames: u32,
        max_pixels: u64,
    },
    /// The source claims a supported format but cannot be decoded: truncated or corrupt (HTTP 422).
    #[error("source image cannot be decoded: {0}")]
    Undecodable(String),
    /// Encoding the output failed (HTTP 500).
    #[error("encoding the output failed: {0}")]
    Encode(String),
    /// The job was stopped through its [`crate::Cancel`]: the client left, the server is
    /// shutting down, or the request's deadline passed (HTTP 503).
    #[error("the transformation was cancelled")]
    Cancelled,
}
