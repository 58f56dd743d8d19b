//! Shrink-on-load for decoders without a scaled mode (PNG, HEIC): rows are box-averaged by an
//! integer factor as they are decoded, so a large source never exists at full size in memory.
//! PNG rows are averaged down only (libvips' `shrinkv`); the across box follows the vertical
//! Lanczos3 pass in `reduce`, in libvips' order, so that the result is libvips' to the bit.
//!
//! This is libvips' `vips_resize` recipe (the reference sharp uses): an integer box `shrink` that
//! leaves at least twice the output size (its "reducing gap" of 2), then the usual Lanczos3
//! resize of the smaller image does the rest. Alpha is averaged with the colours weighted by it
//! (premultiplied), as sharp premultiplies before resizing.

use image::{DynamicImage, RgbImage, RgbaImage};

use crate::{PipelineError, cost};

/// The largest box factor used; past it the Lanczos3 resize does the rest (and the sums fit u32).
const MAX_FACTOR: usize = 64;

/// The box factor for a decode that must stay at least `min_scale` of the full size in both
/// axes, keeping twice that as a margin for the final resize: 1 means no box step.
pub(crate) fn factor(min_scale: f64) -> usize {
    if min_scale.is_nan() || min_scale <= 0.0 {
        return 1;
    }

    (1.0 / (2.0 * min_scale))
        .floor()
        .clamp(1.0, MAX_FACTOR as f64) as usize
}

/// Box-averages rows of 8-bit pixels by `kx` across and `ky` down as they arrive.
pub(crate) struct BoxShrink {
    kx: usize,
    ky: usize,
    width: u32,
    height: u32,
    /// Samples per input pixel: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA.
    channels: usize,
    /// Sums of the current output row: per output pixel the colour samples (weighted by alpha
    /// when there is one), then the alpha sum.
    acc: Vec<u32>,
    rows_in_acc: usize,
    /// Finished output rows, RGB or RGBA.
    out: Vec<u8>,
    /// The averages of sums of `ky` samples, for the rows-only RGB path.
    averages: Option<Averages>,
}

/// The largest `n` whose averages are tabulated: a table of `255 * n + 1` bytes (16 KiB here).
/// A larger `n` (a box across as wide as the source allows, in `reduce`) computes each average
/// instead, so the table never grows with the request.
const MAX_TABLED: usize = MAX_FACTOR;

/// [`average`] of `n` 8-bit samples, looked up in a table for every possible sum when `n` is at
/// most [`MAX_TABLED`], computed otherwise.
pub(crate) struct Averages {
    n: usize,
    count: u32,
    /// `table[s]` is the average of a sum `s`, for `s` in `0..=255 * n`; empty past `MAX_TABLED`.
    table: Vec<u8>,
}

impl Averages {
    pub(crate) fn new(n: usize) -> Self {
        let count = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        let table = if n <= MAX_TABLED {
            (0..=255 * count).map(|s| average(s, count)).collect()
        } else {
            Vec::new()
        };
        Self { n, count, table }
    }

    /// The average of `n` samples that sum to `sum` (at most `255 * n`, which passes `u32`
    /// for a box of more than 16,843,009 samples: a source over 33.7 million pixels wide
    /// reduced to one).
    pub(crate) fn of(&self, sum: u64) -> u8 {
        match usize::try_from(sum).ok().and_then(|i| self.table.get(i)) {
            Some(&v) => v,
            None if self.table.is_empty() => average_wide(sum, self.count),
            None => self.table[self.table.len() - 1],
        }
    }
}

/// `side` pixels boxed by `k` (at least 1): the side of the shrunk image.
fn shrunk(side: u32, k: usize) -> u32 {
    side.div_ceil(u32::try_from(k.max(1)).unwrap_or(u32::MAX))
}

impl BoxShrink {
    /// A shrinker for a `width` x `height` source with `channels` samples per pixel (1 to 4),
    /// by `k` in both directions.
    ///
    /// # Errors
    /// As [`BoxShrink::rows_only`].
    pub(crate) fn new(
        width: u32,
        height: u32,
        channels: usize,
        k: usize,
    ) -> Result<Self, PipelineError> {
        Self::with_factors(width, height, channels, k, k)
    }

