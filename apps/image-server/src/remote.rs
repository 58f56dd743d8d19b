//! Remote sources: `http(s)://` images fetched from an allow-list (docs/image-service.md,
//! "Remote sources"), off unless ALLOWED_SOURCES names some.
//!
//! The defences are the ones imgproxy's users learned the hard way (SSRF):
//! - every URL, the first and each redirect's, must match ALLOWED_SOURCES;
//! - the host's addresses are checked after resolution, and the connection goes to exactly the
//!   checked addresses (our resolver is the only one reqwest asks), so a DNS answer that changes
//!   between the check and the connection (rebinding) cannot reach another address;
//! - loopback, private and link-local addresses (cloud metadata answers on 169.254.169.254)
//!   are refused unless allowed, and unspecified, multicast, broadcast and reserved ones always;
//! - redirects are followed by hand, at most SOURCE_MAX_REDIRECTS;
//! - the body is held to MAX_UPLOAD_BYTES, from Content-Length before reading and while
//!   streaming, the whole download to SOURCE_DOWNLOAD_TIMEOUT_MS, and at most
//!   SOURCE_DOWNLOAD_CONCURRENCY downloads run at once, so their memory is bounded;
//! - a source seen before is revalidated with its ETag and Last-Modified after
//!   SOURCE_ETAG_TTL_MS instead of being fetched again.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use reqwest::header::{ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, LOCATION};
use reqwest::{StatusCode, Url};
use sha2::{Digest, Sha256};

use crate::config::Config;

/// Why a remote source was not served.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum RemoteError {
    /// 403 `source_not_allowed`: off the allow-list, a refused address, a scheme other than
    /// http(s), credentials in the URL, or too many redirects.
    #[error("{0}")]
    NotAllowed(String),
    /// 404: the origin has no such image.
    #[error("{0}")]
    NotFound(String),
    /// 422 `source_too_large`: the body is over MAX_UPLOAD_BYTES.
    #[error("{0}")]
    TooLarge(String),
    /// 502 `source_unavailable`: the origin could not be reached, answered an error, or did
    /// not send the whole image within SOURCE_DOWNLOAD_TIMEOUT_MS.
    #[error("{0}")]
    Unavailable(String),
}

/// Which special address ranges a remote source may resolve to.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AddressPolicy {
    /// 127.0.0.0/8, ::1.
    pub loopback: bool,
    /// 10/8, 172.16/12, 192.168/16, 100.64/10 (shared), fc00::/7, fec0::/10.
    pub private: bool,
    /// 169.254/16 (cloud metadata), fe80::/10.
    pub link_local: bool,
}

/// The kind of an address, for [`AddressPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Public,
    Loopback,
    Private,
    LinkLocal,
    /// Unspecified, multicast, broadcast, reserved, documentation: never a source.
    Never,
}

fn kind_v4(ip: Ipv4Addr) -> Kind {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Kind::Loopback
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Kind::Private
    } else if ip.is_link_local() {
        Kind::LinkLocal
    } else if a == 0
        || ip.is_multicast()
        || ip.is_broadcast()
        || a >= 240
        || ip.is_documentation()
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b == 18 || b == 19))
    {
        Kind::Never
    } else {
        Kind::Public
    }
}

fn kind_v6(ip: Ipv6Addr) -> Kind {
    // Addresses that carry an IPv4 address are that address: mapped (::ffff:a.b.c.d),
    // compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002:AABB:CCDD::/48).
    if let Some(v4) = ip.to_ipv4_mapped() {
        return kind_v4(v4);
    }
    let s = ip.segments();
    let octets = ip.octets();
    if s[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_loopback() && !ip.is_unspecified() {
        return kind_v4(Ipv4Addr::new(
            octets[12], octets[13], octets[14], octets[15],
        ));
    }
    // IPv4-translated (::ffff:0:a.b.c.d, SIIT) carries one in its last 32 bits as well: a
    // translator on the path would reach that IPv4 address.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return kind_v4(Ipv4Addr::new(
            octets[12], octets[13], octets[14], octets[15],
        ));
    }
    if s[0] == 0x2002 {
        return kind_v4(Ipv4Addr::new(octets[2], octets[3], octets[4], octets[5]));
    }
    if ip.is_loopback() {
        Kind::Loopback
    } else if ip.is_unspecified() || ip.is_multicast() || s[0] == 0x2001 && s[1] == 0xdb8 {
        Kind::Never
    } else if s[0] & 0xfe00 == 0xfc00
        || s[0] & 0xffc0 == 0xfec0
        || s[0] == 0x2001 && s[1] == 0
        || s[..3] == [0x64, 0xff9b, 1]
    {
        // Unique local (where AWS's IPv6 metadata answers), site-local, Teredo, and local-use
        // NAT64 (64:ff9b:1::/48, which embeds its IPv4 address where its prefix length says).
        Kind::Private
    } else if s[0] & 0xffc0 == 0xfe80 {
        Kind::LinkLocal
    } else {
        Kind::Public
    }
}

