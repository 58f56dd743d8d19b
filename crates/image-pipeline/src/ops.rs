//! Pixel operations on 8-bit RGB/RGBA images: resize planning, rotation, blur, sharpen,
//! grayscale and compositing. Pure functions over buffers.

use fast_image_resize::{FilterType, ResizeAlg, ResizeOptions, Resizer};
use image::{DynamicImage, GenericImageView, Rgba as Px, RgbaImage};

use crate::error::PipelineError;
use crate::reduce;
use crate::spec::{Fit, Position};

/// The resize step: which region of the source goes to which output size, and the final box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Plan {
    /// Size the kept region is resized to.
    pub resize: (u32, u32),
    /// `Some` for contain: the padded canvas size.
    pub pad_to: Option<(u32, u32)>,
    /// For cover: the share of the source kept, (width, height) in 0..=1.
    pub keep: (f64, f64),
    /// Output pixels per source pixel when both axes share one scale (every fit but fill):
    /// the rounded output size on the other axis then samples a sliver more or less than the
    /// source, centred, as libvips does. `None` for fill.
    pub scale: Option<f64>,
}

fn round_px(v: f64) -> u32 {
    v.round().max(1.0).min(f64::from(u32::MAX)) as u32
}

/// Plans the resize of a `sw` x `sh` source into the requested box.
pub(crate) fn plan(
    (sw, sh): (u32, u32),
    width: Option<u32>,
    height: Option<u32>,
    fit: Fit,
    enlarge: bool,
) -> Plan {
    let (fw, fh) = (f64::from(sw), f64::from(sh));
    let cap = |s: f64| if enlarge { s } else { s.min(1.0) };
    let none = Plan {
        resize: (sw, sh),
        pad_to: None,
        keep: (1.0, 1.0),
        scale: Some(1.0),
    };
    let scaled = |s: f64| Plan {
        resize: (round_px(fw * s), round_px(fh * s)),
        scale: Some(s),
        ..none
    };
    match (width, height) {
        (None, None) => none,
        (Some(w), None) => scaled(cap(f64::from(w) / fw)),
        (None, Some(h)) => scaled(cap(f64::from(h) / fh)),
        (Some(w), Some(h)) => {
            let (sx, sy) = (f64::from(w) / fw, f64::from(h) / fh);
            match fit {
                Fit::Fill => Plan {
                    resize: if enlarge {
                        (w, h)
                    } else {
                        (w.min(sw), h.min(sh))
                    },
                    scale: None,
                    ..none
                },
                Fit::Inside => scaled(cap(sx.min(sy))),
                Fit::Outside => scaled(cap(sx.max(sy))),
                Fit::Contain => Plan {
                    pad_to: Some((w, h)),
                    ..scaled(cap(sx.min(sy)))
                },
                Fit::Cover => {
                    let s = cap(sx.max(sy));
                    let (bw, bh) = (w.min(round_px(fw * s)), h.min(round_px(fh * s)));
                    Plan {
                        resize: (bw, bh),
                        pad_to: None,
                        keep: (
                            (f64::from(bw) / (fw * s)).min(1.0),
                            (f64::from(bh) / (fh * s)).min(1.0),
                        ),
                        scale: Some(s),
                    }
                }
            }
        }
    }
}

/// A source region in pixels (fractional, as fast_image_resize accepts).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Region {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
}

/// Places a `keep`-sized window inside `region` at `position` (entropy and attention look at
/// the pixels).
pub(crate) fn place(
    img: &DynamicImage,
    region: Region,
    keep: (f64, f64),
    position: Position,
) -> Region {
    let (w, h) = (region.width * keep.0, region.height * keep.1);
    let (free_x, free_y) = (region.width - w, region.height - h);
    let (fx, fy) = match position {
        Position::Entropy | Position::Attention if free_x > 0.5 || free_y > 0.5 => {
            best_window(img, region, (w, h), position == Position::Entropy)
        }
        other => other.fractions(),
    };
    window(region, keep, (fx, fy))
}

