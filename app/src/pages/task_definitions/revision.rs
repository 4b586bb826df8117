//! One revision in a family's list: its number, when it was registered, its GPU settings and
//! change, with links to it and to its comparison with the one before.

use super::*;

#[component]
pub(super) fn Revision(revision: RevisionDetail) -> impl IntoView {
    let link = format!(
        "/task-definitions/{}/{}",
        revision.family, revision.revision
    );
    let compare = (revision.revision > 1).then(|| {
        format!(
            "/task-definitions/{}/compare?from={}&to={}",
            revision.family,
            revision.revision - 1,
            revision.revision
        )
    });
    view! {
        <section class="card" data-testid="revision" data-revision=revision.revision data-active=revision.active.to_string()>
            <div class="card-title">
                <h2><a href=link.clone()>{format!("Revision {}", revision.revision)}</a></h2>
                {(!revision.active).then(|| view! { <span class="badge" data-testid="inactive">"inactive"</span> })}
                <span class="muted">{revision.registered_at.clone().unwrap_or_default()}</span>
            </div>
            <RevisionFacts revision=revision.clone() />
            <p class="links">
                <a href=link>"Full JSON and exports"</a>
                {compare.map(|href| view! { " · "<a href=href>"Compare with the previous revision"</a> })}
            </p>
        </section>
    }
}
