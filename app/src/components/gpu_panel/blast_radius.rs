//! A GPU's blast radius: the services a GPU fault hits, those an MPS daemon failure also hits,
//! and the teams on it.

use leptos::prelude::*;

use crate::model::fleet_view::GpuDetail;

/// The blast radius of the GPU of `detail`.
#[component]
pub(super) fn BlastRadius(detail: GpuDetail) -> impl IntoView {
    let list = |names: &[String]| {
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    view! {
        <h3>"Blast radius"</h3>
        <dl class="facts stacked" data-testid="blast-radius">
            <dt>"A GPU fault hits"</dt>
            <dd>{list(&detail.gpu_services)}</dd>
            <dt>"An MPS daemon failure also hits"</dt>
            <dd>{list(&detail.daemon_services)}</dd>
            <dt>"Teams on this GPU"</dt>
            <dd>{list(&detail.teams)}</dd>
        </dl>
    }
}