/// Places a `keep`-sized window inside `region` at a position that needs no pixels to find
/// (`None` for entropy and attention, which look at them).
pub(crate) fn place_at(region: Region, keep: (f64, f64), position: Position) -> Option<Region> {
    match position {
        Position::Entropy | Position::Attention => None,
        other => Some(window(region, keep, other.fractions())),
    }
}

/// The `keep`-sized window of `region` whose free space is split `(fx, fy)` before it.
fn window(region: Region, keep: (f64, f64), (fx, fy): (f64, f64)) -> Region {
    let (w, h) = (region.width * keep.0, region.height * keep.1);
    let (free_x, free_y) = (region.width - w, region.height - h);
    Region {
        left: region.left + free_x * fx,
        top: region.top + free_y * fy,
        width: w,
        height: h,
    }
}

fn luma(p: [u8; 4]) -> f64 {
    0.2126 * f64::from(p[0]) + 0.7152 * f64::from(p[1]) + 0.0722 * f64::from(p[2])
}

/// Scores candidate windows along the free axis; returns the best as placement fractions.
fn best_window(
    img: &DynamicImage,
    region: Region,
    (w, h): (f64, f64),
    entropy: bool,
) -> (f64, f64) {
    const STEPS: u32 = 16;
    let horizontal = region.width - w > region.height - h;
    let step = ((w.max(h) / 160.0).floor() as u32).max(1);
    let mut best = (f64::MIN, 0.5);
    for i in 0..=STEPS {
        let t = f64::from(i) / f64::from(STEPS);
        let (left, top) = if horizontal {
            (region.left + (region.width - w) * t, region.top)
        } else {
            (region.left, region.top + (region.height - h) * t)
        };
        let (x0, y0, x1, y1) = (
            left as u32,
            top as u32,
            ((left + w) as u32).min(img.width()),
            ((top + h) as u32).min(img.height()),
        );
        let mut hist = [0u32; 64];
        let (mut n, mut energy) = (0u64, 0.0f64);
        for y in (y0..y1.saturating_sub(step)).step_by(step as usize) {
            for x in (x0..x1.saturating_sub(step)).step_by(step as usize) {
                let p = img.get_pixel(x, y).0;
                let l = luma(p);
                n += 1;
                if entropy {
                    let bin = (l / 4.0) as usize;
                    hist[bin.min(63)] += 1;
                } else {
                    let right = luma(img.get_pixel(x + step, y).0);
                    let down = luma(img.get_pixel(x, y + step).0);
                    let sat = f64::from(p[0].max(p[1]).max(p[2]) - p[0].min(p[1]).min(p[2]));
                    energy += (l - right).abs() + (l - down).abs() + 0.5 * sat;
                }
            }
        }
        let score = if n == 0 {
            0.0
        } else if entropy {
            hist.iter()
                .filter(|&&c| c > 0)
                .map(|&c| {
                    let p = f64::from(c) / n as f64;
                    -p * p.log2()
                })
                .sum()
        } else {
            energy / n as f64
        };
        if score > best.0 {
            best = (score, t);
        }
    }
    if horizontal {
        (best.1, 0.5)
    } else {
        (0.5, best.1)
    }
}

