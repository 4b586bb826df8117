//! `/cost`: what the GPU fleet cost over a recorded period (or costs at today's allocations),
//! by team, service, cluster or instance type, adding up to the instances' bill, with idle and
//! unused beside it, the change against the previous period and a chart over days. The form is
//! a GET form and the sort links are links, so the page works without JavaScript, every view
//! has its URL, and the CSV export is exactly the table.

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
    let span = match &report.range {
        Some(_) => format!(
            "{} ({})",
            query.period.label().to_lowercase(),
            report.period_label
        ),
        None => format!("{} at today's allocations", query.span.label()),
    };
    let change = report.previous_total_cents.map(|before| {
        let delta = report.total_cents - before;
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
    });
    view! {
        <CostForm query=query.clone() clusters=report.clusters.clone() csv />
        {report.replaying.clone().map(|progress| view! {
            <p class="banner info" role="status" data-testid="cost-replaying">{format!("The console is {progress}; the history fills in as it goes.")}</p>
        })}
        <p class="muted print-only">{format!("Grouped by {}, over {span}, idle {}{}.", query.group.label().to_lowercase(), if query.share_idle { "shared out" } else { "as rows" }, query.cluster.as_ref().map(|c| format!(", cluster {c}")).unwrap_or_default())}</p>
        <p class="freshness" data-testid="cost-taken-at">{match &report.range {
            Some(_) => format!("{:.0} hours recorded of the period; made at {}; prices for {}, applied to every hour.", report.recorded_hours, report.taken_at, report.region),
            None => format!("Fleet as read at {}; prices for {}.", report.taken_at, report.region),
        }}</p>
        <section class="summary" aria-label="Totals" data-testid="cost-totals">
            <div class="stat"><span class="value" data-testid="cost-total">{money(report.total_cents)}</span><span class="label">{format!("total, {span}")}</span></div>
            {change.map(|change| view! {
                <div class="stat"><span class="value" data-testid="cost-change">{change}</span><span class="label">"against the previous period"</span></div>
            })}
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
        {report.chart.clone().filter(|c| !c.days.is_empty()).map(|chart| view! { <CostChart chart group=query.group /> })}
        <CostTable report=report.clone() />
        {(!report.budgets.is_empty()).then(|| view! { <BudgetBurns burns=report.budgets.clone() /> })}
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
            })}
            <a href="/cost/plan" data-testid="cost-plan-link">"Consolidation plan"</a>
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

/// `+$12.00`, `-$3.50`, `$0.00`.
fn signed(cents: i64) -> String {
    if cents > 0 {
        format!("+{}", money(cents))
    } else {
        money(cents)
    }
}

#[component]
fn Row(row: CostRow, change: bool) -> impl IntoView {
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
            {change.then(|| view! {
                <td class="num">{row.change_cents.map_or_else(|| "new".to_string(), signed)}</td>
            })}
        </tr>
    }
}

/// Colour-blind-safe colours (Okabe and Ito) for the named series; grey for "other", light
/// grey for idle.
const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
];

fn series_colour(index: usize, name: &str) -> &'static str {
    match name {
        crate::model::cost::history::IDLE => "#d4d4d4",
        crate::model::cost::history::OTHER => "#7f7f7f",
        _ => PALETTE[index % PALETTE.len()],
    }
}

