//! `/cost/plan`: the consolidation plan — which instances could be drained with today's
//! allocations still placed, where their tasks would go, what that saves a month, and what it
//! does to the blast radius. A GET form, so it works without JavaScript and every view has its
//! URL; the CSV is the table. Nothing is drained from here.

mod blast_table;
mod plan;
mod plan_form;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    components::error_banner::ErrorBanner,
    model::cost::{
        consolidate::{Blast, ConsolidationPlan, PlanQuery, METHOD},
        money,
    },
    server_fns::cost::consolidation_plan,
};

use self::{blast_table::BlastTable, plan::Plan, plan_form::PlanForm};

/// The consolidation plan page.
#[component]
pub fn CostPlanPage() -> impl IntoView {
    let params = use_query_map();
    let parsed = Memo::new(move |_| {
        params.with(|q| {
            let pairs: Vec<(String, String)> = PlanQuery::KEYS
                .into_iter()
                .filter_map(|k| q.get(k).map(|v| (k.to_string(), v)))
                .collect();
            PlanQuery::from_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        })
    });
    let query = Memo::new(move |_| parsed.get().unwrap_or_default());
    let plan = Resource::new(move || query.get(), consolidation_plan);
    view! {
        <Title text="Consolidation plan" />
        <div class="cost-page">
            <p class="no-print"><a href="/cost">"← Cost"</a></p>
            <h1>"Consolidation plan"</h1>
            <p class="muted">"The instances that could be drained with every task they hold placed on the instances kept, by the same placement rules as the deployment pre-check, leaving room for each cluster's largest rollout and a spare share of GPU memory. A plan to review: nothing is drained from here."</p>
            {move || parsed.get().err().map(|error| view! {
                <p class="banner error" role="alert" data-testid="plan-query-error">{format!("{error}. Showing the default plan instead.")}</p>
            })}
            <Suspense fallback=|| view! { <p class="muted">"Planning…"</p> }>
                {move || Suspend::new(async move {
                    match plan.await {
                        Ok(plan) => view! { <Plan plan /> }.into_any(),
                        Err(error) => view! { <ErrorBanner error lead="The plan could not be made: " /> }.into_any(),
                    }
                })}
            </Suspense>
        </div>
    }
}
