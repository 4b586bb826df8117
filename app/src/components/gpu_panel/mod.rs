//! The side panel of one GPU: identity, memory bar, compute limits, what runs on it, usage, and
//! its blast radius.

use leptos::prelude::*;

mod container_table;
mod memory_bar;

use container_table::ContainerTable;
use memory_bar::MemoryBar;

use crate::model::{
    fleet_view::{GpuDetail, MPS_CLIENT_LIMIT},
    Reading, SharingMode,
};

/// The panel for `detail`; `close` is the URL of the view without the selection.
#[component]
pub fn GpuPanel(detail: GpuDetail, close: String) -> impl IntoView {
    let gpu = detail.gpu.clone();
    let allocated = match gpu.mode {
        SharingMode::Dedicated => gpu.total_memory_mib,
        _ => gpu.allocated_memory_mib(),
    };
    let free = gpu.total_memory_mib.saturating_sub(allocated);
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
            <MemoryBar gpu=gpu.clone() allocated=allocated />
            <p class="muted">{format!("{allocated} MiB allocated, {free} MiB free of {} MiB", gpu.total_memory_mib)}</p>
            <h3>"Containers"</h3>
            <ContainerTable containers=gpu.containers.clone() />
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
