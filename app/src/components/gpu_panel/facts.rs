//! A GPU's identity: its UUID, model, instance, sharing mode and its usage from CloudWatch.

use leptos::prelude::*;

use crate::model::{fleet_view::GpuDetail, Reading};

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
        </dl>
    }
}
