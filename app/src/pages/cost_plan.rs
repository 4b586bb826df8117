//! `/cost/plan`: the consolidation plan — which instances could be drained with today's
//! allocations still placed, where their tasks would go, what that saves a month, and what it
//! does to the blast radius. A GET form, so it works without JavaScript and every view has its
//! URL; the CSV is the table. Nothing is drained from here.

mod blast_table;
mod plan;
mod plan_clusters;
mod plan_drains;
mod plan_form;

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    components::report_page::{report_body, ReportPageText},
    model::cost::{
        consolidate::{Blast, ClusterPlan, ConsolidationPlan, Drain, PlanQuery, METHOD},
        money,
    },
    server_fns::cost::consolidation_plan,
};

use self::{
    blast_table::BlastTable, plan::Plan, plan_clusters::PlanClusters, plan_drains::PlanDrains,
    plan_form::PlanForm,
};

/// The consolidation plan page.
#[component]
pub fn CostPlanPage() -> impl IntoView {
    view! {
        <Title text="Consolidation plan" />
        <div class="cost-page">
            <p class="no-print"><a href="/cost">"← Cost"</a></p>
            <h1>"Consolidation plan"</h1>
            <p class="muted">"The instances that could be drained with every task they hold placed on the instances kept, by the same placement rules as the deployment pre-check, leaving room for each cluster's largest rollout and a spare share of GPU memory. A plan to review: nothing is drained from here."</p>
            {report_body(
                ReportPageText {
                    loading: "Planning…",
                    failed: "The plan could not be made: ",
                    instead: "Showing the default plan instead.",
                    query_error_id: "plan-query-error",
                },
                consolidation_plan,
                |plan| view! { <Plan plan /> },
            )}
        </div>
    }
}