/// Resizes `region` of `src` to `dst` with Lanczos3.
///
/// The region may overhang the decoded pixels by less than a pixel on the right and bottom (a
/// scaled JPEG decode keeps whole pixels only, see `decode`): the sampling grid is then centred
/// over the pixels there are, as libvips does.
///
/// An RGB reduction (no axis enlarged) goes through [`crate::reduce`], libvips' own arithmetic,
/// so that our pixels before encoding are sharp's; anything with alpha or enlarged goes through
/// `fast_image_resize` (alpha-aware).
///
/// # Errors
/// [`PipelineError::Encode`] when the output or the reduction's buffers cannot be sized or
/// reserved ([`crate::cost::dynamic_canvas`], [`reduce::Reducer::new`]), or the resizer fails.
pub(crate) fn resize(
    src: &DynamicImage,
    region: Region,
    dst: (u32, u32),
    shrink: Option<(f64, f64)>,
) -> Result<DynamicImage, PipelineError> {
    let (sw, sh) = (f64::from(src.width()), f64::from(src.height()));
    let overhang_x = (region.left + region.width - sw).max(0.0);
    let overhang_y = (region.top + region.height - sh).max(0.0);
    let whole = region.left == 0.0
        && region.top == 0.0
        && region.width - overhang_x == sw
        && region.height - overhang_y == sh;
    if whole && dst == (src.width(), src.height()) {
        return Ok(src.clone());
    }
    let (sx, sy) = shrink.unwrap_or_else(|| fill_shrink(region, dst));
    if let DynamicImage::ImageRgb8(rgb) = src
        && sx >= 1.0
        && sy >= 1.0
    {
        let reduction = reduction(region, (sw, sh), dst, (sx, sy));
        let pixels = reduce::reduce_rgb(rgb.as_raw(), rgb.width() as usize, reduction)?;
        let out = image::RgbImage::from_raw(dst.0, dst.1, pixels)
            .ok_or_else(|| PipelineError::Encode("resize: bad buffer size".into()))?;
        return Ok(DynamicImage::ImageRgb8(out));
    }
    let mut out = crate::cost::dynamic_canvas(dst.0, dst.1, src.color())?;
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3))
        .crop(
            region.left,
            region.top,
            region.width - overhang_x,
            region.height - overhang_y,
        );
    Resizer::new()
        .resize(src, &mut out, &options)
        .map_err(|e| PipelineError::Encode(format!("resize: {e}")))?;
    Ok(out)
}

/// Source pixels per output pixel of each axis when `region` is stretched onto `dst` (fit fill;
/// the other fits share one shrink, from `Plan::scale`).
pub(crate) fn fill_shrink(region: Region, dst: (u32, u32)) -> (f64, f64) {
    (
        region.width / f64::from(dst.0),
        region.height / f64::from(dst.1),
    )
}

/// The libvips-style reduction of `region` of a `size` image to `dst` by `shrink` source pixels
/// per output pixel: what is sampled (`dst * shrink` source pixels) is centred on what there
/// is of the region.
pub(crate) fn reduction(
    region: Region,
    size: (f64, f64),
    dst: (u32, u32),
    shrink: (f64, f64),
) -> reduce::Reduction {
    let overhang_x = (region.left + region.width - size.0).max(0.0);
    let overhang_y = (region.top + region.height - size.1).max(0.0);
    let centre = |start: f64, len: f64, overhang: f64, out: u32, s: f64| {
        start + (len - overhang - f64::from(out) * s) / 2.0
    };
    reduce::Reduction {
        out: (dst.0 as usize, dst.1 as usize),
        shrink,
        start: (
            centre(region.left, region.width, overhang_x, dst.0, shrink.0),
            centre(region.top, region.height, overhang_y, dst.1, shrink.1),
        ),
    }
}

/// Pads `img` onto a `w` x `h` canvas of `bg` at `position`.
///
/// # Errors
/// [`PipelineError::Encode`] when the canvas cannot be reserved ([`crate::cost::canvas`]).
pub(crate) fn pad(
    img: &DynamicImage,
    (w, h): (u32, u32),
    bg: [u8; 4],
    position: Position,
) -> Result<DynamicImage, PipelineError> {
    let mut canvas = crate::cost::canvas(w, h, Px(bg))?;
    let (fx, fy) = position.fractions();
    let x = (f64::from(w.saturating_sub(img.width())) * fx).round() as i64;
    let y = (f64::from(h.saturating_sub(img.height())) * fy).round() as i64;
    image::imageops::overlay(&mut canvas, &img.to_rgba8(), x, y);
    Ok(keep_alpha_only_if_needed(
        canvas,
        img.color().has_alpha() || bg[3] != 255,
    ))
}

