//! The canvas of each derived image in a HEIF or AVIF file (a `grid` of tiles or an `iovl`
//! overlay), read from the file's boxes (ISO/IEC 14496-12 and 23008-12) without libheif.
//!
//! libheif 1.15 reports such an image's size from its `ispe` property, but allocates the canvas
//! it pastes the tiles or layers into from the item's own data. A file may declare 96x64 in
//! `ispe` and an 8508x6974 overlay canvas (a 3 KB input the fuzzer found: 355 MB of RSS), so
//! the pixel limit is checked against this canvas too (`decode::heif::header_size`), and
//! against those of the other derived items libheif decodes with the primary image (a grid's
//! alpha plane is a grid too).
//!
//! A grid also says how many tiles it has (up to 256 x 256), and libheif decodes every one of
//! them, even when all point at the same small coded image: the tile count is held to what
//! the canvas can hold (MIAF, ISO/IEC 23000-22 section 7.3.11.4.2: tiles are at least 64x64).

use std::collections::HashMap;

/// The canvas of a derived image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Canvas {
    pub width: u32,
    pub height: u32,
    /// `(rows, columns)` of a grid; `None` for an overlay.
    pub grid: Option<(u32, u32)>,
    /// Whether this is the primary image (else its alpha plane, depth map, thumbnail...).
    pub primary: bool,
}

/// MIAF's smallest grid tile, in pixels a side.
const MIN_TILE: u32 = 64;

impl Canvas {
    /// Whether a grid has more rows or columns than tiles of at least [`MIN_TILE`] pixels can
    /// make (all but the last reach inside the canvas): such a file is not MIAF, only a way to
    /// make libheif decode thousands of tiles.
    pub(crate) fn has_too_many_tiles(&self) -> bool {
        self.grid.is_some_and(|(rows, columns)| {
            columns > self.width / MIN_TILE + 1 || rows > self.height / MIN_TILE + 1
        })
    }
}

/// The canvas of every `grid` and `iovl` item in the file: the primary image's, and those of
/// the items libheif decodes with it (a grid's alpha plane is a grid too). Empty for a file of
/// coded images only, and what the boxes do not say is left out (libheif then fails on the
/// same boxes).
pub(crate) fn derived_canvases(file: &[u8]) -> Vec<Canvas> {
    derived(file).unwrap_or_default()
}

fn derived(file: &[u8]) -> Option<Vec<Canvas>> {
    let meta = Meta::of(file)?;
    let primary = meta.primary();
    let derived: HashMap<u32, [u8; 4]> = items(meta.iinf?)
        .filter(|(_, kind)| kind == b"grid" || kind == b"iovl")
        .collect();
    if derived.is_empty() {
        return Some(Vec::new());
    }
    let heads = item_heads(meta.iloc?, meta.idat, file, &derived)?;
    Some(
        heads
            .into_iter()
            .filter_map(|(id, head)| {
                let mut canvas = canvas(derived.get(&id)?, &head)?;
                canvas.primary = Some(id) == primary;
                Some(canvas)
            })
            .collect(),
    )
}

/// The children of a file's `meta` box that this module reads.
#[derive(Default)]
struct Meta<'a> {
    pitm: Option<&'a [u8]>,
    iinf: Option<&'a [u8]>,
    iloc: Option<&'a [u8]>,
    idat: Option<&'a [u8]>,
    iprp: Option<&'a [u8]>,
}

impl<'a> Meta<'a> {
    /// The top-level `meta` box of `file`; `None` when there is none.
    fn of(file: &'a [u8]) -> Option<Self> {
        let body = full_box_body(boxes(file).find(|(t, _)| t == b"meta")?.1)?.1;
        let mut meta = Self::default();
        for (kind, body) in boxes(body) {
            match &kind {
                b"pitm" => meta.pitm = Some(body),
                b"iinf" => meta.iinf = Some(body),
                b"iloc" => meta.iloc = Some(body),
                b"idat" => meta.idat = Some(body),
                b"iprp" => meta.iprp = Some(body),
                _ => {}
            }
        }
        Some(meta)
    }

    /// The item ID `pitm` names.
    fn primary(&self) -> Option<u32> {
        let (version, body) = full_box_body(self.pitm?)?;
        let mut r = Reader(body);
        if version == 0 {
            r.u16().map(u32::from)
        } else {
            r.u32()
        }
    }
}

