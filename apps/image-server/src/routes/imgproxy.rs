//! imgproxy's URL format under IMGPROXY_PREFIX
//! (docs/image-service.md, "Moving from imgproxy / thumbor"):
//! `/{signature}/{options}/plain/{source}@{ext}` or
//! `/{signature}/{options}/{base64url source}.{ext}`, each option `name:arg:arg`. Every option
//! becomes our own resize parameters ([`super::compat::Pairs`]); one we cannot honour is a 400
//! naming it, never ignored.

use base64::Engine;
use hmac::{Hmac, Mac};
use image_params::{Fit, Name};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

use super::compat::{self, MAX_OPTIONS, Pairs, malformed, number, unsupported};
use crate::error::ApiError;
use crate::{AppState, Config};

/// imgproxy's key and salt (IMGPROXY_KEY, IMGPROXY_SALT, hex) and signature size.
pub(crate) struct Signer {
    key: Vec<u8>,
    salt: Vec<u8>,
    size: usize,
}

impl Signer {
    /// The signer of `config`, `None` when IMGPROXY_KEY is unset (any signature segment is
    /// then accepted, as imgproxy does).
    ///
    /// # Errors
    /// IMGPROXY_KEY or IMGPROXY_SALT is not hex, or only one of them is set.
    pub(crate) fn from_config(config: &Config) -> anyhow::Result<Option<Self>> {
        let hex = |v: &Option<SecretString>, name: &str| -> anyhow::Result<Option<Vec<u8>>> {
            v.as_ref()
                .map(|s| s.expose_secret().trim().to_owned())
                .filter(|s| !s.is_empty())
                .map(|s| hex::decode(s).map_err(|_| anyhow::anyhow!("{name} is not hex-encoded")))
                .transpose()
        };
        match (
            hex(&config.imgproxy_key, "IMGPROXY_KEY")?,
            hex(&config.imgproxy_salt, "IMGPROXY_SALT")?,
        ) {
            (None, None) => Ok(None),
            (Some(key), Some(salt)) => Ok(Some(Self {
                key,
                salt,
                size: usize::from(config.imgproxy_signature_size),
            })),
            _ => anyhow::bail!("IMGPROXY_KEY and IMGPROXY_SALT must be set together"),
        }
    }

    /// Whether `signature` (base64url without padding) is the first `size` bytes of
    /// HMAC-SHA256(key, salt + `path`), `path` the URL path after the signature from its `/`,
    /// as sent. Compared in constant time.
    fn verify(&self, signature: &str, path: &str) -> bool {
        let Ok(given) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(signature) else {
            return false;
        };
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.key) else {
            return false;
        };
        mac.update(&self.salt);
        mac.update(path.as_bytes());
        given.len() == self.size && mac.verify_truncated_left(&given).is_ok()
    }
}

/// Reads an imgproxy URL: `signature` and the `path` after it (from its `/`), checked first
/// (403 before any other work when IMGPROXY_KEY is set), then the options and the source.
/// Answers whether the URL was signed, the source and our parameters.
///
/// # Errors
/// 403 a wrong signature; 400 an option that is malformed or not supported (named), a remote
/// source, a bad path; 404/415/422/503 reading the source when an option needs its size.
pub(crate) async fn read(
    app: &AppState,
    signature: &str,
    path: &str,
) -> Result<(bool, compat::Source, Pairs), ApiError> {
    let signed = match &app.imgproxy {
        Some(signer) if !signer.verify(signature, path) => return Err(ApiError::Forbidden),
        Some(_) => true,
        None => false,
    };
    let url = parse(path)?;
    let (source, mut pairs, size) =
        compat::prepare(app, &url.source, url.needs_source_size()).await?;
    url.options.apply(
        &mut pairs,
        size,
        app.config.imgproxy_watermark_path.as_deref(),
    )?;
    if let Some(ext) = &url.extension {
        pairs.set(
            Name::Format,
            compat::output_format("extension", ext)?.name(),
        );
    }
    Ok((signed, source, pairs))
}

/// An imgproxy URL after its signature.
#[derive(Debug, Default)]
struct Url {
    options: Options,
    /// The source, decoded (plain: percent-decoded; base64: decoded).
    source: String,
    /// `@ext` or `.ext`.
    extension: Option<String>,
}