impl AddressPolicy {
    /// Whether a remote source may be fetched from `ip`.
    pub(crate) fn allows(self, ip: IpAddr) -> bool {
        let kind = match ip {
            IpAddr::V4(v4) => kind_v4(v4),
            IpAddr::V6(v6) => kind_v6(v6),
        };
        match kind {
            Kind::Public => true,
            Kind::Loopback => self.loopback,
            Kind::Private => self.private,
            Kind::LinkLocal => self.link_local,
            Kind::Never => false,
        }
    }

    /// The setting that would allow `ip`, for the refusal's message.
    fn setting_for(ip: IpAddr) -> &'static str {
        let kind = match ip {
            IpAddr::V4(v4) => kind_v4(v4),
            IpAddr::V6(v6) => kind_v6(v6),
        };
        match kind {
            Kind::Loopback => " (ALLOW_LOOPBACK_SOURCE_ADDRESSES)",
            Kind::Private => " (ALLOW_PRIVATE_SOURCE_ADDRESSES)",
            Kind::LinkLocal => " (ALLOW_LINK_LOCAL_SOURCE_ADDRESSES)",
            Kind::Public | Kind::Never => "",
        }
    }
}

/// A refused resolution, found again in reqwest's error chain to name it.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The refusal of a host name whose resolved address is refused: the same words whatever the
/// address and its kind, so that the answer tells nothing of the server's network
/// (docs/image-service.md, "Remote sources").
const RESOLVES_TO_REFUSED: &str = "the source host resolves to an address remote sources may \
     not use (loopback, private and link-local addresses need \
     ALLOW_LOOPBACK_SOURCE_ADDRESSES, ALLOW_PRIVATE_SOURCE_ADDRESSES or \
     ALLOW_LINK_LOCAL_SOURCE_ADDRESSES)";

