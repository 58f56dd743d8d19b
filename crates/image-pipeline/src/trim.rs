//! `trim`: the box inside a uniform border (docs/image-service.md §4), found as libvips 8.14's
//! `find_trim` finds it, with the border colour taken from the top-left pixel as sharp and
//! imgproxy take it: a transparent picture is flattened onto that colour, each band is
//! smoothed by a 3x3 median (edges repeated), and a pixel is content when any band differs
//! from the border colour by more than the threshold. The box spans the first and last
//! columns and rows that hold content.
//!
//! Only the edges are searched: the rows are scanned from the top and the bottom and the
//! columns from the sides until content is met, so a photo with a thin border costs a few
//! rows, not the whole picture.

use image::DynamicImage;

use crate::PipelineError;

/// `(left, top, width, height)` of the content of `img` at `threshold` (0..=255 per band);
/// the whole picture when it is all border.
///
/// # Errors
/// [`PipelineError::Encode`] when the flattened copy (3 bytes a pixel) cannot be reserved
/// ([`crate::cost::collect`]).
pub(crate) fn content_box(
    img: &DynamicImage,
    threshold: u8,
) -> Result<(u32, u32, u32, u32), PipelineError> {
    let (w, h) = (img.width(), img.height());
    let rgba = img.to_rgba8();
    let corner = rgba.get_pixel(0, 0).0;
    // Flattened onto the border colour, as libvips flattens alpha before it compares.
    let flat: Vec<[u8; 3]> = crate::cost::collect(
        rgba.as_raw().len() / 4,
        rgba.pixels().map(|p| {
            let a = u32::from(p.0[3]);
            std::array::from_fn(|c| {
                let v = u32::from(p.0[c]) * a + u32::from(corner[c]) * (255 - a);

                ((v + 127) / 255) as u8
            })
        }),
    )?;
    let bg = flat[0];
    let at = |x: i64, y: i64| {
        let x = x.clamp(0, i64::from(w) - 1);
        let y = y.clamp(0, i64::from(h) - 1);
        let i = y as usize * w as usize + x as usize;
        flat[i]
    };
    let content = |x: u32, y: u32| {
        let (x, y) = (i64::from(x), i64::from(y));
        (0..3).any(|c| {
            let mut window = [0u8; 9];
            for (k, v) in window.iter_mut().enumerate() {
                let (dx, dy) = ((k % 3) as i64 - 1, (k / 3) as i64 - 1);
                *v = at(x + dx, y + dy)[c];
            }
            window.sort_unstable();
            window[4].abs_diff(bg[c]) > threshold
        })
    };
    let row_has = |y: u32| (0..w).any(|x| content(x, y));
    let Some(top) = (0..h).find(|&y| row_has(y)) else {
        return Ok((0, 0, w, h));
    };
    let bottom = (top..h).rev().find(|&y| row_has(y)).unwrap_or(top);
    let column_has = |x: u32| (top..=bottom).any(|y| content(x, y));
    let left = (0..w).find(|&x| column_has(x)).unwrap_or(0);
    let right = (left..w).rev().find(|&x| column_has(x)).unwrap_or(left);
    Ok((left, top, right - left + 1, bottom - top + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage, Rgba, RgbaImage};

    #[test]
    fn a_framed_square_is_found_inside_its_frame() {
        let mut img = RgbImage::from_pixel(50, 40, Rgb([255, 255, 255]));
        for y in 10..25 {
            for x in 5..45 {
                img.put_pixel(x, y, Rgb([20, 40, 200]));
            }
        }
        assert_eq!(
            content_box(&DynamicImage::ImageRgb8(img), 10).ok(),
            Some((5, 10, 40, 15))
        );
    }

    #[test]
    fn a_single_odd_pixel_is_smoothed_away_and_a_uniform_picture_kept_whole() {
        let mut img = RgbImage::from_pixel(30, 30, Rgb([0, 0, 0]));
        img.put_pixel(3, 3, Rgb([255, 255, 255]));
        let img = DynamicImage::ImageRgb8(img);
        assert_eq!(content_box(&img, 10).ok(), Some((0, 0, 30, 30)));
    }

    #[test]
    fn differences_within_the_threshold_are_border() {
        let mut img = RgbImage::from_pixel(20, 20, Rgb([200, 200, 200]));
        for y in 8..12 {
            for x in 8..12 {
                img.put_pixel(x, y, Rgb([210, 200, 200]));
            }
        }
        let img = DynamicImage::ImageRgb8(img);
        assert_eq!(content_box(&img, 10).ok(), Some((0, 0, 20, 20)));
        assert_eq!(content_box(&img, 9).ok(), Some((8, 8, 4, 4)));
    }

    #[test]
    fn transparency_is_border_when_the_corner_is_transparent() {
        let mut img = RgbaImage::from_pixel(20, 10, Rgba([0, 0, 0, 0]));
        for y in 2..8 {
            for x in 4..9 {
                img.put_pixel(x, y, Rgba([255, 0, 0, 255]));
            }
        }
        assert_eq!(
            content_box(&DynamicImage::ImageRgba8(img), 10).ok(),
            Some((4, 2, 5, 6))
        );
    }
}
