//! Shrink-on-load for decoders without a scaled mode (PNG, HEIC): rows are box-averaged by an
//! integer factor as they are decoded, so a large source never exists at full size in memory.
//!
//! This is libvips' `vips_resize` recipe (the reference sharp uses): an integer box `shrink` that
//! leaves at least twice the output size (its "reducing gap" of 2), then the usual Lanczos3
//! resize of the smaller image does the rest. Alpha is averaged with the colours weighted by it
//! (premultiplied), as sharp premultiplies before resizing.

use image::{DynamicImage, RgbImage, RgbaImage};

/// The largest box factor used; past it the Lanczos3 resize does the rest (and the sums fit u32).
const MAX_FACTOR: usize = 64;

/// The box factor for a decode that must stay at least `min_scale` of the full size in both
/// axes, keeping twice that as a margin for the final resize: 1 means no box step.
pub(crate) fn factor(min_scale: f64) -> usize {
    if min_scale.is_nan() || min_scale <= 0.0 {
        return 1;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let k = (1.0 / (2.0 * min_scale))
        .floor()
        .clamp(1.0, MAX_FACTOR as f64) as usize;
    k
}

/// Box-averages rows of 8-bit pixels by `k` in both directions as they arrive.
pub(crate) struct BoxShrink {
    k: usize,
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
}

impl BoxShrink {
    /// A shrinker for a `width` x `height` source with `channels` samples per pixel (1 to 4).
    pub(crate) fn new(width: u32, height: u32, channels: usize, k: usize) -> Self {
        let k = k.max(1);
        let (ow, oh) = (width.div_ceil(k as u32), height.div_ceil(k as u32));
        let out_ch = if channels.is_multiple_of(2) { 4 } else { 3 };
        Self {
            k,
            width,
            height,
            channels,
            acc: vec![0; ow as usize * channels],
            rows_in_acc: 0,
            out: Vec::with_capacity(ow as usize * oh as usize * out_ch),
        }
    }

    /// Adds one source row (`width * channels` samples; extra samples are ignored).
    pub(crate) fn push(&mut self, row: &[u8]) {
        let row = &row[..row.len().min(self.width as usize * self.channels)];
        match self.channels {
            1 => add_row::<1, false>(&mut self.acc, row, self.k),
            2 => add_row::<2, true>(&mut self.acc, row, self.k),
            3 => add_row::<3, false>(&mut self.acc, row, self.k),
            _ => add_row::<4, true>(&mut self.acc, row, self.k),
        }
        self.rows_in_acc += 1;
        if self.rows_in_acc == self.k {
            self.emit();
        }
    }

    /// Writes the averaged output row and clears the sums.
    fn emit(&mut self) {
        let (k, rows, width) = (self.k, self.rows_in_acc, self.width as usize);
        let out = &mut self.out;
        match self.channels {
            1 => emit_row::<1, false>(&mut self.acc, out, k, rows, width),
            2 => emit_row::<2, true>(&mut self.acc, out, k, rows, width),
            3 => emit_row::<3, false>(&mut self.acc, out, k, rows, width),
            _ => emit_row::<4, true>(&mut self.acc, out, k, rows, width),
        }
        self.rows_in_acc = 0;
    }

    /// The shrunk image (RGB, or RGBA when the source has alpha). A source that ended early
    /// gives a shorter image; callers check the decoder's own error first.
    pub(crate) fn finish(mut self) -> Option<DynamicImage> {
        if self.rows_in_acc > 0 {
            self.emit();
        }
        let ow = self.width.div_ceil(self.k as u32);
        let oh = self.height.div_ceil(self.k as u32);
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

/// Appends the averages of one row of boxes (`rows` source rows high) to `out` as RGB or RGBA,
/// and clears the sums.
fn emit_row<const CH: usize, const ALPHA: bool>(
    acc: &mut [u32],
    out: &mut Vec<u8>,
    k: usize,
    rows: usize,
    width: usize,
) {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let avg = |s: u32, inv: f32| (s as f32 * inv + 0.5).min(255.0) as u8;
    let full = 1.0 / (k * rows) as f32;
    for (ox, sums) in acc.chunks_exact_mut(CH).enumerate() {
        let bw = k.min(width - ox * k);
        let inv_n = if bw == k {
            full
        } else {
            1.0 / (bw * rows) as f32
        };
        let inv = if ALPHA {
            let a = sums[CH - 1];
            if a == 0 { 0.0 } else { 1.0 / a as f32 }
        } else {
            inv_n
        };
        if CH <= 2 {
            let v = avg(sums[0], inv);
            out.extend_from_slice(&[v, v, v]);
        } else {
            out.extend_from_slice(&[avg(sums[0], inv), avg(sums[1], inv), avg(sums[2], inv)]);
        }
        if ALPHA {
            out.push(avg(sums[CH - 1], inv_n));
        }
        sums.fill(0);
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
        let mut s = BoxShrink::new(3, 3, 1, 2);
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
        let mut s = BoxShrink::new(2, 1, 4, 2);
        s.push(&[0, 0, 0, 0, 255, 0, 0, 255]);
        let out = s.finish().map(|i| i.to_rgba8().into_raw());
        assert_eq!(out, Some(vec![255, 0, 0, 128]));
    }
}
