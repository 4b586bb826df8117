//! The side panel of one GPU: identity, memory bar, compute limits, what runs on it, usage, and
//! its blast radius.

use leptos::prelude::*;

use crate::model::{
    fleet_view::{GpuDetail, MPS_CLIENT_LIMIT},
    Reading, SharingMode,
};

/// The panel for `detail`; `close` is the URL of the view without the selection.
#[component]
pub fn GpuPanel(detail: GpuDetail, close: String) -> impl IntoView {
    let gpu = detail.gpu.clone();
    let total = gpu.total_memory_mib.max(1);
    let allocated = match gpu.mode {
        SharingMode::Dedicated => gpu.total_memory_mib,
        _ => gpu.allocated_memory_mib(),
    };
    let free = gpu.total_memory_mib.saturating_sub(allocated);
    // The memory bar: one segment per MPS container, in SVG (no inline styles under the CSP).
    let mut offset = 0.0_f64;
    let segments: Vec<_> = gpu
        .containers
        .iter()
        .enumerate()
        .filter_map(|(n, c)| {
            let memory = match (c.memory_mib, c.whole_gpu) {
                (Some(m), _) => m,
                (None, true) => gpu.total_memory_mib,
                (None, false) => return None,
            };
            let width = f64::from(memory) / f64::from(total) * 100.0;
            let x = offset;
            offset += width;
            let title = format!(
                "{} ({}): {memory} MiB",
                c.container,
                c.service.as_deref().unwrap_or("no service")
            );
            Some(view! {
                <rect x=format!("{x:.2}") width=format!("{width:.2}") height="10" class=format!("seg k{}", n % 6)>
                    <title>{title}</title>
                </rect>
            })
        })
        .collect();
    let usage = gpu.usage;
    let reading = |r: Option<Reading>, unit: &'static str| {
        r.map_or("no data".to_string(), |r| {
            format!(
                "{:.0} {unit} now, {:.0} {unit} average",
                r.latest, r.average
            )
        })
    };
    let utilization = reading(usage.and_then(|u| u.utilization_percent), "%");
    let memory_used = reading(usage.and_then(|u| u.memory_used_mib), "MiB");
    let many_clients = gpu.containers.len() > MPS_CLIENT_LIMIT;
    let model = detail
        .instance
        .gpu_model
        .clone()
        .unwrap_or_else(|| "unknown".into());
    let list = |names: &[String]| {
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    view! {
        <aside class="card gpu-panel" data-testid="gpu-panel" aria-labelledby="gpu-panel-heading">
            <div class="card-title">
                <h2 id="gpu-panel-heading">
                    {format!("GPU {} on {}", gpu.index, detail.instance.ec2_instance_id)}
                </h2>
                <a class="button" href=close aria-label="Close the GPU panel">"Close"</a>
            </div>
            <dl class="facts">
                <dt>"UUID"</dt>
                <dd class="mono" data-testid="gpu-uuid">{gpu.uuid.clone()}</dd>
                <dt>"Model"</dt>
                <dd>{model}</dd>
                <dt>"Instance"</dt>
                <dd title=detail.instance.arn.clone() data-testid="gpu-instance">
                    {[
                        Some(detail.instance.instance_type.clone()),
                        Some(detail.cluster.clone()),
                        detail.instance.availability_zone.clone(),
                        detail.instance.lifecycle.map(|l| l.as_str().to_string()),
                        detail.instance.not_placing.clone().map(|why| format!("{why}: takes no tasks")),
                    ]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(" · ")}
                </dd>
                <dt>"Sharing"</dt>
                <dd>{gpu.mode.as_str()}</dd>
                <dt>"Utilisation"</dt>
                <dd>{utilization}</dd>
                <dt>"Memory used"</dt>
                <dd>{memory_used}</dd>
            </dl>
            {detail.instance.impaired.clone().map(|reason| view! {
                <p class="banner warn" role="status">
                    {format!("The instance's MPS daemon is impaired: {reason}. Its running tasks keep running; a new MPS task placed here fails at start. Whether ECS avoids the instance is not documented, so the console counts no MPS room here.")}
                </p>
            })}
            {(!detail.instance.mps_capable).then(|| view! {
                <p class="banner" role="status" data-testid="no-sharing">
                    "This instance does not share GPUs: its agent reports no GPU devices, so ECS places only whole-GPU tasks here. The memory shown is the instance type's nominal GPU memory."
                </p>
            })}
            <h3>"Memory"</h3>
            <svg class="membar" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label=format!("{allocated} of {} MiB allocated", gpu.total_memory_mib)>
                <rect x="0" width="100" height="10" class="free" />
                {segments}
            </svg>
            <p class="muted">{format!("{allocated} MiB allocated, {free} MiB free of {} MiB", gpu.total_memory_mib)}</p>
            <h3>"Containers"</h3>
            {if gpu.containers.is_empty() {
                view! { <p class="muted">"Nothing runs on this GPU."</p> }.into_any()
            } else {
                view! {
                    <table class="data-table compact" data-testid="gpu-containers">
                        <thead>
                            <tr>
                                <th scope="col">"Container"</th>
                                <th scope="col">"Service"</th>
                                <th scope="col">"Team"</th>
                                <th scope="col" class="num">"Memory MiB"</th>
                                <th scope="col" class="num">"Compute limit"</th>
                                <th scope="col">"Since (UTC)"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {gpu.containers.iter().map(|c| {
                                let task = crate::model::arn::arn_tail(&c.task_arn).to_string();
                                view! {
                                    <tr>
                                        <th scope="row" title=c.task_arn.clone()>
                                            {c.container.clone()}
                                            <span class="muted mono">{format!(" {}", &task[..task.len().min(8)])}</span>
                                        </th>
                                        <td>{c.service.clone().unwrap_or_else(|| "—".into())}</td>
                                        <td>{c.team.clone().unwrap_or_else(|| "—".into())}</td>
                                        <td class="num">{c.memory_mib.map_or("whole GPU".to_string(), |m| m.to_string())}</td>
                                        <td class="num">{format!("{} %", c.compute_percent)}</td>
                                        <td title=c.started_at.clone().unwrap_or_default()>
                                            {c.started_at.as_deref().map_or("—".to_string(), short_time)}
                                        </td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
            <p class="muted">
                {format!("Compute limits add up to {} %", gpu.compute_allocated_percent)}
                {(gpu.compute_allocated_percent > 100).then(|| {
                    let busy = gpu
                        .usage
                        .and_then(|u| u.utilization_percent)
                        .map_or("CloudWatch does not say how busy it is".to_string(), |r| {
                            format!("it was {:.0} % busy on average over the window", r.average)
                        });
                    format!(
                        ", past 100 %: normal for MPS, since maxComputePercent is a cap, not a reservation. The containers wait for each other only when the GPU is busy; {busy}."
                    )
                })}
            </p>
            {many_clients.then(|| view! {
                <p class="banner warn">
                    {format!("{} containers share this GPU; MPS allows {MPS_CLIENT_LIMIT} client contexts per GPU.", gpu.containers.len())}
                </p>
            })}
            <h3>"Blast radius"</h3>
            <dl class="facts stacked" data-testid="blast-radius">
                <dt>"A GPU fault hits"</dt>
                <dd>{list(&detail.gpu_services)}</dd>
                <dt>"An MPS daemon failure also hits"</dt>
                <dd>{list(&detail.daemon_services)}</dd>
                <dt>"Teams on this GPU"</dt>
                <dd>{list(&detail.teams)}</dd>
            </dl>
        </aside>
    }
}

/// `2026-11-30T05:10:13.743Z` as `11-30 05:10`.
pub fn short_time(at: &str) -> String {
    match (at.get(5..10), at.get(11..16)) {
        (Some(day), Some(time)) if at.len() >= 16 => format!("{day} {time}"),
        _ => at.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::short_time;

    #[test]
    fn start_times_are_short() {
        assert_eq!(short_time("2026-11-30T05:10:13.743Z"), "11-30 05:10");
        assert_eq!(short_time("soon"), "soon");
    }
}