/// Cost per day as stacked bars, drawn on the server: an SVG that scales with its box, each
/// segment titled with its day, name and amount, and a legend beside it.
#[component]
fn CostChart(chart: Chart, group: Grouping) -> impl IntoView {
    const WIDTH: f64 = 800.0;
    const HEIGHT: f64 = 220.0;
    const LEFT: f64 = 70.0;
    const BOTTOM: f64 = 24.0;
    let plot_h = HEIGHT - BOTTOM - 8.0;
    let max = chart
        .days
        .iter()
        .map(|d| d.cents.iter().sum::<i64>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let slot = (WIDTH - LEFT) / chart.days.len().max(1) as f64;
    let bar = (slot * 0.75).max(1.0);
    let label_every = (chart.days.len() / 10).max(1);
    let grid = (1..=4)
        .map(|i| {
            let value = max * f64::from(i) / 4.0;
            let y = 8.0 + plot_h - plot_h * f64::from(i) / 4.0;
            #[allow(clippy::cast_possible_truncation)]
            let label = money(value.round() as i64);
            view! {
                <line class="chart-grid" x1=LEFT x2=WIDTH y1=y y2=y></line>
                <text class="chart-axis" x=LEFT - 6.0 y=y + 4.0 text-anchor="end">{label}</text>
            }
        })
        .collect_view();
    let series = chart.series.clone();
    let bars = chart.days.iter().enumerate().map(|(i, day)| {
        let x = LEFT + slot * i as f64 + (slot - bar) / 2.0;
        let mut y = 8.0 + plot_h;
        let partial = day.recorded_percent < 100;
        let segments = day.cents.iter().enumerate().filter(|(_, c)| **c > 0).map(|(s, cents)| {
            let h = *cents as f64 / max * plot_h;
            y -= h;
            let name = series.get(s).cloned().unwrap_or_default();
            let title = format!(
                "{} · {name}: {}{}",
                day.day,
                money(*cents),
                if partial { format!(" ({} % of the day recorded)", day.recorded_percent) } else { String::new() }
            );
            view! {
                <rect x=format!("{x:.1}") y=format!("{y:.1}") width=format!("{bar:.1}") height=format!("{h:.1}") fill=series_colour(s, &name) class=if partial { "partial" } else { "" }>
                    <title>{title}</title>
                </rect>
            }
        }).collect_view();
        let label = (i % label_every == 0).then(|| view! {
            <text class="chart-axis" x=format!("{:.1}", x + bar / 2.0) y=HEIGHT - 6.0 text-anchor="middle">{day.day.get(5..).unwrap_or(&day.day).to_string()}</text>
        });
        view! { <g data-day=day.day.clone()>{segments}{label}</g> }
    }).collect_view();
    let legend = chart.series.iter().enumerate().map(|(i, name)| view! {
        <li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" fill=series_colour(i, name)></rect></svg>{name.clone()}</li>
    }).collect_view();
    let description = format!(
        "Cost per day by {}, {} days, stacked: the largest rows, other, and idle.",
        group.label().to_lowercase(),
        chart.days.len()
    );
    let label = description.clone();
    view! {
        <section class="card cost-chart" aria-labelledby="cost-chart-title" data-testid="cost-chart">
            <h2 id="cost-chart-title" class="card-title">"Cost per day"</h2>
            <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img" aria-label=label preserveAspectRatio="xMidYMid meet">
                <title>{description}</title>
                {grid}
                {bars}
            </svg>
            <ul class="chart-legend">{legend}</ul>
        </section>
    }
}

/// Each team's monthly cost budget against this month's spend, with the forecast to the month's
/// end: a bar (spent solid, forecast beyond it hatched) and the figures.
#[component]
fn BudgetBurns(burns: Vec<crate::model::budget::BudgetBurn>) -> impl IntoView {
    let notes: Vec<String> = burns.iter().filter_map(|b| b.note()).take(1).collect();
    view! {
        <section class="card budgets" aria-labelledby="cost-budgets-title" data-testid="cost-budgets">
            <h2 id="cost-budgets-title" class="card-title">"Budgets this month"</h2>
            <p class="muted">"Each team's monthly cost budget on a cluster (the policy file), what its share of that cluster cost from the first of the month (UTC) until now, and where the month ends at the rate recorded so far. Whatever period the report above covers."</p>
            <table class="data-table compact">
                <thead><tr>
                    <th scope="col">"Team"</th>
                    <th scope="col">"Cluster"</th>
                    <th scope="col" class="budget-bar-cell">"Burn"</th>
                    <th scope="col" class="num">"Spent"</th>
                    <th scope="col" class="num">"Forecast"</th>
                    <th scope="col" class="num">"Budget"</th>
                </tr></thead>
                <tbody>
                    {burns.into_iter().map(|b| {
                        let (spent, ahead) = b.bar();
                        let over = b.over();
                        let label = format!(
                            "{} on {}: {} spent of {}, forecast {} at the month's end",
                            b.team, b.cluster, money(b.spent_cents), money(b.monthly_cents as i64), money(b.forecast_cents)
                        );
                        view! {
                            <tr data-testid="budget-burn" data-team=b.team.clone() data-over=over.to_string()>
                                <th scope="row">{b.team.clone()}</th>
                                <td>{b.cluster.clone()}</td>
                                <td class="budget-bar-cell">
                                    <svg class="budget-bar" class:over=over viewBox="0 0 1000 16" preserveAspectRatio="none" role="img" aria-label=label.clone()>
                                        <title>{label.clone()}</title>
                                        <rect class="free" x="0" y="0" width="1000" height="16" />
                                        <rect class="held" x="0" y="0" width=spent.to_string() height="16" />
                                        <rect class="pending" x=spent.to_string() y="0" width=ahead.to_string() height="16" />
                                    </svg>
                                </td>
                                <td class="num">{money(b.spent_cents)}</td>
                                <td class="num">{if over { format!("{} (over)", money(b.forecast_cents)) } else { money(b.forecast_cents) }}</td>
                                <td class="num">{money(b.monthly_cents as i64)}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            {notes.into_iter().map(|n| view! { <p class="muted">{n}</p> }).collect_view()}
        </section>
    }
}
