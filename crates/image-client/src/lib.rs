//! image-client: the Rust client of image-server (docs/image-service.md §1: resize URLs and
//! uploads).
//!
//! ```no_run
//! # async fn demo() -> Result<(), image_client::ClientError> {
//! use image_client::{ImageClient, ResizeOptions, Format};
//! let client = ImageClient::new("http://127.0.0.1:3000", "my-key")?;
//! let stored = client.upload(std::fs::read("cat.jpg").unwrap_or_default(), "pets/cat.jpg", "image/jpeg").await?;
//! // Pinned to this upload's version: cached for a year by browsers and CDNs.
//! let options = ResizeOptions { width: Some(800), format: Some(Format::Webp), version: stored.version, ..Default::default() };
//! let url = client.resize_url(&stored.path, &options);
//! # let _ = url; Ok(()) }
//! ```

use base64::Engine;
use hmac::{Hmac, Mac};
use image_params::Name;
use reqwest::Url;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

/// What can go wrong talking to image-server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The base URL does not parse or cannot carry a path.
    #[error("invalid base URL {0:?}")]
    InvalidBaseUrl(String),
    /// The request did not complete (connection, timeout, body).
    #[error("request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// `content_type` is not a media type (such as `image/jpeg`); nothing was sent.
    #[error("invalid content type {0:?}")]
    InvalidContentType(String),
    /// The server answered with an error status; `message` is its `{"error": ...}` text.
    #[error("image-server answered {status}: {message}")]
    Status { status: u16, message: String },
}

pub use image_params::{CropRect, Fit, Format, WatermarkMark};

/// A pixel rectangle of the oriented source, applied before the resize: the server's
/// [`CropRect`] under its old name here.
pub type Crop = CropRect;

/// A stored image or a line of text composited onto the output.
#[derive(Debug, Clone, PartialEq)]
pub struct WatermarkOptions {
    /// The image or the text.
    pub mark: WatermarkMark,
    /// `northwest`, `southeast` (default), `centre`...
    pub position: Option<String>,
    /// 0..=1, default 0.5.
    pub opacity: Option<f32>,
    /// Share of the output width, default 0.25.
    pub scale: Option<f32>,
}

/// Parameters of `GET /images/resize/{path}`; `None`/`false` leaves the server default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResizeOptions {
    /// Target width in pixels.
    pub width: Option<u32>,
    /// Target height in pixels.
    pub height: Option<u32>,
    /// Device pixel ratio, above 0 and at most 5: the server multiplies width and height by
    /// it (`width: 400, dpr: 2.0` is served at 800 px), so a page can ask in CSS pixels.
    pub dpr: Option<f64>,
    pub format: Option<Format>,
    /// 1..=100 (server default 80).
    pub quality: Option<u8>,
    /// `quality=auto`: the server searches the quality to its perceptual target
    /// (docs/image-service.md, "Automatic quality"); sent instead of `quality` when set.
    pub auto_quality: bool,
    /// Clockwise degrees, 0..=360.
    pub rotate: Option<f32>,
    /// Mirror left to right.
    pub flip: bool,
    /// Mirror top to bottom.
    pub flop: bool,
    pub grayscale: bool,
    pub sharpen: bool,
    /// Gaussian sigma.
    pub blur: Option<f32>,
    pub fit: Option<Fit>,
    /// `centre`, a compass point, `entropy` or `attention`.
    pub position: Option<String>,
    /// Hex colour for contain padding and rotation corners.
    pub background: Option<String>,
    /// Allow upscaling. Unsigned URLs may enlarge at most MAX_UNSIGNED_ENLARGE (default 4)
    /// times a side and grow past the source to at most MAX_UNSIGNED_OUTPUT_PIXELS (8 MP); more
    /// is a 400. A client with the signing key (`with_signing_key`) has the full range
    /// (image-server README "Deployment").
    pub enlarge: bool,
    /// Progressive JPEG.
    pub progressive: bool,
    pub crop: Option<Crop>,
    pub watermark: Option<WatermarkOptions>,
    /// The source's version from the upload ([`Uploaded::version`], `v`): the URL then never
    /// shows another picture and the server answers it `immutable` for a year; without it an
    /// answer is cached for CACHE_MAX_AGE_SECS (a day).
    pub version: Option<String>,
    /// A still of an animated source (its first frame, or `frame`'s): `animated=false`.
    pub still: bool,
    /// The frame (from 0) of an animated source a still result shows.
    pub frame: Option<u32>,
    /// Keep the source's EXIF Copyright and Artist (and an sRGB ICC profile); otherwise the
    /// result carries no metadata.
    pub keep_copyright: bool,
    /// Multiplies width and height, or without them the source's size (above 0, at most 5).
    pub zoom: Option<f64>,
    /// The smallest result width: a smaller one is scaled up, its shape kept.
    pub min_width: Option<u32>,
    /// The smallest result height: a smaller one is scaled up, its shape kept.
    pub min_height: Option<u32>,
    /// Remove a uniform border first, with this threshold 0..=255 (the server's `trim=true`
    /// is 10).
    pub trim: Option<u8>,
    /// Pixels added around the result in `background`: top, right, bottom, left.
    pub padding: Option<[u32; 4]>,
    /// Pixelate in blocks of this many pixels, 2..=256.
    pub pixelate: Option<u32>,
    /// Byte budget: the quality is lowered, then the picture shrunk, until the result fits.
    pub max_bytes: Option<u64>,
    /// Names of the server's presets (PRESETS_FILE), applied before the other options.
    pub presets: Vec<String>,
    /// With [`Format::Blurhash`]: components across and down, 1..=9 each (server default 4, 3).
    pub blurhash_components: Option<(u8, u8)>,
    /// A placeholder instead of the picture: `{"lqip": "data:image/webp;base64,...", "width",
    /// "height"}` as JSON (`lqip=true`); leave `format` unset.
    pub lqip: bool,
}