/// The only resolver reqwest asks: it resolves with the system's resolver and hands reqwest
/// the addresses only when every one is allowed, so the connection goes to a checked address.
struct CheckedResolver {
    policy: AddressPolicy,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addrs.iter().find(|a| !policy.allows(a.ip())) {
                // The client is told the rule, never the address: an answer naming it would map
                // the server's internal names to addresses for whoever asks. The log keeps it.
                tracing::info!(host = %host, address = %bad.ip(), "a remote source's host resolves to a refused address");
                return Err(Box::new(Refused(format!("{RESOLVES_TO_REFUSED} ({host})")))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            if addrs.is_empty() {
                return Err(
                    Box::new(Refused(format!("the source host {host} has no address")))
                        as Box<dyn std::error::Error + Send + Sync>,
                );
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// One ALLOWED_SOURCES entry.
#[derive(Debug, Clone)]
enum Allowed {
    /// A host, with a port when given (`img.example.com`, `img.example.com:8080`).
    Host { host: String, port: Option<u16> },
    /// An `http(s)` URL prefix, matched against the whole URL.
    Prefix(String),
}

impl Allowed {
    fn parse(entry: &str) -> Option<Self> {
        if entry.contains("://") {
            return Some(Self::Prefix(entry.to_owned()));
        }
        let (host, port) = match entry.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.ends_with(']') => (h, Some(p.parse().ok()?)),
            _ => (entry, None),
        };
        // As the URL parser writes hosts (IDNA, lowercase, IPv6 compressed), so that an entry
        // and a URL naming the same host compare equal.
        let host = url::Host::parse(host).ok()?.to_string();
        Some(Self::Host {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
        })
    }

    fn matches(&self, url: &Url) -> bool {
        match self {
            Self::Prefix(prefix) => url.as_str().starts_with(prefix.as_str()),
            Self::Host { host, port } => {
                let url_host = url
                    .host_str()
                    .map(|h| h.trim_start_matches('[').trim_end_matches(']'));
                url_host.is_some_and(|h| h.eq_ignore_ascii_case(host))
                    && port.is_none_or(|p| url.port_or_known_default() == Some(p))
            }
        }
    }
}

/// What the origin last said of a source.
#[derive(Debug, Clone)]
struct Meta {
    etag: Option<String>,
    last_modified: Option<String>,
    /// The source's version in cache keys: its ETag, else its Last-Modified, else a hash of
    /// its bytes.
    version: String,
    /// When the origin last confirmed it.
    checked: Instant,
}

/// A source's version, and its bytes when finding the version fetched them.
pub(crate) struct Versioned {
    /// What stands for the source in the result cache's key (docs/image-service.md, Caching).
    pub version: String,
    /// The body, when the origin sent it (a first fetch, or a changed source).
    pub bytes: Option<Bytes>,
}

/// The remote source fetcher: the allow-list, the address policy, one HTTP client and what
/// each source's origin last said.
pub(crate) struct RemoteSources {
    allowed: Vec<Allowed>,
    policy: AddressPolicy,
    client: reqwest::Client,
    max_redirects: u8,
    max_bytes: usize,
    timeout: Duration,
    fresh_for: Duration,
    meta: moka::future::Cache<String, Arc<Meta>>,
    /// SOURCE_DOWNLOAD_CONCURRENCY turns: a download holds one from its first request to its
    /// last byte, so at most that many bodies of MAX_UPLOAD_BYTES are held at once.
    turns: tokio::sync::Semaphore,
}

impl RemoteSources {
    /// The fetcher for `config`, or `None` when ALLOWED_SOURCES is empty (remote sources off).
    ///
    /// # Errors
    /// An ALLOWED_SOURCES entry that is neither a host nor a URL prefix, or the HTTP client
    /// cannot be built (no TLS roots).
    pub(crate) fn new(config: &Config) -> anyhow::Result<Option<Self>> {
        // An entry that cannot be read stops the server rather than being dropped: dropping
        // it would silently narrow the list, or turn remote sources off altogether.
        let allowed = config
            .allowed_sources
            .iter()
            .filter(|e| !e.is_empty())
            .map(|e| {
                Allowed::parse(e).ok_or_else(|| {
                    anyhow::anyhow!(
                        "ALLOWED_SOURCES entry {e:?} is neither a host (img.example.com, \
                         img.example.com:8080, [::1]:8080) nor an http(s) URL prefix"
                    )
                })
            })
            .collect::<anyhow::Result<Vec<Allowed>>>()?;
        if allowed.is_empty() {
            return Ok(None);
        }
        let policy = AddressPolicy {
            loopback: config.allow_loopback_source_addresses,
            private: config.allow_private_source_addresses,
            link_local: config.allow_link_local_source_addresses,
        };
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(CheckedResolver { policy }))
            .connect_timeout(Duration::from_millis(config.source_connect_timeout_ms))
            .no_proxy()
            .user_agent(concat!("image-server/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Some(Self {
            allowed,
            policy,
            client,
            max_redirects: config.source_max_redirects,
            max_bytes: config.max_upload_bytes,
            timeout: Duration::from_millis(config.source_download_timeout_ms),
            fresh_for: Duration::from_millis(config.source_etag_ttl_ms),
            meta: moka::future::Cache::builder().max_capacity(100_000).build(),
            turns: tokio::sync::Semaphore::new(config.source_download_concurrency as usize),
        }))
    }

    /// Parses and checks a source URL as a client names it.
    ///
    /// # Errors
    /// [`RemoteError::NotAllowed`]: not http(s), credentials in it, off the allow-list, or an
    /// IP literal of a refused range.
    pub(crate) fn check(&self, raw: &str) -> Result<Url, RemoteError> {
        let url = Url::parse(raw)
            .map_err(|e| RemoteError::NotAllowed(format!("the source URL cannot be read: {e}")))?;
        self.check_url(&url)?;
        Ok(url)
    }

    fn check_url(&self, url: &Url) -> Result<(), RemoteError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(RemoteError::NotAllowed(format!(
                "the source URL's scheme {} is not http or https",
                url.scheme()
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(RemoteError::NotAllowed(
                "a source URL cannot carry credentials".into(),
            ));
        }
        if !self.allowed.iter().any(|a| a.matches(url)) {
            return Err(RemoteError::NotAllowed(format!(
                "the source {} is not in ALLOWED_SOURCES",
                url.host_str().unwrap_or("(no host)")
            )));
        }
        // An IP literal never reaches the resolver: check it here.
        let ip = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if let Some(ip) = ip.filter(|ip| !self.policy.allows(*ip)) {
            return Err(RemoteError::NotAllowed(format!(
                "the source address {ip} is one remote sources may not use{}",
                AddressPolicy::setting_for(ip)
            )));
        }
        Ok(())
    }

    /// The version of `url` when the origin confirmed it within SOURCE_ETAG_TTL_MS: no
    /// request is made.
    pub(crate) async fn fresh_version(&self, url: &Url) -> Option<String> {
        let meta = self.meta.get(url.as_str()).await?;
        (meta.checked.elapsed() < self.fresh_for).then(|| meta.version.clone())
    }

    /// The version of `url`: remembered for SOURCE_ETAG_TTL_MS, then revalidated with the
    /// origin (If-None-Match / If-Modified-Since; a 304 keeps the version and sends no body).
    ///
    /// # Errors
    /// As [`RemoteSources::fetch`].
    pub(crate) async fn version(&self, url: &Url) -> Result<Versioned, RemoteError> {
        let known = self.meta.get(url.as_str()).await;
        if let Some(meta) = known
            .as_ref()
            .filter(|m| m.checked.elapsed() < self.fresh_for)
        {
            return Ok(Versioned {
                version: meta.version.clone(),
                bytes: None,
            });
        }
        match self.fetch(url, known.as_deref()).await? {
            Fetched::NotModified => {
                let Some(meta) = known else {
                    return Err(RemoteError::Unavailable(
                        "the origin answered 304 to an unconditional request".into(),
                    ));
                };
                let fresh = Meta {
                    checked: Instant::now(),
                    ..(*meta).clone()
                };
                let version = fresh.version.clone();
                self.meta.insert(url.to_string(), Arc::new(fresh)).await;
                Ok(Versioned {
                    version,
                    bytes: None,
                })
            }
            Fetched::Body {
                bytes,
                etag,
                last_modified,
            } => {
                let version = etag.clone().or_else(|| last_modified.clone()).map_or_else(
                    || hex::encode(&Sha256::digest(&bytes)[..16]),
                    |v| format!("remote:{v}"),
                );
                let meta = Meta {
                    etag,
                    last_modified,
                    version: version.clone(),
                    checked: Instant::now(),
                };
                self.meta.insert(url.to_string(), Arc::new(meta)).await;
                Ok(Versioned {
                    version,
                    bytes: Some(bytes),
                })
            }
        }
    }

    /// The body of `url`, fetched without conditions (a result missing from the cache).
    ///
    /// # Errors
    /// As [`RemoteSources::fetch`].
    pub(crate) async fn body(&self, url: &Url) -> Result<Bytes, RemoteError> {
        match self.fetch(url, None).await? {
            Fetched::Body { bytes, .. } => Ok(bytes),
            Fetched::NotModified => Err(RemoteError::Unavailable(
                "the origin answered 304 to an unconditional request".into(),
            )),
        }
    }

    /// GETs `url`, following at most SOURCE_MAX_REDIRECTS redirects, each checked like the
    /// first URL; conditional on `known`'s validators when given.
    async fn fetch(&self, url: &Url, known: Option<&Meta>) -> Result<Fetched, RemoteError> {
        self.check_url(url)?;
        let _turn = self
            .turns
            .acquire()
            .await
            .map_err(|_| RemoteError::Unavailable("the server is shutting down".into()))?;
        let started = Instant::now();
        let mut current = url.clone();
        for _ in 0..=self.max_redirects {
            self.check_url(&current)?;
            let left = self.timeout.saturating_sub(started.elapsed());
            let mut request = self.client.get(current.clone()).timeout(left);
            if let Some(meta) = known {
                if let Some(etag) = &meta.etag {
                    request = request.header(IF_NONE_MATCH, etag);
                }
                if let Some(lm) = &meta.last_modified {
                    request = request.header(IF_MODIFIED_SINCE, lm);
                }
            }
            let response = request
                .send()
                .await
                .map_err(|e| self.failed(&current, &e))?;
            let status = response.status();
            if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
                let location = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| {
                        RemoteError::Unavailable(format!(
                            "the origin answered {status} without a Location"
                        ))
                    })?;
                current = current.join(location).map_err(|e| {
                    RemoteError::NotAllowed(format!("the redirect's Location cannot be read: {e}"))
                })?;
                continue;
            }
            if status == StatusCode::NOT_MODIFIED && known.is_some() {
                return Ok(Fetched::NotModified);
            }
            if status == StatusCode::NOT_FOUND || status == StatusCode::GONE {
                return Err(RemoteError::NotFound(format!("image not found: {url}")));
            }
            if !status.is_success() {
                return Err(RemoteError::Unavailable(format!(
                    "the source's origin answered {status}"
                )));
            }
            let header = |name| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
                    .map(str::to_owned)
            };
            let (etag, last_modified) = (header(ETAG), header(LAST_MODIFIED));
            let bytes = self.read_body(&current, response).await?;
            return Ok(Fetched::Body {
                bytes,
                etag,
                last_modified,
            });
        }
        Err(RemoteError::NotAllowed(format!(
            "the source redirects more than {} times (SOURCE_MAX_REDIRECTS)",
            self.max_redirects
        )))
    }

    /// The body, at most MAX_UPLOAD_BYTES: refused from Content-Length before a byte is read,
    /// and while streaming when the origin sends more than it announced or announces nothing.
    async fn read_body(
        &self,
        url: &Url,
        response: reqwest::Response,
    ) -> Result<Bytes, RemoteError> {
        let too_large = || {
            RemoteError::TooLarge(format!(
                "the source is larger than MAX_UPLOAD_BYTES ({} bytes)",
                self.max_bytes
            ))
        };
        let announced = response.content_length();
        if announced.is_some_and(|n| n > self.max_bytes as u64) {
            return Err(too_large());
        }
        let capacity = announced.map_or(64 * 1024, |n| usize::try_from(n).unwrap_or(0));
        let mut body = BytesMut::with_capacity(capacity.min(self.max_bytes));
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.failed(url, &e))?;
            if body.len() + chunk.len() > self.max_bytes {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.freeze())
    }

    /// A transport failure as the client is told it: the resolver's refusal, the timeout, or
    /// the origin being unreachable.
    fn failed(&self, url: &Url, e: &reqwest::Error) -> RemoteError {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(c) = cause {
            if let Some(refused) = c.downcast_ref::<Refused>() {
                return RemoteError::NotAllowed(refused.0.clone());
            }
            cause = c.source();
        }
        if e.is_timeout() {
            return RemoteError::Unavailable(format!(
                "the source did not arrive within SOURCE_DOWNLOAD_TIMEOUT_MS ({} ms)",
                self.timeout.as_millis()
            ));
        }
        tracing::warn!(error = %e, source = %url, "fetching a remote source failed");
        RemoteError::Unavailable(format!(
            "the source's origin {} cannot be reached",
            url.host_str().unwrap_or("")
        ))
    }
}

