//! `/cost`: what the GPU fleet cost over a recorded period (or costs at today's allocations),
//! by team, service, cluster or instance type, adding up to the instances' bill, with idle and
//! unused beside it, the change against the previous period and a chart over days. The form is
//! a GET form and the sort links are links, so the page works without JavaScript, every view
//! has its URL, and the CSV export is exactly the table.

mod budget_burns;
mod cost_chart;
mod cost_form;
mod cost_table;
mod report;
mod row;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    components::error_banner::ErrorBanner,
    model::cost::{
        money, Chart, CostQuery, CostReport, CostRow, Grouping, Period, RowKind, SortKey, Span,
    },
    server_fns::cost::cost_report,
};

use self::{
    budget_burns::BudgetBurns, cost_chart::CostChart, cost_form::CostForm, cost_table::CostTable,
    report::Report, row::signed, row::Row,
};

/// The cost page.
#[component]
pub fn CostPage() -> impl IntoView {
    let params = use_query_map();
    let parsed = Memo::new(move |_| {
        params.with(|q| {
            let pairs: Vec<(String, String)> = CostQuery::KEYS
                .into_iter()
                .filter_map(|k| q.get(k).map(|v| (k.to_string(), v)))
                .collect();
            CostQuery::from_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        })
    });
    let query = Memo::new(move |_| parsed.get().unwrap_or_default());
    let report = Resource::new(move || query.get(), cost_report);
    view! {
        <Title text="Cost" />
        <div class="cost-page">
            <h1>"Cost"</h1>
            <p class="muted">"What the GPU fleet cost, and each team's share of every shared GPU — adding up to the instances' bill, to the cent. Past periods come from the allocation history the console records every minute; \"today's allocations\" prices the fleet as it stands now."</p>
            {move || parsed.get().err().map(|error| view! {
                <p class="banner error" role="alert" data-testid="cost-query-error">{format!("{error}. Showing the default view instead.")}</p>
            })}
            <Suspense fallback=|| view! { <p class="muted">"Pricing the fleet…"</p> }>
                {move || Suspend::new(async move {
                    match report.await {
                        Ok(report) => view! { <Report report /> }.into_any(),
                        Err(error) => view! { <ErrorBanner error lead="The cost could not be worked out: " /> }.into_any(),
                    }
                })}
            </Suspense>
        </div>
    }
}

/// Colour-blind-safe colours (Okabe and Ito) for the named series; grey for "other", light
/// grey for idle.
const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
];