impl ResizeOptions {
    /// The query pairs, named by [`image_params::Name`] (docs/image-service.md §4).
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut q: Vec<(Name, String)> = Vec::new();
        let mut put = |name: Name, value: Option<String>| {
            if let Some(v) = value {
                q.push((name, v));
            }
        };
        let text = |v: Option<&String>| v.cloned();
        let switch = |on: bool| on.then(|| "true".to_owned());
        let crop = self.crop;
        put(Name::CropLeft, crop.map(|c| c.left.to_string()));
        put(Name::CropTop, crop.map(|c| c.top.to_string()));
        put(Name::CropWidth, crop.map(|c| c.width.to_string()));
        put(Name::CropHeight, crop.map(|c| c.height.to_string()));
        put(Name::Width, self.width.map(|w| w.to_string()));
        put(Name::Height, self.height.map(|h| h.to_string()));
        put(Name::Dpr, self.dpr.map(|d| d.to_string()));
        put(Name::Fit, self.fit.map(|f| f.name().to_owned()));
        put(Name::Position, text(self.position.as_ref()));
        put(Name::Background, text(self.background.as_ref()));
        put(Name::Rotate, self.rotate.map(|r| r.to_string()));
        put(Name::Blur, self.blur.map(|b| b.to_string()));
        put(Name::Enlarge, switch(self.enlarge));
        put(Name::Flip, switch(self.flip));
        put(Name::Flop, switch(self.flop));
        put(Name::Sharpen, switch(self.sharpen));
        put(Name::Grayscale, switch(self.grayscale));
        put(Name::Progressive, switch(self.progressive));
        if let Some(w) = &self.watermark {
            match &w.mark {
                WatermarkMark::Image(path) => put(Name::Watermark, Some(path.clone())),
                WatermarkMark::Text(t) => put(Name::WatermarkText, Some(t.clone())),
            }
            put(Name::WatermarkPosition, text(w.position.as_ref()));
            put(Name::WatermarkOpacity, w.opacity.map(|o| o.to_string()));
            put(Name::WatermarkScale, w.scale.map(|s| s.to_string()));
        }
        put(Name::Format, self.format.map(|f| f.name().to_owned()));
        put(
            Name::Quality,
            if self.auto_quality {
                Some(image_params::AUTO_QUALITY.to_owned())
            } else {
                self.quality.map(|n| n.to_string())
            },
        );
        put(Name::Animated, self.still.then(|| "false".to_owned()));
        put(Name::Frame, self.frame.map(|n| n.to_string()));
        put(Name::KeepCopyright, switch(self.keep_copyright));
        put(Name::Zoom, self.zoom.map(|z| z.to_string()));
        put(Name::MinWidth, self.min_width.map(|m| m.to_string()));
        put(Name::MinHeight, self.min_height.map(|m| m.to_string()));
        put(Name::Trim, self.trim.map(|t| t.to_string()));
        let padding = self.padding.map(|[t, r, b, l]| format!("{t},{r},{b},{l}"));
        put(Name::Padding, padding);
        put(Name::Pixelate, self.pixelate.map(|n| n.to_string()));
        put(Name::MaxBytes, self.max_bytes.map(|n| n.to_string()));
        let presets = (!self.presets.is_empty()).then(|| self.presets.join(","));
        put(Name::Preset, presets);
        let (x, y) = self.blurhash_components.unzip();
        put(Name::BlurhashX, x.map(|x| x.to_string()));
        put(Name::BlurhashY, y.map(|y| y.to_string()));
        put(Name::Lqip, switch(self.lqip));
        put(Name::Version, text(self.version.as_ref()));
        q.into_iter().map(|(n, v)| (n.as_str(), v)).collect()
    }
}