/// Whether the file is a compact HEIF or AVIF (ISO/IEC 23008-12:2025's low-overhead image file
/// format): a top-level `mini` box in place of `meta`, which libheif reads from 1.20 on only.
pub(crate) fn is_compact(file: &[u8]) -> bool {
    boxes(file).any(|(kind, _)| &kind == b"mini")
}

/// The item types of image codings libheif 1.15 has no decoder for, with their names: H.264,
/// JPEG, JPEG 2000, uncompressed (ISO/IEC 23001-17), H.266 and EVC (ISO/IEC 23008-12
/// annexes and ISO/IEC 23001-17).
const UNSUPPORTED_CODINGS: [(&[u8; 4], &str); 6] = [
    (b"avc1", "H.264/AVC"),
    (b"jpeg", "JPEG"),
    (b"j2k1", "JPEG 2000"),
    (b"unci", "uncompressed (ISO/IEC 23001-17)"),
    (b"vvc1", "H.266/VVC"),
    (b"evc1", "EVC"),
];

/// The name of the coding of the primary image when it is one libheif 1.15 cannot decode: the
/// primary item's own type, or for a derived image (grid, overlay, identity) the coding of its
/// coded items when none of them is HEVC or AV1. `None` for HEVC, AV1 and whatever the boxes
/// do not say (libheif's own error then stands).
pub(crate) fn unsupported_coding(file: &[u8]) -> Option<&'static str> {
    let meta = Meta::of(file)?;
    let primary = meta.primary()?;
    let types: Vec<(u32, [u8; 4])> = items(meta.iinf?).collect();
    let name = |kind: &[u8; 4]| {
        UNSUPPORTED_CODINGS
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, name)| *name)
    };
    let (_, kind) = types.iter().find(|(id, _)| *id == primary)?;
    if matches!(kind, b"grid" | b"iovl" | b"iden") {
        if types.iter().any(|(_, k)| matches!(k, b"hvc1" | b"av01")) {
            return None;
        }
        return types.iter().find_map(|(_, k)| name(k));
    }
    name(kind)
}

/// True when the primary item of an AVIF file is coded as monochrome AV1: the `av1C` property
/// associated with it (`ipma`) has its `mono_chrome` bit set (AV1 codec ISO media file format
/// binding, section 2.3.3). False for anything the boxes do not say (a grid's primary has no
/// `av1C` of its own).
pub(crate) fn primary_av1_monochrome(file: &[u8]) -> bool {
    av1_monochrome(file).unwrap_or(false)
}

fn av1_monochrome(file: &[u8]) -> Option<bool> {
    let config = primary_properties(file)?
        .into_iter()
        .find_map(|(kind, body)| (&kind == b"av1C").then_some(body))?;
    // marker/version, profile/level, then tier, high_bitdepth, twelve_bit, mono_chrome (bit 4
    // of the third byte).
    Some(config.get(2)? & 0x10 != 0)
}

/// A transformative property of an image item (ISO/IEC 23008-12 section 6.5.10 to 6.5.12),
/// applied in the order the item lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemTransform {
    /// `clap`: keep the clean aperture, `(left, top, width, height)` in pixels of an image of
    /// the given size, as libheif rounds it.
    Crop {
        width: (u32, u32),
        height: (u32, u32),
        horizontal_offset: (i32, u32),
        vertical_offset: (i32, u32),
    },
    /// `irot`: quarter turns anticlockwise, 0..=3.
    Rotate(u8),
    /// `imir`: 0 mirrors top to bottom (about the horizontal axis), 1 left to right.
    Mirror(u8),
}

impl ItemTransform {
    /// The clean aperture of a `width` x `height` image as `(left, top, width, height)`, clamped
    /// to the image (libheif 1.15's `Box_clap` rounding: the left and top edges rounded down,
    /// the size to the nearest); `None` for other transformations or a degenerate aperture.
    pub(crate) fn crop_rect(&self, width: u32, height: u32) -> Option<(u32, u32, u32, u32)> {
        let Self::Crop {
            width: (wn, wd),
            height: (hn, hd),
            horizontal_offset: (hon, hod),
            vertical_offset: (von, vod),
        } = *self
        else {
            return None;
        };
        if wd == 0 || hd == 0 || hod == 0 || vod == 0 {
            return None;
        }
        let (cw, ch) = (f64::from(wn) / f64::from(wd), f64::from(hn) / f64::from(hd));
        let left =
            f64::from(hon) / f64::from(hod) + (f64::from(width) - 1.0) / 2.0 - (cw - 1.0) / 2.0;
        let top =
            f64::from(von) / f64::from(vod) + (f64::from(height) - 1.0) / 2.0 - (ch - 1.0) / 2.0;
        let (left, top, cw, ch) = (
            left.floor().max(0.0) as u32,
            top.floor().max(0.0) as u32,
            cw.round().max(0.0) as u32,
            ch.round().max(0.0) as u32,
        );
        let (cw, ch) = (
            cw.min(width.saturating_sub(left)),
            ch.min(height.saturating_sub(top)),
        );
        (cw > 0 && ch > 0).then_some((left, top, cw, ch))
    }
}

