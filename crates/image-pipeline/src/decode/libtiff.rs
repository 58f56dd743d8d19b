//! The TIFF files the `tiff` crate refuses, through the system libtiff (4.5, Debian 12), as
//! libvips reads every TIFF: YCbCr with subsampled chroma outside JPEG (libtiff's
//! `ycbcr-cat.tif`), CCITT Group 3 fax (`fax2d.tif`, `g3test.tif`) and the other codings the
//! crate lacks. Only a refusal of the crate comes here (docs/image-service.md, "TIFF through
//! libtiff"); every other TIFF keeps the crate's decoder.
//!
//! libtiff reads from our buffer through client callbacks (no file, no mapping), its own
//! allocations are capped ([`MAX_SINGLE_ALLOC`]), its messages go to a handler that keeps them
//! off stderr, and the picture is read by `TIFFReadRGBAImageOriented`, which converts every
//! photometric interpretation it knows to 8-bit RGBA, in the stored order (the pipeline applies
//! the Orientation tag, which [`header`] reports, as for every TIFF). The caller has checked the
//! pixel count against MAX_SOURCE_PIXELS from [`header`] before [`decode`] allocates.
//!
//! No crate binds libtiff and is maintained (the issue asked for one first), so these few
//! declarations are ours; each `unsafe` block says why it holds.
#![expect(
    unsafe_code,
    reason = "the FFI to libtiff: no maintained crate binds it, and the TIFF files the tiff crate refuses need it"
)]

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;

use image::RgbaImage;

use crate::error::PipelineError;

/// The largest single allocation libtiff may make for one file: 256 MiB. A strip or tile of a
/// hostile file that claims more is refused by libtiff with an error, not allocated.
const MAX_SINGLE_ALLOC: isize = 256 << 20;

/// `TIFFTAG_IMAGEWIDTH`, `TIFFTAG_IMAGELENGTH` and `TIFFTAG_ORIENTATION` (tiff.h).
const TAG_WIDTH: u32 = 256;
const TAG_LENGTH: u32 = 257;
const TAG_ORIENTATION: u32 = 274;

#[repr(C)]
struct Tiff {
    _private: [u8; 0],
}

#[repr(C)]
struct OpenOptions {
    _private: [u8; 0],
}

type ReadWriteProc = unsafe extern "C" fn(*mut c_void, *mut c_void, isize) -> isize;
type SeekProc = unsafe extern "C" fn(*mut c_void, u64, c_int) -> u64;
type CloseProc = unsafe extern "C" fn(*mut c_void) -> c_int;
type SizeProc = unsafe extern "C" fn(*mut c_void) -> u64;
type MapProc = unsafe extern "C" fn(*mut c_void, *mut *mut c_void, *mut u64) -> c_int;
type UnmapProc = unsafe extern "C" fn(*mut c_void, *mut c_void, u64);
/// `TIFFErrorHandlerExtR`; the last argument is a `va_list`, which we never read.
type ErrorHandler = unsafe extern "C" fn(
    *mut Tiff,
    *mut c_void,
    *const c_char,
    *const c_char,
    *mut c_void,
) -> c_int;

#[link(name = "tiff")]
unsafe extern "C" {
    fn TIFFOpenOptionsAlloc() -> *mut OpenOptions;
    fn TIFFOpenOptionsFree(options: *mut OpenOptions);
    fn TIFFOpenOptionsSetMaxSingleMemAlloc(options: *mut OpenOptions, max: isize);
    fn TIFFOpenOptionsSetErrorHandlerExtR(
        options: *mut OpenOptions,
        handler: Option<ErrorHandler>,
        data: *mut c_void,
    );
    fn TIFFOpenOptionsSetWarningHandlerExtR(
        options: *mut OpenOptions,
        handler: Option<ErrorHandler>,
        data: *mut c_void,
    );
    fn TIFFClientOpenExt(
        name: *const c_char,
        mode: *const c_char,
        handle: *mut c_void,
        read: ReadWriteProc,
        write: ReadWriteProc,
        seek: SeekProc,
        close: CloseProc,
        size: SizeProc,
        map: MapProc,
        unmap: UnmapProc,
        options: *mut OpenOptions,
    ) -> *mut Tiff;
    fn TIFFGetField(tiff: *mut Tiff, tag: u32, ...) -> c_int;
    fn TIFFReadRGBAImageOriented(
        tiff: *mut Tiff,
        width: u32,
        height: u32,
        raster: *mut u32,
        orientation: c_int,
        stop_on_error: c_int,
    ) -> c_int;
    fn TIFFClose(tiff: *mut Tiff);
}

