//! A JPEG's marker segments, read by the EXIF and ICC readers and the CMYK check. Below `jpeg`, `exif` and `icc`,
//! so that `jpeg` (which converts with the ICC profile) and `icc` need not import each other.

/// The marker segments of a JPEG before its scan data, as (marker, payload after the length).
pub(super) fn segments(bytes: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut i = 2;
    std::iter::from_fn(move || {
        if i + 4 > bytes.len() || bytes[i] != 0xFF {
            return None;
        }
        let marker = bytes[i + 1];
        if marker == 0xDA || marker == 0xD9 {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]));
        let seg = bytes.get(i + 4..i + 2 + len)?;
        i += 2 + len;
        Some((marker, seg))
    })
}