/// The `clap`, `irot` and `imir` properties of the primary item, in the order it lists them;
/// empty when the boxes do not say.
pub(crate) fn primary_transforms(file: &[u8]) -> Vec<ItemTransform> {
    let Some(properties) = primary_properties(file) else {
        return Vec::new();
    };
    properties
        .into_iter()
        .filter_map(|(kind, body)| {
            let mut r = Reader(body);
            match &kind {
                b"irot" => Some(ItemTransform::Rotate(r.u8()? & 3)),
                b"imir" => Some(ItemTransform::Mirror(r.u8()? & 1)),
                b"clap" => {
                    let mut pair = || Some((r.u32()?, r.u32()?));
                    let (width, height) = (pair()?, pair()?);
                    let (ho, hd) = pair()?;
                    let (vo, vd) = pair()?;
                    Some(ItemTransform::Crop {
                        width,
                        height,
                        horizontal_offset: (ho.cast_signed(), hd),
                        vertical_offset: (vo.cast_signed(), vd),
                    })
                }
                _ => None,
            }
        })
        .collect()
}

/// True when the primary item lists a transformative property (`clap`, `irot`, `imir`) before
/// its `ispe`, as libavif wrote files before 0.9 (an earlier published copy of Link-U's kimono
/// files in AOMediaCodec/av1-avif is one). ISO/IEC 23008-12 section 6.5.1 wants the descriptive
/// properties first; libheif 1.15 then ignores those transformations, where libvips (through a
/// newer libheif) applies them, so the decoder applies them itself (`decode::heif`).
pub(crate) fn transforms_precede_ispe(file: &[u8]) -> bool {
    let Some(properties) = primary_properties(file) else {
        return false;
    };
    let first = |kinds: &[&[u8; 4]]| properties.iter().position(|(k, _)| kinds.contains(&k));
    match (first(&[b"clap", b"irot", b"imir"]), first(&[b"ispe"])) {
        (Some(transform), Some(ispe)) => transform < ispe,
        (Some(_), None) => true,
        _ => false,
    }
}

/// The properties (type, body) associated with the primary item (`pitm`), in the order of its
/// `ipma` entry (ISO/IEC 23008-12 section 9.3).
fn primary_properties(file: &[u8]) -> Option<Vec<([u8; 4], &[u8])>> {
    let meta = Meta::of(file)?;
    let primary = meta.primary()?;
    let iprp = meta.iprp?;
    let properties: Vec<([u8; 4], &[u8])> =
        boxes(boxes(iprp).find(|(t, _)| t == b"ipco")?.1).collect();
    // One `ipma` is the rule, but files with several exist (Link-U's alpha samples): an item's
    // associations are looked for in each.
    for (_, ipma) in boxes(iprp).filter(|(t, _)| t == b"ipma") {
        if let Some(associated) = associations(ipma, primary, &properties) {
            return Some(associated);
        }
    }
    Some(Vec::new())
}

