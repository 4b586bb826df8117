//! The rows, with each column's header a link that sorts by it.

use super::*;

/// The rows, with each column's header a link that sorts by it.
#[component]
pub(super) fn CostTable(report: CostReport) -> impl IntoView {
    let query = report.query.clone();
    let header = move |key: SortKey, label: &'static str, numeric: bool| {
        let sorted = query.sort == key;
        let href = {
            let params = CostQuery {
                sort: key,
                ..query.clone()
            }
            .to_params();
            if params.is_empty() {
                "/cost".to_string()
            } else {
                format!("/cost?{params}")
            }
        };
        let order = match (sorted, key) {
            (false, _) => "none",
            (true, SortKey::Name) => "ascending",
            (true, _) => "descending",
        };
        view! {
            <th scope="col" class=if numeric { "num" } else { "" } aria-sort=order>
                <a href=href data-testid=format!("cost-sort-{}", key.as_str())>{label}{sorted.then_some(if key == SortKey::Name { " ▲" } else { " ▼" })}</a>
            </th>
        }
    };
    let total_hours: f64 = report.rows.iter().map(|r| r.gpu_hours).sum();
    let group = report.query.group.label();
    let with_change = report.previous_total_cents;
    view! {
        <table class="data-table cost-table" data-testid="cost-table">
            <caption class="visually-hidden">{format!("Cost by {}", group.to_lowercase())}</caption>
            <thead><tr>
                {header(SortKey::Name, group, false)}
                {header(SortKey::Cost, "Cost", true)}
                <th scope="col" class="num">"Share"</th>
                {header(SortKey::GpuHours, "GPU-hours", true)}
                {header(SortKey::Unused, "Unused", true)}
                {with_change.is_some().then(|| view! { <th scope="col" class="num">"Change"</th> })}
            </tr></thead>
            <tbody>
                {report.rows.iter().map(|row| view! { <Row row=row.clone() change=with_change.is_some() /> }).collect_view()}
            </tbody>
            <tfoot><tr>
                <th scope="row">"Total"</th>
                <td class="num" data-testid="cost-table-total">{money(report.total_cents)}</td>
                <td class="num">"100 %"</td>
                <td class="num">{format!("{total_hours:.1}")}</td>
                <td class="num">{money(report.unused_cents)}</td>
                {with_change.map(|before| view! { <td class="num">{signed(report.total_cents - before)}</td> })}
            </tr></tfoot>
        </table>
    }
}
