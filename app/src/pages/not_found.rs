//! The page for any path the console does not have.

use leptos::prelude::*;
use leptos_meta::Title;

/// Says the page does not exist, with a way back, and answers HTTP 404.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }

    view! {
        <Title text="Not found" />
        <h1>"Page not found"</h1>
        <section class="card" data-testid="not-found">
            <p>"There is no page at this address. It may have moved, or the link may be mistyped."</p>
            <p>
                <a href="/">"Go to the fleet"</a>
            </p>
        </section>
    }
}
