//! Settings of image-server: every one a clap flag with an environment fallback
//! (docs/configuration.md, image-server).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgAction, Parser};
use secrecy::SecretString;

/// Command line and environment of image-server.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "image-server",
    version,
    about = "Image CDN origin: resize and optimise stored images"
)]
pub struct Config {
    /// Bind address. Default 127.0.0.1:3000 (compose sets 0.0.0.0:3000).
    #[arg(long, env = "LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,

    /// Address of the Prometheus metrics listener (`GET /metrics`, OpenMetrics text), such as
    /// 127.0.0.1:9464; a listener of its own keeps the numbers off the public port. Default
    /// unset: no metrics listener.
    #[arg(long, env = "METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,

    /// Directory for server state: holds the generated api-key file. Default ./data.
    #[arg(long, env = "DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Object store: `file://DIR` (default file://./data/images), `memory://`, or `s3://BUCKET`
    /// (configured by AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
    /// AWS_ALLOW_HTTP).
    #[arg(long, env = "STORAGE_URL", default_value = "file://./data/images")]
    pub storage_url: String,

    /// Key for upload and admin endpoints (X-API-Key or Authorization: Bearer). When unset, one
    /// is generated into DATA_DIR/api-key on first start and its location logged.
    #[arg(long, env = "API_KEY", hide_env_values = true)]
    pub api_key: Option<SecretString>,

    /// Keys for signed resize URLs, comma-separated to accept several while one is rotated out.
    /// When set, every `GET /images/resize` needs a valid `signature` parameter (README
    /// "Signed URLs"); without one, or with a wrong one: 403. Default unset: resize URLs are
    /// open, as in the spec.
    #[arg(long, env = "URL_SIGNING_KEY", hide_env_values = true)]
    pub url_signing_key: Option<SecretString>,

    /// In-memory result cache budget in bytes (moka, weighed by encoded size); 0 turns the
    /// memory tier and request coalescing off. Default 268435456 (256 MiB).
    #[arg(long, env = "CACHE_MAX_BYTES", default_value_t = 268_435_456)]
    pub cache_max_bytes: u64,

    /// Also persist results under `cache/` in the object store (true/false). Default true.
    #[arg(long, env = "STORAGE_CACHE", default_value_t = true, action = ArgAction::Set)]
    pub storage_cache: bool,

    /// Lifetime of a memory cache entry, in seconds. Default 3600.
    #[arg(long, env = "CACHE_TTL_SECS", default_value_t = 3600)]
    pub cache_ttl_secs: u64,

    /// Largest accepted upload, in bytes (decoded size); larger: 413. Also the largest remote
    /// source (docs/image-service.md, "Remote sources"); larger: 422. Default 26214400 (25 MiB).
    #[arg(long, env = "MAX_UPLOAD_BYTES", default_value_t = 26_214_400)]
    pub max_upload_bytes: usize,

    /// Largest accepted source in pixels (width x height), checked from the header before
    /// decoding; larger: 422. Default 50000000.
    #[arg(long, env = "MAX_SOURCE_PIXELS", default_value_t = 50_000_000)]
    pub max_source_pixels: u64,

    /// libwebp method (sharp's "effort") for WebP output, 0 (fastest) ..= 6 (smallest). Default
    /// 4, libwebp's, sharp's and imgproxy's: with our libvips-identical pixels it gives sharp's
    /// bytes. 2 encodes about 2x faster for 4-5% larger files (SSIM 0.975 against sharp's).
    #[arg(long, env = "WEBP_EFFORT", default_value_t = 4, value_parser = clap::value_parser!(u8).range(0..=6))]
    pub webp_effort: u8,

    /// Largest output in pixels (width x height) that `format=auto` sends as AVIF; larger
    /// outputs go out as WebP: rav1e took 0.37 s and 72 MB at 1600x900 but 1.9 s and 330 MB
    /// at 4000x2250 (bench/image/BURST.md). Default 1440000 (1200x1200); 0 never sends AVIF.
    #[arg(long, env = "AVIF_MAX_PIXELS", default_value_t = 1_440_000)]
    pub avif_max_pixels: u64,

