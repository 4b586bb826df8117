//! A GPU's identity: its UUID, model, instance, sharing mode and its usage from CloudWatch.

use leptos::prelude::*;

use crate::model::{
    fleet_view::GpuDetail, unused_fraction, GpuView, InstanceUnused, Reading, SharingMode,
};

/// What the GPU did not use of its allocation, as it measures it.
fn gpu_unused(gpu: &GpuView) -> String {
    match (unused_fraction(gpu), gpu.mode) {
        (Some(unused), SharingMode::NvidiaMps) => format!(
            "{:.0} % of the {} MiB allocated (memory used, 15-minute average)",
            unused * 100.0,
            gpu.allocated_memory_mib()
        ),
        (Some(unused), _) => format!("{:.0} % (utilisation, 15-minute average)", unused * 100.0),
        (None, SharingMode::Idle) => "nothing allocated".to_string(),
        (None, _) => "no usage data".to_string(),
    }
}

/// What the instance's GPUs did not use of their allocations.
fn instance_unused(unused: Option<InstanceUnused>) -> String {
    unused.map_or("no usage data".to_string(), |u| {
        format!(
            "{:.0} % of its GPUs' allocations ({} of {} allocated GPUs measured)",
            u.fraction * 100.0,
            u.measured,
            u.allocated
        )
    })
}

/// The facts of the GPU of `detail`.
#[component]
pub(super) fn GpuFacts(detail: GpuDetail) -> impl IntoView {
    let gpu = detail.gpu.clone();
    let reading = |r: Option<Reading>, unit: &'static str| {
        r.map_or("no data".to_string(), |r| {
            format!(
                "{:.0} {unit} now, {:.0} {unit} average",
                r.latest, r.average
            )
        })
    };
    let utilization = reading(gpu.usage.and_then(|u| u.utilization_percent), "%");
    let memory_used = reading(gpu.usage.and_then(|u| u.memory_used_mib), "MiB");
    let model = detail
        .instance
        .gpu_model
        .clone()
        .unwrap_or_else(|| "unknown".into());
    view! {
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
                    detail.instance.capacity_provider.clone().map(|p| format!("from {p}")),
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
            <dt>"Unused"</dt>
            <dd data-testid="gpu-unused">{gpu_unused(&gpu)}</dd>
            <dt>"Unused on its instance"</dt>
            <dd data-testid="instance-unused">{instance_unused(detail.instance_unused)}</dd>
        </dl>
        {(gpu.mode == SharingMode::NvidiaMps).then(|| view! {
            <p class="muted" data-testid="unused-estimate">"Measured for the GPU, not per tenant: CloudWatch's GPU metrics are per GPU, and ECS gives per-task GPU metrics only for tasks that hold whole GPUs. The cost review shares this GPU's unused among its tenants by allocation and marks it as an estimate."</p>
        })}
    }
}