impl Url {
    /// Whether an option's pixels depend on the source's size.
    fn needs_source_size(&self) -> bool {
        let o = &self.options;
        o.crop.is_some()
            || matches!(o.gravity, Some(Gravity::Focus(..)))
            || o.resizing_type == Some(ResizingType::Auto)
            || (o.resizing_type == Some(ResizingType::FillDown) && !o.enlarge)
            || (o.extend.is_some()
                && !o.enlarge
                && !matches!(o.resizing_type, None | Some(ResizingType::Fit)))
    }
}

/// imgproxy's `resizing_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResizingType {
    Fit,
    Fill,
    FillDown,
    Force,
    Auto,
}

/// imgproxy's gravity: a compass point (ours), `sm` (our `attention`) or a focus point.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Gravity {
    Position(image_params::Position),
    Focus(f64, f64),
}

/// The options of one URL, as imgproxy reads them (a later option wins).
#[derive(Debug, Default)]
struct Options {
    width: Option<u32>,
    height: Option<u32>,
    resizing_type: Option<ResizingType>,
    gravity: Option<Gravity>,
    enlarge: bool,
    extend: Option<Option<Gravity>>,
    /// Width, height (pixels, or shares below 1; 0 is the whole side) and gravity.
    crop: Option<(f64, f64, Option<Gravity>)>,
    /// Our pairs set directly by an option (quality, blur...), applied last.
    direct: Vec<(Name, String)>,
    /// Watermark opacity, position and scale.
    watermark: Option<(f64, image_params::Position, Option<f64>)>,
    /// Top, right, bottom, left in pixels.
    padding: Option<[u32; 4]>,
    presets: Vec<String>,
}

/// Splits the path after the signature into options and source.
///
/// # Errors
/// 400 a malformed or unsupported option (named), no source, bad base64.
fn parse(path: &str) -> Result<Url, ApiError> {
    let mut url = Url::default();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut i = 0;
    while i < segments.len() {
        let segment = segments[i];
        if segment == "plain" {
            let raw = segments[i + 1..].join("/");
            let (source, ext) = match raw.rsplit_once('@') {
                Some((s, e)) if !e.contains('/') => (s.to_owned(), Some(e.to_owned())),
                _ => (raw, None),
            };
            url.source = percent_encoding::percent_decode_str(&source)
                .decode_utf8()
                .map_err(|_| ApiError::BadRequest("imgproxy source is not UTF-8".into()))?
                .into_owned();
            url.extension = ext.filter(|e| !e.is_empty());
            break;
        }
        if !segment.contains(':') {
            // The base64 source, which may be split by slashes.
            let joined = segments[i..].concat();
            let (encoded, ext) = match joined.split_once('.') {
                Some((s, e)) => (s.to_owned(), Some(e.to_owned())),
                None => (joined, None),
            };
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(encoded.trim_end_matches('='))
                .map_err(|_| ApiError::BadRequest("imgproxy source is not base64url".into()))?;
            url.source = String::from_utf8(bytes)
                .map_err(|_| ApiError::BadRequest("imgproxy source is not UTF-8".into()))?;
            url.extension = ext.filter(|e| !e.is_empty());
            break;
        }
        if i >= MAX_OPTIONS {
            return Err(ApiError::BadRequest(format!(
                "imgproxy URL has more than {MAX_OPTIONS} options"
            )));
        }
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
        let mut args = decoded.split(':');
        let name = args.next().unwrap_or("");
        let args: Vec<&str> = args.collect();
        url.options.read(name, &args)?;
        i += 1;
    }
    if url.source.is_empty() {
        return Err(ApiError::BadRequest("imgproxy URL has no source".into()));
    }
    Ok(url)
}

/// A switch argument as imgproxy reads one: `1`, `t`, `true` are on.
fn switch(v: Option<&&str>) -> bool {
    matches!(v.copied(), Some("1" | "t" | "true"))
}

/// A width or height in pixels: 0 is "not given" (proportional).
fn side(option: &str, v: &str) -> Result<Option<u32>, ApiError> {
    if v.is_empty() {
        return Ok(None);
    }
    let n: u32 = v.parse().map_err(|_| malformed(option, v))?;
    Ok((n > 0).then_some(n))
}

