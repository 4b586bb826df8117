//! The consolidation plan: instances before and after, the monthly saving, what each cluster drains
//! and where its tasks go, the blast radius, and what the plan could not know.

use super::*;

#[component]
pub(super) fn Plan(plan: ConsolidationPlan) -> impl IntoView {
    let query = plan.query.clone();
    let csv = {
        let params = query.to_params();
        if params.is_empty() {
            "/api/v1/cost/plan?format=csv".to_string()
        } else {
            format!("/api/v1/cost/plan?{params}&format=csv")
        }
    };
    let before: u32 = plan.clusters.iter().map(|c| c.instances_before).sum();
    let after: u32 = plan.clusters.iter().map(|c| c.instances_after).sum();
    let percent = if plan.monthly_before_cents > 0 {
        format!(
            "{:.0} % of {} a month",
            plan.saving_cents_per_month as f64 * 100.0 / plan.monthly_before_cents as f64,
            money(plan.monthly_before_cents)
        )
    } else {
        "of nothing priced".to_string()
    };
    view! {
        <PlanForm query=query.clone() clusters=plan.all_clusters.clone() csv />
        <p class="freshness" data-testid="plan-taken-at" data-taken-at=plan.taken_at.clone()>{format!("From the fleet as read at {}; {} % of each kept instance's GPU memory left spare.", plan.taken_at, query.spare_percent)}</p>
        <section class="summary" aria-label="What the plan saves" data-testid="plan-totals">
            <div class="stat"><span class="value" data-testid="plan-saving">{money(plan.net_saving_cents_per_month)}</span><span class="label">{net_label(&plan, &percent)}</span></div>
            <div class="stat"><span class="value" data-testid="plan-drains">{plan.drains.len()}</span><span class="label">{format!("instances to drain, of {before} ({after} kept)")}</span></div>
            <div class="stat"><span class="value">{plan.tasks_moved}</span><span class="label">"tasks that would move"</span></div>
        </section>
        {(!plan.warnings.is_empty()).then(|| view! {
            <div class="banner warn" role="status" data-testid="plan-warnings">
                {plan.warnings.iter().map(|n| view! { <p>{n.clone()}</p> }).collect_view()}
            </div>
        })}
        <BlastTable before=plan.before.clone() after=plan.after.clone() />
        <PlanClusters clusters=plan.clusters.clone() />
        <PlanDrains drains=plan.drains.clone() />
        {(!plan.unpriced.is_empty()).then(|| view! {
            <p class="banner warn" role="status" data-testid="plan-unpriced">{format!("No price for {}: those instances are kept and their cost is not counted. Give them a price with --prices.", plan.unpriced.join(", "))}</p>
        })}
        <section class="card" aria-labelledby="plan-method-title" data-testid="plan-method">
            <h2 id="plan-method-title" class="card-title">"How the plan is made, and what it could not know"</h2>
            <p>{METHOD}</p>
            <ul>
                {plan.unknown.iter().map(|u| view! { <li>{u.clone()}</li> }).collect_view()}
            </ul>
        </section>
    }
}

/// What the saving figure is: net of what keeps billing, when something does.
fn net_label(plan: &ConsolidationPlan, percent: &str) -> String {
    if plan.still_billed_cents_per_month > 0 {
        format!(
            "a month saved, net: {} gross ({percent}) less {} that commitments and Capacity Blocks keep billing",
            money(plan.saving_cents_per_month),
            money(plan.still_billed_cents_per_month)
        )
    } else {
        format!("a month saved ({percent})")
    }
}
