//! The side panel of one GPU: identity, memory bar, compute limits, what runs on it, usage, and
//! its blast radius.

use leptos::prelude::*;

mod blast_radius;
mod container_table;
mod facts;
mod memory_bar;

use blast_radius::BlastRadius;
use container_table::ContainerTable;
use facts::GpuFacts;
use memory_bar::MemoryBar;

use crate::model::{
    fleet_view::{GpuDetail, MPS_CLIENT_LIMIT},
    GpuView, SharingMode,
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
    let many_clients = gpu.containers.len() > MPS_CLIENT_LIMIT;
    let taken_at = detail.taken_at.clone();
    view! {
        <aside class="card gpu-panel" data-testid="gpu-panel" data-taken-at=taken_at aria-labelledby="gpu-panel-heading">
            <div class="card-title">
                <h2 id="gpu-panel-heading">
                    {format!("GPU {} on {}", gpu.index, detail.instance.ec2_instance_id)}
                </h2>
                <a class="button" href=close aria-label="Close the GPU panel">"Close"</a>
            </div>
            <GpuFacts detail=detail.clone() />
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
                {compute_past_full(&gpu)}
            </p>
            {many_clients.then(|| view! {
                <p class="banner warn">
                    {format!("{} containers share this GPU; MPS allows {MPS_CLIENT_LIMIT} client contexts per GPU.", gpu.containers.len())}
                </p>
            })}
            <BlastRadius detail />
        </aside>
    }
}

/// What a sum of compute limits past 100 % means: normal for MPS, and how busy the GPU was.
fn compute_past_full(gpu: &GpuView) -> Option<String> {
    (gpu.compute_allocated_percent > 100).then(|| {
        let busy = gpu
            .usage
            .and_then(|u| u.utilization_percent)
            .map_or("CloudWatch does not say how busy it is".to_string(), |r| {
                format!("it was {:.0} % busy on average over the window", r.average)
            });
        format!(
            ", past 100 %: normal for MPS, since maxComputePercent is a cap, not a reservation. The containers wait for each other only when the GPU is busy; {busy}."
        )
    })
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
