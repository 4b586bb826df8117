//! `/cost`: what the GPUs cost and each team's share.

use leptos::prelude::*;

use crate::components::coming_soon::ComingSoon;

/// The cost page.
#[component]
pub fn CostPage() -> impl IntoView {
    view! {
        <ComingSoon
            title="Cost"
            summary="What the GPUs cost, what sits idle, and each team's share of every shared GPU."
        />
    }
}
