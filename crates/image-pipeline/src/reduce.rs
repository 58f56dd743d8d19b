//! Lanczos3 reduction of 8-bit images, computed the way libvips 8.17 computes it (`vips_reducev`
//! then `vips_reduceh`, the resampler behind sharp and imgproxy), so that our pixels before
//! encoding are the same as theirs and a lossy encoder makes the same choices.
//!
//! The rules, each checked bit for bit against libvips' own output in
//! `tests/libvips_parity.rs` (fixtures made with libvips 8.17.3):
//! - a mask has `2 * round_half_even(3 * shrink) + 1` taps, each `lanczos3((i - centre) / shrink)`
//!   normalised to sum 1, then truncated toward zero to 12-bit fixed point;
//! - masks are tabulated for 64 sub-pixel positions; an output sample uses the nearest one;
//! - the vertical pass runs first and rounds to 8 bits before the horizontal pass;
//! - samples are `(sum + 2048) >> 12`, clamped to 0..=255; edges repeat the outermost pixel;
//! - output sample `i` is centred on source coordinate `start + (i + 0.5) * shrink` (pixel
//!   edges at integers), where `start` is where the kept region begins.

use crate::shrink::{self, BoxShrink};
use crate::{PipelineError, cost};

/// Sub-pixel positions of the mask table (libvips' `VIPS_TRANSFORM_SCALE`).
const SUBPIXEL: usize = 64;
/// Fixed-point bits of a coefficient (libvips' `VIPS_INTERPOLATE_SHIFT`).
const SHIFT: u32 = 12;
const ROUND: i32 = 1 << (SHIFT - 1);

fn lanczos3(x: f64) -> f64 {
    if x == 0.0 {
        return 1.0;
    }
    if !(-3.0..=3.0).contains(&x) {
        return 0.0;
    }
    let px = std::f64::consts::PI * x;
    3.0 * px.sin() * (px / 3.0).sin() / (px * px)
}

/// How one axis is sampled: per output sample the first source index (before clamping) and a
/// mask from the table.
struct Axis {
    taps: usize,
    /// `(SUBPIXEL + 1) * taps` fixed-point coefficients.
    table: Vec<i16>,
    /// Per output sample: the first source index and the mask's row in `table`.
    samples: Vec<(isize, usize)>,
}

impl Axis {
    /// `out_len` samples over a source axis of `shrink * out_len` pixels starting at `start`.
    ///
    /// The per-sample list (`out_len` entries) is reserved fallibly; the mask table holds
    /// `65 * taps` coefficients, bounded because the callers box first ([`box_factor`]), which
    /// leaves a Lanczos3 shrink under 4 (at most 25 taps).
    ///
    /// # Errors
    /// [`PipelineError::Encode`] when the per-sample list cannot be reserved.
    fn new(out_len: usize, shrink: f64, start: f64) -> Result<Self, PipelineError> {
        // libvips skips an axis that keeps its size.
        if shrink == 1.0 && start == 0.0 {
            return Ok(Self {
                taps: 1,
                table: vec![1 << SHIFT],
                samples: cost::collect(out_len, (0..out_len).map(|i| (i as isize, 0)))?,
            });
        }
        let taps = 2 * (3.0 * shrink).round_ties_even() as usize + 1;
        let mut table = Vec::with_capacity((SUBPIXEL + 1) * taps);
        let mut mask = vec![0.0f64; taps];
        for t in 0..=SUBPIXEL {
            let x = t as f64 / SUBPIXEL as f64;
            let half = x + taps as f64 / 2.0 - 1.0;
            let mut sum = 0.0;
            for (i, m) in mask.iter_mut().enumerate() {
                *m = lanczos3((i as f64 - half) / shrink);
                sum += *m;
            }
            table.extend(
                mask.iter()
                    .map(|m| (m / sum * f64::from(1 << SHIFT)) as i16),
            );
        }
        // libvips pads the source by `ceil(taps / 2) - 1` on each side and walks an offset
        // coordinate Y in that padded space.
        let pad = taps.div_ceil(2) - 1;
        let samples = cost::collect(
            out_len,
            (0..out_len).map(|i| {
                let y = start + (i as f64 + 0.5) * shrink;
                let py = y.floor();
                let sub =
                    ((y * (2 * SUBPIXEL) as f64).floor() as i64).rem_euclid(2 * SUBPIXEL as i64);
                let t = ((sub + 1) >> 1) as usize;
                (py as isize - pad as isize, t * taps)
            }),
        )?;
        Ok(Self {
            taps,
            table,
            samples,
        })
    }