    /// The SSIMULACRA2 score `quality=auto` and `format=best` search the encoder's quality
    /// for, 30..=95: 90 is visually lossless, 80 high quality, 70 medium, 50 low. Default 80.
    /// docs/image-service.md, "Automatic quality".
    #[arg(long, env = "AUTO_QUALITY_TARGET", default_value_t = image_params::DEFAULT_AUTO_QUALITY_TARGET, value_parser = auto_quality_target)]
    pub auto_quality_target: f64,

    /// Output formats (comma-separated, of `webp`, `jpeg`, `avif`) whose quality is `auto`
    /// when a request names none; an explicit `quality=N` still wins. Default none. Their
    /// cache keys become `q=auto` ones, so switching it on does not serve old results.
    #[arg(long, env = "AUTO_QUALITY_FORMATS", value_delimiter = ',', value_parser = auto_quality_format)]
    pub auto_quality_formats: Vec<image_pipeline::OutputFormat>,

    /// Most frames of an animated GIF or WebP source, counted from its blocks before decoding;
    /// more: 422 `too_many_frames` (their pixels together are held to MAX_SOURCE_PIXELS too).
    /// Default 100.
    #[arg(long, env = "MAX_ANIMATION_FRAMES", default_value_t = 100)]
    pub max_animation_frames: u32,

    /// Budget of one resize's pixel buffers alive at once, in bytes: the decoded source, the
    /// steps' intermediates, the output frame, the scaled watermark, the text raster and the
    /// encoder, estimated from the headers and the parameters before decoding; over it: 400
    /// naming the parameter and MAX_REQUEST_BYTES. Default 536870912 (512 MiB).
    #[arg(long, env = "MAX_REQUEST_BYTES", default_value_t = 512 << 20)]
    pub max_request_bytes: u64,

    /// Budget of one resize's work in weighted pixel operations (about a nanosecond each:
    /// WebP at effort 4 is 40 an output pixel, each animation frame counts), estimated before
    /// decoding; over it: 400 naming MAX_REQUEST_PIXEL_OPS. Default 8000000000 (about 8 s).
    #[arg(long, env = "MAX_REQUEST_PIXEL_OPS", default_value_t = 8_000_000_000)]
    pub max_request_pixel_ops: u64,

