//! `/deployments`: every service with its revision, GPU setting, task counts, rollout state and
//! deployment configuration; and `/deployments/:cluster/:service`: a revision of its family
//! compared with what runs, and the capacity pre-check of rolling it out.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    components::budget_bars::BudgetBars,
    components::{
        error_banner::{set_status, ErrorBanner},
        stale_reads::StaleReadsBanner,
        td_views::{DiffTable, GpuChanges},
    },
    model::{
        activity::{when, EventFilter},
        arn::{arn_tail, RevisionRef},
        audit::AuditAction,
        deployment::{
            DeployRequest, PreCheck, RolloutResult, ScaleRequest, ServiceRow, WatchState,
        },
        fleet_view::encode,
        rollout::{RolloutCheck, Verdict},
    },
    pages::activity::TaskTable,
    server_fns::activity::cluster_events,
    server_fns::deployments::{
        deployment_state, list_services, pre_check_rollout, DeployService, ScaleService,
    },
};

/// The services page.
#[component]
pub fn DeploymentsPage() -> impl IntoView {
    let query = use_query_map();
    let cluster = Memo::new(move |_| query.with(|q| q.get("cluster").filter(|c| !c.is_empty())));
    let rows = Resource::new(move || cluster.get(), list_services);
    view! {
        <Title text="Deployments" />
        <h1>"Deployments"</h1>
        <p class="muted">
            "Every service with the revision it runs, that revision's GPU settings, its tasks, its rollout and its deployment configuration. Open a service to check whether a revision's rolling update fits the fleet."
        </p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the services…"</p> }>
            {move || Suspend::new(async move {
                match rows.await {
                    Ok(rows) if rows.is_empty() => view! {
                        <p data-testid="no-services">"There are no services in this fleet."</p>
                    }.into_any(),
                    Ok(rows) => view! { <StaleReadsBanner /><ClusterLinks rows=rows.clone() /><ServiceTable rows /> }.into_any(),
                    Err(error) => view! {
                        <p class="banner error" role="alert" data-testid="services-error">{format!("The services could not be read: {error}")}</p>
                    }.into_any(),
                }
            })}
        </Suspense>
        <BudgetBars cluster=cluster.get_untracked() />
    }
}