/// The buffer libtiff reads, with its read position.
struct Source<'a> {
    bytes: &'a [u8],
    at: u64,
    /// The first error libtiff reported, for the refusal's message.
    error: Mutex<Option<String>>,
}

unsafe extern "C" fn read(handle: *mut c_void, buf: *mut c_void, size: isize) -> isize {
    // SAFETY: `handle` is the `Source` that `Open::new` passed and that outlives the TIFF
    // handle; libtiff gives a writable `buf` of `size` bytes.
    let source = unsafe { &mut *handle.cast::<Source<'_>>() };
    let Ok(size) = usize::try_from(size) else {
        return -1;
    };
    let start = usize::try_from(source.at)
        .unwrap_or(usize::MAX)
        .min(source.bytes.len());
    let n = size.min(source.bytes.len() - start);
    // SAFETY: `n` bytes fit both in `buf` (n <= size) and after `start` in the buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(source.bytes.as_ptr().add(start), buf.cast::<u8>(), n);
    }
    source.at = (start + n) as u64;
    n as isize
}

unsafe extern "C" fn write(_: *mut c_void, _: *mut c_void, _: isize) -> isize {
    -1
}

unsafe extern "C" fn seek(handle: *mut c_void, offset: u64, whence: c_int) -> u64 {
    // SAFETY: as in `read`.
    let source = unsafe { &mut *handle.cast::<Source<'_>>() };
    let len = source.bytes.len() as u64;
    // SEEK_SET 0, SEEK_CUR 1, SEEK_END 2; toff_t is unsigned, a "negative" offset wraps.
    let to = match whence {
        0 => Some(offset),
        1 => Some(source.at.wrapping_add(offset)),
        2 => Some(len.wrapping_add(offset)),
        _ => None,
    };
    match to {
        Some(to) if to <= len => {
            source.at = to;
            to
        }
        _ => u64::MAX,
    }
}

unsafe extern "C" fn close(_: *mut c_void) -> c_int {
    0
}

unsafe extern "C" fn size(handle: *mut c_void) -> u64 {
    // SAFETY: as in `read`.
    let source = unsafe { &*handle.cast::<Source<'_>>() };
    source.bytes.len() as u64
}

unsafe extern "C" fn map(_: *mut c_void, _: *mut *mut c_void, _: *mut u64) -> c_int {
    0
}

unsafe extern "C" fn unmap(_: *mut c_void, _: *mut c_void, _: u64) {}

unsafe extern "C" fn on_error(
    _: *mut Tiff,
    data: *mut c_void,
    module: *const c_char,
    format: *const c_char,
    _: *mut c_void,
) -> c_int {
    // SAFETY: `data` is the `Source` given with the handler; `module` and `format` are
    // libtiff's NUL-terminated strings or null.
    let source = unsafe { &*data.cast::<Source<'_>>() };
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: non-null, NUL-terminated (libtiff's own strings).
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    if let Ok(mut first) = source.error.lock() {
        first.get_or_insert_with(|| format!("{}: {}", text(module), text(format)));
    }
    1
}

unsafe extern "C" fn on_warning(
    _: *mut Tiff,
    _: *mut c_void,
    _: *const c_char,
    _: *const c_char,
    _: *mut c_void,
) -> c_int {
    1
}

/// An open libtiff handle over a buffer, closed on drop.
struct Open<'a> {
    tiff: *mut Tiff,
    /// Boxed so its address, which libtiff holds, stays put.
    source: Box<Source<'a>>,
}

impl<'a> Open<'a> {
    fn new(bytes: &'a [u8]) -> Result<Self, PipelineError> {
        let mut source = Box::new(Source {
            bytes,
            at: 0,
            error: Mutex::new(None),
        });
        let handle: *mut Source<'a> = &mut *source;
        // SAFETY: the options are allocated, used by the open and freed here; the handlers and
        // `handle` stay valid while the TIFF is open (the box lives in `Open`, which closes the
        // TIFF before dropping it).
        let tiff = unsafe {
            let options = TIFFOpenOptionsAlloc();
            if options.is_null() {
                return Err(PipelineError::Undecodable("libtiff: out of memory".into()));
            }
            TIFFOpenOptionsSetMaxSingleMemAlloc(options, MAX_SINGLE_ALLOC);
            TIFFOpenOptionsSetErrorHandlerExtR(options, Some(on_error), handle.cast());
            TIFFOpenOptionsSetWarningHandlerExtR(options, Some(on_warning), handle.cast());
            let tiff = TIFFClientOpenExt(
                c"buffer".as_ptr(),
                c"rm".as_ptr(),
                handle.cast(),
                read,
                write,
                seek,
                close,
                size,
                map,
                unmap,
                options,
            );
            TIFFOpenOptionsFree(options);
            tiff
        };
        let open = Open { tiff, source };
        if open.tiff.is_null() {
            return Err(open.refusal("cannot read the TIFF header"));
        }
        Ok(open)
    }

    /// The first error libtiff reported, or `fallback`, as a 422.
    fn refusal(&self, fallback: &str) -> PipelineError {
        let first = self.source.error.lock().ok().and_then(|e| e.clone());
        PipelineError::Undecodable(format!("libtiff: {}", first.as_deref().unwrap_or(fallback)))
    }

    fn field_u32(&self, tag: u32) -> Option<u32> {
        let mut value: u32 = 0;
        // SAFETY: the three tags read here are uint32 fields, written through the pointer.
        let ok = unsafe { TIFFGetField(self.tiff, tag, &mut value as *mut u32) };
        (ok == 1).then_some(value)
    }

    fn field_u16(&self, tag: u32) -> Option<u16> {
        let mut value: u16 = 0;
        // SAFETY: Orientation is a uint16 field, written through the pointer.
        let ok = unsafe { TIFFGetField(self.tiff, tag, &mut value as *mut u16) };
        (ok == 1).then_some(value)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.tiff.is_null() {
            // SAFETY: opened by `new`, closed once.
            unsafe { TIFFClose(self.tiff) };
        }
    }
}

/// The first image's stored width and height and its EXIF-style orientation (1 to 8, 1 when
/// absent), read without decoding.
///
/// # Errors
/// [`PipelineError::Undecodable`] (422) when libtiff cannot read the header either.
pub(super) fn header(bytes: &[u8]) -> Result<(u32, u32, u8), PipelineError> {
    let open = Open::new(bytes)?;
    let (Some(width), Some(height)) = (open.field_u32(TAG_WIDTH), open.field_u32(TAG_LENGTH))
    else {
        return Err(open.refusal("no image size"));
    };
    let orientation = open
        .field_u16(TAG_ORIENTATION)
        .and_then(|o| u8::try_from(o).ok())
        .filter(|o| (1..=8).contains(o))
        .unwrap_or(1);
    Ok((width, height, orientation))
}

/// The first image as 8-bit RGBA in its stored order (its Orientation not applied).
///
/// # Errors
/// [`PipelineError::Undecodable`] (422) when libtiff cannot decode it, with libtiff's first
/// error; [`PipelineError::TooManyPixels`]-sized buffers are the caller's to prevent.
pub(super) fn decode(bytes: &[u8]) -> Result<RgbaImage, PipelineError> {
    let open = Open::new(bytes)?;
    let (Some(width), Some(height)) = (open.field_u32(TAG_WIDTH), open.field_u32(TAG_LENGTH))
    else {
        return Err(open.refusal("no image size"));
    };
    // Asked for the file's own orientation, libtiff flips nothing: the rows come as stored.
    let (_, _, orientation) = header(bytes)?;
    let pixels = crate::cost::samples(width as usize, height as usize, 1)?;
    let mut raster = crate::cost::buffer(pixels, 0_u32)?;
    // SAFETY: `raster` holds width x height u32s, what libtiff writes.
    let ok = unsafe {
        TIFFReadRGBAImageOriented(
            open.tiff,
            width,
            height,
            raster.as_mut_ptr(),
            c_int::from(orientation),
            1,
        )
    };
    if ok != 1 {
        return Err(open.refusal("cannot decode the image"));
    }
    // ABGR in a native u32 (TIFFGetR/G/B/A): R in the low byte.
    let rgba: Vec<u8> = raster.iter().flat_map(|p| p.to_le_bytes()).collect();
    RgbaImage::from_raw(width, height, rgba)
        .ok_or_else(|| PipelineError::Undecodable("libtiff: short raster".into()))
}
