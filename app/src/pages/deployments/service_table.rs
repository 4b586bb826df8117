//! Every service as a table: its team, revision, GPU setting, task counts, rollout state and
//! deployment configuration, each linked to its page.

use super::*;

#[component]
pub(super) fn ServiceTable(rows: Vec<ServiceRow>) -> impl IntoView {
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
                        (Some(state), _) => state.to_string(),
                        (None, _) => "—".into(),
                    };
                    let capacity = if s.capacity_provider_strategy.is_empty() {
                        "EC2 launch type".to_string()
                    } else {
                        s.capacity_provider_strategy
                            .iter()
                            .map(|i| format!("{} (weight {}, base {})", i.capacity_provider, i.weight, i.base))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    let config = format!(
                        "max {} %, min healthy {} %, circuit breaker {}; capacity: {capacity}",
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
                            <td>{gpu_cell(&row)}</td>
                            <td class="num" data-testid="service-counts">{format!("{} / {} / {}", s.desired, s.running, s.pending)}</td>
                            <td data-testid="service-rollout" class=format!("rollout-{}", s.rollout_state.as_ref().map(|r| r.as_str().to_lowercase()).unwrap_or_default())>{rollout}</td>
                            <td class="muted">{config}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// The GPU settings of the revision a row runs, or why they are not known: a revision ECS did not
/// describe in time is not shown as one without GPUs.
fn gpu_cell(row: &ServiceRow) -> impl IntoView {
    match (&row.gpu_unread, row.gpu.is_empty()) {
        (Some(why), _) => view! {
            <span class="muted" data-testid="gpu-unread">{format!("not read ({why}); reload to try again")}</span>
        }
        .into_any(),
        (None, true) => "no GPU".into_any(),
        (None, false) => row.gpu.join("; ").into_any(),
    }
}