/// Each cluster of the table with links to its events feed and stopped tasks.
#[component]
fn ClusterLinks(rows: Vec<ServiceRow>) -> impl IntoView {
    let mut clusters: Vec<String> = rows.into_iter().map(|r| r.cluster).collect();
    clusters.dedup();
    view! {
        <ul class="cluster-links" data-testid="cluster-links">
            {clusters.into_iter().map(|c| {
                let path = encode(&c);
                view! {
                    <li>
                        <strong>{c.clone()}</strong>": "
                        <a href=format!("/clusters/{path}/events")>"events"</a>" · "
                        <a href=format!("/clusters/{path}/events?kind=problem")>"problems"</a>" · "
                        <a href=format!("/clusters/{path}/stopped-tasks")>"stopped tasks"</a>
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}

#[component]
fn ServiceTable(rows: Vec<ServiceRow>) -> impl IntoView {
    view! {
        <table class="data-table" data-testid="service-table">
            <thead>
                <tr>
                    <th scope="col">"Service"</th>
                    <th scope="col">"Team"</th>
                    <th scope="col">"Revision"</th>
                    <th scope="col">"GPU"</th>
                    <th scope="col" class="num" title="desired / running / pending">"Tasks"</th>
                    <th scope="col">"Rollout"</th>
                    <th scope="col">"Deployment configuration"</th>
                </tr>
            </thead>
            <tbody>
                {rows.into_iter().map(|row| {
                    let s = row.service.clone();
                    let rollout = match (&s.rollout_state, s.deployments) {
                        (Some(state), n) if n > 1 => format!("{state} ({n} deployments)"),
                        (Some(state), _) => state.clone(),
                        (None, _) => "—".into(),
                    };
                    let config = format!(
                        "max {} %, min healthy {} %, circuit breaker {}",
                        s.maximum_percent.map_or("—".into(), |p| p.to_string()),
                        s.minimum_healthy_percent.map_or("—".into(), |p| p.to_string()),
                        match (s.circuit_breaker, s.circuit_breaker_rollback) {
                            (true, true) => "on, rolls back",
                            (true, false) => "on",
                            _ => "off",
                        }
                    );
                    view! {
                        <tr data-service=format!("{}/{}", row.cluster, s.name)>
                            <th scope="row">
                                <a href=format!("/deployments/{}/{}", row.cluster, s.name)>{s.name.clone()}</a>
                                <div class="muted">{row.cluster.clone()}</div>
                            </th>
                            <td>{s.team.clone().unwrap_or_else(|| "—".into())}</td>
                            <td><a class="mono" href=format!("/task-definitions/{}/{}", row.family, row.revision)>{format!("{}:{}", row.family, row.revision)}</a></td>
                            <td>{if row.gpu.is_empty() { "no GPU".to_string() } else { row.gpu.join("; ") }}</td>
                            <td class="num" data-testid="service-counts">{format!("{} / {} / {}", s.desired, s.running, s.pending)}</td>
                            <td data-testid="service-rollout" class=format!("rollout-{}", s.rollout_state.clone().unwrap_or_default().to_lowercase())>{rollout}</td>
                            <td class="muted">{config}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// One service: a revision of its family and the pre-check of rolling it out.
#[component]
pub fn ServicePage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let cluster = Memo::new(move |_| params.with(|p| p.get("cluster").unwrap_or_default()));
    let service = Memo::new(move |_| params.with(|p| p.get("service").unwrap_or_default()));
    let revision = Memo::new(move |_| {
        query.with(|q| match q.get("revision").filter(|r| !r.is_empty()) {
            None => Ok(None),
            Some(text) => text
                .parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .map(Some)
                .ok_or_else(|| {
                    format!("{text:?} is not a revision number: give a whole number from 1.")
                }),
        })
    });
    let check = Resource::new(
        move || (cluster.get(), service.get(), revision.get()),
        |(cluster, service, revision)| async move {
            match revision {
                Ok(revision) => pre_check_rollout(cluster, service, revision).await.map(Ok),
                Err(message) => Ok(Err(message)),
            }
        },
    );
    view! {
        <Title text=move || format!("{} · Deployments", service.get()) />
        <p><a href="/deployments">"← Deployments"</a></p>
        <h1>{move || format!("{} / {}", cluster.get(), service.get())}</h1>
        <Suspense fallback=|| view! { <p class="muted">"Checking the rollout…"</p> }>
            {move || Suspend::new(async move {
                match check.await {
                    Ok(Ok(found)) => view! { <StaleReadsBanner /><ServiceRollout found /> }.into_any(),
                    Ok(Err(message)) => {
                        set_status(400);
                        view! { <p class="banner error" role="alert" data-testid="bad-revision">{message}</p> }.into_any()
                    }
                    Err(error) => view! {
                        <ErrorBanner error lead="The pre-check could not run: " testid="pre-check-error" />
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn ServiceRollout(found: PreCheck) -> impl IntoView {
    let PreCheck {
        service,
        target,
        revisions,
        comparison,
        rollout,
        deploy,
        budget,
    } = found;
    let s = &service.service;
    let over_budget = budget.as_ref().is_some_and(|b| b.over);
    let running = service.revision;
    let options = revisions
        .iter()
        .map(|n| {
            let label = if *n == running {
                format!("revision {n} (running)")
            } else {
                format!("revision {n}")
            };
            view! { <option value=n.to_string() selected=*n == target.revision>{label}</option> }
        })
        .collect_view();
    view! {
        <section class="card" data-testid="service-facts">
            <dl class="facts">
                <dt>"Runs"</dt>
                <dd><a class="mono" href=format!("/task-definitions/{}/{}", service.family, running)>{format!("{}:{running}", service.family)}</a></dd>
                <dt>"GPU"</dt>
                <dd>{if service.gpu.is_empty() { "no GPU".to_string() } else { service.gpu.join("; ") }}</dd>
                <dt>"Tasks"</dt>
                <dd>{format!("{} desired, {} running, {} pending", s.desired, s.running, s.pending)}</dd>
                <dt>"Rollout"</dt>
                <dd>{s.rollout_state.clone().unwrap_or_else(|| "—".into())}</dd>
                <dt>"Team"</dt>
                <dd>{s.team.clone().unwrap_or_else(|| "—".into())}</dd>
            </dl>
        </section>
        {deploy.allowed.then(|| view! { <ScaleForm cluster=service.cluster.clone() service=s.name.clone() desired=s.desired runs=format!("{}:{running}", service.family) /> })}
        <form class="compare-picker card" method="get" data-testid="revision-picker">
            <label><span>"Roll out"</span><select name="revision" data-testid="rollout-revision">{options}</select></label>
            <button type="submit" data-testid="rollout-check">"Check"</button>
        </form>
        <section class="card">
            <h2>{format!("What changes: revision {running} → {}", target.revision)}</h2>
            {match comparison {
                None => view! { <p class="muted" data-testid="same-revision">"This is the revision the service runs."</p> }.into_any(),
                Some(comparison) => view! {
                    <GpuChanges changes=comparison.gpu />
                    <DiffTable entries=comparison.diff />
                }.into_any(),
            }}
        </section>
        <PreCheckView rollout=rollout.clone() />
        {(target.revision != running).then(|| budget.map(|verdict| view! {
            <section class="card" data-testid="rollout-budget">
                <h2>"Team budget"</h2>
                <p class=if verdict.over { "banner warn" } else { "banner info" } role="status" data-over=verdict.over.to_string()>
                    {verdict.arithmetic.clone()}
                    {verdict.over.then_some(" Sending it asks the team's approvers; nothing is sent until one of them approves.")}
                </p>
            </section>
        }))}
        {(target.revision != running).then(|| if deploy.allowed {
            view! {
                <DeployForm cluster=service.cluster.clone() service=s.name.clone() running target=target.revision completes=rollout.verdict == Verdict::Completes over_budget />
            }.into_any()
        } else {
            view! {
                <section class="card" data-testid="deploy-not-allowed">
                    <h2>{format!("Deploy revision {}", target.revision)}</h2>
                    <p class="not-allowed" role="note">{deploy.reason.clone().unwrap_or_default()}</p>
                </section>
            }.into_any()
        })}
        <RecentEvents cluster=service.cluster.clone() service=s.name.clone() />
    }
}

/// The service's latest events, with links to the cluster's feed and stopped tasks.
#[component]
fn RecentEvents(cluster: String, service: String) -> impl IntoView {
    let filter = EventFilter {
        service: Some(service.clone()),
        limit: Some(10),
        ..EventFilter::default()
    };
    let events = Resource::new(move || (), {
        let cluster = cluster.clone();
        move |_| cluster_events(cluster.clone(), filter.clone())
    });
    let (c, s) = (encode(&cluster), encode(&service));
    view! {
        <section class="card" data-testid="recent-events">
            <h2>"Latest events"</h2>
            <p>
                <a href=format!("/clusters/{c}/events?service={s}")>"All of this service's events"</a>" · "
                <a href=format!("/clusters/{c}/stopped-tasks?service={s}")>"its stopped tasks"</a>" · "
                <a href=format!("/clusters/{c}/events")>"the cluster's events"</a>
            </p>
            <Suspense fallback=|| view! { <p class="muted">"Reading the events…"</p> }>
                {move || Suspend::new(async move {
                    match events.await {
                        Ok(feed) if feed.events.is_empty() => view! { <p class="muted">"No events."</p> }.into_any(),
                        Ok(feed) => view! {
                            <ul class="events">
                                {feed.events.into_iter().map(|e| view! {
                                    <li data-kind=e.kind.as_str()><span class="muted mono when" title=e.at.clone()>{when(&e.at)}</span>" "{e.message}</li>
                                }).collect_view()}
                            </ul>
                        }.into_any(),
                        Err(error) => view! { <p class="banner warn" role="status">{format!("The events could not be read: {error}")}</p> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

/// Sends the deploy (or rollback) of `target` and opens its watch page.
#[component]
fn DeployForm(
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

/// Changes the service's desired count; past the team's budget it asks for approval.
#[component]
fn ScaleForm(cluster: String, service: String, desired: u32, runs: String) -> impl IntoView {
    let scale = ServerAction::<ScaleService>::new();
    let wanted = RwSignal::new(desired.to_string());
    let description = RwSignal::new(String::new());
    Effect::new(move |_| {
        if let Some(Ok(answer)) = scale.value().get() {
            if let Some(request) = &answer.approval {
                let navigate = leptos_router::hooks::use_navigate();
                navigate(&format!("/approvals/{request}"), Default::default());
            }
        }
    });
    let send = move |_| {
        let Ok(count) = wanted.get_untracked().trim().parse::<u32>() else {
            return;
        };
        scale.dispatch(ScaleService {
            cluster: cluster.clone(),
            service: service.clone(),
            request: ScaleRequest {
                desired: count,
                expected_desired: desired,
                // The count is of the tasks of the revision shown, and of no other.
                expected_revision: crate::model::arn::RevisionRef::parse(&runs).ok(),
                description: description.get_untracked(),
            },
        });
    };
    let invalid = move || {
        wanted.with(|w| {
            w.trim()
                .parse::<u32>()
                .map_or(true, |n| n > crate::model::deployment::MAX_DESIRED)
        })
    };
    view! {
        <section class="card" data-testid="scale-form">
            <h2>"Desired tasks"</h2>
            <noscript><p class="banner info">"Scaling needs JavaScript; POST /api/v1/services/{cluster}/{service}/scale works without it."</p></noscript>
            <div class="edit-actions">
                <label class="inline">
                    <span>{format!("Run (now {desired}) ")}</span>
                    <input type="number" min="0" max=crate::model::deployment::MAX_DESIRED.to_string() data-testid="scale-desired"
                        prop:value=move || wanted.get()
                        on:input=move |ev| wanted.set(event_target_value(&ev)) />
                </label>
                <label class="inline">
                    <span>"Why "</span>
                    <input type="text" maxlength="256" data-testid="scale-description"
                        prop:value=move || description.get()
                        on:input=move |ev| description.set(event_target_value(&ev)) />
                </label>
                <button type="button" data-testid="scale-send" on:click=send disabled=move || scale.pending().get() || invalid()>"Set the desired count"</button>
            </div>
            {move || invalid().then(|| view! { <p class="field-error" role="alert">{format!("Give a whole number of tasks from 0 to {}.", crate::model::deployment::MAX_DESIRED)}</p> })}
            {move || scale.value().get().map(|answer| match answer {
                Ok(answer) if answer.approval.is_none() => view! {
                    <p class="banner info" role="status" data-testid="scale-done">"Sent: ECS starts or stops tasks to match. "<a href=format!("/audit?action=scale")>"The audit log"</a></p>
                }.into_any(),
                Ok(_) => ().into_any(),
                Err(error) => view! {
                    <p class="banner error" role="alert" data-testid="scale-refused">{format!("The desired count was not changed: {error}")}</p>
                }.into_any(),
            })}
        </section>
    }
}

/// `/rollouts/:id`: one rollout, live.
#[component]
pub fn DeploymentWatchPage() -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.with(|p| p.get("id").unwrap_or_default()));
    let initial = Resource::new(move || id.get(), deployment_state);
    view! {
        <Title text="Deployment" />
        <p><a href="/deployments">"← Deployments"</a>" · "<a href="/audit">"Audit log"</a></p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the deployment…"</p> }>
            {move || Suspend::new(async move {
                match initial.await {
                    Ok(Some(state)) => view! { <Watch initial=state /> }.into_any(),
                    Ok(None) => {
                        set_status(404);
                        view! { <p class="banner info" role="status" data-testid="no-deployment">"There is no such deployment. "<a href="/audit?action=deploy">"See the deployments in the audit log."</a></p> }.into_any()
                    }
                    Err(error) => view! { <ErrorBanner error lead="The deployment could not be read: " /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// A rollout's state, updated by the server's events until it ends.
#[component]
fn Watch(initial: WatchState) -> impl IntoView {
    let state = RwSignal::new(initial);
    #[cfg(feature = "hydrate")]
    listen(state);
    view! {
        <h1>{move || state.with(|s| format!("{} {} to {}/{}", if s.action == AuditAction::Rollback { "Rollback" } else { "Deploy" }, s.target, s.cluster, s.service))}</h1>
        {move || state.with(|s| {
            let (class, text) = match s.result {
                Some(RolloutResult::Succeeded) => ("banner info", format!("Succeeded: {}/{} runs {}.", s.cluster, s.service, s.target)),
                Some(RolloutResult::RolledBack) => ("banner error", format!("Failed and rolled back: the circuit breaker put {} back. {}", s.from, s.detail.clone().unwrap_or_default())),
                Some(RolloutResult::Refused) => ("banner error", format!("Not sent: {}", s.detail.clone().unwrap_or_default())),
                Some(RolloutResult::Failed) => ("banner error", format!("Failed. {}", s.detail.clone().unwrap_or_default())),
                None => ("banner info", format!("In progress: {} → {}.", s.from, s.target)),
            };
            view! { <p class=class role="status" data-testid="watch-result" data-result=s.result.map_or("in_progress", RolloutResult::as_str)>{text}</p> }
        })}
        {move || state.with(|s| s.watch_error.clone()).map(|e| view! { <p class="banner warn" role="status">{e}</p> })}
        <section class="card">
            <label class="progress-label">
                <span>{move || format!("New tasks running: {:.0} %", state.with(|s| s.progress * 100.0))}</span>
                <progress class="progress" max="100" data-testid="watch-progress"
                    value=move || format!("{:.0}", state.with(|s| s.progress * 100.0))></progress>
            </label>
            <table class="data-table compact" data-testid="watch-deployments">
                <thead><tr>
                    <th scope="col">"Deployment"</th><th scope="col">"Status"</th><th scope="col">"Revision"</th>
                    <th scope="col" class="num">"Desired"</th><th scope="col" class="num">"Running"</th><th scope="col" class="num">"Pending"</th>
                    <th scope="col" class="num">"Failed tasks"</th><th scope="col">"Rollout"</th>
                </tr></thead>
                <tbody>
                    {move || state.with(|s| s.live.deployments.iter().map(|d| view! {
                        <tr>
                            <td class="mono">{d.id.clone()}</td>
                            <td>{d.status.clone()}</td>
                            <td class="mono">{arn_tail(&d.task_definition).to_string()}</td>
                            <td class="num">{d.desired}</td>
                            <td class="num">{d.running}</td>
                            <td class="num">{d.pending}</td>
                            <td class="num">{d.failed_tasks}</td>
                            <td>{format!("{} {}", d.rollout_state.clone().unwrap_or_default(), d.rollout_state_reason.clone().unwrap_or_default())}</td>
                        </tr>
                    }).collect_view())}
                </tbody>
            </table>
        </section>
        <section class="card" data-testid="watch-tasks">
            <h2>"New tasks and their GPUs"</h2>
            {move || state.with(|s| view! { <TaskTable tasks=s.tasks.clone() stopped=false /> })}
        </section>
        {move || state.with(|s| (!s.stopped_tasks.is_empty()).then(|| view! {
            <section class="card" data-testid="watch-stopped">
                <h2>"New tasks that stopped"</h2>
                <TaskTable tasks=s.stopped_tasks.clone() stopped=true />
            </section>
        }))}
        <section class="card">
            <h2>"Service events since the deploy"</h2>
            <ul class="events" data-testid="watch-events">
                {move || state.with(|s| if s.events.is_empty() {
                    view! { <li class="muted">"None yet."</li> }.into_any()
                } else {
                    s.events.iter().map(|e| view! { <li><span class="muted mono when" title=e.at.clone()>{when(&e.at)}</span>" "{e.message.clone()}</li> }).collect_view().into_any()
                })}
            </ul>
        </section>
    }
}

/// Listens to the deployment's server-sent events until it ends.
#[cfg(feature = "hydrate")]
fn listen(state: RwSignal<WatchState>) {
    use crate::client::{listen_json, Next};
    Effect::new(move |_| {
        let (id, done) = state.with_untracked(|s| (s.audit_id.clone(), s.done()));
        if done {
            return;
        }
        listen_json(
            &format!("/api/v1/deployments/{id}/events"),
            move |next: WatchState| {
                let done = next.done();
                // The page is gone, or the rollout ended: stop listening.
                if state.try_set(next).is_some() || done {
                    Next::Stop
                } else {
                    Next::Listen
                }
            },
        );
    });
}

#[component]
fn PreCheckView(rollout: RolloutCheck) -> impl IntoView {
    let plan = rollout.plan.clone();
    let (class, headline) = match &rollout.verdict {
        Verdict::Completes => (
            "banner info",
            format!(
                "The rolling update completes in {} {}.",
                rollout.steps.len(),
                if rollout.steps.len() == 1 {
                    "step"
                } else {
                    "steps"
                }
            ),
        ),
        Verdict::Stalls { step, reason } => (
            "banner warn",
            format!("The rolling update stalls at step {step}. {reason}"),
        ),
        Verdict::Never { reason } => ("banner error", reason.clone()),
    };
    view! {
        <section class="card" data-testid="pre-check">
            <h2>"Capacity pre-check"</h2>
            <p class="muted">
                {format!(
                    "{} tasks, maximum {} %, minimum healthy {} %: old and new tasks placed together on the fleet snapshot with the same rules as the fit check.",
                    plan.desired, plan.maximum_percent, plan.minimum_healthy_percent
                )}
            </p>
            <p class=class role="status" data-testid="pre-check-verdict" data-verdict=match rollout.verdict { Verdict::Completes => "completes", Verdict::Stalls { .. } => "stalls", Verdict::Never { .. } => "never" }>{headline}</p>
            {(!rollout.suggestions.is_empty()).then(|| view! {
                <h3>"What would let it through"</h3>
                <ul data-testid="pre-check-suggestions">
                    {rollout.suggestions.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
                </ul>
            })}
            {(!rollout.checked.is_empty() || !rollout.unknown.is_empty()).then(|| view! {
                <details data-testid="pre-check-scope">
                    <summary>"What the pre-check checked, and what it could not know"</summary>
                    <h3>"Checked"</h3>
                    <ul data-testid="pre-check-checked">
                        {rollout.checked.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
                    </ul>
                    <h3>"Not known to the console"</h3>
                    <ul data-testid="pre-check-unknown">
                        {rollout.unknown.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}
                    </ul>
                </details>
            })}
            {(!rollout.steps.is_empty()).then(|| view! {
                <table class="data-table compact" data-testid="pre-check-steps">
                    <thead><tr>
                        <th scope="col" class="num">"Step"</th>
                        <th scope="col" class="num">"Started"</th>
                        <th scope="col" class="num">"Not placed"</th>
                        <th scope="col" class="num">"Stopped"</th>
                        <th scope="col" class="num">"Old running"</th>
                        <th scope="col" class="num">"New running"</th>
                    </tr></thead>
                    <tbody>
                        {rollout.steps.into_iter().map(|s| view! {
                            <tr>
                                <td class="num">{s.step}</td>
                                <td class="num">{s.started}</td>
                                <td class="num">{s.unplaced}</td>
                                <td class="num">{s.stopped}</td>
                                <td class="num">{s.old_running}</td>
                                <td class="num">{s.new_running}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            })}
        </section>
    }
}