/// Adds `[top, right, bottom, left]` pixels of `bg` around `img` (`padding`).
///
/// # Errors
/// [`PipelineError::Encode`] when a side of the result overflows `u32` or the canvas cannot
/// be reserved ([`crate::cost::canvas`]).
pub(crate) fn extend(
    img: &DynamicImage,
    [t, r, b, l]: [u32; 4],
    bg: [u8; 4],
) -> Result<DynamicImage, PipelineError> {
    let side = |n: u32, a: u32, b: u32| {
        n.checked_add(a)
            .and_then(|n| n.checked_add(b))
            .ok_or_else(|| {
                PipelineError::Encode(format!("padding: a side of {n} + {a} + {b} px overflows"))
            })
    };
    let (w, h) = (side(img.width(), l, r)?, side(img.height(), t, b)?);
    let mut canvas = crate::cost::canvas(w, h, Px(bg))?;
    image::imageops::overlay(&mut canvas, &img.to_rgba8(), i64::from(l), i64::from(t));
    Ok(keep_alpha_only_if_needed(
        canvas,
        img.color().has_alpha() || bg[3] != 255,
    ))
}

/// Pixelates `img` in `block` x `block` squares from the top-left corner, each the mean of its
/// pixels (the last row and column of squares may be smaller), as imgproxy's `pixelate`.
pub(crate) fn pixelate(img: DynamicImage, block: u32) -> DynamicImage {
    let has_alpha = img.color().has_alpha();
    let mut canvas = img.to_rgba8();
    let (w, h) = canvas.dimensions();
    for by in (0..h).step_by(block as usize) {
        for bx in (0..w).step_by(block as usize) {
            let (bw, bh) = (block.min(w - bx), block.min(h - by));
            let mut sum = [0u64; 4];
            for y in by..by + bh {
                for x in bx..bx + bw {
                    for (s, v) in sum.iter_mut().zip(canvas.get_pixel(x, y).0) {
                        *s += u64::from(v);
                    }
                }
            }
            let n = u64::from(bw) * u64::from(bh);
            let mean = Px(sum.map(|s| ((s + n / 2) / n) as u8));
            for y in by..by + bh {
                for x in bx..bx + bw {
                    canvas.put_pixel(x, y, mean);
                }
            }
        }
    }
    keep_alpha_only_if_needed(canvas, has_alpha)
}

fn keep_alpha_only_if_needed(img: RgbaImage, alpha: bool) -> DynamicImage {
    if alpha {
        DynamicImage::ImageRgba8(img)
    } else {
        DynamicImage::ImageRgb8(DynamicImage::ImageRgba8(img).to_rgb8())
    }
}

/// Rotates clockwise by `degrees` in (0, 360). Right angles are exact; other angles use
/// bilinear sampling onto an enlarged canvas whose corners are `bg`.
/// The size of a `w` x `h` picture turned by `degrees`: its bounding box, as [`rotate`] makes
/// it (right angles swap or keep the sides exactly).
pub(crate) fn rotated_size((w, h): (u32, u32), degrees: f32) -> (u32, u32) {
    if degrees == 0.0 || degrees == 180.0 || degrees == 360.0 {
        return (w, h);
    }
    if degrees == 90.0 || degrees == 270.0 {
        return (h, w);
    }
    let (sin, cos) = f64::from(degrees).to_radians().sin_cos();
    let (fw, fh) = (f64::from(w), f64::from(h));
    (
        round_px((fw * cos).abs() + (fh * sin).abs()),
        round_px((fw * sin).abs() + (fh * cos).abs()),
    )
}

