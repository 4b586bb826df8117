//! The links between a cluster's services, events and stopped tasks.

use super::*;

/// The links between a cluster's services, events and stopped tasks.
#[component]
pub(super) fn ClusterTabs(cluster: Memo<String>, current: &'static str) -> impl IntoView {
    let tab = move |href: String, label: &'static str, name: &'static str| {
        view! {
            <a href=href aria-current=(name == current).then_some("page")>{label}</a>
        }
    };
    view! {
        <p><a href="/deployments">"← Deployments"</a></p>
        <h1>{move || format!("Cluster {}", cluster.get())}</h1>
        <nav class="tabs" aria-label="Cluster activity" data-testid="cluster-tabs">
            {move || {
                let c = encode(&cluster.get());
                view! {
                    {tab(format!("/deployments?cluster={c}"), "Services", "services")}
                    {tab(format!("/clusters/{c}/events"), "Events", "events")}
                    {tab(format!("/clusters/{c}/stopped-tasks"), "Stopped tasks", "stopped")}
                }
            }}
        </nav>
    }
}
