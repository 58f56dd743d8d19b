//! Colour management: pixels described by an embedded ICC profile are converted to sRGB.
//!
//! Phones write Display P3 (and cameras Adobe RGB) profiles into JPEG (APP2), PNG (iCCP),
//! WebP (ICCP) and HEIC (colr) files. Browsers assume sRGB for our outputs, which carry no
//! profile, so without this step such photos come out dull and shifted. The conversion is the
//! one sharp makes (`icc_transform` to libvips' built-in sRGB profile, perceptual intent, 8 bits,
//! no transform cache): Little CMS with the same output profile, so converted pixels are
//! libvips' to the bit and the resize after them matches sharp's too. As in sharp, any embedded
//! RGB profile is applied, sRGB included; a profile that does not parse or is not RGB is ignored,
//! as libvips does, rather than failing the request.

use std::sync::{Arc, Mutex};

use image::DynamicImage;
use lcms2::{
    ColorSpaceSignature, DisallowCache, Flags, GlobalContext, Intent, PixelFormat, Profile,
    Transform,
};

use crate::{PipelineError, cost};

/// libvips' built-in sRGB profile (`libvips/colour/profiles/sRGB.icm`, the 480-byte compact
/// sRGB v4 profile of Clinton Ingram's Compact-ICC-Profiles, CC0), as sharp 0.34 embeds it.
const SRGB_V4: &[u8] = include_bytes!("srgb-v4.icc");

type Lcms = Transform<u8, u8, GlobalContext, DisallowCache>;

/// Transforms of the profiles seen recently: photos from one kind of phone share one profile, so
/// the cost of building a transform is paid once. `None` means "leave the pixels alone".
type Cached = Option<Arc<Lcms>>;
static CACHE: Mutex<Vec<(Vec<u8>, bool, Cached)>> = Mutex::new(Vec::new());
const CACHE_ENTRIES: usize = 16;

/// Converts `img` (8-bit RGB or RGBA, the decoders' output) from the colour space of the ICC
/// profile `icc` to sRGB, in place. No profile, a profile that does not parse or describes
/// another colour model (CMYK, grey) leave the image unchanged.
pub(crate) fn to_srgb(img: &mut DynamicImage, icc: Option<&[u8]>) {
    let Some(icc) = icc.filter(|p| !p.is_empty()) else {
        return;
    };
    let (buf, alpha): (&mut [u8], bool) = match img {
        DynamicImage::ImageRgb8(b) => (b.as_mut(), false),
        DynamicImage::ImageRgba8(b) => (b.as_mut(), true),
        _ => return,
    };
    if let Some(transform) = transform_for(icc, alpha) {
        // In place: with RGBA the alpha samples stay as they are.
        transform.transform_in_place(buf);
    }
}

/// Converts rows of 8-bit RGB (`alpha` false) or RGBA pixels from the colour space of `icc` to
/// sRGB, in place: the same conversion as [`to_srgb`], for a decoder that streams rows. `None`
/// when there is nothing to convert.
pub(crate) struct RowConverter(Arc<Lcms>);

impl RowConverter {
    pub(crate) fn new(icc: Option<&[u8]>, alpha: bool) -> Option<Self> {
        transform_for(icc.filter(|p| !p.is_empty())?, alpha).map(Self)
    }