    /// Most pixels an animated result may hold over all its frames (frames x width x
    /// height); more: 400 naming MAX_ANIMATION_OUTPUT_PIXELS. Default 50000000.
    #[arg(
        long,
        env = "MAX_ANIMATION_OUTPUT_PIXELS",
        default_value_t = 50_000_000
    )]
    pub max_animation_output_pixels: u64,

    /// Largest accepted output width or height in pixels; larger: 400. Default 8192.
    #[arg(long, env = "MAX_OUTPUT_DIMENSION", default_value_t = 8192)]
    pub max_output_dimension: u32,

    /// Largest enlargement an unsigned resize URL may ask for with `enlarge`, per side: the
    /// output's width (height) over that of the source region it shows; more: 400 naming
    /// `enlarge`. Signed URLs (URL_SIGNING_KEY) are not held to it. Default 4 (a 4x screen
    /// showing a picture at its own size); 0: no limit (README "Deployment").
    #[arg(long, env = "MAX_UNSIGNED_ENLARGE", default_value_t = 4.0, value_parser = enlarge_factor)]
    pub max_unsigned_enlarge: f64,

    /// Largest output in pixels (width x height, after padding and rotation) an unsigned resize
    /// URL may ask for when it is larger than the source region it shows (enlarged, padded by
    /// `fit=contain`, turned by `rotate`); outputs up to the source's size are always allowed.
    /// More: 400 naming `width`, `height` or `rotate` (a size nobody asked for is shrunk to
    /// fit). Signed URLs are not held to it. Default 8388608 (8 MP: a 3840x2160 frame fits);
    /// 0: no limit (README "Deployment").
    #[arg(long, env = "MAX_UNSIGNED_OUTPUT_PIXELS", default_value_t = 8_388_608)]
    pub max_unsigned_output_pixels: u64,

    /// Transformations run at once (CPU-bound, on blocking threads); the rest queue.
    /// Default 0: the number of CPUs.
    #[arg(long, env = "TRANSFORM_CONCURRENCY", default_value_t = 0)]
    pub transform_concurrency: usize,

    /// Misses that may wait beyond the TRANSFORM_CONCURRENCY running ones (fetching their
    /// source, or queued for a slot); more are refused 429 with `Retry-After: 1`, as imgproxy's
    /// IMGPROXY_REQUESTS_QUEUE_SIZE and imagor's process-queue-size do. It bounds the sources
    /// held in memory under a burst. Cache hits are never refused. Default 64; 0: no limit.
    #[arg(long, env = "TRANSFORM_QUEUE_SIZE", default_value_t = 64)]
    pub transform_queue_size: usize,

    /// How long a shutdown (SIGTERM, Ctrl-C) waits for requests in flight, in seconds; then
    /// the transformations still running are cancelled (answered 503) and the process exits a
    /// moment later, whatever its blocking threads are doing. Default 30.
    #[arg(long, env = "SHUTDOWN_DRAIN_SECS", default_value_t = 30)]
    pub shutdown_drain_secs: u64,

    /// How long a request may take, in seconds, counted from its arrival; then it is answered
    /// 503 `request_timeout`, and the transformation it started is cancelled at the same
    /// instant (at its next stage boundary; one still waiting for a slot never starts).
    /// Default 120.
    #[arg(long, env = "REQUEST_TIMEOUT_SECS", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout_secs: u64,

    /// How long a source's ETag is remembered before the store is asked again, in
    /// milliseconds; uploads through this server invalidate it at once. A remote source's ETag
    /// or Last-Modified likewise, then revalidated with its origin. Default 1000.
    #[arg(long, env = "SOURCE_ETAG_TTL_MS", default_value_t = 1000)]
    pub source_etag_ttl_ms: u64,

    /// Box that a resize URL naming neither `width` nor `height` is fitted inside (never
    /// enlarged), as the original service capped such requests at 1920x1080: a bare URL of a
    /// 4000x2250 photo answers 1920x1080, not the 530 KB source (docs/image-service.md §4).
    /// Width in pixels; 0 (with DEFAULT_OUTPUT_HEIGHT 0) serves the source's own size.
    /// Default 1920.
    #[arg(long, env = "DEFAULT_OUTPUT_WIDTH", default_value_t = 1920)]
    pub default_output_width: u32,

    /// Height of the DEFAULT_OUTPUT_WIDTH box, in pixels; 0 leaves the height free when the
    /// width is set. Default 1080.
    #[arg(long, env = "DEFAULT_OUTPUT_HEIGHT", default_value_t = 1080)]
    pub default_output_height: u32,

    /// `max-age` of resize answers, in seconds (`Cache-Control: public, max-age=N`). A stored
    /// source can be replaced at the same path, so an answer is not immutable unless its URL
    /// pins the source's version with `v` (then `public, max-age=31536000, immutable`).
    /// Default 86400 (a day, the original service's).
    #[arg(long, env = "CACHE_MAX_AGE_SECS", default_value_t = 86_400)]
    pub cache_max_age_secs: u64,

    /// Public origin of this service, such as `https://img.example.com` (or with a path
    /// prefix, `https://example.com/img`): the upload answer's `url` is made absolute with it,
    /// as the original's was. Default unset: `url` is the path `/images/resize/...`.
    #[arg(long, env = "PUBLIC_BASE_URL", value_parser = public_base_url)]
    pub public_base_url: Option<String>,

    /// File of named resize presets, one a line: `thumb = width=200&height=200&fit=cover`
    /// (docs/image-service.md §4, Presets); `preset=thumb` in a URL stands for them. Every
    /// preset must parse, or the server does not start. Default unset: no presets.
    #[arg(long, env = "PRESETS_FILE")]
    pub presets_file: Option<PathBuf>,

    /// Resize URLs may name presets only (`preset`, plus `signature` and `v`); any other
    /// parameter is a 400 naming it. Stops cache-busting floods of arbitrary sizes. Needs
    /// PRESETS_FILE. Default false.
    #[arg(long, env = "PRESETS_ONLY", default_value_t = false, action = ArgAction::Set)]
    pub presets_only: bool,

    /// Path under which imgproxy's URL format is served:
    /// `/imgproxy/{signature}/{options}/plain/{source}@{ext}` and the base64 source form
    /// (docs/image-service.md, "Moving from imgproxy / thumbor"). `/` or empty serves it at
    /// the root, where every GET that no other route answers is read as an imgproxy URL (then
    /// THUMBOR_PREFIX cannot be the root too). Default /imgproxy.
    #[arg(long, env = "IMGPROXY_PREFIX", default_value = "/imgproxy", value_parser = url_prefix)]
    pub imgproxy_prefix: String,

    /// imgproxy's signing key, hex-encoded as imgproxy takes IMGPROXY_KEY. With it (and
    /// IMGPROXY_SALT) every imgproxy URL must carry a valid signature, else 403; without it any
    /// signature segment (`insecure`, `unsafe`, anything) is accepted. Default unset.
    #[arg(long, env = "IMGPROXY_KEY", hide_env_values = true)]
    pub imgproxy_key: Option<SecretString>,

    /// imgproxy's salt, hex-encoded (IMGPROXY_SALT), prepended to the signed path. Needed with
    /// IMGPROXY_KEY. Default unset.
    #[arg(long, env = "IMGPROXY_SALT", hide_env_values = true)]
    pub imgproxy_salt: Option<SecretString>,

    /// Bytes of the HMAC-SHA256 an imgproxy signature keeps before base64 (imgproxy's
    /// IMGPROXY_SIGNATURE_SIZE), 1..=32. Default 32.
    #[arg(long, env = "IMGPROXY_SIGNATURE_SIZE", default_value_t = 32, value_parser = clap::value_parser!(u8).range(1..=32))]
    pub imgproxy_signature_size: u8,

    /// Stored path of the image imgproxy's `watermark`/`wm` option places (imgproxy's
    /// IMGPROXY_WATERMARK_PATH, here a path in our store). Default unset: `wm` is a 400.
    #[arg(long, env = "IMGPROXY_WATERMARK_PATH")]
    pub imgproxy_watermark_path: Option<String>,

    /// Path under which thumbor's URL format is served:
    /// `/thumbor/{signature|unsafe}/[trim]/[AxB:CxD]/[fit-in]/[-]WxH/.../{image}`. `/` or empty
    /// serves it at the root (not together with IMGPROXY_PREFIX at the root). Default /thumbor.
    #[arg(long, env = "THUMBOR_PREFIX", default_value = "/thumbor", value_parser = url_prefix)]
    pub thumbor_prefix: String,

    /// thumbor's SECURITY_KEY: thumbor URLs must carry its HMAC-SHA1 signature, else 403;
    /// `unsafe` URLs are refused unless THUMBOR_ALLOW_UNSAFE. Default unset: only `unsafe` URLs
    /// (and any signature) are served.
    #[arg(long, env = "THUMBOR_SECURITY_KEY", hide_env_values = true)]
    pub thumbor_security_key: Option<SecretString>,

    /// Serve `unsafe` thumbor URLs although THUMBOR_SECURITY_KEY is set (thumbor's
    /// ALLOW_UNSAFE_URL). Default false.
    #[arg(long, env = "THUMBOR_ALLOW_UNSAFE", default_value_t = false, action = ArgAction::Set)]
    pub thumbor_allow_unsafe: bool,

    /// Remote `http(s)://` sources the server may fetch, comma-separated: hosts
    /// (`img.example.com`, `img.example.com:8080`) or URL prefixes
    /// (`https://cdn.example.com/photos/`), as imgproxy's ALLOWED_SOURCES. Default empty:
    /// remote sources are off (docs/image-service.md, "Remote sources").
    #[arg(long, env = "ALLOWED_SOURCES", value_delimiter = ',', value_parser = allowed_source)]
    pub allowed_sources: Vec<String>,

    /// Fetch remote sources whose host resolves to a loopback address (127.0.0.0/8, ::1).
    /// Default false.
    #[arg(long, env = "ALLOW_LOOPBACK_SOURCE_ADDRESSES", default_value_t = false, action = ArgAction::Set)]
    pub allow_loopback_source_addresses: bool,

    /// Fetch remote sources whose host resolves to a private address (10/8, 172.16/12,
    /// 192.168/16, 100.64/10, fc00::/7). Default false.
    #[arg(long, env = "ALLOW_PRIVATE_SOURCE_ADDRESSES", default_value_t = false, action = ArgAction::Set)]
    pub allow_private_source_addresses: bool,

    /// Fetch remote sources whose host resolves to a link-local address (169.254/16, where
    /// cloud metadata services answer, and fe80::/10). Default false.
    #[arg(long, env = "ALLOW_LINK_LOCAL_SOURCE_ADDRESSES", default_value_t = false, action = ArgAction::Set)]
    pub allow_link_local_source_addresses: bool,

    /// Most redirects followed for one remote source, each to an allowed source. Default 3.
    #[arg(long, env = "SOURCE_MAX_REDIRECTS", default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=10))]
    pub source_max_redirects: u8,

    /// Longest wait to connect to a remote source's host, in milliseconds. Default 3000.
    #[arg(long, env = "SOURCE_CONNECT_TIMEOUT_MS", default_value_t = 3000, value_parser = clap::value_parser!(u64).range(1..))]
    pub source_connect_timeout_ms: u64,

    /// Longest a remote source's whole download may take (every redirect, headers and body),
    /// in milliseconds; a slower one is cut off. Default 10000.
    #[arg(long, env = "SOURCE_DOWNLOAD_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub source_download_timeout_ms: u64,

    /// Most remote source downloads in flight at once; more wait for a turn (within their
    /// request's deadline). With MAX_UPLOAD_BYTES it bounds the memory downloads hold: 8 x
    /// 25 MiB by default. Default 8.
    #[arg(long, env = "SOURCE_DOWNLOAD_CONCURRENCY", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub source_download_concurrency: u32,

    /// Extra object_store options for the store (tests point S3 at a local server with these,
    /// e.g. `aws_endpoint`); not settable from the command line.
    #[arg(skip)]
    pub storage_options: Vec<(String, String)>,
}

