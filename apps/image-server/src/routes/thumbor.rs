//! thumbor's URL format under THUMBOR_PREFIX
//! (docs/image-service.md, "Moving from imgproxy / thumbor"):
//! `/{signature|unsafe}/[trim]/[AxB:CxD]/[fit-in]/[-]WxH/[halign]/[valign]/[smart]/
//! [filters:...]/{image}`, each part and filter mapped onto our own resize parameters; one we
//! cannot honour is a 400 naming it.

use base64::Engine;
use hmac::{Hmac, Mac};
use image_params::{Fit, Name, Position};
use secrecy::{ExposeSecret, SecretString};
use sha1::Sha1;

use super::compat::{self, MAX_OPTIONS, Pairs, malformed, number, unsupported};
use crate::AppState;
use crate::error::ApiError;

/// thumbor's SECURITY_KEY (THUMBOR_SECURITY_KEY).
pub(crate) struct Signer {
    key: SecretString,
    allow_unsafe: bool,
}

impl Signer {
    /// The signer for THUMBOR_SECURITY_KEY, `None` when unset (only `unsafe` URLs are served,
    /// and any other signature too, as thumbor without a key does not check them).
    pub(crate) fn new(key: Option<&SecretString>, allow_unsafe: bool) -> Option<Self> {
        let key = key.filter(|k| !k.expose_secret().is_empty())?.clone();
        Some(Self { key, allow_unsafe })
    }

    /// Whether `signature` is thumbor's: base64url (with padding, or without) of
    /// HMAC-SHA1(key, `path`), `path` the URL after the signature and its slash, as sent.
    fn verify(&self, signature: &str, path: &str) -> bool {
        let Ok(given) = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(signature.trim_end_matches('='))
        else {
            return false;
        };
        let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(self.key.expose_secret().as_bytes()) else {
            return false;
        };
        mac.update(path.as_bytes());
        mac.verify_slice(&given).is_ok()
    }
}

/// Reads a thumbor URL: `signature` and the `path` after it (from its `/`), checked first (403
/// before any other work), then the parts, filters and image. Answers whether the URL was
/// signed, the source and our parameters.
///
/// # Errors
/// 403 a wrong signature, or `unsafe` with a key and without THUMBOR_ALLOW_UNSAFE; 400 a part
/// or filter that is malformed or not supported (named), a remote source, a bad path;
/// 404/415/422/503 reading the source when a part needs its size.
pub(crate) async fn read(
    app: &AppState,
    signature: &str,
    path: &str,
) -> Result<(bool, compat::Source, Pairs), ApiError> {
    // thumbor signs the path after the signature's slash.
    let path = path.strip_prefix('/').unwrap_or(path);
    let signed = match &app.thumbor {
        Some(signer) if signature == "unsafe" && signer.allow_unsafe => false,
        Some(signer) if !signer.verify(signature, path) => return Err(ApiError::Forbidden),
        Some(_) => true,
        None => false,
    };
    let url = parse(path)?;
    let needs_size = url.focal.is_some() || url.adaptive || url.width_orig || url.height_orig;
    let (source, mut pairs, size) = compat::prepare(app, &url.image, needs_size).await?;
    url.apply(&mut pairs, size);
    Ok((signed, source, pairs))
}

/// A thumbor URL after its signature.
#[derive(Debug, Default)]
struct Url {
    trim: Option<u8>,
    /// left, top, right, bottom.
    crop: Option<[u32; 4]>,
    fit_in: bool,
    /// `adaptive-`: the box turned when its orientation is not the source's.
    adaptive: bool,
    /// `full-`: the smaller side fits the box, the other overflows it (our `outside`).
    full: bool,
    width: u32,
    height: u32,
    /// `orig` width or height: the source's own (after the crop), read from its header.
    width_orig: bool,
    height_orig: bool,
    flip: bool,
    flop: bool,
    halign: Option<&'static str>,
    valign: Option<&'static str>,
    smart: bool,
    no_upscale: bool,
    fill: Option<String>,
    /// The focal region's centre, in source pixels.
    focal: Option<(f64, f64)>,
    /// Our pairs set directly by a filter.
    direct: Vec<(Name, String)>,
    image: String,
}

