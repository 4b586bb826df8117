//! The editor's JSON tab: the whole RegisterTaskDefinition request as text.

use leptos::prelude::*;

use crate::model::task_definition::MASK;

/// The JSON as the user types it (`text`), out of sight while `hidden`.
#[component]
pub fn JsonEditor(text: RwSignal<String>, hidden: Signal<bool>) -> impl IntoView {
    view! {
        <div hidden=move || hidden.get()>
            <label class="json-editor">
                <span>"The whole RegisterTaskDefinition request. Masked values ("{MASK}") keep the source revision's value."</span>
                <textarea rows="24" spellcheck="false" data-testid="edit-json"
                    prop:value=move || text.get()
                    on:input=move |ev| text.set(event_target_value(&ev))>{text.get_untracked()}</textarea>
            </label>
        </div>
    }
}
