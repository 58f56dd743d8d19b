//! Colour management: pixels described by an embedded ICC profile are converted to sRGB.
//!
//! Phones write Display P3 (and cameras Adobe RGB) profiles into JPEG (APP2), PNG (iCCP),
//! WebP (ICCP) and HEIC (colr) files. Browsers assume sRGB for our outputs, which carry no
//! profile, so without this step such photos come out dull and shifted: sharp (libvips) converts
//! them too. The conversion uses moxcms (pure Rust, perceptual intent as sharp asks of lcms2).
//! A profile that maps every probe colour onto itself (sRGB under any name) costs one lookup in a
//! small cache and leaves the pixels alone; a profile that does not parse or is not RGB is
//! ignored, as libvips does, rather than failing the request.

use std::sync::{Arc, Mutex};

use image::DynamicImage;
use moxcms::{ColorProfile, DataColorSpace, Layout, Transform8BitExecutor, TransformOptions};

/// Transforms of the profiles seen recently: photos from one kind of phone share one profile, so
/// the cost of building a transform is paid once. `None` means "leave the pixels alone".
type Cached = Option<Arc<Transform8BitExecutor>>;
static CACHE: Mutex<Vec<(Vec<u8>, bool, Cached)>> = Mutex::new(Vec::new());
const CACHE_ENTRIES: usize = 16;

/// Converts `img` (8-bit RGB or RGBA, the decoders' output) from the colour space of the ICC
/// profile `icc` to sRGB, in place. No profile, an sRGB profile, a profile that does not parse or
/// describes another colour model (CMYK, grey) leave the image unchanged.
pub(crate) fn to_srgb(img: &mut DynamicImage, icc: Option<&[u8]>) {
    let Some(icc) = icc.filter(|p| !p.is_empty()) else {
        return;
    };
    let (buf, alpha): (&mut [u8], bool) = match img {
        DynamicImage::ImageRgb8(b) => (b.as_mut(), false),
        DynamicImage::ImageRgba8(b) => (b.as_mut(), true),
        _ => return,
    };
    let Some(transform) = transform_for(icc, alpha) else {
        return;
    };
    // moxcms transforms from one buffer into another; a chunk at a time keeps the copy small.
    let chunk = chunk_len(buf.len(), alpha);
    if chunk == 0 {
        return;
    }
    let mut src = vec![0u8; chunk];
    for line in buf.chunks_mut(chunk) {
        let src = &mut src[..line.len()];
        src.copy_from_slice(line);
        // The lengths always agree; a failure leaves the row as decoded.
        let _ = transform.transform(src, line);
    }
}

/// Bytes converted per call: whole pixels, at most about 64 KiB.
fn chunk_len(len: usize, alpha: bool) -> usize {
    let px = if alpha { 4 } else { 3 };
    (64 * 1024 / px).min(len / px) * px
}

fn transform_for(icc: &[u8], alpha: bool) -> Cached {
    if let Ok(cache) = CACHE.lock()
        && let Some((_, _, t)) = cache.iter().find(|(p, a, _)| *a == alpha && p == icc)
    {
        return t.clone();
    }
    let built = build(icc, alpha);
    if let Ok(mut cache) = CACHE.lock() {
        if cache.len() >= CACHE_ENTRIES {
            cache.remove(0);
        }
        cache.push((icc.to_vec(), alpha, built.clone()));
    }
    built
}

fn build(icc: &[u8], alpha: bool) -> Cached {
    let profile = ColorProfile::new_from_slice(icc).ok()?;
    if profile.color_space != DataColorSpace::Rgb {
        return None;
    }
    let layout = if alpha { Layout::Rgba } else { Layout::Rgb };
    let transform = profile
        .create_transform_8bit(
            layout,
            &ColorProfile::new_srgb(),
            layout,
            TransformOptions::default(),
        )
        .ok()?;
    if is_identity(transform.as_ref(), alpha) {
        None
    } else {
        Some(transform)
    }
}

/// True when the transform maps a spread of colours (greys, primaries, secondaries, skin and
/// sky tones) onto themselves within one level: the profile is sRGB whatever its name.
fn is_identity(t: &Transform8BitExecutor, alpha: bool) -> bool {
    const PROBES: [[u8; 3]; 12] = [
        [0, 0, 0],
        [255, 255, 255],
        [128, 128, 128],
        [40, 40, 40],
        [255, 0, 0],
        [0, 255, 0],
        [0, 0, 255],
        [255, 255, 0],
        [0, 255, 255],
        [255, 0, 255],
        [224, 172, 140],
        [90, 150, 220],
    ];
    let src: Vec<u8> = PROBES
        .iter()
        .flat_map(|p| {
            let mut px = p.to_vec();
            if alpha {
                px.push(255);
            }
            px
        })
        .collect();
    let mut dst = vec![0u8; src.len()];
    t.transform(&src, &mut dst).is_ok() && src.iter().zip(&dst).all(|(a, b)| a.abs_diff(*b) <= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p3_icc() -> Vec<u8> {
        ColorProfile::new_display_p3().encode().unwrap_or_default()
    }

    #[test]
    fn display_p3_red_becomes_more_saturated_srgb() {
        let icc = p3_icc();
        assert!(!icc.is_empty());
        let mut img =
            DynamicImage::ImageRgb8(image::RgbImage::from_pixel(4, 3, image::Rgb([180, 80, 60])));
        to_srgb(&mut img, Some(&icc));
        let p = img.to_rgb8().get_pixel(1, 1).0;
        // Display P3 (180, 80, 60) is sRGB (194, 72, 52) by the published matrices.
        assert!(
            p[0].abs_diff(194) <= 2 && p[1].abs_diff(72) <= 2 && p[2].abs_diff(52) <= 2,
            "{p:?}"
        );
    }

    #[test]
    fn srgb_and_broken_profiles_leave_pixels_alone() {
        let srgb = ColorProfile::new_srgb().encode().unwrap_or_default();
        for icc in [&srgb[..], b"not a profile", &[]] {
            let mut img = DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
                2,
                2,
                image::Rgba([180, 80, 60, 7]),
            ));
            to_srgb(&mut img, Some(icc));
            assert_eq!(img.to_rgba8().get_pixel(0, 0).0, [180, 80, 60, 7]);
        }
    }
}
