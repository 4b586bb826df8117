//! Reads the theme a person chose from the request's cookie, so the first paint is already right.

use leptos::prelude::*;

use crate::model::Theme;

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
