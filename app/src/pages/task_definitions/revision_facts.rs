//! A revision's facts and its containers' GPU settings, CPU, memory and image.

use super::*;

/// A revision's facts and its containers' GPU settings, CPU, memory and image.
#[component]
pub(super) fn RevisionFacts(revision: RevisionDetail) -> impl IntoView {
    view! {
        <dl class="facts">
            <dt>"Compatibility"</dt>
            <dd>{if revision.compatibilities.is_empty() { "—".to_string() } else { revision.compatibilities.join(", ") }}</dd>
            <dt>"Task size"</dt>
            <dd>{format!("{} CPU units, {} MiB", revision.cpu.clone().unwrap_or_else(|| "—".into()), revision.memory.clone().unwrap_or_else(|| "—".into()))}</dd>
            <dt>"Team"</dt>
            <dd>{revision.team.clone().unwrap_or_else(|| "—".into())}</dd>
            {revision.change.clone().map(|change| view! { <dt>"Change"</dt><dd data-testid="revision-change">{change}</dd> })}
        </dl>
        <table class="data-table compact">
            <thead>
                <tr>
                    <th scope="col">"Container"</th>
                    <th scope="col">"GPU"</th>
                    <th scope="col" class="num">"CPU units"</th>
                    <th scope="col" class="num">"Memory MiB"</th>
                    <th scope="col">"Image"</th>
                </tr>
            </thead>
            <tbody>
                {revision.containers.into_iter().map(|c| view! {
                    <tr>
                        <th scope="row">{c.name}</th>
                        <td data-testid="container-gpu">{c.gpu.describe()}</td>
                        <td class="num">{c.cpu}</td>
                        <td class="num">{c.memory_mib.map_or("—".to_string(), |m| m.to_string())}</td>
                        <td class="mono">{c.image}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}
