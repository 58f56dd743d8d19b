//! EXIF orientation: read from a JPEG's APP1 `Exif` segment or the EXIF chunk of a PNG or WebP
//! (their TIFF IFD0, either byte order), or mapped from what the `image` crate reads for a TIFF.
//! Decoding applies it, so every output is upright.

use image::metadata::Orientation;

use super::markers;

/// The EXIF orientation value (1..=8) of what the `image` crate read.
pub(super) fn orientation_to_exif(o: Orientation) -> u8 {
    match o {
        Orientation::NoTransforms => 1,
        Orientation::FlipHorizontal => 2,
        Orientation::Rotate180 => 3,
        Orientation::FlipVertical => 4,
        Orientation::Rotate90FlipH => 5,
        Orientation::Rotate90 => 6,
        Orientation::Rotate270FlipH => 7,
        Orientation::Rotate270 => 8,
    }
}

/// EXIF orientation of a JPEG (tag 0x0112 of IFD0 in the APP1 `Exif` segment), 1..=8.
pub(super) fn jpeg_orientation(bytes: &[u8]) -> Option<u8> {
    markers::segments(bytes)
        .find(|(m, seg)| *m == 0xE1 && seg.starts_with(b"Exif\0\0"))
        .and_then(|(_, seg)| tiff_orientation(&seg[6..]))
}

/// EXIF orientation of an EXIF chunk as a PNG (`eXIf`) or WebP (`EXIF`) holds it, 1..=8: a TIFF
/// structure, which many writers (Pillow, ImageMagick, Photoshop) start with JPEG's `Exif\0\0`
/// as libvips and exiftool accept (the `image` crate reads only the bare structure, so a WebP
/// of Pillow's came out unturned).
pub(super) fn chunk_orientation(chunk: &[u8]) -> Option<u8> {
    tiff_orientation(chunk.strip_prefix(b"Exif\0\0").unwrap_or(chunk))
}

/// The Orientation tag (0x0112) of a TIFF structure's IFD0, either byte order; `None` when
/// absent, truncated or outside 1..=8.
fn tiff_orientation(t: &[u8]) -> Option<u8> {
    let le = match t.get(0..2)? {
        b"II" => true,
        b"MM" => false,
        _ => return None,
    };
    let u16_at = |o: usize| -> Option<u16> {
        let b = t.get(o..o + 2)?;
        Some(if le {
            u16::from_le_bytes([b[0], b[1]])
        } else {
            u16::from_be_bytes([b[0], b[1]])
        })
    };
    let u32_at = |o: usize| -> Option<u32> {
        let b = t.get(o..o + 4)?;
        Some(if le {
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        } else {
            u32::from_be_bytes([b[0], b[1], b[2], b[3]])
        })
    };
    let ifd = u32_at(4)? as usize;
    let count = usize::from(u16_at(ifd)?);
    (0..count)
        .map(|n| ifd + 2 + n * 12)
        .find(|&e| u16_at(e) == Some(0x0112))
        .and_then(|e| u16_at(e + 8))
        .and_then(|v| u8::try_from(v).ok())
        .filter(|v| (1..=8).contains(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exif_orientation_is_read_from_big_and_little_endian_tiff() {
        // IFD0 with one entry: Orientation (0x0112), SHORT, count 1, value 6.
        let le = [
            b'I', b'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0,
        ];
        assert_eq!(tiff_orientation(&le), Some(6));
        let be = [
            b'M', b'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 8, 0, 0,
        ];
        assert_eq!(tiff_orientation(&be), Some(8));
    }

    #[test]
    fn an_exif_chunk_is_read_bare_or_with_the_jpeg_prefix() {
        let bare = [
            b'I', b'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0,
        ];
        assert_eq!(chunk_orientation(&bare), Some(6));
        let prefixed = [b"Exif\0\0".as_slice(), &bare].concat();
        assert_eq!(chunk_orientation(&prefixed), Some(6));
        assert_eq!(chunk_orientation(b"Exif\0\0"), None);
    }
}
