//! `/cost`: what the GPU fleet costs at today's allocations, by team, service, cluster or
//! instance type, adding up to the instances' bill, with idle and unused beside it. The form is
//! a GET form and the sort links are links, so the page works without JavaScript, every view
//! has its URL, and the CSV export is exactly the table.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    components::error_banner::ErrorBanner,
    model::cost::{money, CostQuery, CostReport, CostRow, Grouping, RowKind, SortKey, Span},
    server_fns::cost::cost_report,
};

/// The cost page.
#[component]
pub fn CostPage() -> impl IntoView {
    let params = use_query_map();
    let parsed = Memo::new(move |_| {
        params.with(|q| {
            let pairs: Vec<(String, String)> = ["group", "span", "sort", "idle", "cluster"]
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
            <p class="muted">"What the GPU fleet costs at today's allocations, and each team's share of every shared GPU — adding up to the instances' bill, to the cent. Reports over past days need the allocation history, which is not recorded yet: these figures are today's run rate."</p>
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

#[component]
fn Report(report: CostReport) -> impl IntoView {
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
    let span = query.span.label();
    view! {
        <CostForm query=query.clone() clusters=report.clusters.clone() csv />
        <p class="muted print-only">{format!("Grouped by {}, over {span}, idle {}{}.", query.group.label().to_lowercase(), if query.share_idle { "shared out" } else { "as rows" }, query.cluster.as_ref().map(|c| format!(", cluster {c}")).unwrap_or_default())}</p>
        <p class="freshness" data-testid="cost-taken-at">{format!("Fleet as read at {}; prices for {}.", report.taken_at, report.region)}</p>
        <section class="summary" aria-label="Totals" data-testid="cost-totals">
            <div class="stat"><span class="value" data-testid="cost-total">{money(report.total_cents)}</span><span class="label">{format!("total over {span}")}</span></div>
            <div class="stat"><span class="value">{money(allocated)}</span><span class="label">{format!("allocated ({})", percent(allocated, report.total_cents))}</span></div>
            <div class="stat"><span class="value" data-testid="cost-idle">{money(report.idle_cents)}</span><span class="label">{format!("idle ({}){}", percent(report.idle_cents, report.total_cents), if query.share_idle { ", shared out in the rows" } else { "" })}</span></div>
            <div class="stat"><span class="value">{money(report.unused_cents)}</span><span class="label">"allocated but unused"</span></div>
            <div class="stat"><span class="value">{report.gpus}</span><span class="label">{format!("GPUs on {} priced instances", report.instances)}</span></div>
        </section>
        {(!report.notes.is_empty()).then(|| view! {
            <div class="banner warn" role="status" data-testid="cost-notes">
                {report.notes.iter().map(|n| view! { <p>{n.clone()}</p> }).collect_view()}
            </div>
        })}
        <CostTable report=report.clone() />
        <section class="card" aria-labelledby="cost-prices-title" data-testid="cost-prices">
            <h2 id="cost-prices-title" class="card-title">"Prices used"</h2>
            <table class="data-table compact">
                <thead><tr>
                    <th scope="col">"Instance type"</th>
                    <th scope="col">"Billed"</th>
                    <th scope="col" class="num">"Per hour"</th>
                    <th scope="col" class="num">"Instances"</th>
                    <th scope="col">"Source"</th>
                </tr></thead>
                <tbody>
                    {report.prices.iter().map(|p| view! {
                        <tr>
                            <td class="mono">{p.price.instance_type.clone()}</td>
                            <td>{p.price.lifecycle.as_str()}</td>
                            <td class="num">{format!("${:.4}", p.price.usd_per_hour)}</td>
                            <td class="num">{p.instances}</td>
                            <td>{p.price.source.clone()}</td>
                        </tr>
                    }).collect_view()}
                    {report.unpriced.iter().map(|u| view! {
                        <tr class="unpriced" data-testid="cost-unpriced">
                            <td class="mono">{u.instance_type.clone()}</td>
                            <td>{u.lifecycle.as_str()}</td>
                            <td class="num">"unknown"</td>
                            <td class="num">{u.instances}</td>
                            <td>{format!("no price: {} GPUs left out of the totals", u.gpus)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
        <section class="card" aria-labelledby="cost-rule-title" data-testid="cost-rule">
            <h2 id="cost-rule-title" class="card-title">"How the cost is split"</h2>
            <p>{report.rule.clone()}</p>
        </section>
    }
}

/// The view's choices as a GET form: it works without JavaScript and its URL is the view.
#[component]
fn CostForm(query: CostQuery, clusters: Vec<String>, csv: String) -> impl IntoView {
    let cluster = query.cluster.clone();
    view! {
        <form class="compare-picker card no-print" method="get" action="/cost" data-testid="cost-form">
            <label><span>"Group by"</span>
                <select name="group">
                    {Grouping::ALL.map(|g| view! {
                        <option value=g.as_str() selected=query.group == g>{g.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label><span>"Over"</span>
                <select name="span">
                    {Span::ALL.map(|s| view! {
                        <option value=s.as_str() selected=query.span == s>{s.label()}</option>
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
            <a href=csv data-testid="cost-csv" download>"Download CSV"</a>
        </form>
    }
}

/// The rows, with each column's header a link that sorts by it.
#[component]
fn CostTable(report: CostReport) -> impl IntoView {
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
    view! {
        <table class="data-table cost-table" data-testid="cost-table">
            <caption class="visually-hidden">{format!("Cost by {}", group.to_lowercase())}</caption>
            <thead><tr>
                {header(SortKey::Name, group, false)}
                {header(SortKey::Cost, "Cost", true)}
                <th scope="col" class="num">"Share"</th>
                {header(SortKey::GpuHours, "GPU-hours", true)}
                {header(SortKey::Unused, "Unused", true)}
            </tr></thead>
            <tbody>
                {report.rows.iter().map(|row| view! { <Row row=row.clone() /> }).collect_view()}
            </tbody>
            <tfoot><tr>
                <th scope="row">"Total"</th>
                <td class="num" data-testid="cost-table-total">{money(report.total_cents)}</td>
                <td class="num">"100 %"</td>
                <td class="num">{format!("{total_hours:.1}")}</td>
                <td class="num">{money(report.unused_cents)}</td>
            </tr></tfoot>
        </table>
    }
}

#[component]
fn Row(row: CostRow) -> impl IntoView {
    // An SVG bar: its width is an attribute, which the content security policy allows where an
    // inline style is not.
    let width = format!("{:.1}", row.share_percent.clamp(0.0, 100.0));
    let unused = match row.unused_cents {
        Some(cents) if row.without_usage_cents > 0 => {
            format!(
                "{} (+{} without usage data)",
                money(cents),
                money(row.without_usage_cents)
            )
        }
        Some(cents) => money(cents),
        None if row.kind == RowKind::Idle => "—".to_string(),
        None => "no usage data".to_string(),
    };
    view! {
        <tr data-kind=row.kind.as_str()>
            <th scope="row" class=if row.kind == RowKind::Allocated { "" } else { "muted" }>{row.kind.label(&row.name)}</th>
            <td class="num">{money(row.cost_cents)}</td>
            <td class="num share">
                <svg class="share-bar" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true" focusable="false">
                    <rect class="share-track" width="100" height="10"></rect>
                    <rect class="share-fill" width=width height="10"></rect>
                </svg>
                {format!("{:.1} %", row.share_percent)}
            </td>
            <td class="num">{format!("{:.1}", row.gpu_hours)}</td>
            <td class="num">{unused}</td>
        </tr>
    }
}
