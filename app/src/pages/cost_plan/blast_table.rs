//! Services that a GPU fault or an MPS server fault would take down together, before and after.

use super::*;

/// Services that a GPU fault or an MPS server fault would take down together, before and after.
#[component]
pub(super) fn BlastTable(before: Blast, after: Blast) -> impl IntoView {
    let row = |label: &'static str, now: String, then: String| {
        view! {
            <tr><th scope="row">{label}</th><td class="num">{now}</td><td class="num">{then}</td></tr>
        }
    };
    view! {
        <section class="card" aria-labelledby="plan-blast-title">
            <h2 id="plan-blast-title" class="card-title">"What it costs in risk: the blast radius"</h2>
            <table class="data-table compact" data-testid="plan-blast">
                <thead><tr><th scope="col">""</th><th scope="col" class="num">"Now"</th><th scope="col" class="num">"After the plan"</th></tr></thead>
                <tbody>
                    {row("GPUs in use", before.gpus_in_use.to_string(), after.gpus_in_use.to_string())}
                    {row("Most services on one GPU", before.most_services_per_gpu.to_string(), after.most_services_per_gpu.to_string())}
                    {row("Mean services on a GPU in use", format!("{:.2}", before.mean_services_per_gpu), format!("{:.2}", after.mean_services_per_gpu))}
                    {row("GPUs with 3 services or more", before.gpus_with_three_or_more.to_string(), after.gpus_with_three_or_more.to_string())}
                    {row("Most services on one instance's MPS server", before.most_services_per_mps_server.to_string(), after.most_services_per_mps_server.to_string())}
                    {row("GPUs past 48 MPS clients", before.gpus_over_client_limit.to_string(), after.gpus_over_client_limit.to_string())}
                </tbody>
            </table>
        </section>
    }
}
