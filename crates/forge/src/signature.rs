//! Webhook signatures: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, raw body)>`
//! (docs/review-service.md §4, POST /webhook/github; docs/background.md, "Wire formats").

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// True when `header` is `sha256=<hex>` and the hex is the HMAC-SHA256 of `body` under
/// `secret`. The comparison is constant-time (`Mac::verify_slice`). A missing prefix, bad hex
/// or an empty secret is simply false.
pub fn verify_signature(secret: &[u8], body: &[u8], header: &str) -> bool {
    if secret.is_empty() {
        return false;
    }
    let Some(hex_sig) = header.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Ok(sig) = hex::decode(hex_sig) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&sig).is_ok()
}

/// The header value for `body` under `secret`: `sha256=<hex>`. Used by tests and benchmarks
/// to sign deliveries exactly as GitHub does.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"It's a Secret to Everybody";
    const VECTOR: &str = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    #[test]
    fn githubs_published_test_vector_verifies() {
        assert!(verify_signature(
            SECRET,
            b"Hello, World!",
            &format!("sha256={VECTOR}")
        ));
        assert_eq!(sign(SECRET, b"Hello, World!"), format!("sha256={VECTOR}"));
    }

    #[test]
    fn wrong_body_secret_or_format_is_rejected() {
        let good = format!("sha256={VECTOR}");
        assert!(!verify_signature(SECRET, b"Hello, World?", &good));
        assert!(!verify_signature(b"other", b"Hello, World!", &good));
        assert!(!verify_signature(b"", b"Hello, World!", &good));
        assert!(!verify_signature(SECRET, b"Hello, World!", VECTOR));
        assert!(!verify_signature(SECRET, b"Hello, World!", "sha256=zz"));
        assert!(!verify_signature(SECRET, b"Hello, World!", "sha1=abc"));
        assert!(!verify_signature(SECRET, b"Hello, World!", ""));
    }
}
