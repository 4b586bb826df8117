//! The plan's choices as a GET form.

use super::*;

/// The plan's choices as a GET form.
#[component]
pub(super) fn PlanForm(query: PlanQuery, clusters: Vec<String>, csv: String) -> impl IntoView {
    let cluster = query.cluster.clone();
    view! {
        <form class="compare-picker card no-print" method="get" action="/cost/plan" data-testid="plan-form">
            <label><span>"Cluster"</span>
                <select name="cluster">
                    <option value="" selected=cluster.is_none()>"all"</option>
                    {clusters.into_iter().map(|c| {
                        let selected = cluster.as_deref() == Some(c.as_str());
                        view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
                    }).collect_view()}
                </select>
            </label>
            <label><span>"Spare GPU memory, %"</span>
                <input type="number" name="spare" min="0" max="90" step="1" value=query.spare_percent.to_string() />
            </label>
            <button type="submit">"Plan"</button>
            <a href=csv data-testid="plan-csv" download>"Download CSV"</a>
        </form>
    }
}
