//! The GPU panel's table of the containers on the GPU.

use leptos::prelude::*;

use super::short_time;
use crate::model::GpuContainer;

/// The containers on a GPU, or a line saying nothing runs there.
#[component]
pub fn ContainerTable(containers: Vec<GpuContainer>) -> impl IntoView {
    if containers.is_empty() {
        return view! { <p class="muted">"Nothing runs on this GPU."</p> }.into_any();
    }
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
                {containers.iter().map(|c| {
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
    }
    .into_any()
}
