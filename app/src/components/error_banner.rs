//! A use case's error as a banner, and the status of the page's answer: when the page renders
//! on the server, the answer carries the error's status (404 for what does not exist, 400 for
//! a wrong parameter), so that a link checker or a script sees what a person reads.

use leptos::prelude::*;

use crate::model::ServiceError;

/// Sets the status of the page's answer while it renders on the server; nothing in the browser.
pub fn set_status(status: u16) {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        if let Ok(status) = http::StatusCode::from_u16(status) {
            response.set_status(status);
        }
    }
    #[cfg(not(feature = "ssr"))]
    let _ = status;
}

/// `error` in words, after `lead` when given, with its status on the page's answer.
#[component]
pub fn ErrorBanner(
    error: ServiceError,
    #[prop(optional)] lead: &'static str,
    #[prop(optional)] testid: &'static str,
) -> impl IntoView {
    set_status(error.status());
    view! {
        <p class="banner error" role="alert" data-testid=(!testid.is_empty()).then_some(testid)>
            {format!("{lead}{error}")}
        </p>
    }
}