    fn mask(&self, row: usize) -> &[i16] {
        &self.table[row..row + self.taps]
    }
}

fn clamp_index(i: isize, len: usize) -> usize {
    i.clamp(0, len as isize - 1).unsigned_abs()
}

fn to_u8(sum: i32) -> u8 {
    u8::try_from(((sum + ROUND) >> SHIFT).clamp(0, 255)).unwrap_or(u8::MAX)
}

/// A reduction of one image: the kept region of each axis and the output size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reduction {
    /// Output width and height in pixels.
    pub out: (usize, usize),
    /// Source pixels per output pixel, at least 1, per axis.
    pub shrink: (f64, f64),
    /// Where the kept region starts, in source pixels (may be negative: edges repeat).
    pub start: (f64, f64),
}

/// Reduces an RGB image (`width` pixels a row) as `r` says, in libvips' order: along each axis
/// that shrinks by 4 or more, boxes of k = shrink / 2 (rounded down) pixels are averaged first
/// (`vips_reducev` / `vips_reduceh` with sharp's reducing gap of 2), so the steps are: box
/// down, Lanczos3 down, box across, Lanczos3 across. Returns the `r.out` pixels, RGB, row by
/// row.
///
/// # Errors
/// [`PipelineError::Encode`] when a buffer's size overflows or cannot be reserved
/// ([`Reducer::new`], [`BoxShrink::rows_only`]).
pub(crate) fn reduce_rgb(src: &[u8], width: usize, r: Reduction) -> Result<Vec<u8>, PipelineError> {
    let height = src.len() / (width * 3).max(1);
    let (bx, by) = (box_factor(r.shrink.0), box_factor(r.shrink.1));
    let k = by as f64;
    let boxed = Reduction {
        shrink: (r.shrink.0, r.shrink.1 / k),
        start: (r.start.0, r.start.1 / k),
        ..r
    };
    let mut reducer = Reducer::<3>::new(width, height.div_ceil(by), &boxed, bx)?;
    let rows = src.chunks_exact(width * 3);
    if by < 2 {
        rows.for_each(|row| reducer.push(row));
    } else {
        // The box down streams its rows straight into the reduction.
        let mut boxes = BoxShrink::rows_only(
            u32::try_from(width).unwrap_or(u32::MAX),
            u32::try_from(height).unwrap_or(u32::MAX),
            3,
            by,
        )?;
        for row in rows {
            boxes.push(row);
            boxes.drain_rows(&mut |boxed| reducer.push(boxed));
        }
        boxes.flush();
        boxes.drain_rows(&mut |boxed| reducer.push(boxed));
    }
    reducer.finish()
}

/// The box factor libvips puts before a Lanczos3 reduction by `shrink` (its gap of 2).
pub(crate) fn box_factor(shrink: f64) -> usize {
    (shrink / 2.0).floor().max(1.0) as usize
}

/// A reduction fed one source row at a time, top to bottom, holding only the rows the next
/// output row still needs: a decoder can stream into it, so a large source never exists whole.
///
/// Both passes run the same vectorised row kernel ([`vertical`]): the vertical pass writes its
/// result transposed, so the horizontal pass reads source columns as rows, and its result is
/// transposed back at the end. The box across (libvips' `shrinkh`, after `reducev`) runs on
/// each vertical-pass row as it comes out.
///
/// Every buffer whose size follows the request or the source (the columns, the vertical
/// pass's line and its boxed copy, the source rows held, the horizontal pass's result and the
/// output) is sized with checked arithmetic and reserved fallibly: a size that overflows or
/// memory the system refuses is a [`PipelineError::Encode`] from [`Reducer::new`], or, for a
/// row buffer while rows stream in, from [`Reducer::finish`].
pub(crate) struct Reducer<const CH: usize> {
    v: Axis,
    h: Axis,
    out: (usize, usize),
    /// Source row length in samples and source height in rows.
    stride: usize,
    height: usize,
    /// Vertical pass, boxed across, stored column by column: column x is
    /// `columns[x * oh * CH..][..oh * CH]`.
    columns: Vec<u8>,
    /// Source rows `first..first + window.len()`, and spare row buffers.
    window: std::collections::VecDeque<Vec<u8>>,
    first: usize,
    spare: Vec<Vec<u8>>,
    received: usize,
    /// The next output row of the vertical pass.
    next: usize,
    line: Vec<u8>,
    /// With a box across: its averages and the boxed row.
    averages: Option<shrink::Averages>,
    boxed: Vec<u8>,
    /// A row buffer that could not be reserved while rows were pushed: `finish` returns it.
    failed: Option<PipelineError>,
}