/// A client of one image-server.
#[derive(Debug, Clone)]
pub struct ImageClient {
    base: Url,
    api_key: SecretString,
    signing_key: Option<SecretString>,
    http: reqwest::Client,
}

#[derive(Debug, Deserialize)]
struct UploadReply {
    path: String,
    url: String,
    version: Option<String>,
}

/// What the server stored: `POST /images/upload`'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uploaded {
    /// The stored path, for [`ImageClient::resize_url`].
    pub path: String,
    /// The resize URL of the stored image: absolute when the server has PUBLIC_BASE_URL, else
    /// the path `/images/resize/...`.
    pub url: String,
    /// The stored object's version, for [`ResizeOptions::version`] (16 hex digits); `None`
    /// from a server older than this field.
    pub version: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ErrorReply {
    error: String,
}

impl ImageClient {
    /// `base_url` such as `http://127.0.0.1:3000` (a trailing slash is fine); `api_key` is sent
    /// as `X-API-Key` on uploads.
    ///
    /// # Errors
    /// [`ClientError::InvalidBaseUrl`] when `base_url` does not parse as an http(s) URL.
    pub fn new(base_url: &str, api_key: &str) -> Result<Self, ClientError> {
        let base = Url::parse(base_url.trim_end_matches('/'))
            .ok()
            .filter(|u| !u.cannot_be_a_base() && matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| ClientError::InvalidBaseUrl(base_url.to_owned()))?;
        Ok(Self {
            base,
            api_key: SecretString::from(api_key.to_owned()),
            signing_key: None,
            http: reqwest::Client::new(),
        })
    }

    /// Signs every URL [`Self::resize_url`] builds with `key`, for a server started with
    /// URL_SIGNING_KEY (the first of its keys, or any of them during a rotation): appends
    /// `signature=` base64url (no padding) of HMAC-SHA256 over the image path and query as sent,
    /// from after `/images/resize/` (apps/image-server/README.md, "Signed URLs").
    #[must_use]
    pub fn with_signing_key(mut self, key: &str) -> Self {
        self.signing_key = Some(SecretString::from(key.to_owned()));
        self
    }

    fn endpoint(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut p) = url.path_segments_mut() {
            p.pop_if_empty();
            for s in segments {
                p.extend(s.split('/'));
            }
        }
        url
    }

    /// The URL of `path` transformed by `options`: `{base}/images/resize/{path}?...`. Path
    /// segments and values are percent-encoded; with a signing key, `signature` comes last.
    pub fn resize_url(&self, path: &str, options: &ResizeOptions) -> String {
        let prefix = self.endpoint(&["images", "resize", ""]).path().len();
        let mut url = self.endpoint(&["images", "resize", path]);
        let pairs = options.pairs();
        if !pairs.is_empty() {
            let mut q = url.query_pairs_mut();
            for (k, v) in pairs {
                q.append_pair(k, &v);
            }
        }
        if let Some(key) = &self.signing_key {
            let mut message = url.path().get(prefix..).unwrap_or("").to_owned();
            if let Some(query) = url.query() {
                message.push('?');
                message.push_str(query);
            }
            let signature = sign(key.expose_secret(), &message);
            url.query_pairs_mut()
                .append_pair(Name::Signature.as_str(), &signature);
        }
        url.to_string()
    }

    /// Uploads `bytes` to `path` (multipart). The server sniffs the real type; `content_type`
    /// is sent as the part's type. Returns the stored path, its URL and its version.
    ///
    /// # Errors
    /// [`ClientError::Status`] with the server's message (401 bad key, 413 too large, 415 not
    /// an image, 400 bad path), [`ClientError::InvalidContentType`] before anything is sent,
    /// or [`ClientError::Http`].
    pub async fn upload(
        &self,
        bytes: Vec<u8>,
        path: &str,
        content_type: &str,
    ) -> Result<Uploaded, ClientError> {
        let name = path.rsplit('/').next().unwrap_or("upload").to_owned();
        // Checked on an empty part first: a failed `mime_str` drops the part and its bytes.
        if reqwest::multipart::Part::bytes(Vec::new())
            .mime_str(content_type)
            .is_err()
        {
            return Err(ClientError::InvalidContentType(content_type.to_owned()));
        }
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name)
            .mime_str(content_type)?;
        let form = reqwest::multipart::Form::new()
            .part("file", part)
            .text("path", path.to_owned())
            .text("contentType", content_type.to_owned());
        let response = self
            .http
            .post(self.endpoint(&["images", "upload"]))
            .header("x-api-key", self.api_key.expose_secret())
            .multipart(form)
            .send()
            .await?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            let message = serde_json::from_str::<ErrorReply>(&text).map_or(text, |e| e.error);
            return Err(ClientError::Status {
                status: status.as_u16(),
                message,
            });
        }
        let reply = response.json::<UploadReply>().await?;
        Ok(Uploaded {
            path: reply.path,
            url: reply.url,
            version: reply.version,
        })
    }
}

