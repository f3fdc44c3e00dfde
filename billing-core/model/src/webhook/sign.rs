//! Signing webhook requests and verifying them (for receivers).
//!
//! The signature is the hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the endpoint's
//! `secret_key`, where `timestamp` is UNIX seconds; it is sent as
//! `X-Webhook-Signature: t=<timestamp>,v1=<hex>` beside `X-Webhook-Timestamp: <timestamp>`.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The `User-Agent` of webhook requests (`<service>-Webhook/1.0`).
pub const USER_AGENT: &str = "Billing-Webhook/1.0";

/// Hex HMAC-SHA256 of `<timestamp>.<body>` keyed with `secret`.
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// The `X-Webhook-Signature` value.
pub fn signature_header(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", signature(secret, timestamp, body))
}

/// Why [`verify`] refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("no signature header")]
    Missing,
    #[error("malformed signature header")]
    Malformed,
    #[error("the signature does not match")]
    Mismatch,
    #[error("the signature timestamp is outside the tolerance")]
    Stale,
}

/// Checks a webhook request as a receiver should: `header` is the `X-Webhook-Signature` value
/// (`None` or empty when absent), `body` the raw request body, `secret` the endpoint's
/// `secret_key`, `tolerance_secs` how far the signed timestamp may be from `now_unix` (UNIX
/// seconds; pass the current time). The HMAC is compared in constant time. Returns the signed
/// timestamp.
pub fn verify_at(header: Option<&str>, body: &[u8], secret: &str, tolerance_secs: u64, now_unix: i64) -> Result<i64, VerifyError> {
    let header = header.map(str::trim).filter(|h| !h.is_empty()).ok_or(VerifyError::Missing)?;
    let mut t: Option<i64> = None;
    let mut sigs: Vec<&str> = Vec::new();
    for part in header.split(',') {
        let (k, v) = part.trim().split_once('=').ok_or(VerifyError::Malformed)?;
        match k.trim() {
            "t" => t = Some(v.trim().parse().map_err(|_| VerifyError::Malformed)?),
            "v1" => sigs.push(v.trim()),
            _ => {}
        }
    }
    let t = t.ok_or(VerifyError::Malformed)?;
    if sigs.is_empty() || sigs.iter().any(|s| s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit())) {
        return Err(VerifyError::Malformed);
    }
    let expected = signature(secret, t, body);
    let matches = sigs.iter().any(|s| bool::from(s.to_ascii_lowercase().as_bytes().ct_eq(expected.as_bytes())));
    if !matches {
        return Err(VerifyError::Mismatch);
    }
    if now_unix.abs_diff(t) > tolerance_secs {
        return Err(VerifyError::Stale);
    }
    Ok(t)
}

/// [`verify_at`] against the system clock.
pub fn verify(header: Option<&str>, body: &[u8], secret: &str, tolerance_secs: u64) -> Result<i64, VerifyError> {
    verify_at(header, body, secret, tolerance_secs, chrono::Utc::now().timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_and_verifies() {
        let body = br#"{"event_type":"PAYMENT_SUCCEEDED"}"#;
        let h = signature_header("whsec_x", 1_700_000_000, body);
        assert!(h.starts_with("t=1700000000,v1="));
        assert_eq!(verify_at(Some(&h), body, "whsec_x", 300, 1_700_000_100), Ok(1_700_000_000));
        assert_eq!(verify_at(Some(&h), body, "whsec_y", 300, 1_700_000_100), Err(VerifyError::Mismatch));
        assert_eq!(verify_at(Some(&h), b"{}", "whsec_x", 300, 1_700_000_100), Err(VerifyError::Mismatch));
        assert_eq!(verify_at(Some(&h), body, "whsec_x", 300, 1_700_000_301), Err(VerifyError::Stale));
        assert_eq!(verify_at(None, body, "whsec_x", 300, 1_700_000_000), Err(VerifyError::Missing));
        assert_eq!(verify_at(Some(""), body, "whsec_x", 300, 1_700_000_000), Err(VerifyError::Missing));
        assert_eq!(verify_at(Some("garbage"), body, "whsec_x", 300, 1_700_000_000), Err(VerifyError::Malformed));
        assert_eq!(verify_at(Some("t=1,v1=zz"), body, "whsec_x", 300, 1), Err(VerifyError::Malformed));
        assert_eq!(verify_at(Some("v1=00"), body, "whsec_x", 300, 1), Err(VerifyError::Malformed));
    }

    #[test]
    fn known_vector() {
        // printf '1.{}' | openssl dgst -sha256 -hmac k
        assert_eq!(signature("k", 1, b"{}"), "3dd49b2593d0f9a349e9e71c4bde3e2b862c2be4003fe9b4ba81332029310158");
    }
}