impl<const CH: usize> Reducer<CH> {
    /// A reduction of a `width` x `height` source (pixels of `CH` bytes) as `r` says, with a
    /// box of `hbox` pixels across. Reserves the columns (`ceil(width / hbox) * r.out.1` pixels)
    /// and two rows; checks that the output's `r.out.0 * r.out.1` pixels have a size.
    ///
    /// # Errors
    /// [`PipelineError::Encode`] when a size overflows `usize` or the memory cannot be
    /// reserved ([`cost::samples`], [`cost::buffer`]).
    pub(crate) fn new(
        width: usize,
        height: usize,
        r: &Reduction,
        hbox: usize,
    ) -> Result<Self, PipelineError> {
        let (ow, oh) = r.out;
        let hbox = hbox.max(1);
        let k = hbox as f64;
        let boxed_width = width.div_ceil(hbox);
        // The output's size is checked now, before any row is decoded; `finish` reserves it.
        cost::samples(ow, oh, CH)?;
        Ok(Self {
            columns: cost::buffer(cost::samples(boxed_width, oh, CH)?, 0)?,
            line: cost::buffer(cost::samples(width, 1, CH)?, 0)?,
            boxed: cost::buffer(cost::samples(boxed_width, 1, CH)?, 0)?,
            v: Axis::new(oh, r.shrink.1, r.start.1)?,
            h: Axis::new(ow, r.shrink.0 / k, r.start.0 / k)?,
            out: r.out,
            stride: width * CH,
            height: height.max(1),
            window: std::collections::VecDeque::new(),
            first: 0,
            spare: Vec::new(),
            received: 0,
            next: 0,
            averages: (hbox > 1).then(|| shrink::Averages::new(hbox)),
            failed: None,
        })
    }

    /// The first and last source rows output row `y` reads (edges repeat).
    fn needs(&self, y: usize) -> (usize, usize) {
        let (first, _) = self.v.samples[y];
        (
            clamp_index(first, self.height),
            clamp_index(first + self.v.taps as isize - 1, self.height),
        )
    }

    /// Takes the next source row (`width * CH` samples; extra samples are ignored). A row
    /// buffer that cannot be reserved stops the reduction: [`Reducer::finish`] returns the
    /// error.
    pub(crate) fn push(&mut self, row: &[u8]) {
        if self.received >= self.height || self.failed.is_some() {
            return;
        }
        // A spare row already has room for `stride` samples; a new one is reserved fallibly.
        let mut buf = match self.spare.pop() {
            Some(buf) => buf,
            None => match cost::reserve(self.stride) {
                Ok(buf) => buf,
                Err(e) => {
                    self.failed = Some(e);
                    return;
                }
            },
        };
        buf.clear();
        buf.extend_from_slice(&row[..self.stride.min(row.len())]);
        buf.resize(self.stride, 0);
        self.window.push_back(buf);
        self.received += 1;
        while self.next < self.out.1 && self.needs(self.next).1 < self.received {
            self.emit(self.next);
            self.next += 1;
        }
        let keep_from = if self.next < self.out.1 {
            self.needs(self.next).0
        } else {
            self.received
        };
        // The newest row always stays: a source that ends early repeats it (see `finish`).
        while self.first < keep_from
            && self.window.len() > 1
            && let Some(old) = self.window.pop_front()
        {
            self.spare.push(old);
            self.first += 1;
        }
    }

    /// Computes vertical-pass row `y` from the window (never empty here) and stores it, boxed,
    /// in the columns.
    fn emit(&mut self, y: usize) {
        let (first, m) = self.v.samples[y];
        let last = self.first + self.window.len() - 1;
        let taps: Vec<&[u8]> = (0..self.v.taps)
            .map(|k| {
                let row = clamp_index(first + k as isize, self.height).clamp(self.first, last);
                self.window[row - self.first].as_slice()
            })
            .collect();
        vertical(&taps, self.v.mask(m), &mut self.line);
        let row = if let Some(averages) = &self.averages {
            shrink::average_pixels::<CH>(&self.line, averages, &mut self.boxed);
            &self.boxed[..]
        } else {
            &self.line[..]
        };
        let column = self.out.1 * CH;
        for (x, px) in row.chunks_exact(CH).enumerate() {
            let at = x * column + y * CH;
            self.columns[at..at + CH].copy_from_slice(px);
        }
    }

