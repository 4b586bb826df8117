//! Per cluster, the largest MPS request that still fits on one GPU.

use super::*;

/// Per cluster, the largest MPS request that still fits on one GPU.
#[component]
pub(super) fn FitTable(summary: FleetSummary) -> impl IntoView {
    view! {
        <table class="data-table compact fit-table" data-testid="fit-table">
            <caption>"Largest MPS request that still fits on one GPU (fragmentation)"</caption>
            <thead>
                <tr>
                    <th scope="col">"Cluster"</th>
                    <th scope="col" class="num">"GPUs"</th>
                    <th scope="col" class="num">"Free GPU memory"</th>
                    <th scope="col" class="num">"Largest request on one GPU"</th>
                </tr>
            </thead>
            <tbody>
                {summary.clusters.into_iter().map(|fit| view! {
                    <tr>
                        <th scope="row">{fit.cluster}</th>
                        <td class="num">{fit.gpus}</td>
                        <td class="num">{mib_as_gib(fit.free_mib)}</td>
                        <td class="num">{format!("{} MiB", thousands(u64::from(fit.largest_mps_request_mib)))}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}