fn resizing_type(option: &str, v: &str) -> Result<ResizingType, ApiError> {
    Ok(match v {
        "fit" => ResizingType::Fit,
        "fill" => ResizingType::Fill,
        "fill-down" => ResizingType::FillDown,
        "force" => ResizingType::Force,
        "auto" => ResizingType::Auto,
        _ => return Err(malformed(option, v)),
    })
}

/// `gravity` arguments: a type and, for compass points, offsets (only 0 supported), or `fp`
/// with its x and y.
fn gravity(option: &str, args: &[&str]) -> Result<Gravity, ApiError> {
    use image_params::Position as P;
    let kind = args.first().copied().unwrap_or("");
    if kind == "fp" {
        let x = number(option, args.get(1).copied().unwrap_or(""), 0.0..=1.0)?;
        let y = number(option, args.get(2).copied().unwrap_or(""), 0.0..=1.0)?;
        return Ok(Gravity::Focus(x, y));
    }
    let position = match kind {
        "ce" => P::Centre,
        "no" => P::North,
        "so" => P::South,
        "ea" => P::East,
        "we" => P::West,
        "noea" => P::NorthEast,
        "nowe" => P::NorthWest,
        "soea" => P::SouthEast,
        "sowe" => P::SouthWest,
        "sm" => P::Attention,
        _ => return Err(unsupported(option, &format!("gravity {kind:?}"))),
    };
    if args
        .get(1..)
        .unwrap_or_default()
        .iter()
        .any(|o| !o.is_empty() && number(option, o, -1e9..=1e9).ok() != Some(0.0))
    {
        return Err(unsupported(option, "a gravity offset"));
    }
    Ok(Gravity::Position(position))
}

