//! The fleet's clusters with their counts.

use crate::resource::fetched;
use leptos::prelude::*;

use crate::model::ClusterSummary;
use crate::server_fns::clusters::list_clusters;

/// A table of every cluster: instances, services, running and pending tasks.
#[component]
pub fn ClusterTable() -> impl IntoView {
    let clusters = fetched(|| (), |_| list_clusters());
    view! {
        <section class="card" aria-labelledby="clusters-heading">
            <h2 id="clusters-heading">"Clusters"</h2>
            <Suspense fallback=|| view! { <p class="muted">"Reading the fleet…"</p> }>
                {move || Suspend::new(async move {
                    match clusters.await {
                        Ok(list) if list.is_empty() => {
                            view! {
                                <p data-testid="no-clusters">
                                    "This account has no ECS clusters in this region."
                                </p>
                            }
                                .into_any()
                        }
                        Ok(list) => view! { <ClusterRows clusters=list /> }.into_any(),
                        Err(error) => {
                            view! {
                                <p class="error" role="alert">
                                    "The clusters could not be read: "
                                    {error.to_string()}
                                </p>
                            }
                                .into_any()
                        }
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn ClusterRows(clusters: Vec<ClusterSummary>) -> impl IntoView {
    view! {
        <table class="data-table" data-testid="cluster-table">
            <thead>
                <tr>
                    <th scope="col">"Cluster"</th>
                    <th scope="col" class="num">"Container instances"</th>
                    <th scope="col" class="num">"Services"</th>
                    <th scope="col" class="num">"Running tasks"</th>
                    <th scope="col" class="num">"Pending tasks"</th>
                </tr>
            </thead>
            <tbody>
                {clusters
                    .into_iter()
                    .map(|cluster| {
                        view! {
                            <tr>
                                <th scope="row">{cluster.name}</th>
                                <td class="num">{cluster.container_instances}</td>
                                <td class="num">{cluster.services}</td>
                                <td class="num">{cluster.running_tasks}</td>
                                <td class="num">{cluster.pending_tasks}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}
