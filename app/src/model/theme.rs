//! The colour theme: follow the system, or a choice the person made.

use serde::{Deserialize, Serialize};

/// The name of the cookie that keeps a person's theme choice.
pub const THEME_COOKIE: &str = "gpushare-theme";

/// The colour theme of the console.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    /// Follow the operating system's light or dark setting.
    #[default]
    System,
    Light,
    Dark,
}

impl Theme {
    /// The value of the `data-theme` attribute on `<html>`, and of the cookie.
    pub fn attribute(self) -> &'static str {
        match self {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    /// The theme a click on the theme button switches to: system → light → dark → system.
    pub fn next(self) -> Theme {
        match self {
            Theme::System => Theme::Light,
            Theme::Light => Theme::Dark,
            Theme::Dark => Theme::System,
        }
    }

    /// What the theme button says.
    pub fn label(self) -> &'static str {
        match self {
            Theme::System => "Theme: system",
            Theme::Light => "Theme: light",
            Theme::Dark => "Theme: dark",
        }
    }

    /// Parses an attribute or cookie value; anything unknown is `None`.
    pub fn parse(value: &str) -> Option<Theme> {
        match value.trim() {
            "system" => Some(Theme::System),
            "light" => Some(Theme::Light),
            "dark" => Some(Theme::Dark),
            _ => None,
        }
    }

    /// Finds the theme cookie in a `Cookie:` header value (`a=1; gpushare-theme=dark`).
    pub fn from_cookie_header(header: &str) -> Option<Theme> {
        header.split(';').find_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            (name.trim() == THEME_COOKIE)
                .then(|| Theme::parse(value))
                .flatten()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_cycles_through_all_three() {
        let mut theme = Theme::System;
        let mut seen = vec![theme];
        for _ in 0..3 {
            theme = theme.next();
            seen.push(theme);
        }
        assert_eq!(
            seen,
            [Theme::System, Theme::Light, Theme::Dark, Theme::System]
        );
    }

    #[test]
    fn cookie_header_is_parsed_among_others() {
        assert_eq!(
            Theme::from_cookie_header("a=1; gpushare-theme=dark; b=2"),
            Some(Theme::Dark)
        );
        assert_eq!(
            Theme::from_cookie_header("gpushare-theme=light"),
            Some(Theme::Light)
        );
        assert_eq!(Theme::from_cookie_header("gpushare-theme=purple"), None);
        assert_eq!(Theme::from_cookie_header("other-theme=dark"), None);
        assert_eq!(Theme::from_cookie_header(""), None);
    }

    #[test]
    fn attribute_round_trips_through_parse() {
        for theme in [Theme::System, Theme::Light, Theme::Dark] {
            assert_eq!(Theme::parse(theme.attribute()), Some(theme));
        }
    }
}
