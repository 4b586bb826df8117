//! `/deployments`: every service with its revision, GPU setting, task counts, rollout state and
//! deployment configuration; and `/deployments/:cluster/:service`: a revision of its family
//! compared with what runs, and the capacity pre-check of rolling it out.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    components::td_views::{DiffTable, GpuChanges},
    model::rollout::{RolloutCheck, Verdict},
    server_fns::deployments::{list_services, pre_check_rollout, PreCheck, ServiceRow},
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
                    Ok(rows) => view! { <ServiceTable rows /> }.into_any(),
                    Err(error) => view! {
                        <p class="banner error" role="alert" data-testid="services-error">{format!("The services could not be read: {error}")}</p>
                    }.into_any(),
                }
            })}
        </Suspense>
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
                    Ok(Ok(found)) => view! { <ServiceRollout found /> }.into_any(),
                    Ok(Err(message)) => {
                        #[cfg(feature = "ssr")]
                        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
                            response.set_status(http::StatusCode::BAD_REQUEST);
                        }
                        view! { <p class="banner error" role="alert" data-testid="bad-revision">{message}</p> }.into_any()
                    }
                    Err(error) => view! {
                        <p class="banner error" role="alert" data-testid="pre-check-error">{format!("The pre-check could not run: {error}")}</p>
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
    } = found;
    let s = &service.service;
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
        <PreCheckView rollout />
    }
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