impl Config {
    /// A configuration with every default, for tests and embedding.
    pub fn defaults() -> Self {
        Self::parse_from(["image-server"])
    }
}

/// IMGPROXY_PREFIX and THUMBOR_PREFIX: `/` followed by segments of letters, digits, `-`, `_`
/// and `.`, kept without a trailing slash; empty or `/` is the root (`""`). The prefixes of
/// our own routes (`/images`, `/admin`) are refused.
fn url_prefix(v: &str) -> Result<String, String> {
    let trimmed = v.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Err("must start with /".into());
    };
    let well_formed = rest.split('/').all(|s| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    });
    if !well_formed || trimmed.len() > 100 {
        return Err("must be / and up to 100 characters of letters, digits, -, _, . and /".into());
    }
    let first = rest.split('/').next().unwrap_or("");
    if first == "images" || first == "admin" {
        return Err(format!("/{first} holds image-server's own routes"));
    }
    Ok(trimmed.to_owned())
}

/// An ALLOWED_SOURCES entry: a host with an optional port, or an `http(s)` URL prefix with a
/// host; kept lowercase where case does not matter (the scheme and host).
fn allowed_source(v: &str) -> Result<String, String> {
    let v = v.trim();
    if v.contains("://") {
        let parsed = url::Url::parse(v).map_err(|e| format!("{v:?}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(format!("{v:?}: a URL prefix must be http(s) with a host"));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(format!("{v:?}: a URL prefix cannot carry credentials"));
        }
        return Ok(parsed.as_str().to_owned());
    }
    let host = v.to_ascii_lowercase();
    let valid = !host.is_empty()
        && host.len() <= 260
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    if !valid {
        return Err(format!(
            "{v:?}: expected a host (img.example.com, img.example.com:8080) or an http(s) URL prefix"
        ));
    }
    Ok(host)
}

/// PUBLIC_BASE_URL: an absolute `http` or `https` URL without query or fragment; a trailing
/// slash is dropped so that `url` never holds `//`.
fn public_base_url(v: &str) -> Result<String, String> {
    let parsed = url::Url::parse(v.trim()).map_err(|e| format!("{v:?}: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https")
        || parsed.host_str().is_none()
        || parsed.query().is_some()
        || parsed.fragment().is_some()
    {
        return Err(format!(
            "{v:?}: expected an http(s) origin with an optional path, such as https://img.example.com"
        ));
    }
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

/// MAX_UNSIGNED_ENLARGE: 0 (no limit) or a finite factor of at least 1.
fn enlarge_factor(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(f) if f == 0.0 || (f.is_finite() && f >= 1.0) => Ok(f),
        _ => Err(format!(
            "{v:?}: expected 0 (no limit) or a factor of at least 1, such as 4"
        )),
    }
}

/// AUTO_QUALITY_TARGET: a SSIMULACRA2 score within image_params::AUTO_QUALITY_TARGET.
fn auto_quality_target(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(t) if image_params::AUTO_QUALITY_TARGET.contains(&t) => Ok(t),
        _ => Err(format!(
            "{v:?}: expected a SSIMULACRA2 score from {} to {}, such as 80",
            image_params::AUTO_QUALITY_TARGET.start(),
            image_params::AUTO_QUALITY_TARGET.end()
        )),
    }
}

/// One format of AUTO_QUALITY_FORMATS: a lossy one (`webp`, `jpeg`/`jpg`, `avif`).
fn auto_quality_format(v: &str) -> Result<image_pipeline::OutputFormat, String> {
    use image_pipeline::OutputFormat;
    match v.trim().to_ascii_lowercase().as_str() {
        "webp" => Ok(OutputFormat::Webp),
        "jpeg" | "jpg" => Ok(OutputFormat::Jpeg),
        "avif" => Ok(OutputFormat::Avif),
        _ => Err(format!(
            "{v:?}: expected webp, jpeg or avif (PNG and GIF have no quality to search)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_quality_settings_are_a_score_and_lossy_formats() {
        let c = Config::defaults();
        assert_eq!(
            (c.auto_quality_target, c.auto_quality_formats.len()),
            (80.0, 0)
        );
        let c = Config::try_parse_from([
            "image-server",
            "--auto-quality-target",
            "70",
            "--auto-quality-formats",
            "webp,JPG",
        ])
        .unwrap();
        assert_eq!(c.auto_quality_target, 70.0);
        assert_eq!(
            c.auto_quality_formats,
            [
                image_pipeline::OutputFormat::Webp,
                image_pipeline::OutputFormat::Jpeg
            ]
        );
        for bad in [
            ["--auto-quality-target", "99"],
            ["--auto-quality-formats", "png"],
        ] {
            assert!(Config::try_parse_from(["image-server", bad[0], bad[1]]).is_err());
        }
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Config::command().debug_assert();
    }

    #[test]
    fn the_enlargement_cap_is_0_or_a_factor_of_at_least_1() {
        let parse = |v: &str| Config::try_parse_from(["image-server", "--max-unsigned-enlarge", v]);
        assert_eq!(parse("2.5").map(|c| c.max_unsigned_enlarge).ok(), Some(2.5));
        assert_eq!(parse("0").map(|c| c.max_unsigned_enlarge).ok(), Some(0.0));
        for bad in ["0.5", "-1", "inf", "NaN", "four", ""] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Config::defaults().max_unsigned_enlarge, 4.0);
    }

    #[test]
    fn the_public_base_url_is_an_http_origin_kept_without_its_trailing_slash() {
        let parse = |v: &str| {
            Config::try_parse_from(["image-server", "--public-base-url", v])
                .map(|c| c.public_base_url)
        };
        assert_eq!(
            parse("https://img.example.com/").ok().flatten().as_deref(),
            Some("https://img.example.com")
        );
        assert_eq!(
            parse("http://example.com/img/").ok().flatten().as_deref(),
            Some("http://example.com/img")
        );
        for bad in [
            "img.example.com",
            "ftp://x.org",
            "https://x.org/?a=1",
            "https://x.org/#f",
            "",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Config::defaults().public_base_url, None);
    }

    #[test]
    fn compat_prefixes_are_paths_the_root_or_refused() {
        assert_eq!(url_prefix("/imgproxy/").as_deref(), Ok("/imgproxy"));
        assert_eq!(url_prefix("/a/b-c_d.e").as_deref(), Ok("/a/b-c_d.e"));
        assert_eq!(url_prefix("/").as_deref(), Ok(""));
        assert_eq!(url_prefix("").as_deref(), Ok(""));
        for bad in [
            "imgproxy", "/images", "/admin/x", "/a//b", "/a/../b", "/a b", "/{x}",
        ] {
            assert!(url_prefix(bad).is_err(), "{bad}");
        }
        let defaults = Config::defaults();
        assert_eq!(
            (
                defaults.imgproxy_prefix.as_str(),
                defaults.thumbor_prefix.as_str()
            ),
            ("/imgproxy", "/thumbor")
        );
    }

    #[test]
    fn storage_cache_takes_an_explicit_false() {
        let c = Config::parse_from(["image-server", "--storage-cache", "false"]);
        assert!(!c.storage_cache);
    }
}
