//! The view's choices as a GET form: it works without JavaScript and its URL is the view.

use super::*;

/// The view's choices as a GET form: it works without JavaScript and its URL is the view.
#[component]
pub(super) fn CostForm(query: CostQuery, clusters: Vec<String>, csv: String) -> impl IntoView {
    let cluster = query.cluster.clone();
    view! {
        <form class="compare-picker card no-print" method="get" action="/cost" data-testid="cost-form">
            <label><span>"Period"</span>
                <select name="period">
                    {Period::ALL.map(|p| view! {
                        <option value=p.as_str() selected=query.period == p>{p.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label><span>"From (custom)"</span>
                <input type="date" name="from" value=query.from.clone().unwrap_or_default() />
            </label>
            <label><span>"To (custom)"</span>
                <input type="date" name="to" value=query.to.clone().unwrap_or_default() />
            </label>
            <label><span>"Group by"</span>
                <select name="group">
                    {Grouping::ALL.map(|g| view! {
                        <option value=g.as_str() selected=query.group == g>{g.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label><span>"Today's allocations over"</span>
                <select name="span">
                    {Span::ALL.map(|s| view! {
                        <option value=s.as_str() selected=query.span == s>{s.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label><span>"MPS GPUs split by"</span>
                <select name="split" data-testid="cost-split">
                    {SplitRule::ALL.map(|s| view! {
                        <option value=s.as_str() selected=query.split == s>{s.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label><span>"Idle"</span>
                <select name="idle">
                    <option value="row" selected=!query.share_idle>"as its own rows"</option>
                    <option value="share" selected=query.share_idle>"shared out in proportion"</option>
                </select>
            </label>
            <label><span>"Cluster"</span>
                <select name="cluster">
                    <option value="" selected=cluster.is_none()>"all"</option>
                    {clusters.into_iter().map(|c| {
                        let selected = cluster.as_deref() == Some(c.as_str());
                        view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
                    }).collect_view()}
                </select>
            </label>
            <input type="hidden" name="sort" value=query.sort.as_str() />
            <button type="submit">"Show"</button>
            <a href=csv.clone() data-testid="cost-csv" download>"Download CSV"</a>
            {(query.period != Period::Now).then(|| view! {
                <a href=format!("{csv}&detail=day") data-testid="cost-csv-daily" download>"Daily CSV"</a>
                <a href=csv.replace("format=csv", "format=focus") data-testid="cost-focus"
                    title="The daily lines in the FinOps Open Cost and Usage Specification's columns" download>"FOCUS"</a>
            })}
            <a href="/cost/plan" data-testid="cost-plan-link">"Consolidation plan"</a>
            <a href="/cost/months" data-testid="cost-months-link">"Sealed months"</a>
            <a href="/cost/reconciliation" data-testid="cost-reconciliation-link"
                title="The console's figures against Cost Explorer's, by day">"Reconciliation"</a>
        </form>
    }
}