/// Rotates clockwise by `degrees`, onto the canvas of [`rotated_size`].
///
/// # Errors
/// [`PipelineError::Encode`] when the enlarged canvas cannot be reserved
/// ([`crate::cost::canvas`]).
pub(crate) fn rotate(
    img: DynamicImage,
    degrees: f32,
    bg: [u8; 4],
) -> Result<DynamicImage, PipelineError> {
    if degrees == 90.0 {
        return Ok(img.rotate90());
    }
    if degrees == 180.0 {
        return Ok(img.rotate180());
    }
    if degrees == 270.0 {
        return Ok(img.rotate270());
    }
    let src = img.to_rgba8();
    let (sw, sh) = (f64::from(src.width()), f64::from(src.height()));
    let rad = f64::from(degrees).to_radians();
    let (sin, cos) = rad.sin_cos();
    let (ow, oh) = rotated_size((src.width(), src.height()), degrees);
    let (cx, cy) = (sw / 2.0, sh / 2.0);
    let (ocx, ocy) = (f64::from(ow) / 2.0, f64::from(oh) / 2.0);
    let mut out = crate::cost::canvas(ow, oh, Px(bg))?;
    let max_x = src.width() as i64 - 1;
    let max_y = src.height() as i64 - 1;
    let fetch = |x: i64, y: i64| -> [f64; 4] {
        if x < 0 || y < 0 || x > max_x || y > max_y {
            bg.map(f64::from)
        } else {
            src.get_pixel(x as u32, y as u32).0.map(f64::from)
        }
    };
    for (x, y, px) in out.enumerate_pixels_mut() {
        let dx = f64::from(x) + 0.5 - ocx;
        let dy = f64::from(y) + 0.5 - ocy;
        // Inverse rotation (counter-clockwise) maps output to source.
        let sx = dx * cos + dy * sin + cx - 0.5;
        let sy = -dx * sin + dy * cos + cy - 0.5;
        if sx < -1.0 || sy < -1.0 || sx > sw || sy > sh {
            continue;
        }
        let (x0, y0) = (sx.floor(), sy.floor());
        let (tx, ty) = (sx - x0, sy - y0);
        let (ix, iy) = (x0 as i64, y0 as i64);
        let (a, b, c, d) = (
            fetch(ix, iy),
            fetch(ix + 1, iy),
            fetch(ix, iy + 1),
            fetch(ix + 1, iy + 1),
        );
        for ch in 0..4 {
            let top = a[ch] + (b[ch] - a[ch]) * tx;
            let bottom = c[ch] + (d[ch] - c[ch]) * tx;
            let v = (top + (bottom - top) * ty).round().clamp(0.0, 255.0) as u8;
            px.0[ch] = v;
        }
    }
    Ok(keep_alpha_only_if_needed(
        out,
        img.color().has_alpha() || bg[3] != 255,
    ))
}

/// Box sizes whose three passes approximate a gaussian of `sigma` (Kovesi's method).
fn box_radii(sigma: f32) -> [usize; 3] {
    let n = 3.0f32;
    let ideal = (12.0 * sigma * sigma / n + 1.0).sqrt();
    let mut wl = ideal.floor() as i32;
    if wl % 2 == 0 {
        wl -= 1;
    }
    let wu = wl + 2;
    let m_ideal = (12.0 * sigma * sigma - n * (wl * wl) as f32 - 4.0 * n * wl as f32 - 3.0 * n)
        / (-4.0 * wl as f32 - 4.0);
    let m = m_ideal.round() as i32;
    let mut r = [0usize; 3];
    for (i, slot) in r.iter_mut().enumerate() {
        let w = if (i as i32) < m { wl } else { wu };
        *slot = usize::try_from((w - 1) / 2).unwrap_or(0);
    }
    r
}

/// The running sum's starting value for a window of radius `r` centred on sample 0 of a line
/// of `len` samples, with clamp-to-edge: the window left of 0 and right of the last sample
/// repeats the edge samples, which are counted instead of visited, so a line costs `len` steps
/// whatever the radius. `at(i)` is sample `i`.
fn window_start(at: impl Fn(usize) -> u32, len: usize, r: usize) -> u32 {
    let last = len - 1;
    let inside = r.min(last);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let mut acc = at(0) * count(r + 1) + at(last) * count(r - inside);
    for k in 1..=inside {
        acc += at(k);
    }
    acc
}

