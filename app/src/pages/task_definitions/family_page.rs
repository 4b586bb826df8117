//! One family's revisions.

use super::*;
use crate::resource::fetched;

/// One family's revisions.
#[component]
pub fn TaskDefinitionFamilyPage() -> impl IntoView {
    let params = use_params_map();
    let family = Memo::new(move |_| params.with(|p| p.get("family").unwrap_or_default()));
    let reveal = reveal_param();
    let data = fetched(
        move || (family.get(), reveal.get()),
        |(family, reveal)| family_data(family, reveal),
    );
    let stale = stale_reads_after(data);
    // Kept here: the editor is rebuilt for the new revision once the revisions are read again.
    let last_registered = RwSignal::new(None::<RevisionDetail>);
    let registered = Callback::new(move |new: RevisionDetail| {
        last_registered.set(Some(new));
        data.refetch();
    });
    view! {
        <Title text={ let family = crate::pages::title_part(family); move || format!("{} · Task definitions", family()) } />
        <p><a href="/task-definitions">"← Task definitions"</a></p>
        <h1>{move || family.get()}</h1>
        {move || last_registered.get().map(|new| view! {
            <p class="banner info" role="status" data-testid="edit-registered">
                {format!("Registered revision {} ({}). ", new.revision, new.arn)}
                <a href=format!("/task-definitions/{}/compare?from={}&to={}", new.family, new.revision.saturating_sub(1), new.revision)>"See what changed"</a>
            </p>
        })}
        <Suspense fallback=|| view! { <p class="muted">"Reading the revisions…"</p> }>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(Some(data)) => view! { <StaleReadsBanner status=stale /><FamilyRevisions data reveal=reveal.get_untracked() registered /> }.into_any(),
                    Ok(None) => {
                        set_status(404);
                        view! {
                            <p class="banner info" role="status" data-testid="no-family">
                                {format!("There is no task definition family {:?}. ", family.get_untracked())}
                                <a href="/task-definitions">"See the families that exist."</a>
                            </p>
                        }.into_any()
                    }
                    Err(error) => view! {
                        <ErrorBanner error lead="The revisions could not be read: " />
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}