    /// A shrinker by `ky` down only: libvips' `shrinkv`, which runs before the vertical
    /// Lanczos3 pass (the horizontal box runs later, in `reduce`).
    ///
    /// Its sums (one output row of `u32`s) and its output (the whole shrunk image, RGB or
    /// RGBA bytes) are sized with checked arithmetic and reserved fallibly here, so rows pushed
    /// later never allocate.
    ///
    /// # Errors
    /// [`PipelineError::Encode`] when a size overflows or the memory cannot be reserved
    /// ([`cost::samples`], [`cost::reserve`]).
    pub(crate) fn rows_only(
        width: u32,
        height: u32,
        channels: usize,
        ky: usize,
    ) -> Result<Self, PipelineError> {
        Self::with_factors(width, height, channels, 1, ky)
    }

    fn with_factors(
        width: u32,
        height: u32,
        channels: usize,
        kx: usize,
        ky: usize,
    ) -> Result<Self, PipelineError> {
        let (kx, ky) = (kx.max(1), ky.max(1));
        let (ow, oh) = (shrunk(width, kx) as usize, shrunk(height, ky) as usize);
        let out_ch = if channels.is_multiple_of(2) { 4 } else { 3 };
        // The output first: it is the larger, and nothing is filled before it is granted.
        let out = cost::reserve(cost::samples(ow, oh, out_ch)?)?;
        Ok(Self {
            kx,
            ky,
            width,
            height,
            channels,
            acc: cost::buffer(cost::samples(ow, 1, channels)?, 0)?,
            rows_in_acc: 0,
            out,
            averages: None,
        })
    }

    /// Adds one source row (`width * channels` samples; extra samples are ignored).
    pub(crate) fn push(&mut self, row: &[u8]) {
        let row = &row[..row.len().min(self.width as usize * self.channels)];
        if self.kx == 1 && self.channels == 3 {
            // Rows only, RGB (the PNG path): one sum per sample, which vectorises.
            for (s, &v) in self.acc.iter_mut().zip(row) {
                *s += u32::from(v);
            }
            self.rows_in_acc += 1;
            if self.rows_in_acc == self.ky {
                self.emit();
            }
            return;
        }
        match self.channels {
            1 => add_row::<1, false>(&mut self.acc, row, self.kx),
            2 => add_row::<2, true>(&mut self.acc, row, self.kx),
            3 => add_row::<3, false>(&mut self.acc, row, self.kx),
            _ => add_row::<4, true>(&mut self.acc, row, self.kx),
        }
        self.rows_in_acc += 1;
        if self.rows_in_acc == self.ky {
            self.emit();
        }
    }

    /// Writes the averaged output row and clears the sums.
    fn emit(&mut self) {
        if self.kx == 1 && self.channels == 3 {
            // Every sum averages the same number of rows: look the averages up.
            let n = self.rows_in_acc;
            if self.averages.as_ref().is_none_or(|a| a.n != n) {
                self.averages = Some(Averages::new(n));
            }
            if let Some(averages) = &self.averages {
                let start = self.out.len();
                self.out.resize(start + self.acc.len(), 0);
                for (o, &s) in self.out[start..].iter_mut().zip(&self.acc) {
                    *o = averages.of(u64::from(s));
                }
            }
            self.acc.fill(0);
            self.rows_in_acc = 0;
            return;
        }
        let (kx, rows, width) = (self.kx, self.rows_in_acc, self.width as usize);
        let out = &mut self.out;
        match self.channels {
            1 => emit_row::<1, false>(&mut self.acc, out, kx, rows, width),
            2 => emit_row::<2, true>(&mut self.acc, out, kx, rows, width),
            3 => emit_row::<3, false>(&mut self.acc, out, kx, rows, width),
            _ => emit_row::<4, true>(&mut self.acc, out, kx, rows, width),
        }
        self.rows_in_acc = 0;
    }

    /// Hands each finished output row (RGB, or RGBA with alpha) to `sink` and forgets it, for
    /// a caller that streams rows on instead of keeping the image.
    pub(crate) fn drain_rows(&mut self, sink: &mut dyn FnMut(&[u8])) {
        let row = shrunk(self.width, self.kx) as usize
            * if self.channels.is_multiple_of(2) {
                4
            } else {
                3
            };
        for r in self.out.chunks_exact(row.max(1)) {
            sink(r);
        }
        self.out.clear();
    }

    /// Emits a last partial box of rows, if any, for `drain_rows`.
    pub(crate) fn flush(&mut self) {
        if self.rows_in_acc > 0 {
            self.emit();
        }
    }

