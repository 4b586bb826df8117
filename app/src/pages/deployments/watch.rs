//! A rollout's state, updated by the server's events until it ends.

use super::*;

/// A rollout's state, updated by the server's events until it ends.
#[component]
pub(super) fn Watch(initial: WatchState) -> impl IntoView {
    let state = RwSignal::new(initial);
    #[cfg(feature = "hydrate")]
    listen(state);
    view! {
        <h1>{move || state.with(|s| format!("{} {} to {}/{}", match s.action { AuditAction::Rollback => "Rollback", AuditAction::Restart => "Restart", _ => "Deploy" }, s.target, s.cluster, s.service))}</h1>
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
                            <td>{d.status.to_string()}</td>
                            <td class="mono">{arn_tail(&d.task_definition).to_string()}</td>
                            <td class="num">{d.desired}</td>
                            <td class="num">{d.running}</td>
                            <td class="num">{d.pending}</td>
                            <td class="num">{d.failed_tasks}</td>
                            <td>{format!("{} {}", d.rollout_state.as_ref().map(|r| r.to_string()).unwrap_or_default(), d.rollout_state_reason.clone().unwrap_or_default())}</td>
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
pub(super) fn listen(state: RwSignal<WatchState>) {
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
