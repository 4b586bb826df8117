//! Each cluster of the table with links to its events feed and stopped tasks.

use super::*;

/// Each cluster of the table with links to its events feed and stopped tasks.
#[component]
pub(super) fn ClusterLinks(rows: Vec<ServiceRow>) -> impl IntoView {
    let mut clusters: Vec<String> = rows.into_iter().map(|r| r.cluster).collect();
    clusters.dedup();
    view! {
        <ul class="cluster-links" data-testid="cluster-links">
            {clusters.into_iter().map(|c| {
                let path = encode(&c);
                view! {
                    <li>
                        <strong>{c.clone()}</strong>": "
                        <a href=format!("/clusters/{path}/events")>"events"</a>" · "
                        <a href=format!("/clusters/{path}/events?kind=problem")>"problems"</a>" · "
                        <a href=format!("/clusters/{path}/stopped-tasks")>"stopped tasks"</a>
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}
