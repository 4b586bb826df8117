//! `/cost`: what the GPU fleet cost over a recorded period (or costs at today's allocations),
//! by team, service, cluster or instance type, adding up to the instances' bill, with idle and
//! unused beside it, the change against the previous period and a chart over days. The form is
//! a GET form and the sort links are links, so the page works without JavaScript, every view
//! has its URL, and the CSV export is exactly the table.

mod budget_burns;
mod cost_chart;
mod cost_form;
mod cost_table;
mod prices_used;
mod report;
mod row;

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    components::report_page::{report_body, ReportPageText},
    model::cost::{
        money, Chart, CostQuery, CostReport, CostRow, Grouping, Period, PriceUsed, RowKind,
        SortKey, Span, SplitRule, Unpriced,
    },
    server_fns::cost::cost_report,
};

use self::{
    budget_burns::BudgetBurns, cost_chart::CostChart, cost_form::CostForm, cost_table::CostTable,
    prices_used::PricesUsed, report::Report, row::signed, row::Row,
};

/// The cost page.
#[component]
pub fn CostPage() -> impl IntoView {
    view! {
        <Title text="Cost" />
        <div class="cost-page">
            <h1>"Cost"</h1>
            <p class="muted">"What the GPU fleet cost, and each team's share of every shared GPU — adding up to the instances' bill, to the cent. Past periods come from the allocation history the console records every minute; \"today's allocations\" prices the fleet as it stands now."</p>
            {report_body(
                ReportPageText {
                    loading: "Pricing the fleet…",
                    failed: "The cost could not be worked out: ",
                    instead: "Showing the default view instead.",
                    query_error_id: "cost-query-error",
                },
                cost_report,
                |report| view! { <Report report /> },
            )}
        </div>
    }
}

/// Colour-blind-safe colours (Okabe and Ito) for the named series; grey for "other", light
/// grey for idle.
const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
];