/// One fetch's outcome.
enum Fetched {
    /// 304 to a conditional request: the version known is current.
    NotModified,
    /// 200 with the body and its validators.
    Body {
        bytes: Bytes,
        etag: Option<String>,
        last_modified: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_addresses_are_refused_unless_allowed() {
        let none = AddressPolicy::default();
        let all = AddressPolicy {
            loopback: true,
            private: true,
            link_local: true,
        };
        let refused_by_default = [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.100.100.200",
            "169.254.169.254",
            "::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::a00:1",
            "::ffff:0:7f00:1",
            "2002:7f00:1::",
        ];
        for ip in refused_by_default {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!none.allows(ip), "{ip}");
            assert!(all.allows(ip), "{ip}");
        }
        for never in [
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::",
            "ff02::1",
        ] {
            let ip: IpAddr = never.parse().unwrap();
            assert!(!all.allows(ip), "{ip}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:2800:220:1::248"] {
            assert!(none.allows(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn allowed_sources_match_hosts_ports_and_prefixes() {
        let url = |s: &str| Url::parse(s).unwrap();
        let host = Allowed::parse("img.example.com").unwrap();
        assert!(host.matches(&url("https://IMG.example.com/a.jpg")));
        assert!(!host.matches(&url("https://img.example.com.evil.test/a.jpg")));
        let port = Allowed::parse("localhost:8080").unwrap();
        assert!(port.matches(&url("http://localhost:8080/a.jpg")));
        assert!(!port.matches(&url("http://localhost:8081/a.jpg")));
        let v6 = Allowed::parse("[::1]:8080").unwrap();
        assert!(v6.matches(&url("http://[::1]:8080/a.jpg")));
        assert!(
            Allowed::parse("a:b:c").is_none(),
            "refused at start, not dropped"
        );
        let prefix = Allowed::parse("https://cdn.example.com/photos/").unwrap();
        assert!(prefix.matches(&url("https://cdn.example.com/photos/a.jpg")));
        assert!(!prefix.matches(&url("https://cdn.example.com/private/a.jpg")));
        assert!(!prefix.matches(&url("http://cdn.example.com/photos/a.jpg")));
    }
}
