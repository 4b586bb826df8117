//! What the shell reads off the request it renders: the nonce that lets the hydration scripts
//! run under the Content-Security-Policy, and the theme the person chose.

use leptos::{nonce::Nonce, prelude::*};

use crate::model::Theme;

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

/// The theme named by the request's `gpushare-theme` cookie, or [`Theme::System`].
pub fn request_theme() -> Theme {
    use_context::<http::request::Parts>()
        .map(|parts| {
            parts
                .headers
                .get_all(http::header::COOKIE)
                .iter()
                .filter_map(|value| value.to_str().ok())
                .find_map(Theme::from_cookie_header)
                .unwrap_or_default()
        })
        .unwrap_or_default()
}
