//! One revision whole: its facts, its RegisterTaskDefinition JSON with secret-looking values hidden
//! unless revealed, and its exports.

use super::*;

#[component]
pub(super) fn RevisionJson(shown: RevisionView, reveal: bool) -> impl IntoView {
    let detail = shown.detail.clone();
    let toggle = if reveal {
        view! { <a href="?" data-testid="hide">"Hide secret-looking values"</a> }.into_any()
    } else {
        ().into_any()
    };
    view! {
        <section class="card" data-testid="revision-detail">
            <div class="card-title">
                <h2>{format!("Revision {}", detail.revision)}</h2>
                {(!detail.active).then(|| view! { <span class="badge" data-testid="inactive">"inactive"</span> })}
                <span class="muted mono">{detail.arn.clone()}</span>
            </div>
            <RevisionFacts revision=detail />
        </section>
        <section class="card">
            <h2>"JSON"</h2>
            <p class="muted">"The request that registers this revision again: what DescribeTaskDefinition answers, without the fields ECS sets itself, with its tags. "{toggle}</p>
            <Exports json=shown.json cloudformation=shown.cloudformation masked=shown.masked reveal_href=shown.reveal.allowed.then(|| "?reveal=true".to_string()) />
        </section>
    }
}
