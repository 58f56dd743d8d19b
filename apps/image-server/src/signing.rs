//! Signed resize URLs: off unless URL_SIGNING_KEY is set.
//!
//! Not in the spec, whose resize URLs are open: this is imgproxy's and thumbor's defence
//! against a client asking for endless variants of every image (each one a full decode and
//! encode). When keys are configured, every `GET /images/resize/{path}` carries
//! `signature=<base64url without padding of HMAC-SHA256(key, message)>`, where `message` is the
//! request target after `/images/resize/` exactly as sent (percent-encoding untouched), with
//! every `signature` pair taken out of the query:
//!
//! ```text
//! GET /images/resize/pets/cat.jpg?width=800&format=webp&signature=...
//! message: pets/cat.jpg?width=800&format=webp
//! GET /images/resize/pets/cat.jpg?signature=...
//! message: pets/cat.jpg
//! ```
//!
//! Leaving out the `/images/resize/` prefix keeps signatures valid behind a proxy that mounts
//! the server under another path. Several keys (comma-separated) are accepted at once, so a
//! key can be rotated without breaking the URLs already handed out.

use base64::Engine;
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

use crate::error::ApiError;

/// The query parameter that carries the signature.
pub(crate) const PARAM: &str = image_params::Name::Signature.as_str();

/// Verifies the `signature` of resize URLs against one or more keys.
pub(crate) struct UrlSigner {
    keys: Vec<Hmac<Sha256>>,
}

impl UrlSigner {
    /// The signer for URL_SIGNING_KEY (`key` or `key1,key2`; blanks around a key are
    /// trimmed); `None` when no key is set, which leaves resize URLs open.
    pub(crate) fn from_keys(keys: Option<&SecretString>) -> Option<Self> {
        let keys: Vec<Hmac<Sha256>> = keys?
            .expose_secret()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .filter_map(|k| Hmac::<Sha256>::new_from_slice(k.as_bytes()).ok())
            .collect();
        (!keys.is_empty()).then_some(Self { keys })
    }

    /// How many keys are accepted (for the start-up log).
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Checks a request for `/images/resize/{target_path}` with `query` (both raw, as sent).
    ///
    /// # Errors
    /// [`ApiError::Forbidden`] when there is no `signature`, more than one, or one that no key
    /// produced. The comparison runs in constant time.
    pub(crate) fn verify(&self, target_path: &str, query: Option<&str>) -> Result<(), ApiError> {
        let (message, signatures) = split_signature(target_path, query);
        let [signature] = signatures.as_slice() else {
            return Err(ApiError::Forbidden);
        };
        let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| ApiError::Forbidden)?;
        let valid = self.keys.iter().any(|key| {
            let mut mac = key.clone();
            mac.update(message.as_bytes());
            mac.verify_slice(&signature).is_ok()
        });
        if valid {
            Ok(())
        } else {
            Err(ApiError::Forbidden)
        }
    }
}

/// The signed message of a request target and the values of its `signature` pairs.
fn split_signature<'q>(target_path: &str, query: Option<&'q str>) -> (String, Vec<&'q str>) {
    let mut message = target_path.to_owned();
    let mut signatures = Vec::new();
    let mut first = true;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let name = pair.split_once('=').map_or(pair, |(name, _)| name);
        if name == PARAM {
            signatures.push(pair.get(PARAM.len() + 1..).unwrap_or(""));
            continue;
        }
        message.push(if first { '?' } else { '&' });
        message.push_str(pair);
        first = false;
    }
    (message, signatures)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(key: &str, message: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
        mac.update(message.as_bytes());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    fn signer(keys: &str) -> UrlSigner {
        UrlSigner::from_keys(Some(&SecretString::from(keys.to_owned()))).unwrap()
    }

    #[test]
    fn the_message_is_path_and_query_without_the_signature_wherever_it_stands() {
        let (m, s) = split_signature("a/b%20c.jpg", Some("signature=S&width=8&format=png"));
        assert_eq!(
            (m.as_str(), s),
            ("a/b%20c.jpg?width=8&format=png", vec!["S"])
        );
        let (m, s) = split_signature("a.jpg", Some("width=8&signature=S"));
        assert_eq!((m.as_str(), s), ("a.jpg?width=8", vec!["S"]));
        let (m, s) = split_signature("a.jpg", Some("signature=S"));
        assert_eq!((m.as_str(), s), ("a.jpg", vec!["S"]));
        let (m, s) = split_signature("a.jpg", None);
        assert_eq!((m.as_str(), s), ("a.jpg", Vec::<&str>::new()));
        // A parameter that only starts with the name is part of the message.
        let (m, s) = split_signature("a.jpg", Some("signatures=x&signature"));
        assert_eq!((m.as_str(), s), ("a.jpg?signatures=x", vec![""]));
    }

    #[test]
    fn any_configured_key_verifies_and_nothing_else_does() {
        let s = signer(" old , new ");
        assert_eq!(s.key_count(), 2);
        for key in ["old", "new"] {
            let q = format!("width=8&signature={}", sign(key, "a.jpg?width=8"));
            assert!(s.verify("a.jpg", Some(&q)).is_ok(), "{key}");
        }
        let other = format!("width=8&signature={}", sign("other", "a.jpg?width=8"));
        let tampered = format!("width=9&signature={}", sign("new", "a.jpg?width=8"));
        let twice = format!(
            "width=8&signature={0}&signature={0}",
            sign("new", "a.jpg?width=8")
        );
        for q in [
            other.as_str(),
            tampered.as_str(),
            twice.as_str(),
            "width=8",
            "width=8&signature=",
            "width=8&signature=%%%",
        ] {
            assert!(
                matches!(s.verify("a.jpg", Some(q)), Err(ApiError::Forbidden)),
                "{q}"
            );
        }
    }

    #[test]
    fn no_key_or_only_blanks_leaves_urls_open() {
        assert!(UrlSigner::from_keys(None).is_none());
        assert!(UrlSigner::from_keys(Some(&SecretString::from(" , ".to_owned()))).is_none());
    }
}
