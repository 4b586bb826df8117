//! The button that switches between the system, light and dark themes.

use leptos::prelude::*;

use crate::model::Theme;

/// A button cycling system → light → dark. The choice is kept in a cookie so the server renders
/// the next page in the same theme; without JavaScript the system setting applies.
#[component]
pub fn ThemeToggle() -> impl IntoView {
    let theme = RwSignal::new(initial_theme());

    view! {
        <button
            type="button"
            class="theme-toggle"
            data-testid="theme-toggle"
            title="Switch between the system, light and dark themes"
            on:click=move |_| {
                let next = theme.get_untracked().next();
                theme.set(next);
                apply_theme(next);
            }
        >
            {move || theme.get().label()}
        </button>
    }
}

/// The theme the page was rendered with: on the server from the request's cookie, in the
/// browser from the `data-theme` attribute the server wrote, so hydration sees the same label.
fn initial_theme() -> Theme {
    #[cfg(feature = "ssr")]
    {
        // The shell provides the theme it read off the request.
        use_context::<Theme>().unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        document()
            .document_element()
            .and_then(|html| html.get_attribute("data-theme"))
            .and_then(|value| Theme::parse(&value))
            .unwrap_or_default()
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        Theme::System
    }
}

/// Shows the theme at once and remembers it for a year.
#[cfg_attr(not(feature = "hydrate"), expect(unused_variables))]
fn apply_theme(theme: Theme) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;

        let document = document();
        if let Some(html) = document.document_element() {
            // Setting an attribute on <html> cannot fail in a browser; nothing to recover.
            let _ = html.set_attribute("data-theme", theme.attribute());
        }
        if let Ok(html_document) = document.dyn_into::<web_sys::HtmlDocument>() {
            let cookie = format!(
                "{}={}; Path=/; Max-Age=31536000; SameSite=Lax",
                crate::model::THEME_COOKIE,
                theme.attribute()
            );
            let _ = html_document.set_cookie(&cookie);
        }
    }
}