    pub(crate) fn convert(&self, row: &mut [u8]) {
        self.0.transform_in_place(row);
    }
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

/// libvips' built-in CMYK profile (`libvips/colour/profiles/cmyk.icm`, Graeme W. Gill's
/// "Chemical proof", released into the public domain; nip2's `cmyk.icm`), which libvips and so
/// sharp use for a CMYK image without an embedded profile.
const LIBVIPS_CMYK: &[u8] = include_bytes!("cmyk.icc");

/// CMYK transforms by embedded profile (the empty key is [`LIBVIPS_CMYK`]); parsing the
/// 960 KB default profile costs tens of milliseconds, so it is paid once.
static CMYK_CACHE: Mutex<Vec<(Vec<u8>, Arc<Lcms>)>> = Mutex::new(Vec::new());

/// Converts 8-bit CMYK pixels (4 samples each, 0 = no ink) to 8-bit sRGB (3 samples each)
/// through Little CMS: from the embedded profile `icc` when it parses and describes CMYK,
/// otherwise from libvips' built-in CMYK profile, to libvips' sRGB profile with perceptual
/// intent, as sharp does (`icc_transform` with `input_profile=cmyk`: one link, optimised as Little
/// CMS optimises it, so the pixels are libvips' to the bit; see Cargo.toml for the Little CMS
/// version this needs). `Ok(None)` only when Little CMS cannot link the profiles.
///
/// The RGB buffer (three quarters of `cmyk`'s length) is reserved fallibly ([`rgb_for`]).
///
/// # Errors
/// [`PipelineError::Encode`] when the RGB buffer cannot be reserved.
pub(crate) fn cmyk_to_srgb(
    cmyk: &[u8],
    icc: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, PipelineError> {
    let mut rgb = rgb_for(cmyk.len())?;
    let Some(transform) = cmyk_transform(icc) else {
        return Ok(None);
    };
    transform.transform_pixels(cmyk, &mut rgb);
    Ok(Some(rgb))
}

/// A zeroed RGB buffer for `cmyk_len` CMYK samples: 3 bytes for each whole 4-sample pixel
/// (`cmyk_len / 4 * 3`, which cannot overflow), reserved fallibly ([`cost::buffer`]).
///
/// # Errors
/// [`PipelineError::Encode`] when the memory cannot be reserved.
fn rgb_for(cmyk_len: usize) -> Result<Vec<u8>, PipelineError> {
    cost::buffer(cmyk_len / 4 * 3, 0)
}

/// The Little CMS link from the embedded CMYK profile `icc` (or libvips' built-in one) to
/// libvips' sRGB, from the cache or built and cached; `None` when the profiles cannot be
/// linked.
fn cmyk_transform(icc: Option<&[u8]>) -> Option<Arc<Lcms>> {
    let embedded = icc.filter(|p| {
        Profile::new_icc(p).is_ok_and(|p| p.color_space() == ColorSpaceSignature::CmykData)
    });
    let key = embedded.unwrap_or_default();
    let cached = CMYK_CACHE
        .lock()
        .ok()
        .and_then(|c| c.iter().find(|(k, _)| k == key).map(|(_, t)| Arc::clone(t)));
    let transform = match cached {
        Some(t) => t,
        None => {
            let input = Profile::new_icc(embedded.unwrap_or(LIBVIPS_CMYK)).ok()?;
            let output = Profile::new_icc(SRGB_V4).ok()?;
            let t = Arc::new(
                Lcms::new_flags_context(
                    GlobalContext::new(),
                    &input,
                    PixelFormat::CMYK_8,
                    &output,
                    PixelFormat::RGB_8,
                    Intent::Perceptual,
                    Flags::NO_CACHE,
                )
                .ok()?,
            );
            if let Ok(mut cache) = CMYK_CACHE.lock() {
                if cache.len() >= 4 {
                    cache.remove(0);
                }
                cache.push((key.to_vec(), Arc::clone(&t)));
            }
            t
        }
    };
    Some(transform)
}

fn build(icc: &[u8], alpha: bool) -> Cached {
    let input = Profile::new_icc(icc).ok()?;
    if input.color_space() != ColorSpaceSignature::RgbData {
        return None;
    }
    let output = Profile::new_icc(SRGB_V4).ok()?;
    let format = if alpha {
        PixelFormat::RGBA_8
    } else {
        PixelFormat::RGB_8
    };
    Lcms::new_flags_context(
        GlobalContext::new(),
        &input,
        format,
        &output,
        format,
        Intent::Perceptual,
        Flags::NO_CACHE,
    )
    .ok()
    .map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use moxcms::ColorProfile;

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
    fn srgb_keeps_colours_and_broken_profiles_leave_pixels_alone() {
        for icc in [SRGB_V4, b"not a profile", &[]] {
            let mut img = DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
                2,
                2,
                image::Rgba([180, 80, 60, 7]),
            ));
            to_srgb(&mut img, Some(icc));
            assert_eq!(img.to_rgba8().get_pixel(0, 0).0, [180, 80, 60, 7]);
        }
    }

    #[test]
    fn an_impossible_cmyk_conversion_is_an_error_not_an_abort() {
        // The RGB of usize::MAX CMYK samples: three quarters of 2^64 bytes, over isize::MAX.
        let e = rgb_for(usize::MAX).err();
        assert!(
            matches!(&e, Some(PipelineError::Encode(m)) if m.contains("cannot reserve")),
            "{e:?}"
        );
        // A small one converts: no ink is white.
        let rgb = cmyk_to_srgb(&[0, 0, 0, 0], None).ok().flatten();
        assert_eq!(rgb.as_ref().map(Vec::len), Some(3));
        assert!(rgb.is_some_and(|p| p.iter().all(|&v| v >= 250)), "white");
    }
}