    /// Runs the horizontal pass and returns the `r.out` pixels (`r.out.0 * r.out.1 * CH`
    /// bytes, row by row). A source that ended early repeats its last row.
    ///
    /// # Errors
    /// [`PipelineError::Encode`] when a row buffer could not be reserved while rows were
    /// pushed, or the horizontal pass's result or the output cannot be.
    pub(crate) fn finish(mut self) -> Result<Vec<u8>, PipelineError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if !self.window.is_empty() {
            while self.next < self.out.1 {
                self.emit(self.next);
                self.next += 1;
            }
        }
        let (ow, oh) = self.out;
        let column = oh * CH;
        let width = self.columns.len() / column.max(1);
        // Checked by `new`: `ow * oh * CH` fits in usize.
        let len = cost::samples(ow, oh, CH)?;
        let mut transposed = cost::buffer(len, 0_u8)?;
        for (&(first, m), out) in self
            .h
            .samples
            .iter()
            .zip(transposed.chunks_exact_mut(column))
        {
            let taps: Vec<&[u8]> = (0..self.h.taps)
                .map(|k| {
                    let x = clamp_index(first + k as isize, width);
                    &self.columns[x * column..(x + 1) * column]
                })
                .collect();
            vertical(&taps, self.h.mask(m), out);
        }
        let mut out = cost::buffer(len, 0_u8)?;
        for (x, col) in transposed.chunks_exact(column).enumerate() {
            for (y, px) in col.chunks_exact(CH).enumerate() {
                let at = (y * ow + x) * CH;
                out[at..at + CH].copy_from_slice(px);
            }
        }
        Ok(out)
    }
}

/// One output row of the vertical pass: `out[i] = round(sum_k mask[k] * rows[k][i])`, sixteen
/// samples at a time in registers (the compiler turns the i16 x u8 products into `pmaddwd`),
/// compiled for AVX2 as well and chosen at run time.
fn vertical(rows: &[&[u8]], mask: &[i16], out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), the only requirement of the call.
        #[expect(
            unsafe_code,
            reason = "an AVX2 intrinsic; the SAFETY comment above gives the condition it needs"
        )]
        unsafe {
            vertical_avx2(rows, mask, out);
        }
        return;
    }
    vertical_baseline(rows, mask, out);
}

/// [`vertical_baseline`] compiled with AVX2 (eight 32-bit lanes instead of four).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn vertical_avx2(rows: &[&[u8]], mask: &[i16], out: &mut [u8]) {
    vertical_baseline(rows, mask, out);
}

