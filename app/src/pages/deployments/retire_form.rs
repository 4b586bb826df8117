//! Retiring a service: what it frees first (its GPUs, the instances it leaves empty, its share of
//! the cost, requests that wait for it), then the service's name typed to confirm.

use super::*;

/// Retiring the service: scale to 0, then delete, after its blast radius and a typed
/// confirmation.
#[component]
pub(super) fn RetireForm(cluster: String, service: String) -> impl IntoView {
    // An action, not a resource: it is read only when asked for, and a resource created here
    // (inside the page's `Suspense`) would be numbered apart on the server (see
    // `crate::resource`).
    let preview = ServerAction::<PreviewRetirement>::new();
    let show = move |_| {
        preview.dispatch(PreviewRetirement {
            cluster: cluster.clone(),
            service: service.clone(),
        });
    };
    view! {
        <section class="card danger" data-testid="retire">
            <h2>"Retire this service"</h2>
            <p class="muted">"Scales it to 0 tasks, then deletes it (UpdateService, then DeleteService). Its GPUs are freed; its task definition stays."</p>
            <noscript><p class="banner info">"Retiring needs JavaScript; GET and POST /api/v1/clusters/{cluster}/services/{service}/retire work without it."</p></noscript>
            {move || preview.value().with(|v| v.is_none()).then(|| view! {
                <button type="button" data-testid="retire-show" on:click=show.clone() disabled=move || preview.pending().get()>"Show what retiring frees…"</button>
            })}
            {move || preview.value().get().map(|answer| match answer {
                Ok(found) => view! { <RetireConfirm found /> }.into_any(),
                Err(error) => view! {
                    <ErrorBanner error lead="What retiring frees could not be worked out: " testid="retire-preview-error" />
                }.into_any(),
            })}
        </section>
    }
}

/// What retiring frees: the tasks, the GPU memory, its share of the cost, each GPU and what stays
/// on it, the instances left empty, waiting requests and a rollout in progress.
#[component]
fn RetireRadius(found: RetirePreview) -> impl IntoView {
    let gpus = found
        .gpus
        .iter()
        .map(|g| {
            let others = if g.others.is_empty() {
                "nothing else: the GPU is free".to_string()
            } else {
                g.others.join(", ")
            };
            view! {
                <tr>
                    <td class="mono">{format!("{} ({})", g.instance_id, g.instance_type)}</td>
                    <td>{g.index}</td>
                    <td>{if g.whole { format!("whole GPU ({})", mib_words(g.memory_mib)) } else { mib_words(g.memory_mib) }}</td>
                    <td>{others}</td>
                </tr>
            }
        })
        .collect_view();
    let emptied = found
        .emptied
        .iter()
        .map(|i| view! { <li><span class="mono">{format!("{} ({})", i.instance_id, i.instance_type)}</span>{format!(": {}", i.after)}</li> })
        .collect_view();
    let cost = match found.monthly_cents {
        Some(cents) => format!("{} a month", money(cents)),
        None => "not known".into(),
    };
    view! {
        <dl class="facts" data-testid="retire-radius">
            <dt>"Runs"</dt><dd class="mono">{found.runs.clone()}</dd>
            <dt>"Tasks stopped"</dt><dd data-testid="retire-tasks">{format!("{} desired, {} running, {} pending", found.desired, found.running, found.pending)}</dd>
            <dt>"GPU memory freed"</dt><dd data-testid="retire-memory">{format!("{} on {} GPUs{}", mib_words(found.memory_mib), found.gpus.len(), if found.whole_gpus > 0 { format!(", {} of them whole", found.whole_gpus) } else { String::new() })}</dd>
            <dt>"Its share of the cost"</dt><dd data-testid="retire-cost">{cost}<br /><span class="muted">{found.cost_note.clone()}</span></dd>
            <dt>"Team"</dt><dd>{found.team.clone().unwrap_or_else(|| "—".into())}</dd>
        </dl>
        {(!found.gpus.is_empty()).then(|| view! {
            <table class="data" data-testid="retire-gpus">
                <thead><tr><th>"Instance"</th><th>"GPU"</th><th>"Freed"</th><th>"Stays on it"</th></tr></thead>
                <tbody>{gpus}</tbody>
            </table>
        })}
        {(!found.emptied.is_empty()).then(|| view! {
            <p>"Left with no task:"</p>
            <ul data-testid="retire-emptied">{emptied}</ul>
        })}
        {(found.waiting_requests > 0).then(|| view! {
            <p class="banner warn" role="note" data-testid="retire-waiting">{format!("{} request(s) for approval of changes of this service wait; approving one after it is retired fails.", found.waiting_requests)}</p>
        })}
        {found.in_flight.clone().map(|text| view! { <p class="banner warn" role="note">{text}</p> })}
    }
}

/// The blast radius and, for someone who may retire it, the typed confirmation.
#[component]
fn RetireConfirm(found: RetirePreview) -> impl IntoView {
    let retire = ServerAction::<RetireService>::new();
    let typed = RwSignal::new(String::new());
    let description = RwSignal::new(String::new());
    let name = found.service.clone();
    let matches = {
        let name = name.clone();
        move || typed.with(|t| t.trim() == name)
    };
    let send = {
        let (cluster, service, desired) =
            (found.cluster.clone(), found.service.clone(), found.desired);
        move |_| {
            retire.dispatch(RetireService {
                cluster: cluster.clone(),
                service: service.clone(),
                request: RetireRequest {
                    confirm: typed.get_untracked(),
                    expected_desired: Some(desired),
                    description: description.get_untracked(),
                },
            });
        }
    };
    let done = retire.value();
    let sent = move || matches!(done.get(), Some(Ok(_)));
    view! {
        <RetireRadius found=found.clone() />
        {if found.allowed {
            view! {
                <div class="edit-actions">
                    <label class="inline">
                        <span>{format!("Type {name} to confirm ")}</span>
                        <input type="text" autocomplete="off" data-testid="retire-confirm"
                            prop:value=move || typed.get()
                            value=typed.get_untracked()
                            on:input=move |ev| typed.set(event_target_value(&ev)) />
                    </label>
                    <label class="inline">
                        <span>"Why "</span>
                        <input type="text" maxlength="256" data-testid="retire-description"
                            prop:value=move || description.get()
                            value=description.get_untracked()
                            on:input=move |ev| description.set(event_target_value(&ev)) />
                    </label>
                    <button type="button" class="danger" data-testid="retire-send" on:click=send
                        disabled=move || retire.pending().get() || sent() || !matches()>"Retire: scale to 0 and delete"</button>
                </div>
            }.into_any()
        } else {
            view! { <p class="not-allowed" role="note" data-testid="retire-not-allowed">{found.reason.clone().unwrap_or_default()}</p> }.into_any()
        }}
        {move || done.get().map(|answer| match answer {
            Ok(answer) => view! {
                <p class="banner info" role="status" data-testid="retire-done">
                    {format!("Retired: {}deleted; ECS has it {} while its tasks stop. ", if answer.scaled_to_zero { "scaled to 0 and " } else { "" }, answer.status)}
                    <a href=format!("/audit?action=retire")>"The audit log"</a>
                </p>
            }.into_any(),
            Err(error) => view! {
                <p class="banner error" role="alert" data-testid="retire-refused">{format!("Not retired: {error}")}</p>
            }.into_any(),
        })}
    }
}