/// A non-negative integer part of a size or crop.
fn pixels(part: &str, v: &str) -> Result<u32, ApiError> {
    if v.is_empty() {
        return Ok(0);
    }
    v.parse::<u32>()
        .ok()
        .filter(|n| *n <= 1_000_000)
        .ok_or_else(|| malformed(part, v))
}

/// `AxB:CxD` as left, top, right, bottom.
fn rect(part: &str, v: &str) -> Option<Result<[u32; 4], ApiError>> {
    let (a, b) = v.split_once(':')?;
    let (l, t) = a.split_once('x')?;
    let (r, bt) = b.split_once('x')?;
    let all = [l, t, r, bt];
    if !all
        .iter()
        .all(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
    {
        return None;
    }
    let mut out = [0; 4];
    for (o, s) in out.iter_mut().zip(all) {
        match pixels(part, s) {
            Ok(n) => *o = n,
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(out))
}

/// `[-]W x [-]H`: each side digits, empty (proportional) or `orig` (the source's own, after
/// the crop), as thumbor's URL pattern takes them.
fn size(v: &str) -> Option<(bool, &str, bool, &str)> {
    let (w, h) = v.split_once('x')?;
    let (fw, w) = w.strip_prefix('-').map_or((false, w), |w| (true, w));
    let (fh, h) = h.strip_prefix('-').map_or((false, h), |h| (true, h));
    let side = |s: &str| s == "orig" || s.bytes().all(|c| c.is_ascii_digit());
    (side(w) && side(h)).then_some((fw, w, fh, h))
}

/// A side of a size: `orig` is `None` (the source's own), else its pixels (0: proportional).
fn side(part: &str, v: &str) -> Result<Option<u32>, ApiError> {
    if v == "orig" {
        Ok(None)
    } else {
        pixels(part, v).map(Some)
    }
}

/// Parses the parts in thumbor's order; the first segment that is no part starts the image.
///
/// # Errors
/// 400 a malformed or unsupported part or filter (named).
fn parse(path: &str) -> Result<Url, ApiError> {
    let mut url = Url::default();
    let segments: Vec<&str> = path.split('/').collect();
    let mut i = 0;
    // Each optional part may appear once, in this order.
    let mut stage = 0u8;
    while i < segments.len() && i < MAX_OPTIONS {
        let joined;
        let mut s = segments[i];
        if stage <= 8 && s.starts_with("filters:") && !s.ends_with(')') {
            // thumbor reads filters up to the first `)/`: an argument may hold slashes.
            let Some(end) = (i..segments.len()).find(|&j| segments[j].ends_with(')')) else {
                return Err(malformed("filters", s));
            };
            joined = segments[i..=end].join("/");
            s = &joined;
            i = end;
        }
        let step = if stage == 0 && s == "meta" {
            return Err(unsupported("meta", "thumbor's metadata endpoint"));
        } else if stage <= 1 && (s == "trim" || s.starts_with("trim:")) {
            let mut args = s.split(':').skip(1);
            match args.next() {
                None | Some("top-left") => {}
                Some(other) => return Err(unsupported("trim", &format!("trim from {other:?}"))),
            }
            // thumbor's tolerance defaults to 0: only the corner's exact colour is trimmed.
            let t = args
                .next()
                .map_or(Ok(0.0), |v| number("trim", v, 0.0..=442.0))?;
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "clamped to 0..=255"
            )]
            let t = t.round().min(255.0) as u8;
            url.trim = Some(t);
            2
        } else if let Some(r) = (stage <= 2).then(|| rect("crop", s)).flatten() {
            url.crop = Some(r?);
            3
        } else if stage <= 3
            && matches!(
                s,
                "fit-in" | "adaptive-fit-in" | "full-fit-in" | "adaptive-full-fit-in"
            )
        {
            url.fit_in = true;
            url.adaptive = s.starts_with("adaptive-");
            url.full = s.contains("full-");
            4
        } else if let Some((fw, w, fh, h)) = (stage <= 4).then(|| size(s)).flatten() {
            url.flip = fw;
            url.flop = fh;
            (url.width, url.width_orig) = side("width", w)?.map_or((0, true), |w| (w, false));
            (url.height, url.height_orig) = side("height", h)?.map_or((0, true), |h| (h, false));
            5
        } else if stage <= 5 && matches!(s, "left" | "center" | "right") {
            url.halign = Some(match s {
                "left" => "left",
                "right" => "right",
                _ => "center",
            });
            6
        } else if stage <= 6 && matches!(s, "top" | "middle" | "bottom") {
            url.valign = Some(match s {
                "top" => "top",
                "bottom" => "bottom",
                _ => "middle",
            });
            7
        } else if stage <= 7 && s == "smart" {
            url.smart = true;
            8
        } else if stage <= 8 && s.starts_with("filters:") {
            url.filters(&s["filters:".len()..])?;
            9
        } else {
            break;
        };
        stage = step;
        i += 1;
    }
    let image = segments[i..].join("/");
    url.image = percent_encoding::percent_decode_str(&image)
        .decode_utf8()
        .map_err(|_| ApiError::BadRequest("thumbor image is not UTF-8".into()))?
        .into_owned();
    if url.image.is_empty() {
        return Err(ApiError::BadRequest("thumbor URL has no image".into()));
    }
    if url.trim.is_some() && (url.width_orig || url.height_orig) {
        return Err(unsupported(
            "orig",
            "`orig` with trim (the trimmed size is known only after decoding)",
        ));
    }
    Ok(url)
}

