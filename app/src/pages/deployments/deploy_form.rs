//! Sends the deploy (or rollback) of `target` and opens its watch page.

use super::*;

/// Sends the deploy (or rollback) of `target` and opens its watch page; with `target` the
/// revision running, a restart: new tasks of it (`forceNewDeployment`).
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
    let restart_action = ServerAction::<RestartService>::new();
    let description = RwSignal::new(String::new());
    let force = RwSignal::new(false);
    let restart = target == running;
    let answer = move || {
        if restart {
            restart_action.value().get()
        } else {
            deploy.value().get()
        }
    };
    let pending = move || deploy.pending().get() || restart_action.pending().get();
    Effect::new(move |_| {
        if let Some(Ok(answer)) = answer() {
            let navigate = leptos_router::hooks::use_navigate();
            let to = match &answer.approval {
                Some(request) => format!("/approvals/{request}"),
                None => format!("/rollouts/{}", answer.audit_id),
            };
            navigate(&to, Default::default());
        }
    });
    let send = move |_| {
        let (cluster, service) = (cluster.clone(), service.clone());
        if restart {
            restart_action.dispatch(RestartService {
                cluster,
                service,
                request: RestartRequest {
                    expected_revision: RevisionRef::number(running),
                    force: force.get_untracked(),
                    description: description.get_untracked(),
                },
            });
        } else {
            deploy.dispatch(DeployService {
                cluster,
                service,
                request: DeployRequest {
                    revision: RevisionRef::number(target),
                    expected_revision: RevisionRef::number(running),
                    force: force.get_untracked(),
                    description: description.get_untracked(),
                    restart: false,
                },
            });
        }
    };
    let (title, button) = words(running, target, over_budget);
    view! {
        <section class="card" data-testid="deploy-form" data-restart=restart.to_string()>
            <h2>{title}</h2>
            {restart.then(|| view! {
                <p class="muted" data-testid="restart-explained">"ECS starts new tasks of the same revision and stops the old ones as a deploy does (forceNewDeployment): to pick up an image whose tag moved, or to move tasks off an impaired instance."</p>
            })}
            <noscript><p class="banner info">{if restart { "Restarting needs JavaScript; POST /api/v1/services/{cluster}/{service}/restart works without it." } else { "Deploying needs JavaScript; POST /api/v1/services/{cluster}/{service}/deploy works without it." }}</p></noscript>
            <WhyAndForce description force completes />
            <div class="edit-actions">
                <button type="button" data-testid="deploy-send" on:click=send disabled=pending>
                    {button}
                </button>
            </div>
            {move || answer().and_then(|answer| answer.err()).map(|error| view! {
                <p class="banner error" role="alert" data-testid="deploy-refused">
                    {format!("The {} was not sent: {error}", if restart { "restart" } else { "deploy" })}
                </p>
            })}
        </section>
    }
}

/// The form's title and its button's words: a restart, a rollback or a deploy, asked for
/// approval when over the team's budget.
fn words(running: u32, target: u32, over_budget: bool) -> (String, String) {
    let (rollback, restart) = (target < running, target == running);
    let title = if restart {
        format!("Restart revision {running}")
    } else if rollback {
        format!("Roll back to revision {target}")
    } else {
        format!("Deploy revision {target}")
    };
    let button = match (over_budget, rollback, restart) {
        (true, _, true) => format!("Ask for approval to restart {running}"),
        (true, rollback, false) => format!(
            "Ask for approval to {} {target}",
            if rollback { "roll back to" } else { "deploy" }
        ),
        (false, _, true) => format!("Restart: new tasks of {running}"),
        (false, true, false) => format!("Roll back from {running} to {target}"),
        (false, false, false) => format!("Deploy {target} (replacing {running})"),
    };
    (title, button)
}

/// Why (for the audit log), and, when the pre-check says the rollout will not complete, the
/// box that sends it anyway.
#[component]
fn WhyAndForce(
    description: RwSignal<String>,
    force: RwSignal<bool>,
    completes: bool,
) -> impl IntoView {
    view! {
        <label class="edit-description">
            <span>"Why (kept in the audit log)"</span>
            <input type="text" maxlength="256" data-testid="deploy-description"
                prop:value=move || description.get()
                value=description.get_untracked()
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
    }
}
