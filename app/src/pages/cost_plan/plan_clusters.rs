//! The consolidation plan by cluster: instances and monthly cost now and after, the GPU memory
//! free after, and the room kept for each cluster's largest rollout.

use super::*;

#[component]
pub(super) fn PlanClusters(clusters: Vec<ClusterPlan>) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="plan-clusters-title">
            <h2 id="plan-clusters-title" class="card-title">"By cluster"</h2>
            <table class="data-table compact" data-testid="plan-clusters">
                <thead><tr>
                    <th scope="col">"Cluster"</th>
                    <th scope="col" class="num">"Instances now"</th>
                    <th scope="col" class="num">"After"</th>
                    <th scope="col" class="num">"A month now"</th>
                    <th scope="col" class="num">"After"</th>
                    <th scope="col" class="num">"GPU memory free after"</th>
                    <th scope="col">"Room kept for a rollout"</th>
                </tr></thead>
                <tbody>
                    {clusters.iter().map(|c| view! {
                        <tr>
                            <td>{c.name.clone()}</td>
                            <td class="num">{c.instances_before}</td>
                            <td class="num">{c.instances_after}</td>
                            <td class="num">{money(c.monthly_before_cents)}</td>
                            <td class="num">{money(c.monthly_after_cents)}</td>
                            <td class="num">{format!("{:.0} GiB of {:.0} GiB", c.free_after_mib as f64 / 1024.0, c.kept_mib as f64 / 1024.0)}</td>
                            <td>{c.headroom.clone().unwrap_or_else(|| "no service deploys beside its old tasks".to_string())}{(c.held_for_spare > 0).then(|| format!("; {} more instance(s) kept: without any of them the rest could not hold what is allocated with the spare", c.held_for_spare))}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}
