//! Generated test inputs (feature `samples`): an EXIF-oriented JPEG, a PNG decompression
//! bomb, PNG/GIF/WebP re-encodings of real photos. For tests and benchmarks only.

use image::{DynamicImage, ImageEncoder, RgbaImage};

/// A committed test photo: `tests/fixtures/<name>` of this crate (sources and licences in
/// `tests/fixtures/ATTRIBUTION.md`). Panics when it is absent (test helper).
#[expect(
    clippy::expect_used,
    reason = "a test helper: a missing fixture or a failing encoder is the test's failure"
)]
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).expect(&path)
}

/// Inserts an APP1 `Exif` segment with IFD0 Orientation = `orientation` after the SOI marker.
pub fn with_exif_orientation(jpeg: &[u8], orientation: u8) -> Vec<u8> {
    let tiff: [u8; 26] = [
        b'M',
        b'M',
        0,
        42,
        0,
        0,
        0,
        8, // header, IFD0 at 8
        0,
        1, // one entry
        0x01,
        0x12,
        0,
        3,
        0,
        0,
        0,
        1,
        0,
        orientation,
        0,
        0, // Orientation SHORT 1
        0,
        0,
        0,
        0, // no next IFD
    ];
    let mut seg = b"Exif\0\0".to_vec();
    seg.extend_from_slice(&tiff);
    let len = u16::try_from(seg.len() + 2).unwrap_or(u16::MAX);
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&seg);
    out.extend_from_slice(&jpeg[2..]);
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&u32::try_from(data.len()).unwrap_or(0).to_be_bytes());
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
}

/// A valid-looking PNG whose header claims `width` x `height` RGB pixels, with almost no data:
/// decoding it would allocate width*height*3 bytes.
pub fn png_bomb(width: u32, height: u32) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    // A tiny zlib stream (empty stored block).
    chunk(
        &mut out,
        b"IDAT",
        &[0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0, 0, 0, 1],
    );
    chunk(&mut out, b"IEND", &[]);
    out
}

/// Encodes RGBA pixels as PNG.
pub fn png(img: &RgbaImage) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = image::codecs::png::PngEncoder::new(&mut out).write_image(
        img.as_raw(),
        img.width(),
        img.height(),
        image::ExtendedColorType::Rgba8,
    );
    out
}

/// Encodes as a one-frame GIF (palette-quantised).
pub fn gif(img: &RgbaImage) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = image::codecs::gif::GifEncoder::new(&mut out);
        let _ = enc.encode_frame(image::Frame::new(img.clone()));
    }
    out
}

/// Encodes as lossless WebP.
pub fn webp(img: &RgbaImage) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = DynamicImage::ImageRgba8(img.clone())
        .write_with_encoder(image::codecs::webp::WebPEncoder::new_lossless(&mut out));
    out
}

/// Encodes RGB pixels as a baseline 4:2:0 JPEG at `quality` (libjpeg-turbo).
pub fn jpeg(img: &image::RgbImage, quality: i32) -> Vec<u8> {
    let image = turbojpeg::Image {
        pixels: img.as_raw().as_slice(),
        width: img.width() as usize,
        pitch: img.width() as usize * 3,
        height: img.height() as usize,
        format: turbojpeg::PixelFormat::RGB,
    };
    turbojpeg::compress(image, quality, turbojpeg::Subsamp::Sub2x2)
        .map(|b| b.to_vec())
        .unwrap_or_default()
}