/// One running-sum box blur pass with clamp-to-edge along the rows of a `w` x `h` image of
/// `ch` interleaved channels.
fn box_pass_rows(src: &[u8], dst: &mut [u8], w: usize, ch: usize, r: usize) {
    let div = u32::try_from(2 * r + 1).unwrap_or(u32::MAX);
    let last = w - 1;
    for (row, out) in src.chunks_exact(w * ch).zip(dst.chunks_exact_mut(w * ch)) {
        for c in 0..ch {
            let at = |i: usize| u32::from(row[i * ch + c]);
            let mut acc = window_start(at, w, r);
            for i in 0..w {
                let v = ((acc + div / 2) / div) as u8;
                out[i * ch + c] = v;
                acc += at((i + r + 1).min(last));
                acc -= at(i.saturating_sub(r));
            }
        }
    }
}

/// [`box_pass_rows`] down the columns: one running sum per column and channel, moved a whole
/// row at a time, so memory is read in order (a column at a time strides a row per sample,
/// which on a large picture misses the cache at every step).
///
/// # Errors
/// [`PipelineError::Encode`] when the running sums (`row_len` of them) cannot be reserved
/// ([`crate::cost::collect`]).
fn box_pass_columns(
    src: &[u8],
    dst: &mut [u8],
    row_len: usize,
    r: usize,
) -> Result<(), PipelineError> {
    let div = u32::try_from(2 * r + 1).unwrap_or(u32::MAX);
    let h = src.len() / row_len;
    let last = h - 1;
    let row = |y: usize| &src[y * row_len..(y + 1) * row_len];
    // `window_start` for every column at once, a row at a time.
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let inside = r.min(last);
    let mut acc: Vec<u32> = crate::cost::collect(
        row_len,
        row(0).iter().zip(row(last)).map(|(&first, &end)| {
            u32::from(first) * count(r + 1) + u32::from(end) * count(r - inside)
        }),
    )?;
    for y in 1..=inside {
        for (a, &v) in acc.iter_mut().zip(row(y)) {
            *a += u32::from(v);
        }
    }
    for (y, out) in dst.chunks_exact_mut(row_len).enumerate() {
        for (o, a) in out.iter_mut().zip(&acc) {
            let v = ((a + div / 2) / div) as u8;
            *o = v;
        }
        let (add, sub) = (row((y + r + 1).min(last)), row(y.saturating_sub(r)));
        for ((a, &p), &m) in acc.iter_mut().zip(add).zip(sub) {
            *a = *a + u32::from(p) - u32::from(m);
        }
    }
    Ok(())
}

/// Gaussian blur approximated by three box blurs in each direction (error under 3%).
///
/// Each box pass keeps a running sum along the line, so the blur costs a fixed number of steps
/// per pixel and channel whatever `sigma` is: its cost is bounded by the output's area, which
/// image-server bounds for unsigned URLs (README "Deployment").
///
/// # Errors
/// [`PipelineError::Encode`] when its scratch copy or a column pass's running sums cannot be
/// reserved ([`crate::cost::buffer`], [`crate::cost::collect`]).
pub(crate) fn blur(img: DynamicImage, sigma: f32) -> Result<DynamicImage, PipelineError> {
    let ch = usize::from(img.color().channel_count());
    let w = img.width() as usize;
    let mut img = img;
    let buf: &mut [u8] = match &mut img {
        DynamicImage::ImageRgb8(b) => b.as_mut(),
        DynamicImage::ImageRgba8(b) => b.as_mut(),
        _ => return Ok(img),
    };
    if buf.is_empty() {
        return Ok(img);
    }
    let mut tmp = crate::cost::buffer(buf.len(), 0_u8)?;
    for r in box_radii(sigma) {
        if r == 0 {
            continue;
        }
        box_pass_rows(buf, &mut tmp, w, ch, r);
        box_pass_columns(&tmp, buf, w * ch, r)?;
    }
    Ok(img)
}

