//! Two revisions of a family compared.

use super::*;
use crate::resource::fetched;

/// Two revisions of a family compared.
#[component]
pub fn TaskDefinitionComparePage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let family = Memo::new(move |_| params.with(|p| p.get("family").unwrap_or_default()));
    let pair = Memo::new(move |_| {
        query.with(|q| {
            let from = revision_number(&q.get("from").unwrap_or_default());
            let to = revision_number(&q.get("to").unwrap_or_default());
            match (from, to) {
                (Ok(from), Ok(to)) => Ok((from, to)),
                (Err(e), _) => Err(format!("from: {e}")),
                (_, Err(e)) => Err(format!("to: {e}")),
            }
        })
    });
    let reveal = reveal_param();
    let comparison = fetched(
        move || (family.get(), pair.get(), reveal.get()),
        |(family, pair, reveal)| async move {
            match pair {
                Ok((from, to)) => compare_revisions(family, from, to, reveal).await.map(Ok),
                Err(message) => Ok(Err(message)),
            }
        },
    );
    view! {
        <Title text={ let family = crate::pages::title_part(family); move || format!("Compare {} · Task definitions", family()) } />
        <p><a href=move || format!("/task-definitions/{}", family.get())>{move || format!("← {}", family.get())}</a></p>
        <h1>{move || match pair.get() {
            Ok((from, to)) => format!("{}: revision {from} → {to}", family.get()),
            Err(_) => format!("{}: compare revisions", family.get()),
        }}</h1>
        <Suspense fallback=|| view! { <p class="muted">"Comparing…"</p> }>
            {move || Suspend::new(async move {
                let family = family.get_untracked();
                let missing = format!("{family} does not have both revisions. ");
                lookup_view(comparison.await, family, missing, "The revisions could not be read: ", |found| {
                    let pair = format!("?from={}&to={}", found.from.revision, found.to.revision);
                    view! {
                        <section class="card" data-testid="comparison">
                            <h2>"GPU settings"</h2>
                            <GpuChanges changes=found.gpu />
                            <h2>"Every difference of the JSON"</h2>
                            <p class="muted">
                                "GPU requirements first. Lists of named things (containers, variables, volumes, tags) are matched by name. "
                                {if reveal.get_untracked() {
                                    view! { <a href=pair data-testid="hide">"Hide secret-looking values"</a> }.into_any()
                                } else {
                                    view! { "Secret-looking values are masked. "<a href=format!("{pair}&reveal=true") data-testid="reveal">"Reveal values"</a> }.into_any()
                                }}
                            </p>
                            <DiffTable entries=found.diff />
                        </section>
                    }.into_any()
                })
            })}
        </Suspense>
    }
}