/// base64url (no padding) of HMAC-SHA256(key, message): a resize URL's signature.
fn sign(key: &str, message: &str) -> String {
    let mut mac = match Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC-SHA256 takes keys of any length"),
    };
    mac.update(message.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn auto_quality_and_best_format_are_sent_by_name() {
        let c = ImageClient::new("http://cdn.example:3000/", "k").unwrap();
        let url = c.resize_url(
            "a.jpg",
            &ResizeOptions {
                format: Some(Format::Best),
                quality: Some(70),
                auto_quality: true,
                ..Default::default()
            },
        );
        assert_eq!(
            url,
            "http://cdn.example:3000/images/resize/a.jpg?format=best&quality=auto"
        );
    }

    #[test]
    fn resize_url_encodes_the_path_and_lists_options() {
        let c = ImageClient::new("http://cdn.example:3000/", "k").unwrap();
        let url = c.resize_url(
            "my photos/cat #1.jpg",
            &ResizeOptions {
                width: Some(800),
                format: Some(Format::Webp),
                flip: true,
                crop: Some(Crop {
                    left: 1,
                    top: 2,
                    width: 30,
                    height: 40,
                }),
                ..Default::default()
            },
        );
        assert_eq!(
            url,
            "http://cdn.example:3000/images/resize/my%20photos/cat%20%231.jpg?cropLeft=1&cropTop=2&cropWidth=30&cropHeight=40&width=800&flip=true&format=webp"
        );
        assert_eq!(
            c.resize_url("a.png", &ResizeOptions::default()),
            "http://cdn.example:3000/images/resize/a.png"
        );
        let avif = ResizeOptions {
            format: Some(Format::Avif),
            ..Default::default()
        };
        assert_eq!(
            c.resize_url("a.png", &avif),
            "http://cdn.example:3000/images/resize/a.png?format=avif"
        );
    }

    #[test]
    fn resize_url_names_every_parameter_of_the_url_api() {
        let c = ImageClient::new("http://cdn.example", "k").unwrap();
        let options = ResizeOptions {
            width: Some(300),
            still: true,
            frame: Some(2),
            keep_copyright: true,
            zoom: Some(1.5),
            min_height: Some(100),
            trim: Some(25),
            padding: Some([1, 2, 3, 4]),
            pixelate: Some(8),
            max_bytes: Some(50_000),
            presets: vec!["thumb".into(), "gray".into()],
            watermark: Some(WatermarkOptions {
                mark: WatermarkMark::Text("© Acme".into()),
                position: None,
                opacity: None,
                scale: None,
            }),
            version: Some("0123456789abcdef".into()),
            ..Default::default()
        };
        assert_eq!(
            c.resize_url("a.jpg", &options),
            "http://cdn.example/images/resize/a.jpg?width=300&watermark_text=%C2%A9+Acme\
             &animated=false&frame=2&keep_copyright=true&zoom=1.5&min_height=100&trim=25&padding=1%2C2%2C3%2C4&pixelate=8&max_bytes=50000&preset=thumb%2Cgray\
             &v=0123456789abcdef"
        );
        let placeholder = ResizeOptions {
            format: Some(Format::Blurhash),
            blurhash_components: Some((5, 2)),
            lqip: false,
            ..Default::default()
        };
        assert_eq!(
            c.resize_url("a.jpg", &placeholder),
            "http://cdn.example/images/resize/a.jpg?format=blurhash&blurhash_x=5&blurhash_y=2"
        );
    }

    #[test]
    fn a_signing_key_appends_the_signature_of_path_and_query() {
        let c = ImageClient::new("http://cdn.example/img/", "k")
            .unwrap()
            .with_signing_key("secret");
        let options = ResizeOptions {
            width: Some(800),
            ..Default::default()
        };
        // Expected values from `printf '%s' 'a%20b.jpg?width=800' |
        //   openssl dgst -sha256 -hmac secret -binary | basenc --base64url | tr -d =`.
        assert_eq!(
            c.resize_url("a b.jpg", &options),
            "http://cdn.example/img/images/resize/a%20b.jpg?width=800\
             &signature=0FI1K2sR8W9urAbw7hkDC6knp_x9lZydZTB7bmRF5_s"
        );
        assert_eq!(
            c.resize_url("a.jpg", &ResizeOptions::default()),
            "http://cdn.example/img/images/resize/a.jpg\
             ?signature=zNiikLdDTaFCZB4oMFcpwZWwAvRzm2b3PdhtJOrBEYU"
        );
    }

    #[test]
    fn base_url_must_be_http() {
        assert!(ImageClient::new("not a url", "k").is_err());
        assert!(ImageClient::new("mailto:x@y", "k").is_err());
    }
}