impl Options {
    /// Reads one option.
    fn read(&mut self, name: &str, args: &[&str]) -> Result<(), ApiError> {
        let arg = |i: usize| args.get(i).copied().unwrap_or("");
        match name {
            "resize" | "rs" => {
                if !arg(0).is_empty() {
                    self.resizing_type = Some(resizing_type(name, arg(0))?);
                }
                self.size(name, &args[args.len().min(1)..])?;
            }
            "size" | "s" => self.size(name, args)?,
            "width" | "w" => self.width = side(name, arg(0))?,
            "height" | "h" => self.height = side(name, arg(0))?,
            "resizing_type" | "rt" => self.resizing_type = Some(resizing_type(name, arg(0))?),
            "gravity" | "g" => self.gravity = Some(gravity(name, args)?),
            "enlarge" | "el" => self.enlarge = switch(args.first()),
            "extend" | "ex" => {
                self.extend = if switch(args.first()) {
                    Some(if args.len() > 1 {
                        Some(gravity(name, &args[1..])?)
                    } else {
                        None
                    })
                } else {
                    None
                };
            }
            "crop" | "c" => {
                let w = number(name, arg(0), 0.0..=1e6)?;
                let h = number(
                    name,
                    if arg(1).is_empty() { "0" } else { arg(1) },
                    0.0..=1e6,
                )?;
                let g = if args.len() > 2 {
                    Some(gravity(name, &args[2..])?)
                } else {
                    None
                };
                self.crop = Some((w, h, g));
            }
            "trim" | "t" => {
                if args.iter().skip(1).any(|a| !a.is_empty()) {
                    return Err(unsupported(name, "a trim colour or equal_hor/equal_ver"));
                }
                let t = number(name, arg(0), 0.0..=255.0)?;
                self.direct(Name::Trim, format!("{}", t.round()));
            }
            "padding" | "pd" => {
                let n = |i: usize, default: u32| -> Result<u32, ApiError> {
                    if arg(i).is_empty() {
                        return Ok(default);
                    }
                    #[expect(
                        clippy::cast_possible_truncation,
                        clippy::cast_sign_loss,
                        reason = "number() holds it to 0..=8192"
                    )]
                    let px = number(name, arg(i), 0.0..=8192.0)?.round() as u32;
                    Ok(px)
                };
                let top = n(0, 0)?;
                let right = n(1, top)?;
                let bottom = n(2, top)?;
                let left = n(3, right)?;
                self.padding = Some([top, right, bottom, left]);
            }
            "background" | "bg" => {
                let hex = match args {
                    [hex] => (*hex).to_owned(),
                    [r, g, b] => {
                        let c = |v: &str| number(name, v, 0.0..=255.0).map(|n| n.round());
                        format!("{:02x}{:02x}{:02x}", c(r)? as u8, c(g)? as u8, c(b)? as u8)
                    }
                    _ => return Err(malformed(name, &args.join(":"))),
                };
                if image_params::Rgba::parse(&hex).is_none() {
                    return Err(malformed(name, &hex));
                }
                self.direct(Name::Background, hex);
            }
            "rotate" | "rot" => {
                let deg = number(name, arg(0), -36000.0..=36000.0)?;
                if deg % 90.0 != 0.0 {
                    return Err(malformed(name, arg(0)));
                }
                self.direct(Name::Rotate, format!("{}", deg.rem_euclid(360.0)));
            }
            "blur" | "bl" => self.direct_positive(Name::Blur, name, arg(0))?,
            "sharpen" | "sh" => {
                if number(name, arg(0), 0.0..=1e6)? > 0.0 {
                    self.direct(Name::Sharpen, "true".into());
                } else {
                    self.undirect(Name::Sharpen);
                }
            }
            "pixelate" | "pix" => {
                let size = number(name, arg(0), 0.0..=1e6)?;
                if size > 1.0 {
                    self.direct(Name::Pixelate, format!("{}", size.round()));
                } else {
                    self.undirect(Name::Pixelate);
                }
            }
            "quality" | "q" => self.direct_positive(Name::Quality, name, arg(0))?,
            "max_bytes" | "mb" => self.direct_positive(Name::MaxBytes, name, arg(0))?,
            "dpr" => self.direct(Name::Dpr, arg(0).to_owned()),
            "format" | "f" | "ext" => {
                let f = compat::output_format(name, arg(0))?;
                self.direct(Name::Format, f.name().to_owned());
            }
            "strip_metadata" | "sm" => {
                if !switch(args.first()) {
                    return Err(unsupported(
                        name,
                        "keeping metadata (results never carry it)",
                    ));
                }
            }
            "preset" | "pr" => self.presets.extend(args.iter().map(|a| (*a).to_owned())),
            "cachebuster" | "cb" => {}
            "watermark" | "wm" => {
                let opacity = number(name, arg(0), 0.0..=1.0)?;
                let position = match arg(1) {
                    "" => image_params::Position::Centre,
                    "re" | "ch" => return Err(unsupported(name, "a repeated watermark")),
                    p => match gravity(name, &[p])? {
                        Gravity::Position(p) => p,
                        Gravity::Focus(..) => return Err(malformed(name, p)),
                    },
                };
                if [arg(2), arg(3)].iter().any(|o| !o.is_empty() && *o != "0") {
                    return Err(unsupported(name, "a watermark offset"));
                }
                let scale = match arg(4) {
                    "" | "0" => None,
                    s => Some(number(name, s, 0.0..=1.0)?),
                };
                self.watermark = (opacity > 0.0).then_some((opacity, position, scale));
            }
            _ => {
                return Err(unsupported(
                    &format!("imgproxy option {name}"),
                    "this option",
                ));
            }
        }
        Ok(())
    }

    /// `size`'s (and `resize`'s after the type) width, height, enlarge, extend.
    fn size(&mut self, name: &str, args: &[&str]) -> Result<(), ApiError> {
        if let Some(w) = args.first() {
            self.width = side(name, w)?;
        }
        if let Some(h) = args.get(1) {
            self.height = side(name, h)?;
        }
        if let Some(e) = args.get(2) {
            self.enlarge = switch(Some(e));
        }
        if let Some(x) = args.get(3) {
            self.extend = switch(Some(x)).then_some(None);
        }
        Ok(())
    }

    fn direct(&mut self, name: Name, value: String) {
        self.undirect(name);
        self.direct.push((name, value));
    }

    fn undirect(&mut self, name: Name) {
        self.direct.retain(|(n, _)| *n != name);
    }

    /// A number option whose 0 means "off" or "the default".
    fn direct_positive(&mut self, name: Name, option: &str, v: &str) -> Result<(), ApiError> {
        if number(option, v, 0.0..=f64::from(u32::MAX))? > 0.0 {
            self.direct(name, v.to_owned());
        } else {
            self.undirect(name);
        }
        Ok(())
    }

    /// Writes our parameters. `size` is the source's oriented size, known when
    /// [`Url::needs_source_size`]; `watermark` the stored image `wm` places.
    fn apply(
        &self,
        pairs: &mut Pairs,
        size: Option<(u32, u32)>,
        watermark: Option<&str>,
    ) -> Result<(), ApiError> {
        if !self.presets.is_empty() {
            pairs.set(Name::Preset, self.presets.join(","));
        }
        // Crop first (imgproxy crops before resizing): the region, then the rest of the work
        // is on it.
        let mut region = size.map(|(w, h)| [0, 0, w, h]);
        let mut cropped = self.crop.is_some();
        if let (Some((cw, ch, g)), Some((sw, sh))) = (self.crop, size) {
            let side = |v: f64, full: u32| -> u32 {
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "clamped to 1..=full"
                )]
                let px = if v <= 0.0 {
                    full
                } else if v < 1.0 {
                    (v * f64::from(full)).round() as u32
                } else {
                    v.min(f64::from(full)) as u32
                };
                px.clamp(1, full.max(1))
            };
            let (w, h) = (side(cw, sw), side(ch, sh));
            let (fx, fy) = match g.or(self.gravity) {
                Some(Gravity::Focus(x, y)) => (x, y),
                Some(Gravity::Position(p)) => p.fractions(),
                None => (0.5, 0.5),
            };
            let slack = |full: u32, part: u32, f: f64| -> u32 {
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "clamped to 0..=full-part"
                )]
                let at = (f * f64::from(full) - f64::from(part) / 2.0)
                    .round()
                    .clamp(0.0, f64::from(full.saturating_sub(part)))
                    as u32;
                at
            };
            region = Some([slack(sw, w, fx), slack(sh, h, fy), w, h]);
        }
        let (mut fit, mut enlarge) = (Fit::Inside, self.enlarge);
        let mut position = None;
        match self.resizing_type.unwrap_or(ResizingType::Fit) {
            ResizingType::Fit => {}
            ResizingType::Fill => fit = Fit::Cover,
            ResizingType::FillDown => {
                fit = Fit::Cover;
                enlarge = false;
            }
            ResizingType::Force => fit = Fit::Fill,
            ResizingType::Auto => {
                // Fill when the source and the box are both landscape or both portrait.
                let [_, _, rw, rh] = region.unwrap_or([0, 0, 1, 1]);
                let same = match (self.width, self.height) {
                    (Some(w), Some(h)) => (rw >= rh) == (w >= h),
                    _ => false,
                };
                if same {
                    fit = Fit::Cover;
                }
            }
        }
        match self.gravity {
            Some(Gravity::Position(p)) => position = Some(p),
            Some(Gravity::Focus(fx, fy)) => {
                if let (Fit::Cover, Some(w), Some(h), Some([l, t, rw, rh])) =
                    (fit, self.width, self.height, region)
                {
                    let [wl, wt, ww, wh] = compat::focus_window((rw, rh), (w, h), fx, fy);
                    region = Some([l + wl, t + wt, ww, wh]);
                    fit = Fit::Fill;
                    cropped = true;
                }
            }
            None => {}
        }
        // fill-down without enlarging: a source smaller than the box keeps its pixels and is
        // cropped to the box's shape instead (imgproxy's calcSizes).
        let (mut width, mut height) = (self.width, self.height);
        if let (Some(ResizingType::FillDown), false, Some(w), Some(h), Some([l, t, rw, rh])) =
            (self.resizing_type, self.enlarge, width, height, region)
            && fit == Fit::Cover
            && (f64::from(w) / f64::from(rw.max(1))).max(f64::from(h) / f64::from(rh.max(1))) > 1.0
        {
            let (fx, fy) = match self.gravity {
                Some(Gravity::Position(p)) => p.fractions(),
                _ => (0.5, 0.5),
            };
            let [wl, wt, ww, wh] = compat::focus_window((rw, rh), (w, h), fx, fy);
            region = Some([l + wl, t + wt, ww, wh]);
            (width, height) = (Some(ww), Some(wh));
            fit = Fit::Fill;
            cropped = true;
        }
        let mut padding = self.padding.unwrap_or_default();
        if let Some(gravity) = self.extend {
            let at = match gravity {
                Some(Gravity::Position(p)) => p,
                _ => image_params::Position::Centre,
            };
            match (fit, width, height, region) {
                (Fit::Inside, ..) => {
                    fit = Fit::Contain;
                    position = Some(at);
                }
                // A fill that cannot enlarge a smaller source comes out smaller than the box:
                // extended to it with padding placed by the gravity, as imgproxy does.
                (Fit::Cover | Fit::Fill, Some(w), Some(h), Some([_, _, rw, rh])) if !enlarge => {
                    let (ow, oh) = if fit == Fit::Fill {
                        (w, h)
                    } else if (f64::from(self.width.unwrap_or(w)) / f64::from(rw.max(1)))
                        .max(f64::from(self.height.unwrap_or(h)) / f64::from(rh.max(1)))
                        > 1.0
                    {
                        (rw.min(w), rh.min(h))
                    } else {
                        (w, h)
                    };
                    let (box_w, box_h) = (self.width.unwrap_or(w), self.height.unwrap_or(h));
                    let (fx, fy) = at.fractions();
                    let share = |extra: u32, f: f64| -> u32 {
                        #[expect(
                            clippy::cast_possible_truncation,
                            clippy::cast_sign_loss,
                            reason = "a share 0..=1 of a u32"
                        )]
                        let part = (f64::from(extra) * f).round() as u32;
                        part
                    };
                    let (extra_w, extra_h) = (box_w.saturating_sub(ow), box_h.saturating_sub(oh));
                    let (left, top) = (share(extra_w, fx), share(extra_h, fy));
                    padding[0] += top;
                    padding[1] += extra_w - left;
                    padding[2] += extra_h - top;
                    padding[3] += left;
                }
                _ => {}
            }
        }
        if padding != [0; 4] {
            let [t, r, b, l] = padding;
            pairs.set(Name::Padding, format!("{t},{r},{b},{l}"));
        }
        if let (Some([l, t, w, h]), true) = (region, cropped) {
            pairs.set(Name::CropLeft, l);
            pairs.set(Name::CropTop, t);
            pairs.set(Name::CropWidth, w);
            pairs.set(Name::CropHeight, h);
        }
        // Without a size (its own or a preset's) imgproxy keeps the source's: zoom 1.
        pairs.imply(Name::Zoom, 1);
        if let Some(w) = width {
            pairs.set(Name::Width, w);
        }
        if let Some(h) = height {
            pairs.set(Name::Height, h);
        }
        if fit != Fit::Inside {
            pairs.set(Name::Fit, fit.name());
        }
        if let Some(p) = position {
            pairs.set(Name::Position, p.name());
        }
        if enlarge {
            pairs.set(Name::Enlarge, "true");
        }
        if let Some((opacity, position, scale)) = self.watermark {
            let Some(path) = watermark else {
                return Err(unsupported(
                    "watermark",
                    "a watermark without IMGPROXY_WATERMARK_PATH",
                ));
            };
            pairs.set(Name::Watermark, path);
            pairs.set(Name::WatermarkOpacity, opacity);
            pairs.set(Name::WatermarkPosition, position.name());
            if let Some(s) = scale {
                pairs.set(Name::WatermarkScale, s);
            }
        }
        for (name, value) in &self.direct {
            pairs.set(*name, value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(path: &str) -> Result<Vec<(String, String)>, ApiError> {
        let url = parse(path)?;
        let mut p = Pairs::default();
        url.options
            .apply(&mut p, Some((400, 200)), Some("wm.png"))?;
        Ok([
            "width",
            "height",
            "fit",
            "position",
            "cropLeft",
            "cropTop",
            "cropWidth",
            "cropHeight",
        ]
        .iter()
        .filter_map(|k| {
            let name = Name::lookup(k)?;
            p.get(name).map(|v| ((*k).to_owned(), v.to_owned()))
        })
        .collect())
    }

    #[test]
    fn signatures_are_checked_as_imgproxy_signs_them_truncated_too() {
        // imgproxy's own example key and salt; the signature as its examples/
        // signature-truncated.mjs computes it for IMGPROXY_SIGNATURE_SIZE=8.
        let signer = |size: usize| Signer {
            key: hex::decode("943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881")
                .unwrap(),
            salt: hex::decode("520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5")
                .unwrap(),
            size,
        };
        let path = "/rs:fit:300:300/plain/local:///pics/q.png";
        assert!(signer(8).verify("a-pSaIqX7nk", path));
        assert!(!signer(32).verify("a-pSaIqX7nk", path));
        assert!(!signer(8).verify("a-pSaIqX7nk", "/rs:fit:300:301/plain/local:///pics/q.png"));
        assert!(!signer(8).verify("not base64!", path));
    }

    #[test]
    fn sources_come_plain_or_in_base64_with_their_extension() {
        let url = parse("/rs:fill:100:50/plain/local:///a/b%20c.jpg@png").unwrap();
        assert_eq!(url.source, "local:///a/b c.jpg");
        assert_eq!(url.extension.as_deref(), Some("png"));
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("s3://b/a/b.jpg");
        let (one, two) = b64.split_at(5);
        let url = parse(&format!("/w:10/{one}/{two}.webp")).unwrap();
        assert_eq!(url.source, "s3://b/a/b.jpg");
        assert_eq!(url.extension.as_deref(), Some("webp"));
        assert!(parse("/w:10").is_err());
        assert!(parse("/w:10/plain/").is_err());
    }

    #[test]
    fn unknown_and_unsupported_options_are_named() {
        let e = parse("/bogus:1/plain/a.jpg").unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
        let e = parse("/sm:0/plain/a.jpg").unwrap_err().to_string();
        assert!(e.contains("sm"), "{e}");
        assert!(parse("/g:no:5:0/plain/a.jpg").is_err());
        assert!(parse("/rot:45/plain/a.jpg").is_err());
        assert!(parse("/w:-1/plain/a.jpg").is_err());
        assert!(parse("/w:99999999999/plain/a.jpg").is_err());
        for hostile in [
            "/g:/plain/a.jpg",
            "/g/plain/a.jpg",
            "/c:/plain/a.jpg",
            "/ex:1:/plain/a.jpg",
        ] {
            let _ = parse(hostile).and_then(|u| {
                let mut p = Pairs::default();
                u.options.apply(&mut p, Some((0, 0)), None)
            });
        }
    }

    #[test]
    fn no_url_makes_the_parser_panic() {
        let tokens = [
            "/",
            ":",
            "w",
            "h",
            "rs",
            "s",
            "rt",
            "g",
            "c",
            "ex",
            "el",
            "pd",
            "t",
            "wm",
            "fp",
            "fill-down",
            "auto",
            "force",
            "0",
            "1",
            "-1",
            "0.5",
            "1e9",
            "plain",
            "local://",
            "@",
            "png",
            ".",
            "aGk",
            "re",
            "soea",
            "sm",
            "pr",
            "bg",
            "%",
        ];
        for path in compat::token_soup(&tokens, 20_000) {
            if let Ok(url) = parse(&path) {
                for size in [None, Some((0, 0)), Some((1, 1)), Some((400, 200))] {
                    let _ = url
                        .options
                        .apply(&mut Pairs::default(), size, Some("w.png"));
                }
            }
        }
    }

    #[test]
    fn focus_points_and_crops_become_a_region_of_the_source() {
        let got = pairs("/rs:fill:100:100/g:fp:0:0.5/plain/a.jpg").unwrap();
        assert!(got.contains(&("cropLeft".into(), "0".into())), "{got:?}");
        assert!(got.contains(&("cropWidth".into(), "200".into())), "{got:?}");
        assert!(got.contains(&("fit".into(), "fill".into())), "{got:?}");
        let got = pairs("/c:100:50:nowe/plain/a.jpg").unwrap();
        assert!(got.contains(&("cropLeft".into(), "0".into())), "{got:?}");
        assert!(got.contains(&("cropWidth".into(), "100".into())), "{got:?}");
        let got = pairs("/c:0.5:0.5/plain/a.jpg").unwrap();
        assert!(got.contains(&("cropLeft".into(), "100".into())), "{got:?}");
        assert!(got.contains(&("cropTop".into(), "50".into())), "{got:?}");
    }
}
