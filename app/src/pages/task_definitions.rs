//! `/task-definitions`: the GPU sharing settings of task definitions.

use leptos::prelude::*;

use crate::components::coming_soon::ComingSoon;

/// The task definition editor's page.
#[component]
pub fn TaskDefinitionsPage() -> impl IntoView {
    view! {
        <ComingSoon
            title="Task definitions"
            summary="Edit how a task definition's containers share GPUs, see the diff and whether \
                     the new revision fits the fleet, then register it."
        />
    }
}