/// Inserts `icc` as APP2 `ICC_PROFILE` segments (split in 65,519-byte chunks) after the SOI
/// marker of a JPEG.
pub fn with_icc_profile(jpeg: &[u8], icc: &[u8]) -> Vec<u8> {
    let chunks: Vec<&[u8]> = icc.chunks(65_519).collect();
    let count = u8::try_from(chunks.len()).unwrap_or(u8::MAX);
    let mut out = jpeg[..2].to_vec();
    for (i, chunk) in chunks.iter().enumerate() {
        let len = u16::try_from(chunk.len() + 16).unwrap_or(u16::MAX);
        out.extend_from_slice(&[0xFF, 0xE2]);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(b"ICC_PROFILE\0");
        out.extend_from_slice(&[u8::try_from(i + 1).unwrap_or(u8::MAX), count]);
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// Encodes RGBA pixels as PNG with `icc` in an iCCP chunk.
pub fn png_with_icc(img: &RgbaImage, icc: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = image::codecs::png::PngEncoder::new(&mut out);
    let _ = encoder.set_icc_profile(icc.to_vec());
    let _ = encoder.write_image(
        img.as_raw(),
        img.width(),
        img.height(),
        image::ExtendedColorType::Rgba8,
    );
    out
}

/// The embedded ICC profile of a HEIF file (for example the Display P3 profile of an iPhone
/// photo), if it has one.
pub fn heif_icc_profile(heif: &[u8]) -> Option<Vec<u8>> {
    let ctx = crate::decode::heif::context(heif).ok()?;
    let handle = ctx.primary_image_handle().ok()?;
    handle.color_profile_raw().map(|raw| raw.data)
}

/// `img` as a HEIC file, written by libheif's own HEVC encoder (x265) at quality 90: with an
/// alpha plane when `alpha` is true, else from its RGB alone. Panics if libheif has no HEVC
/// encoder (test helper).
pub fn heic(img: &RgbaImage, alpha: bool) -> Vec<u8> {
    use libheif_rs::{Channel, ColorSpace, RgbChroma};
    let (chroma, channels) = if alpha {
        (RgbChroma::Rgba, 4)
    } else {
        (RgbChroma::Rgb, 3)
    };
    let rows = img
        .rows()
        .map(|row| row.flat_map(|px| px.0[..channels].to_vec()).collect());
    heic_of_plane(
        img.dimensions(),
        ColorSpace::Rgb(chroma),
        Channel::Interleaved,
        rows,
    )
}

/// `img` as a monochrome HEIC file (a luma plane only), written by libheif's HEVC encoder.
pub fn heic_grey(img: &image::GrayImage) -> Vec<u8> {
    use libheif_rs::{Channel, ColorSpace};
    let rows = img.rows().map(|row| row.map(|px| px.0[0]).collect());
    heic_of_plane(img.dimensions(), ColorSpace::Monochrome, Channel::Y, rows)
}

/// A HEIC file of one 8-bit plane (`Interleaved` or `Y`) in `space`, filled from `rows`.
#[expect(
    clippy::expect_used,
    reason = "a test helper: a missing fixture or a failing encoder is the test's failure"
)]
fn heic_of_plane(
    (width, height): (u32, u32),
    space: libheif_rs::ColorSpace,
    channel: libheif_rs::Channel,
    rows: impl Iterator<Item = Vec<u8>>,
) -> Vec<u8> {
    let mut image = libheif_rs::Image::new(width, height, space).expect("libheif image");
    image
        .create_plane(channel, width, height, 8)
        .expect("libheif plane");
    let planes = image.planes_mut();
    let plane = match channel {
        libheif_rs::Channel::Y => planes.y,
        _ => planes.interleaved,
    }
    .expect("the plane just made");
    for (y, row) in rows.enumerate() {
        plane.data[y * plane.stride..][..row.len()].copy_from_slice(&row);
    }
    encode_heic(&image)
}

/// Holds the pipeline's HEIF decoder (one HEIF decode at a time per process) until the guard is
/// dropped: a HEIF decode started meanwhile waits, so a test can see what happens while one is
/// in progress.
pub fn hold_heif_decoder() -> std::sync::MutexGuard<'static, ()> {
    crate::decode::heif::hold_gate()
}

/// The process's libheif, initialised once and never deinitialised: tests that call libheif
/// themselves use it rather than a `LibHeif` of their own, whose drop could tear down libheif's
/// plugins while a decode runs on another thread (see `decode::heif`).
pub fn libheif() -> &'static libheif_rs::LibHeif {
    crate::decode::heif::libheif()
}

/// `image` (any libheif layout and depth) as a HEIC file, written by libheif's HEVC encoder
/// (x265) at quality 90. Panics if libheif has no HEVC encoder (test helper).
#[expect(
    clippy::expect_used,
    reason = "a test helper: a missing fixture or a failing encoder is the test's failure"
)]
pub fn encode_heic(image: &libheif_rs::Image) -> Vec<u8> {
    let lib = libheif();
    let mut ctx = libheif_rs::HeifContext::new().expect("libheif context");
    let mut encoder = lib
        .encoder_for_format(libheif_rs::CompressionFormat::Hevc)
        .expect("libheif has an HEVC encoder");
    encoder
        .set_quality(libheif_rs::EncoderQuality::Lossy(90))
        .expect("quality");
    ctx.encode_image(image, &mut encoder, None)
        .expect("HEVC encode");
    ctx.write_to_bytes().expect("HEIF bytes")
}

/// A two-frame animated WebP (libwebp's animation encoder, lossless): `first` for 100 ms, then
/// `second`.
#[expect(
    clippy::expect_used,
    reason = "a test helper: a missing fixture or a failing encoder is the test's failure"
)]
pub fn animated_webp(first: &RgbaImage, second: &RgbaImage) -> Vec<u8> {
    let mut config = webp::WebPConfig::new().expect("libwebp config");
    config.lossless = 1;
    let mut encoder = webp::AnimEncoder::new(first.width(), first.height(), &config);
    encoder.add_frame(webp::AnimFrame::from_rgba(
        first.as_raw(),
        first.width(),
        first.height(),
        0,
    ));
    encoder.add_frame(webp::AnimFrame::from_rgba(
        second.as_raw(),
        second.width(),
        second.height(),
        100,
    ));
    encoder.try_encode().expect("animated WebP").to_vec()
}
