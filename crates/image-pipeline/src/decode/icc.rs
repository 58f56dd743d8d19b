//! Embedded colour profiles: a JPEG's APP2 `ICC_PROFILE` chunks joined, and a HEIF's `colr`
//! box (ICC, or an nclx one turned into a profile when its primaries are not sRGB's). Decoding
//! converts with them to sRGB (`colour`).

use super::markers;

/// The ICC profile of a JPEG: the APP2 `ICC_PROFILE` chunks joined in their sequence order.
pub(crate) fn jpeg_icc(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut chunks: Vec<(u8, &[u8])> = markers::segments(bytes)
        .filter(|(m, seg)| *m == 0xE2 && seg.len() > 14 && seg.starts_with(b"ICC_PROFILE\0"))
        .map(|(_, seg)| (seg[12], &seg[14..]))
        .collect();
    chunks.sort_by_key(|&(seq, _)| seq);
    let icc: Vec<u8> = chunks
        .into_iter()
        .flat_map(|(_, data)| data)
        .copied()
        .collect();
    (!icc.is_empty()).then_some(icc)
}

pub(crate) fn heif_icc(handle: &libheif_rs::ImageHandle) -> Option<Vec<u8>> {
    if let Some(raw) = handle.color_profile_raw()
        && raw.data.len() > 128
    {
        return Some(raw.data);
    }
    let nclx = handle.color_profile_nclx()?;
    let primaries = nclx.color_primaries() as u8;
    // 1 (BT.709), 2 (unspecified) and 0 (reserved) are sRGB's primaries or nothing said.
    if primaries <= 2 {
        return None;
    }
    // Only the primaries and the transfer matter (libheif already turned YCbCr into RGB). Still
    // images that say "unspecified" or a BT.709-family video curve are treated as sRGB-encoded,
    // as browsers do.
    let transfer = match nclx.transfer_characteristics() as u8 {
        0..=3 | 6 | 14 | 15 => moxcms::TransferCharacteristics::Srgb,
        t => moxcms::TransferCharacteristics::try_from(t).ok()?,
    };
    let cicp = moxcms::CicpProfile {
        color_primaries: moxcms::CicpColorPrimaries::try_from(primaries).ok()?,
        transfer_characteristics: transfer,
        matrix_coefficients: moxcms::MatrixCoefficients::Identity,
        full_range: true,
    };
    moxcms::ColorProfile::new_from_cicp(cicp).encode().ok()
}