/// A fast, mild sharpen (3x3 kernel, as sharp's `sharpen()` without options), alpha kept.
///
/// # Errors
/// [`PipelineError::Encode`] when the copy of the alpha (a byte a pixel) cannot be reserved
/// ([`crate::cost::collect`]).
pub(crate) fn sharpen(img: DynamicImage) -> Result<DynamicImage, PipelineError> {
    let kernel = [-1.0, -1.0, -1.0, -1.0, 32.0, -1.0, -1.0, -1.0, -1.0].map(|k: f32| k / 24.0);
    Ok(match img {
        DynamicImage::ImageRgba8(b) => {
            let alpha = crate::cost::collect(b.as_raw().len() / 4, b.pixels().map(|p| p.0[3]))?;
            let mut out = image::imageops::filter3x3(&b, &kernel);
            for (p, a) in out.pixels_mut().zip(alpha) {
                p.0[3] = a;
            }
            DynamicImage::ImageRgba8(out)
        }
        other => DynamicImage::ImageRgb8(image::imageops::filter3x3(&other.to_rgb8(), &kernel)),
    })
}

/// Sets R = G = B to the grey libvips' `colourspace b-w` gives, keeping alpha: the samples are
/// decoded from the sRGB curve to linear light, weighted by Rec. 709 (luminance Y), and Y is
/// encoded back with the sRGB curve, looked up as libvips does (libvips 8.17 `sRGB2scRGB` then
/// `scRGB2BW`: a 256-entry table of rounded 8-bit samples, interpolated linearly); so sharp's
/// `grayscale()`. Pure red is 127, not the 54 of weights on the encoded values.
pub(crate) fn grayscale(mut img: DynamicImage) -> DynamicImage {
    let ch = usize::from(img.color().channel_count());
    let buf: &mut [u8] = match &mut img {
        DynamicImage::ImageRgb8(b) => b.as_mut(),
        DynamicImage::ImageRgba8(b) => b.as_mut(),
        _ => return img,
    };
    let (linear, encode) = srgb_tables();
    for px in buf.chunks_exact_mut(ch) {
        // In single precision where libvips is: linear samples and Y are `float`s there.
        let [r, g, b] = [px[0], px[1], px[2]].map(|c| f64::from(linear[usize::from(c)]));
        let y = (0.2126 * r + 0.7152 * g + 0.0722 * b) as f32;
        let yf = (y * 255.0).clamp(0.0, 255.0);
        let yi = (yf as usize).min(254);
        let v = yf - yi as f32;
        let (lo, hi) = (f32::from(encode[yi]), f32::from(encode[yi + 1]));
        let l = (lo + (hi - lo) * v + 0.5).clamp(0.0, 255.0) as u8;
        px[0] = l;
        px[1] = l;
        px[2] = l;
    }
    img
}

/// The sRGB curve (IEC 61966-2-1) as libvips tabulates it: 8-bit sample to linear light, and
/// linear light at `i / 255` to the rounded 8-bit sample. Built once.
fn srgb_tables() -> &'static ([f32; 256], [u8; 256]) {
    static TABLES: std::sync::OnceLock<([f32; 256], [u8; 256])> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let (mut linear, mut encode) = ([0f32; 256], [0u8; 256]);
        for (i, (l, e)) in linear.iter_mut().zip(&mut encode).enumerate() {
            let c = i as f64 / 255.0;
            let lin = if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            };
            {
                *l = lin as f32;
            }
            let s = if c <= 0.003_130_8 {
                12.92 * c
            } else {
                1.055 * c.powf(1.0 / 2.4) - 0.055
            };
            {
                *e = (s * 255.0 + 0.5).clamp(0.0, 255.0) as u8;
            }
        }
        (linear, encode)
    })
}

