//! The per-request nonce that lets the hydration scripts run under the Content-Security-Policy.

use leptos::{nonce::Nonce, prelude::*};

/// A nonce the server generated for one request. The server's security-header middleware puts it
/// in the request's extensions and names it in the `Content-Security-Policy` header; the page
/// renders it on every script it emits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CspNonce(pub String);

/// Makes the request's nonce available to the hydration scripts of the page being rendered.
pub fn provide_request_nonce() {
    let nonce = use_context::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<CspNonce>().cloned());
    if let Some(CspNonce(value)) = nonce {
        provide_context(Nonce::from_value(value));
    }
}
