//! `/deployments`: rolling revisions out to services.

use leptos::prelude::*;

use crate::components::coming_soon::ComingSoon;

/// The deployments page.
#[component]
pub fn DeploymentsPage() -> impl IntoView {
    view! {
        <ComingSoon
            title="Deployments"
            summary="Roll a revision out to a service after a capacity pre-check, watch it live, \
                     and roll back to any revision."
        />
    }
}
