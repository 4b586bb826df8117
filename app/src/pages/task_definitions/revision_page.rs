//! One revision: its facts, its JSON (masked unless revealed) and its exports.

use super::*;
use crate::resource::fetched;

/// One revision: its facts, its JSON (masked unless revealed) and its exports.
#[component]
pub fn TaskDefinitionRevisionPage() -> impl IntoView {
    let params = use_params_map();
    let family = Memo::new(move |_| params.with(|p| p.get("family").unwrap_or_default()));
    let number = Memo::new(move |_| params.with(|p| p.get("revision").unwrap_or_default()));
    let reveal = reveal_param();
    let view_data = fetched(
        move || (family.get(), number.get(), reveal.get()),
        |(family, number, reveal)| async move {
            match revision_number(&number) {
                Ok(revision) => task_definition_revision(family, revision, reveal)
                    .await
                    .map(Ok),
                Err(message) => Ok(Err(message)),
            }
        },
    );
    view! {
        <Title text={ let family = crate::pages::title_part(family); let number = crate::pages::title_part(number); move || format!("{}:{} · Task definitions", family(), number()) } />
        <p><a href=move || format!("/task-definitions/{}", family.get())>{move || format!("← {}", family.get())}</a></p>
        <h1>{move || format!("{}:{}", family.get(), number.get())}</h1>
        <Suspense fallback=|| view! { <p class="muted">"Reading the revision…"</p> }>
            {move || Suspend::new(async move {
                let family = family.get_untracked();
                let missing = format!("{family} has no revision {}. ", number.get_untracked());
                lookup_view(view_data.await, family, missing, "The revision could not be read: ", |shown| {
                    view! { <RevisionJson shown reveal=reveal.get_untracked() /> }.into_any()
                })
            })}
        </Suspense>
    }
}