/// The properties one `ipma` box associates with `item`, in its order; `None` when the box
/// does not list the item (or is cut short before it).
fn associations<'a>(
    ipma: &[u8],
    item: u32,
    properties: &[([u8; 4], &'a [u8])],
) -> Option<Vec<([u8; 4], &'a [u8])>> {
    let flags = ipma.get(3).copied()?;
    let (version, body) = full_box_body(ipma)?;
    let mut r = Reader(body);
    for _ in 0..r.u32()? {
        let id = if version < 1 {
            u32::from(r.u16()?)
        } else {
            r.u32()?
        };
        let mut associated = Vec::new();
        for _ in 0..r.u8()? {
            let index = if flags & 1 == 1 {
                usize::from(r.u16()? & 0x7FFF)
            } else {
                usize::from(r.u8()? & 0x7F)
            };
            if let Some(p) = index.checked_sub(1).and_then(|i| properties.get(i)) {
                associated.push(*p);
            }
        }
        if id == item {
            return Some(associated);
        }
    }
    None
}

/// A `grid` or `iovl` record's canvas (ISO/IEC 23008-12 sections 6.6.2.3 and 6.6.2.4).
fn canvas(kind: &[u8; 4], record: &[u8]) -> Option<Canvas> {
    let mut r = Reader(record);
    let _version = r.u8()?;
    let large = r.u8()? & 1 != 0;
    // grid: rows - 1 and columns - 1; iovl: canvas_fill_value[4], 16 bits each.
    let grid = if kind == b"grid" {
        Some((u32::from(r.u8()?) + 1, u32::from(r.u8()?) + 1))
    } else {
        r.skip(8)?;
        None
    };
    let (width, height) = if large {
        (r.u32()?, r.u32()?)
    } else {
        (u32::from(r.u16()?), u32::from(r.u16()?))
    };
    Some(Canvas {
        width,
        height,
        grid,
        primary: false,
    })
}

/// The boxes of `data` in order, as (type, body); stops at the first malformed one.
fn boxes(data: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    let mut rest = data;
    std::iter::from_fn(move || {
        let mut r = Reader(rest);
        let size = r.u32()?;
        let kind: [u8; 4] = r.take(4)?.try_into().ok()?;
        let (header, size) = match size {
            0 => (8, rest.len()),
            1 => (16, usize::try_from(r.u64()?).ok()?),
            n => (8, usize::try_from(n).ok()?),
        };
        let body = rest.get(header..size)?;
        rest = rest.get(size..)?;
        Some((kind, body))
    })
}

/// A full box's version and what follows its version and 24 bits of flags.
fn full_box_body(body: &[u8]) -> Option<(u8, &[u8])> {
    Some((*body.first()?, body.get(4..)?))
}

/// The items of the `iinf` box as (item ID, four-character type), from its `infe` entries of
/// version 2 or 3 (earlier versions have no item type).
fn items(iinf: &[u8]) -> impl Iterator<Item = (u32, [u8; 4])> + '_ {
    let entries = full_box_body(iinf)
        .and_then(|(version, body)| body.get(if version == 0 { 2 } else { 4 }..))
        .unwrap_or_default();
    boxes(entries)
        .filter(|(kind, _)| kind == b"infe")
        .filter_map(|(_, infe)| {
            let (version, body) = full_box_body(infe)?;
            let mut r = Reader(body);
            let item = match version {
                2 => u32::from(r.u16()?),
                3 => r.u32()?,
                _ => return None,
            };
            r.u16()?; // item_protection_index
            let kind: [u8; 4] = r.take(4)?.try_into().ok()?;
            Some((item, kind))
        })
}

/// The first bytes (up to 32) of the data of each item in `wanted`, in one pass over the
/// `iloc` box: from the file (construction method 0) or from `idat` (method 1).
fn item_heads(
    iloc: &[u8],
    idat: Option<&[u8]>,
    file: &[u8],
    wanted: &HashMap<u32, [u8; 4]>,
) -> Option<Vec<(u32, Vec<u8>)>> {
    let (version, body) = full_box_body(iloc)?;
    let mut r = Reader(body);
    let sizes = r.u8()?;
    let (offset_size, length_size) = (sizes >> 4, sizes & 15);
    let sizes = r.u8()?;
    let base_offset_size = sizes >> 4;
    let index_size = if version >= 1 { sizes & 15 } else { 0 };
    let count = if version < 2 {
        u32::from(r.u16()?)
    } else {
        r.u32()?
    };
    let mut heads = Vec::new();
    for _ in 0..count {
        let item = if version < 2 {
            u32::from(r.u16()?)
        } else {
            r.u32()?
        };
        let method = if version >= 1 { r.u16()? & 15 } else { 0 };
        r.u16()?; // data_reference_index
        let base = r.uint(base_offset_size)?;
        let extents = r.u16()?;
        let want = wanted.contains_key(&item);
        let mut head = Vec::new();
        for _ in 0..extents {
            r.uint(index_size)?;
            let offset = base.checked_add(r.uint(offset_size)?)?;
            let length = r.uint(length_size)?;
            if !want || head.len() >= 32 {
                continue;
            }
            let source = match method {
                0 => file,
                1 => idat?,
                _ => return None,
            };
            let start = source.get(usize::try_from(offset).ok()?..)?;
            // A length of 0 means "to the end".
            let len = match usize::try_from(length).ok()? {
                0 => start.len(),
                n => n.min(start.len()),
            };
            head.extend_from_slice(&start[..len.min(32 - head.len())]);
        }
        if want {
            heads.push((item, head));
        }
    }
    Some(heads)
}