#[inline(always)]
fn vertical_baseline(rows: &[&[u8]], mask: &[i16], out: &mut [u8]) {
    const LANES: usize = 16;
    let n = out.len();
    let mut x = 0;
    while x + LANES <= n {
        let mut acc = [0i32; LANES];
        for (row, &c) in rows.iter().zip(mask) {
            let c = i32::from(c);
            let px = &row[x..x + LANES];
            for (a, &p) in acc.iter_mut().zip(px) {
                *a += c * i32::from(p);
            }
        }
        for (o, a) in out[x..x + LANES].iter_mut().zip(acc) {
            *o = to_u8(a);
        }
        x += LANES;
    }
    for (i, o) in out.iter_mut().enumerate().skip(x) {
        let sum = rows
            .iter()
            .zip(mask)
            .map(|(row, &c)| i32::from(c) * i32::from(row[i]))
            .sum();
        *o = to_u8(sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A reduction by 2 both ways to `out` pixels.
    fn halving(out: (usize, usize)) -> Reduction {
        Reduction {
            out,
            shrink: (2.0, 2.0),
            start: (0.0, 0.0),
        }
    }

    /// Whether `e` is the pipeline's error for a buffer, its message containing `says`.
    fn refused<T>(e: Result<T, PipelineError>, says: &str) -> bool {
        matches!(&e, Err(PipelineError::Encode(m)) if m.contains(says))
    }

    #[test]
    fn masks_sum_close_to_one_and_peak_at_the_centre() {
        let a = Axis::new(10, 1.25, 0.0).unwrap();
        assert_eq!(a.taps, 9);
        let m = a.mask(0);
        let sum: i32 = m.iter().map(|&c| i32::from(c)).sum();
        assert!((4080..=4096).contains(&sum), "{sum}");
        // x = 0: centre between taps 3 and 4... position 3.5.
        assert_eq!(m[3], m[4]);
    }

    #[test]
    fn the_dispatched_kernel_matches_the_baseline_one() {
        // 9 rows of 1000 pseudo-random samples (past the 16-lane blocks, into the tail).
        let mut state = 0x2545_f491_u32;
        let rows: Vec<Vec<u8>> = (0..9)
            .map(|_| {
                (0..1000)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 17;
                        state ^= state << 5;
                        state.to_le_bytes()[0]
                    })
                    .collect()
            })
            .collect();
        let taps: Vec<&[u8]> = rows.iter().map(Vec::as_slice).collect();
        let axis = Axis::new(4, 1.25, 0.3).unwrap();
        for m in [0, axis.taps * 17, axis.taps * 64] {
            let (mut a, mut b) = (vec![0u8; 1000], vec![0u8; 1000]);
            vertical(&taps, axis.mask(m), &mut a);
            vertical_baseline(&taps, axis.mask(m), &mut b);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn a_source_that_ends_early_repeats_its_last_row() {
        let r = halving((4, 4));
        let mut reducer = Reducer::<3>::new(8, 8, &r, 1).unwrap();
        for _ in 0..3 {
            reducer.push(&[90u8; 24]);
        }
        let out = reducer.finish().unwrap();
        assert_eq!(out.len(), 4 * 4 * 3);
        assert!(out.iter().all(|&v| (88..=90).contains(&v)), "{out:?}");
        assert!(
            Reducer::<3>::new(8, 8, &r, 1)
                .and_then(Reducer::finish)
                .unwrap()
                .iter()
                .all(|&v| v == 0)
        );
    }

    #[test]
    fn a_flat_image_stays_flat() {
        let src = vec![77u8; 40 * 30 * 3];
        let r = Reduction {
            out: (13, 9),
            shrink: (40.0 / 13.0, 30.0 / 9.0),
            start: (0.0, 0.0),
        };
        let out = reduce_rgb(&src, 40, r).unwrap();
        assert_eq!(out.len(), 13 * 9 * 3);
        assert!(out.iter().all(|&v| (76..=77).contains(&v)), "{out:?}");
    }

    #[test]
    fn an_impossible_reduction_is_an_error_not_an_abort() {
        // An output whose pixels overflow usize, with a small source: refused before any
        // buffer is made.
        let huge = halving((usize::MAX / 2, 3));
        assert!(refused(Reducer::<3>::new(8, 8, &huge, 1), "overflows"));
        // Columns of a source as wide as usize allows: the product overflows.
        let wide = Reducer::<3>::new(usize::MAX, 8, &halving((4, 4)), 1);
        assert!(refused(wide, "overflows"));
        // Sizes that fit in usize but whose bytes exceed isize::MAX: refused by the
        // reservation, whatever the machine's memory (the horizontal axis's samples, then a
        // row of 2^61 RGBA pixels).
        let long = Reducer::<3>::new(8, 8, &halving((1 << 61, 1)), 1);
        assert!(refused(long, "cannot reserve"));
        let row = Reducer::<4>::new(1 << 61, 8, &halving((1, 1)), 1 << 50);
        assert!(refused(row, "cannot reserve"));
        assert!(refused(
            Axis::new(usize::MAX / 8, 1.0, 0.0),
            "cannot reserve"
        ));
        // The whole-image entry point says the same.
        assert!(refused(reduce_rgb(&[0; 24], 8, huge), "overflows"));
    }

    #[test]
    fn a_row_that_cannot_be_held_fails_the_reduction_at_finish() {
        let mut reducer = Reducer::<3>::new(8, 8, &halving((4, 4)), 1).unwrap();
        reducer.failed = Some(PipelineError::Encode("cannot reserve a row".into()));
        reducer.push(&[90u8; 24]);
        assert_eq!(reducer.received, 0);
        assert!(refused(reducer.finish(), "cannot reserve"));
    }
}