    /// The shrunk image (RGB, or RGBA when the source has alpha). A source that ended early
    /// gives a shorter image; callers check the decoder's own error first.
    pub(crate) fn finish(mut self) -> Option<DynamicImage> {
        if self.rows_in_acc > 0 {
            self.emit();
        }
        let ow = shrunk(self.width, self.kx);
        let oh = shrunk(self.height, self.ky);
        if self.channels.is_multiple_of(2) {
            RgbaImage::from_raw(ow, oh, self.out).map(DynamicImage::ImageRgba8)
        } else {
            RgbImage::from_raw(ow, oh, self.out).map(DynamicImage::ImageRgb8)
        }
    }
}

/// Adds the pixels of one row to the sums of their boxes (colours weighted by alpha when
/// `ALPHA`, which is then the last of the `CH` samples).
fn add_row<const CH: usize, const ALPHA: bool>(acc: &mut [u32], row: &[u8], k: usize) {
    for (sums, block) in acc.chunks_exact_mut(CH).zip(row.chunks(k * CH)) {
        let mut local = [0u32; CH];
        for px in block.chunks_exact(CH) {
            if ALPHA {
                let a = u32::from(px[CH - 1]);
                for c in 0..CH - 1 {
                    local[c] += u32::from(px[c]) * a;
                }
                local[CH - 1] += a;
            } else {
                for c in 0..CH {
                    local[c] += u32::from(px[c]);
                }
            }
        }
        for (s, l) in sums.iter_mut().zip(local) {
            *s += l;
        }
    }
}

/// The mean of `n` samples summing to `sum`, as libvips' `shrinkv` and `shrinkh` compute 8-bit
/// averages: `(sum + n / 2)` times `floor(2^32 / n)`, shifted down by 32 (which rounds a hair
/// lower than exact division when n is not a power of two; matched against libvips 8.17 for
/// n = 2 to 10).
fn average(sum: u32, n: u32) -> u8 {
    average_wide(u64::from(sum), n)
}

/// [`average`] of a sum that may pass `u32`; the product is taken in `u128`, so it cannot wrap.
fn average_wide(sum: u64, n: u32) -> u8 {
    let n = u64::from(n.max(1));
    let multiplier = (1u64 << 32) / n;
    let scaled = (u128::from(sum) + u128::from(n / 2)) * u128::from(multiplier);
    u8::try_from(scaled >> 32).unwrap_or(u8::MAX)
}

/// Appends the averages of one row of boxes (`kx` wide, `rows` source rows high) to `out` as
/// RGB or RGBA, and clears the sums.
fn emit_row<const CH: usize, const ALPHA: bool>(
    acc: &mut [u32],
    out: &mut Vec<u8>,
    kx: usize,
    rows: usize,
    width: usize,
) {
    for (ox, sums) in acc.chunks_exact_mut(CH).enumerate() {
        let bw = kx.min(width - ox * kx);
        let n = u32::try_from(bw * rows).unwrap_or(u32::MAX);
        // With alpha the colours are weighted by it: divide by the alpha sum instead.
        let alpha_sum = sums[CH - 1];
        let colour = |s: u32| {
            if !ALPHA {
                average(s, n)
            } else if alpha_sum == 0 {
                0
            } else {
                u8::try_from((u64::from(s) + u64::from(alpha_sum / 2)) / u64::from(alpha_sum))
                    .unwrap_or(u8::MAX)
            }
        };
        if CH <= 2 {
            let v = colour(sums[0]);
            out.extend_from_slice(&[v, v, v]);
        } else {
            out.extend_from_slice(&[colour(sums[0]), colour(sums[1]), colour(sums[2])]);
        }
        if ALPHA {
            out.push(average(sums[CH - 1], n));
        }
        sums.fill(0);
    }
}