/// Big-endian fields read off the front of a slice; `None` past its end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    /// An unsigned field of 0, 4 or 8 bytes (`iloc`'s sizes); 0 bytes reads as 0.
    fn uint(&mut self, bytes: u8) -> Option<u64> {
        match bytes {
            0 => Some(0),
            4 => self.u32().map(u64::from),
            8 => self.u64(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!(
            "{}/tests/fixtures/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap_or_default()
    }

    #[test]
    fn an_iphone_grid_canvas_is_its_declared_size() {
        // Both photos are grids of 8 x 6 HEVC tiles of 512x512; the iPhone's is stored
        // landscape and turned upright by an `irot` property.
        let grid = Canvas {
            width: 4032,
            height: 3024,
            grid: Some((6, 8)),
            primary: true,
        };
        assert_eq!(derived_canvases(&fixture("iphone.heic")), [grid]);
        assert_eq!(derived_canvases(&fixture("window.heic")), [grid]);
        assert!(!grid.has_too_many_tiles());
    }

    #[test]
    fn a_grid_with_tiles_under_64_pixels_has_too_many() {
        let grid = |width, height, rows, columns| Canvas {
            width,
            height,
            grid: Some((rows, columns)),
            primary: true,
        };
        // 100 px: two 64 px tiles (the second reaching past the edge), not three.
        assert!(!grid(100, 100, 2, 2).has_too_many_tiles());
        assert!(grid(100, 100, 2, 3).has_too_many_tiles());
        assert!(grid(96, 64, 256, 256).has_too_many_tiles());
        assert!(!grid(16384, 16384, 256, 256).has_too_many_tiles());
        let overlay = Canvas {
            width: 1,
            height: 1,
            grid: None,
            primary: true,
        };
        assert!(!overlay.has_too_many_tiles());
    }

    #[test]
    fn a_coded_image_or_broken_boxes_have_no_derived_canvas() {
        assert_eq!(derived_canvases(&fixture("lake.jpg")), []);
        let heic = fixture("iphone.heic");
        for cut in [0, 8, 40, 200, 600] {
            let _ = derived_canvases(&heic[..cut.min(heic.len())]);
        }
        assert_eq!(derived_canvases(b""), []);
    }

    #[test]
    fn only_a_monochrome_av1_primary_is_monochrome_and_broken_boxes_are_not() {
        let mono = fixture("lake_mono_10bit.avif");
        assert!(!mono.is_empty());
        assert!(primary_av1_monochrome(&mono));
        assert!(!primary_av1_monochrome(&fixture("lake_irot1.avif")));
        assert!(!primary_av1_monochrome(&fixture("iphone.heic")));
        // Cut anywhere, the boxes say nothing rather than panic.
        for end in (0..mono.len()).step_by(7) {
            let _ = primary_av1_monochrome(&mono[..end]);
        }
        assert!(!primary_av1_monochrome(b"not a file"));
    }

    #[test]
    fn only_old_files_list_their_transformations_before_ispe() {
        assert!(transforms_precede_ispe(&fixture(
            "kimono.rotate90.ispe-last.avif"
        )));
        for file in [
            "kimono.rotate90.avif",
            "lake_irot1_imir0_clap.avif",
            "iphone.heic",
            "lake.jpg",
        ] {
            assert!(!transforms_precede_ispe(&fixture(file)), "{file}");
        }
    }

    #[test]
    fn clap_irot_imir_are_read_in_order_and_the_aperture_is_where_avifenc_put_it() {
        let file = fixture("lake_10bit_irot1_imir0_clap.avif");
        let t = primary_transforms(&file);
        assert_eq!(t.len(), 3, "{t:?}");
        // avifenc --crop 30,20,160,100 on the 240x135 picture, then a quarter turn, a mirror.
        assert_eq!(t[0].crop_rect(240, 135), Some((30, 20, 160, 100)));
        assert_eq!(
            &t[1..],
            &[ItemTransform::Rotate(1), ItemTransform::Mirror(0)]
        );
        // An aperture with a zero denominator is none; cut files say nothing, without panics.
        let zero = ItemTransform::Crop {
            width: (1, 0),
            height: (1, 1),
            horizontal_offset: (0, 1),
            vertical_offset: (0, 1),
        };
        assert_eq!(zero.crop_rect(10, 10), None);
        for end in (0..file.len()).step_by(5) {
            let _ = primary_transforms(&file[..end]);
        }
    }
}
