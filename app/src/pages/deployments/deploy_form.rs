//! Sends the deploy (or rollback) of `target` and opens its watch page.

use super::*;

/// Sends the deploy (or rollback) of `target` and opens its watch page.
#[component]
pub(super) fn DeployForm(
    cluster: String,
    service: String,
    running: u32,
    target: u32,
    completes: bool,
    over_budget: bool,
) -> impl IntoView {
    let deploy = ServerAction::<DeployService>::new();
    let description = RwSignal::new(String::new());
    let force = RwSignal::new(false);
    let rollback = target < running;
    Effect::new(move |_| {
        if let Some(Ok(answer)) = deploy.value().get() {
            let navigate = leptos_router::hooks::use_navigate();
            let to = match &answer.approval {
                Some(request) => format!("/approvals/{request}"),
                None => format!("/rollouts/{}", answer.audit_id),
            };
            navigate(&to, Default::default());
        }
    });
    let send = move |_| {
        deploy.dispatch(DeployService {
            cluster: cluster.clone(),
            service: service.clone(),
            request: DeployRequest {
                revision: RevisionRef::number(target),
                expected_revision: RevisionRef::number(running),
                force: force.get_untracked(),
                description: description.get_untracked(),
            },
        });
    };
    view! {
        <section class="card" data-testid="deploy-form">
            <h2>{if rollback { format!("Roll back to revision {target}") } else { format!("Deploy revision {target}") }}</h2>
            <noscript><p class="banner info">"Deploying needs JavaScript; POST /api/v1/services/{cluster}/{service}/deploy works without it."</p></noscript>
            <label class="edit-description">
                <span>"Why (kept in the audit log)"</span>
                <input type="text" maxlength="256" data-testid="deploy-description"
                    prop:value=move || description.get()
                    on:input=move |ev| description.set(event_target_value(&ev)) />
            </label>
            {(!completes).then(|| view! {
                <label class="inline">
                    <input type="checkbox" data-testid="deploy-force"
                        prop:checked=move || force.get()
                        on:change=move |ev| force.set(event_target_checked(&ev)) />
                    " Deploy anyway: I have read the pre-check"
                </label>
            })}
            <div class="edit-actions">
                <button type="button" data-testid="deploy-send" on:click=send disabled=move || deploy.pending().get()>
                    {match (over_budget, rollback) {
                        (true, _) => format!("Ask for approval to {} {target}", if rollback { "roll back to" } else { "deploy" }),
                        (false, true) => format!("Roll back from {running} to {target}"),
                        (false, false) => format!("Deploy {target} (replacing {running})"),
                    }}
                </button>
            </div>
            {move || deploy.value().get().and_then(|answer| answer.err()).map(|error| view! {
                <p class="banner error" role="alert" data-testid="deploy-refused">
                    {format!("The deploy was not sent: {error}")}
                </p>
            })}
        </section>
    }
}
