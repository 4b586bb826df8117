//! A cost report: the totals (allocated, idle, unused), the form, the CSV links, the table, the
//! chart, the budgets and what the figures rest on.

use super::*;

#[component]
pub(super) fn Report(report: CostReport) -> impl IntoView {
    let query = report.query.clone();
    let csv = {
        let params = query.to_params();
        if params.is_empty() {
            "/api/v1/cost?format=csv".to_string()
        } else {
            format!("/api/v1/cost?{params}&format=csv")
        }
    };
    let allocated = report.total_cents - report.idle_cents;
    let percent = |part: i64, whole: i64| {
        if whole > 0 {
            format!("{:.0} %", part as f64 * 100.0 / whole as f64)
        } else {
            "—".to_string()
        }
    };
    let span = match &report.range {
        Some(_) => format!(
            "{} ({})",
            query.period.label().to_lowercase(),
            report.period_label
        ),
        None => format!("{} at today's allocations", query.span.label()),
    };
    let change = report
        .previous_total_cents
        .map(|before| change_since(report.total_cents, before));
    view! {
        <CostForm query=query.clone() clusters=report.clusters.clone() csv />
        {report.replaying.clone().map(|progress| view! {
            <p class="banner info" role="status" data-testid="cost-replaying">{format!("The console is {progress}; the history fills in as it goes.")}</p>
        })}
        <p class="muted print-only">{format!("Grouped by {}, over {span}, idle {}{}.", query.group.label().to_lowercase(), if query.share_idle { "shared out" } else { "as rows" }, query.cluster.as_ref().map(|c| format!(", cluster {c}")).unwrap_or_default())}</p>
        <p class="freshness" data-testid="cost-taken-at" data-taken-at=report.taken_at.clone()>{match &report.range {
            Some(_) if report.sealed.is_empty() => format!("{:.0} hours recorded of the period; made at {}; prices for {}, today's applied to every hour.", report.recorded_hours, report.taken_at, report.region),
            Some(_) => format!("{:.0} hours recorded of the period; made at {}; prices for {}: sealed months at their sealed prices, the rest at today's.", report.recorded_hours, report.taken_at, report.region),
            None => format!("Fleet as read at {}; prices for {}.", report.taken_at, report.region),
        }}</p>
        {(!report.sealed.is_empty()).then(|| view! {
            <p class="banner info" role="status" data-testid="cost-sealed">
                {report.sealed.iter().map(|s| view! {
                    <span>{format!("{} is sealed (version {}, {} UTC, by {}). ", s.month, s.version, s.sealed_at.get(..16).unwrap_or(&s.sealed_at).replace('T', " "), s.sealed_by)}</span>
                    <a href=format!("/cost/months?month={}", s.month) data-testid="cost-sealed-link">{format!("{} at today's prices…", s.month)}</a>
                    " "
                }).collect_view()}
            </p>
        })}
        <section class="summary" aria-label="Totals" data-testid="cost-totals">
            <div class="stat"><span class="value" data-testid="cost-total">{money(report.total_cents)}</span><span class="label">{format!("total, {span}")}</span></div>
            {change.map(|change| view! {
                <div class="stat"><span class="value" data-testid="cost-change">{change}</span><span class="label">"against the previous period"</span></div>
            })}
            <div class="stat"><span class="value">{money(allocated)}</span><span class="label">{format!("allocated ({})", percent(allocated, report.total_cents))}</span></div>
            <div class="stat"><span class="value" data-testid="cost-idle">{money(report.idle_cents)}</span><span class="label">{format!("idle ({}){}", percent(report.idle_cents, report.total_cents), if query.share_idle { ", shared out in the rows" } else { "" })}</span></div>
            <div class="stat"><span class="value">{money(report.unused_cents)}</span><span class="label">"allocated but unused"</span></div>
            {(report.managed_instances_cents > 0).then(|| view! {
                <div class="stat"><span class="value" data-testid="cost-managed-instances">{money(report.managed_instances_cents)}</span><span class="label">{format!("of the total, the ECS Managed Instances charge ({})", percent(report.managed_instances_cents, report.total_cents))}</span></div>
            })}
            <div class="stat"><span class="value">{report.gpus}</span><span class="label">{format!("GPUs on {} priced instances", report.instances)}</span></div>
        </section>
        {(!report.notes.is_empty()).then(|| view! {
            <div class="banner warn" role="status" data-testid="cost-notes">
                {report.notes.iter().map(|n| view! { <p>{n.clone()}</p> }).collect_view()}
            </div>
        })}
        {report.chart.clone().filter(|c| !c.days.is_empty()).map(|chart| view! { <CostChart chart group=query.group /> })}
        <CostTable report=report.clone() />
        {(!report.budgets.is_empty()).then(|| view! { <BudgetBurns burns=report.budgets.clone() /> })}
        <PricesUsed prices=report.prices.clone() unpriced=report.unpriced.clone() />
        <section class="card" aria-labelledby="cost-rule-title" data-testid="cost-rule">
            <h2 id="cost-rule-title" class="card-title">"How the cost is split"</h2>
            <p>{report.rule.clone()}</p>
        </section>
    }
}

/// The change of the total against the previous period's, signed, with its percent.
fn change_since(total: i64, before: i64) -> String {
    let delta = total - before;
    let sign = if delta > 0 { "+" } else { "" };
    let relative = if before > 0 {
        let percent = delta as f64 * 100.0 / before as f64;
        // Below one percent a whole number would say "-0 %".
        let digits = if percent.abs() < 1.0 { 1 } else { 0 };
        format!(" ({sign}{percent:.digits$} %)")
    } else {
        String::new()
    };
    format!("{sign}{}{relative}", money(delta))
}
