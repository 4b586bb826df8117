//! A section of the console that is planned but not built yet.

use leptos::prelude::*;
use leptos_meta::Title;

/// Says what a section will do, so the navigation never leads to an empty page.
#[component]
pub fn ComingSoon(
    /// The section's name.
    title: &'static str,
    /// One or two sentences on what the section will show.
    summary: &'static str,
) -> impl IntoView {
    view! {
        <Title text=title />
        <h1>{title}</h1>
        <section class="card coming-soon" aria-label="Coming">
            <p class="badge">"Coming"</p>
            <p>{summary}</p>
        </section>
    }
}
