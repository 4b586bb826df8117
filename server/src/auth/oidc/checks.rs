//! The small checks and encodings of an OIDC sign-in: base64url, PKCE's S256, session hashes,
//! cookies, the `next` path kept on this site, and an ID token's claims.

use super::*;

pub(super) fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub(super) fn unb64url(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .ok()
}

/// `bytes` random bytes, base64url; or why the system's random source gave none. A sign-in's
/// state and a session id are never made of anything less than random bytes.
pub(super) fn random(bytes: usize) -> Result<String, String> {
    let mut buffer = vec![0u8; bytes];
    aws_lc_rs::rand::fill(&mut buffer).map_err(|_| {
        "the system's random source gave no bytes, so no sign-in can start safely; check the host's entropy source (/dev/urandom) and try again".to_string()
    })?;
    Ok(b64url(&buffer))
}

/// SHA-256 of `text`, base64url: the PKCE challenge of a verifier.
pub fn s256(text: &str) -> String {
    b64url(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, text.as_bytes()).as_ref())
}

/// SHA-256 of a session id, hex: what the database keeps instead of the id.
pub fn session_hash(id: &str) -> String {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, id.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The value of cookie `name` in a request's `Cookie` headers.
pub fn cookie_value<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// Where to go after signing in: a path of this console, never another site.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.starts_with("/\\")
                && !path.starts_with("/auth/")
                && path.len() <= 2048
                && !path.chars().any(char::is_control) =>
        {
            path.to_string()
        }
        _ => "/".to_string(),
    }
}
/// The ID token's claims checked: issuer, audience (and authorized party), expiry, issue time,
/// and the nonce of this sign-in.
pub fn check_claims(
    claims: &Value,
    settings: &OidcSettings,
    nonce: &str,
    now: i64,
) -> Result<(), String> {
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    if text("iss") != Some(settings.issuer.as_str()) {
        return Err(format!(
            "the ID token was issued by {:?}, not {:?}",
            text("iss").unwrap_or("nobody"),
            settings.issuer
        ));
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&settings.client_id.as_str()) {
        return Err("the ID token is not for this console (aud)".into());
    }
    if audiences.len() > 1 && text("azp") != Some(settings.client_id.as_str()) {
        return Err("the ID token was given to another party (azp)".into());
    }
    match claims.get("exp").and_then(Value::as_i64) {
        Some(exp) if exp + LEEWAY_SECONDS >= now => {}
        Some(_) => return Err("the ID token has expired; sign in again".into()),
        None => return Err("the ID token has no expiry (exp)".into()),
    }
    if claims
        .get("iat")
        .and_then(Value::as_i64)
        .is_none_or(|iat| iat > now + LEEWAY_SECONDS)
    {
        return Err("the ID token has no issue time, or one in the future (iat)".into());
    }
    if text("nonce") != Some(nonce) {
        return Err("the ID token is not from this sign-in (nonce)".into());
    }
    Ok(())
}
