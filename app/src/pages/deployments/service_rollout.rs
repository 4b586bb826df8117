//! A service and the revision to roll out: what runs now, the revisions to choose from, the diff,
//! the pre-check, the team's budget, and the deploy and scale forms.

use super::*;

#[component]
pub(super) fn ServiceRollout(
    found: PreCheck,
    events: Resource<Result<EventFeed, ServiceError>, crate::resource::JsonCodec>,
) -> impl IntoView {
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
        <ServiceFacts service=service.clone() />
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
        {budget.map(|verdict| view! {
            <section class="card" data-testid="rollout-budget">
                <h2>"Team budget"</h2>
                <p class=if verdict.over { "banner warn" } else { "banner info" } role="status" data-over=verdict.over.to_string()>
                    {verdict.arithmetic.clone()}
                    {verdict.over.then_some(" Sending it asks the team's approvers; nothing is sent until one of them approves.")}
                </p>
            </section>
        })}
        {if deploy.allowed {
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
        }}
        <RecentEvents cluster=service.cluster.clone() service=s.name.clone() events />
        <RetireForm cluster=service.cluster.clone() service=s.name.clone() />
    }
}

/// What the service runs now: its revision, GPUs, tasks, rollout and team.
#[component]
fn ServiceFacts(service: ServiceRow) -> impl IntoView {
    let s = &service.service;
    let running = service.revision;
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
                <dd>{s.rollout_state.as_ref().map_or_else(|| "—".to_string(), |r| r.to_string())}</dd>
                <dt>"Team"</dt>
                <dd>{s.team.clone().unwrap_or_else(|| "—".into())}</dd>
            </dl>
        </section>
    }
}
