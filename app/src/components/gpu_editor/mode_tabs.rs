//! The editor's two tabs: the GPU settings form, or the whole JSON.

use leptos::prelude::*;

/// The tabs; `json_mode` is whether the JSON is shown.
#[component]
pub fn ModeTabs(json_mode: RwSignal<bool>) -> impl IntoView {
    view! {
        <div class="tabs" role="tablist" aria-label="Edit with">
            <button type="button" role="tab" data-testid="mode-form"
                aria-selected=move || (!json_mode.get()).to_string()
                on:click=move |_| json_mode.set(false)>"GPU settings"</button>
            <button type="button" role="tab" data-testid="mode-json"
                aria-selected=move || json_mode.get().to_string()
                on:click=move |_| json_mode.set(true)>"JSON"</button>
        </div>
    }
}
