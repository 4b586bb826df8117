//! Security headers on every response, with a fresh script nonce per request.

use app::shell::CspNonce;
use axum::{
    extract::Request,
    http::{header, HeaderValue},
    middleware::Next,
    response::Response,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use rand::RngCore as _;

/// Put in a response's extensions by a handler whose answer shows revealed values.
#[derive(Clone, Copy, Debug)]
pub struct Revealed;

/// Whether a query string asks to reveal masked values (`reveal=true`, as the pages and the API
/// spell it, or `1`/`on`).
pub fn reveals(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        query.split('&').any(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            key == "reveal" && matches!(value, "true" | "1" | "on")
        })
    })
}

/// Middleware: hands the page a nonce for its scripts and sets the CSP and related headers;
/// an answer that shows revealed values gets `Cache-Control: no-store`.
pub async fn headers(mut request: Request, next: Next) -> Response {
    let nonce = new_nonce();
    request.extensions_mut().insert(CspNonce(nonce.clone()));
    let revealed = reveals(request.uri().query());
    let mut response = next.run(request).await;
    let revealed = revealed || response.extensions().get::<Revealed>().is_some();
    let headers = response.headers_mut();
    if revealed {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if let Ok(policy) = HeaderValue::from_str(&content_security_policy(&nonce)) {
        headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// 128 random bits, URL-safe base64.
fn new_nonce() -> String {
    let mut bytes = [0_u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Only this origin, and inline scripts only with this request's nonce. `wasm-unsafe-eval` lets
/// the page compile its own WebAssembly, which it loads from this origin.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_fresh_and_url_safe() {
        let (a, b) = (new_nonce(), new_nonce());
        assert_ne!(a, b);
        assert_eq!(a.len(), 22);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{a}"
        );
    }

    #[test]
    fn reveal_is_read_from_the_query() {
        assert!(reveals(Some("reveal=true")));
        assert!(reveals(Some("from=1&to=2&reveal=1")));
        assert!(!reveals(Some("reveal=false")));
        assert!(!reveals(Some("unreveal=true")));
        assert!(!reveals(None));
    }

    #[test]
    fn policy_allows_only_self_and_the_nonce() {
        let policy = content_security_policy("abc");
        assert!(policy.contains("script-src 'self' 'nonce-abc' 'wasm-unsafe-eval'"));
        assert!(policy.contains("frame-ancestors 'none'"));
        assert!(!policy.contains("unsafe-inline"));
    }
}