/// Composites `mark` (already sized) onto `base` at `position` with `opacity` in 0..=1.
pub(crate) fn composite(
    base: DynamicImage,
    mark: &RgbaImage,
    position: Position,
    opacity: f32,
) -> DynamicImage {
    let has_alpha = base.color().has_alpha();
    let mut canvas = base.to_rgba8();
    let (fx, fy) = position.fractions();
    let x0 = (f64::from(canvas.width().saturating_sub(mark.width())) * fx).round() as u32;
    let y0 = (f64::from(canvas.height().saturating_sub(mark.height())) * fy).round() as u32;
    for (x, y, m) in mark.enumerate_pixels() {
        let (cx, cy) = (x0 + x, y0 + y);
        if cx >= canvas.width() || cy >= canvas.height() {
            continue;
        }
        let a = f32::from(m.0[3]) / 255.0 * opacity;
        let p = canvas.get_pixel_mut(cx, cy);
        for c in 0..3 {
            let v = f32::from(p.0[c]) * (1.0 - a) + f32::from(m.0[c]) * a;
            let v = v.round().clamp(0.0, 255.0) as u8;
            p.0[c] = v;
        }
        let under = f32::from(p.0[3]) / 255.0;
        let out_a = ((a + under * (1.0 - a)) * 255.0).round().clamp(0.0, 255.0) as u8;
        p.0[3] = out_a;
    }
    keep_alpha_only_if_needed(canvas, has_alpha)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn inside_never_enlarges_by_default() {
        assert_eq!(
            plan((400, 300), Some(800), None, Fit::Inside, false).resize,
            (400, 300)
        );
        assert_eq!(
            plan((400, 300), Some(800), None, Fit::Inside, true).resize,
            (800, 600)
        );
    }

    #[test]
    fn every_fit_gives_the_sharp_sizes() {
        let s = (4000, 2250);
        for (fit, want) in [
            (Fit::Inside, (400, 225)),
            (Fit::Outside, (711, 400)),
            (Fit::Fill, (400, 400)),
            (Fit::Cover, (400, 400)),
        ] {
            let got = plan(s, Some(400), Some(400), fit, false).resize;
            assert_eq!(got, want, "{fit:?}");
        }
        let contain = plan(s, Some(400), Some(400), Fit::Contain, false);
        assert_eq!(
            (contain.resize, contain.pad_to),
            ((400, 225), Some((400, 400)))
        );
    }

    #[test]
    fn a_column_pass_is_the_row_pass_of_the_transposed_picture() {
        let (w, h, ch) = (37usize, 23usize, 4usize);
        let src: Vec<u8> = (0..w * h * ch)
            .map(|i| u8::try_from((i * 7919 + i / 13) % 251).unwrap_or(0))
            .collect();
        let transpose = |buf: &[u8], w: usize, h: usize| {
            let mut out = vec![0u8; buf.len()];
            for y in 0..h {
                for x in 0..w {
                    for c in 0..ch {
                        out[(x * h + y) * ch + c] = buf[(y * w + x) * ch + c];
                    }
                }
            }
            out
        };
        for r in [1, 4, 22, 60] {
            let mut columns = vec![0u8; src.len()];
            box_pass_columns(&src, &mut columns, w * ch, r).unwrap();
            let mut rows = vec![0u8; src.len()];
            box_pass_rows(&transpose(&src, w, h), &mut rows, h, ch, r);
            assert_eq!(columns, transpose(&rows, h, w), "radius {r}");
        }
    }

    #[test]
    fn a_box_wider_than_the_line_averages_the_edge_repeated_window() {
        // Clamp-to-edge by definition: sample i of the result is the mean of src[clamp(j)] for
        // j in i-r..=i+r, rounded; here r (40) is far beyond the 5-sample line.
        let src = [0u8, 50, 100, 150, 250];
        let r = 40;
        let want: Vec<u8> = (0..5i64)
            .map(|i| {
                let sum: i64 = (i - r..=i + r)
                    .map(|j| i64::from(src[usize::try_from(j.clamp(0, 4)).unwrap()]))
                    .sum();
                u8::try_from((sum + r) / (2 * r + 1)).unwrap()
            })
            .collect();
        let mut rows = [0u8; 5];
        box_pass_rows(&src, &mut rows, 5, 1, 40);
        assert_eq!(rows.to_vec(), want);
        let mut columns = [0u8; 5];
        box_pass_columns(&src, &mut columns, 1, 40).unwrap();
        assert_eq!(columns.to_vec(), want);
    }

    #[test]
    fn blur_keeps_a_flat_image_flat() {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
            50,
            40,
            image::Rgb([10, 200, 30]),
        ));
        let out = blur(img, 3.0).map(|b| b.to_rgb8()).unwrap_or_default();
        assert!(out.pixels().all(|p| p.0 == [10, 200, 30]));
    }
}