/// Averages every `k` neighbouring pixels of a row of `CH`-sample pixels (the last group may be
/// shorter: it repeats the row's last pixel, as libvips extends the edge), rounding as libvips'
/// `shrinkh` does. Used by `reduce` between its vertical and horizontal passes.
pub(crate) fn average_pixels<const CH: usize>(row: &[u8], averages: &Averages, out: &mut [u8]) {
    let k = averages.n.max(1);
    let width = row.len() / CH;
    for (start, dst) in (0..width).step_by(k).zip(out.chunks_exact_mut(CH)) {
        // u64: a box as wide as the source allows can sum past u32 (Averages::of).
        let mut sums = [0u64; CH];
        for i in 0..k {
            let x = (start + i).min(width - 1);
            for (s, &v) in sums.iter_mut().zip(&row[x * CH..(x + 1) * CH]) {
                *s += u64::from(v);
            }
        }
        for (d, s) in dst.iter_mut().zip(sums) {
            *d = averages.of(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn factor_keeps_twice_the_output_size() {
        assert_eq!(
            [1.0, 0.5, 0.3, 0.25, 0.2, 0.1, 0.001].map(factor),
            [1, 1, 1, 2, 2, 5, 64]
        );
    }

    #[test]
    fn boxes_average_and_edges_use_the_partial_box() {
        // 3x3 grey by 2: output 2x2; the right column and bottom row are partial boxes.
        let mut s = BoxShrink::new(3, 3, 1, 2).unwrap();
        s.push(&[0, 100, 50]);
        s.push(&[200, 100, 51]);
        s.push(&[9, 11, 7]);
        let out = s.finish().map(|i| i.to_rgb8().into_raw());
        assert_eq!(
            out,
            Some(vec![100, 100, 100, 51, 51, 51, 10, 10, 10, 7, 7, 7])
        );
    }

    #[test]
    fn transparent_pixels_do_not_darken_their_neighbours() {
        let mut s = BoxShrink::new(2, 1, 4, 2).unwrap();
        s.push(&[0, 0, 0, 0, 255, 0, 0, 255]);
        let out = s.finish().map(|i| i.to_rgba8().into_raw());
        assert_eq!(out, Some(vec![255, 0, 0, 128]));
    }

    #[test]
    fn an_impossible_shrinker_is_an_error_not_an_abort() {
        // u32::MAX x u32::MAX RGBA output: 2^66 bytes overflow usize.
        let e = BoxShrink::new(u32::MAX, u32::MAX, 4, 1).err();
        assert!(
            matches!(&e, Some(PipelineError::Encode(m)) if m.contains("overflows")),
            "{e:?}"
        );
        // 2^32 x 2^30 / 4 RGB bytes fit in usize but not in isize: refused by the reservation.
        let e = BoxShrink::rows_only(u32::MAX, u32::MAX / 4, 3, 1).err();
        assert!(
            matches!(&e, Some(PipelineError::Encode(m)) if m.contains("cannot reserve")),
            "{e:?}"
        );
        // A box as tall as the source leaves one row: that is reserved.
        assert!(BoxShrink::rows_only(1000, u32::MAX, 3, u32::MAX as usize).is_ok());
    }

    /// One row of `n` white RGB pixels averaged into one pixel by [`average_pixels`].
    fn shrink_row_of_white(n: usize, out: &mut [u8; 3]) {
        let row = vec![255u8; n * 3];
        average_pixels::<3>(&row, &Averages::new(n), out);
    }

    #[test]
    fn averages_of_a_wide_box_are_computed_not_tabulated() {
        // A box of 2^24 samples (a source 2^25 px wide reduced to 1 px): a table of its sums
        // would be 4 GiB (and past 16843009 samples, 255 * n overflows u32).
        let n = 1 << 24;
        let wide = Averages::new(n);
        assert!(wide.table.is_empty());
        assert_eq!(wide.of(0), 0);
        assert_eq!(Averages::new(20_000_000).of(2_550_000_000), 127);
        let count = u32::try_from(n).unwrap();
        assert_eq!(wide.of(u64::from(200 * count)), average(200 * count, count));
        // 40 million white samples (a 40 Mpx wide row boxed to one pixel) sum past u32: white
        // to within libvips' rounding (its multiplier floor(2^32 / n) is coarse for so large a
        // n), not a wrapped sum (which a debug build would panic on).
        let n40 = 40_000_000;
        let white = Averages::new(n40).of(255 * n40 as u64);
        assert!(white >= 254, "{white}");
        let mut out = [0u8; 3];
        shrink_row_of_white(n40, &mut out);
        assert_eq!(out, [white; 3]);
        // Up to MAX_TABLED the table answers, with the same values.
        let small = Averages::new(MAX_TABLED);
        assert_eq!(small.table.len(), 255 * MAX_TABLED + 1);
        for s in [0, 1, 31, 32, 100, 255 * 64] {
            assert_eq!(small.of(u64::from(s)), average(s, 64), "{s}");
        }
    }
}