/// Splits `name(args):name(args)` at the colons outside parentheses.
fn split_filters(v: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in v.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ':' if depth == 0 => {
                out.push(&v[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&v[start..]);
    out
}

impl Url {
    fn direct(&mut self, name: Name, value: String) {
        self.direct.retain(|(n, _)| *n != name);
        self.direct.push((name, value));
    }

    /// Reads `filters:...`.
    fn filters(&mut self, v: &str) -> Result<(), ApiError> {
        let filters = split_filters(v);
        if filters.len() > MAX_OPTIONS {
            return Err(ApiError::BadRequest(format!(
                "thumbor URL has more than {MAX_OPTIONS} filters"
            )));
        }
        for f in filters.into_iter().filter(|f| !f.is_empty()) {
            let (name, args) = f
                .strip_suffix(')')
                .and_then(|f| f.split_once('('))
                .ok_or_else(|| malformed("filters", f))?;
            let args: Vec<&str> = if args.is_empty() {
                Vec::new()
            } else {
                args.split(',').map(str::trim).collect()
            };
            let arg = |i: usize| args.get(i).copied().unwrap_or("");
            match name {
                "quality" => {
                    let q = number(name, arg(0), 0.0..=100.0)?;
                    self.direct(Name::Quality, format!("{}", q.round().max(1.0)));
                }
                "format" => {
                    let f = compat::output_format(name, arg(0))?;
                    self.direct(Name::Format, f.name().to_owned());
                }
                "blur" => {
                    let radius = number(name, arg(0), 0.0..=150.0)?;
                    let sigma = if arg(1).is_empty() {
                        radius
                    } else {
                        number(name, arg(1), 0.0..=150.0)?
                    };
                    if sigma > 0.0 {
                        self.direct(Name::Blur, format!("{sigma}"));
                    }
                }
                "grayscale" => self.direct(Name::Grayscale, "true".into()),
                "rotate" => {
                    // thumbor (PIL) turns counter-clockwise; ours clockwise.
                    let a = number(name, arg(0), -36000.0..=36000.0)?;
                    self.direct(Name::Rotate, format!("{}", (-a).rem_euclid(360.0)));
                }
                "max_bytes" => {
                    let n = number(name, arg(0), 0.0..=f64::from(u32::MAX))?;
                    self.direct(Name::MaxBytes, format!("{}", n.round()));
                }
                "strip_exif" | "strip_icc" => {} // results never carry metadata
                "no_upscale" => self.no_upscale = true,
                "fill" => self.fill = Some(arg(0).to_owned()),
                "focal" => {
                    let Some(Ok([l, t, r, b])) = rect(name, arg(0)) else {
                        return Err(malformed(name, arg(0)));
                    };
                    self.focal = Some((
                        (f64::from(l) + f64::from(r)) / 2.0,
                        (f64::from(t) + f64::from(b)) / 2.0,
                    ));
                }
                "watermark" => self.watermark(&args)?,
                other => {
                    return Err(unsupported(
                        &format!("thumbor filter {other}"),
                        "this filter",
                    ));
                }
            }
        }
        Ok(())
    }

    /// `watermark(image, x, y, alpha[, w_ratio[, h_ratio]])`: a stored image placed at a corner,
    /// an edge or the centre (x: `0` left, `-0` right, `center`; y: `0` top, `-0` bottom,
    /// `center`), `alpha` its transparency in percent, `w_ratio` its width in percent of the
    /// picture's.
    fn watermark(&mut self, args: &[&str]) -> Result<(), ApiError> {
        let name = "watermark";
        if args.len() < 4 {
            return Err(malformed(name, &args.join(",")));
        }
        // 0: the left or top edge, 1: the centre, 2: the right or bottom edge.
        let place = |v: &str| match v {
            "0" => Ok(0),
            "center" => Ok(1),
            "-0" => Ok(2),
            _ => Err(unsupported(
                name,
                "a watermark offset other than 0, -0, center",
            )),
        };
        let (x, y) = (place(args[1])?, place(args[2])?);
        let position = [
            [Position::NorthWest, Position::West, Position::SouthWest],
            [Position::North, Position::Centre, Position::South],
            [Position::NorthEast, Position::East, Position::SouthEast],
        ][x][y];
        let alpha = number(name, args[3], 0.0..=100.0)?;
        self.direct(Name::Watermark, args[0].to_owned());
        self.direct(Name::WatermarkPosition, position.name().to_owned());
        self.direct(Name::WatermarkOpacity, format!("{}", 1.0 - alpha / 100.0));
        match args.get(4).copied() {
            None | Some("none" | "") => {}
            Some(w) => {
                let w = number(name, w, 1.0..=100.0)?;
                self.direct(Name::WatermarkScale, format!("{}", w / 100.0));
            }
        }
        if !matches!(args.get(5).copied(), None | Some("none" | "")) {
            return Err(unsupported(name, "a watermark h_ratio"));
        }
        Ok(())
    }

    /// Writes our parameters; `size` is the source's oriented size when a focal point needs
    /// it.
    fn apply(&self, pairs: &mut Pairs, size: Option<(u32, u32)>) {
        if let Some(t) = self.trim {
            pairs.set(Name::Trim, t);
        }
        let mut crop = self.crop.map(|[l, t, r, b]| {
            [
                l.min(r),
                t.min(b),
                r.abs_diff(l).max(1),
                b.abs_diff(t).max(1),
            ]
        });
        let (mut w, mut h) = (self.width, self.height);
        // `orig`: the size after the crop, as thumbor takes it (its manual crop comes first).
        if let Some((sw, sh)) = size {
            let [_, _, cw, ch] = crop.unwrap_or([0, 0, sw, sh]);
            if self.width_orig {
                w = cw;
            }
            if self.height_orig {
                h = ch;
            }
        }
        if let (true, Some((sw, sh))) = (self.adaptive, size)
            && w > 0
            && h > 0
            && (sw < sh && w > h || sw > sh && w < h)
        {
            (w, h) = (h, w);
        }
        let mut fit = match (self.fit_in, self.full) {
            (false, _) => Fit::Cover,
            (true, false) => Fit::Inside,
            (true, true) => Fit::Outside,
        };
        if let (Some((fx, fy)), Some(src), false, true) =
            (self.focal, size, self.fit_in, w > 0 && h > 0)
        {
            let [ol, ot, ow, oh] = crop.unwrap_or([0, 0, src.0, src.1]);
            let rel = |v: f64, off: u32, len: u32| {
                ((v - f64::from(off)) / f64::from(len.max(1))).clamp(0.0, 1.0)
            };
            let [l, t, cw, ch] =
                compat::focus_window((ow, oh), (w, h), rel(fx, ol, ow), rel(fy, ot, oh));
            crop = Some([ol + l, ot + t, cw, ch]);
            fit = Fit::Fill;
        }
        if let Some([l, t, cw, ch]) = crop {
            pairs.set(Name::CropLeft, l);
            pairs.set(Name::CropTop, t);
            pairs.set(Name::CropWidth, cw);
            pairs.set(Name::CropHeight, ch);
        }
        if w == 0 && h == 0 {
            pairs.imply(Name::Zoom, 1);
        }
        if w > 0 {
            pairs.set(Name::Width, w);
        }
        if h > 0 {
            pairs.set(Name::Height, h);
        }
        if let Some(colour) = &self.fill {
            if self.fit_in {
                fit = Fit::Contain;
            }
            let bg = match colour.as_str() {
                "transparent" => "00000000".to_owned(),
                "white" => "ffffff".to_owned(),
                "black" => "000000".to_owned(),
                c => c.to_owned(),
            };
            pairs.set(Name::Background, bg);
        }
        pairs.set(Name::Fit, fit.name());
        let position = if self.smart {
            Some(Position::Attention)
        } else {
            let p = match (
                self.halign.unwrap_or("center"),
                self.valign.unwrap_or("middle"),
            ) {
                ("left", "top") => Position::NorthWest,
                ("center", "top") => Position::North,
                ("right", "top") => Position::NorthEast,
                ("left", "bottom") => Position::SouthWest,
                ("center", "bottom") => Position::South,
                ("right", "bottom") => Position::SouthEast,
                ("left", _) => Position::West,
                ("right", _) => Position::East,
                _ => Position::Centre,
            };
            (p != Position::Centre).then_some(p)
        };
        if let Some(p) = position {
            pairs.set(Name::Position, p.name());
        }
        // thumbor enlarges a crop-to-fill (or full-fit-in) result to the size asked for, never a
        // fit-in one.
        if (!self.fit_in || self.full) && !self.no_upscale {
            pairs.set(Name::Enlarge, "true");
        }
        if self.flip {
            pairs.set(Name::Flip, "true");
        }
        if self.flop {
            pairs.set(Name::Flop, "true");
        }
        for (name, value) in &self.direct {
            pairs.set(*name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_in_order_then_the_image() {
        let url = parse(
            "trim/10x20:60x80/fit-in/-100x0/left/top/smart/filters:quality(70):format(png)/a/b.jpg",
        )
        .unwrap();
        assert_eq!(url.trim, Some(0));
        assert_eq!(url.crop, Some([10, 20, 60, 80]));
        assert!(url.fit_in && url.flip && !url.flop && url.smart);
        assert_eq!((url.width, url.height), (100, 0));
        assert_eq!(url.image, "a/b.jpg");
        assert_eq!(parse("300x200/a.jpg").unwrap().image, "a.jpg");
        assert_eq!(parse("a/left/b.jpg").unwrap().image, "a/left/b.jpg");
        let url = parse("filters:watermark(m/w.png,0,0,10):quality(5)/a.jpg").unwrap();
        assert_eq!(url.image, "a.jpg");
        assert_eq!(url.direct.len(), 4);
    }

    #[test]
    fn unsupported_filters_and_parts_are_named() {
        let e = parse("filters:sepia()/a.jpg").unwrap_err().to_string();
        assert!(e.contains("sepia"), "{e}");
        let e = parse("meta/a.jpg").unwrap_err().to_string();
        assert!(e.contains("meta"), "{e}");
        assert!(parse("filters:quality(x)/a.jpg").is_err());
        assert!(parse("filters:watermark(w.png,10,10,50)/a.jpg").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn no_url_makes_the_parser_panic() {
        let tokens = [
            "/",
            "trim",
            ":",
            "top-left",
            "fit-in",
            "full-fit-in",
            "adaptive-fit-in",
            "-",
            "x",
            "0",
            "1",
            "300",
            "-0",
            "center",
            "left",
            "top",
            "smart",
            "filters:",
            "(",
            ")",
            ",",
            "focal",
            "watermark",
            "fill",
            "quality",
            "rotate",
            "blur",
            "1x1:0x0",
            "a.jpg",
            "%",
        ];
        for path in super::compat::token_soup(&tokens, 20_000) {
            if let Ok(url) = parse(&path) {
                for size in [None, Some((0, 0)), Some((1, 1)), Some((400, 200))] {
                    url.apply(&mut Pairs::default(), size);
                }
            }
        }
    }

    #[test]
    fn filters_split_outside_parentheses() {
        assert_eq!(
            split_filters("watermark(a.png,0,-0,50):quality(3)"),
            vec!["watermark(a.png,0,-0,50)", "quality(3)"]
        );
    }
}
