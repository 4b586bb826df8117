//! A labelled text field bound to a signal, its value also rendered on the server, and the helpers
//! the forms read their fields with.

use leptos::prelude::*;

/// A text input bound to `signal`, with its label, test id and an optional hint.
#[component]
pub fn TextField(
    label: &'static str,
    signal: RwSignal<String>,
    testid: &'static str,
    #[prop(optional)] hint: &'static str,
) -> impl IntoView {
    view! {
        <label class="field">
            <span>{label}</span>
            <input type="text" data-testid=testid value=signal.get_untracked()
                prop:value=move || signal.get()
                on:input=move |ev| signal.set(event_target_value(&ev)) />
            {(!hint.is_empty()).then(|| view! { <small class="muted">{hint}</small> })}
        </label>
    }
}

/// A signal holding `value` as text.
pub fn text(value: impl ToString) -> RwSignal<String> {
    RwSignal::new(value.to_string())
}

/// A whole number from a field, or what is wrong with it (`what` names the field).
pub fn number(signal: RwSignal<String>, what: &str) -> Result<u32, String> {
    signal.with(|t| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("{what}: give a whole number"))
    })
}
