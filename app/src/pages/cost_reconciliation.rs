//! `/cost/reconciliation?month=YYYY-MM`: per day of a month, the console's figure for the EC2
//! instances it saw against Cost Explorer's amortized cost, the difference and what explains
//! it; the days Cost Explorer was not read for at list prices, with why. The month form is a
//! plain GET form, so it works without JavaScript.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    components::{
        error_banner::{set_status, ErrorBanner},
        report_page::url_query,
    },
    model::cost::{money, Reconciliation, ReconciliationDay, ReconciliationQuery},
    resource::fetched,
    server_fns::cost::cost_reconciliation,
};

/// The reconciliation page.
#[component]
pub fn CostReconciliationPage() -> impl IntoView {
    let (parsed, query) = url_query::<ReconciliationQuery>();
    let answer = fetched(move || query.get(), cost_reconciliation);
    let month = move || query.get().month.unwrap_or_default();
    view! {
        <Title text="Reconciliation with Cost Explorer" />
        <div class="cost-page">
            <p class="no-print"><a href="/cost">"← Cost"</a>" · "<a href="/cost/months">"Sealed months"</a></p>
            <h1>"Reconciliation with Cost Explorer"</h1>
            <p class="muted">"Per day, what the console counts for the EC2 instances it saw in ECS against Cost Explorer's amortized cost (commitments and Capacity Blocks spread over their hours), and what explains the difference. Where Cost Explorer was read for a day, the cost review prices that day at the bill."</p>
            <form method="get" action="/cost/reconciliation" class="no-print">
                <label class="field">
                    <span>"Month (YYYY-MM; this month when empty)"</span>
                    <input type="text" name="month" value=month pattern="[0-9]{4}-[0-9]{2}" size="8" data-testid="reconciliation-month" />
                </label>
                <button type="submit">"Show"</button>
            </form>
            {move || parsed.get().err().map(|error| view! {
                <p class="banner error" role="alert" data-testid="reconciliation-query-error">{format!("{error}. Showing this month instead.")}</p>
            })}
            <Transition fallback=|| view! { <p class="muted">"Reading the bill…"</p> }>
                {move || Suspend::new(async move {
                    match answer.await {
                        Ok(answer) => view! { <Month answer /> }.into_any(),
                        Err(error) => {
                            set_status(error.status());
                            view! { <ErrorBanner error lead="The reconciliation could not be made: " /> }.into_any()
                        }
                    }
                })}
            </Transition>
        </div>
    }
}

#[component]
fn Month(answer: Reconciliation) -> impl IntoView {
    let csv = format!(
        "/api/v1/cost/reconciliation?month={}&format=csv",
        answer.month
    );
    let totals = match (answer.cost_explorer_cents, answer.difference_cents) {
        (Some(ce), Some(difference)) => format!(
            "{}: {} days at the bill. Cost Explorer {}, the console {} for the instances it saw on those days: a difference of {}. The whole month so far at the console's prices: {} (at list prices {}).",
            answer.month,
            answer.days_billed,
            money(ce),
            money(answer.console_billed_days_cents),
            money(difference),
            money(answer.console_cents),
            money(answer.list_cents),
        ),
        _ => format!(
            "{}: no day read from Cost Explorer. The month so far at list and price-file prices: {}.",
            answer.month,
            money(answer.console_cents)
        ),
    };
    view! {
        <section class="card" data-testid="reconciliation" data-source=answer.source.clone()>
            <h2 class="card-title">{format!("{} · {} Cost Explorer request{} for these days", answer.month, answer.calls, if answer.calls == 1 { "" } else { "s" })}</h2>
            <p data-testid="reconciliation-totals">{totals}</p>
            <ul class="notes" data-testid="reconciliation-notes">
                {answer.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}
            </ul>
            <p class="no-print"><a href=csv download="" data-testid="reconciliation-csv">"Download as CSV"</a></p>
        </section>
        <Days days=answer.days />
    }
}

#[component]
fn Days(days: Vec<ReconciliationDay>) -> impl IntoView {
    if days.is_empty() {
        return view! { <p class="muted" data-testid="reconciliation-none">"Nothing recorded this month yet."</p> }.into_any();
    }
    let optional = |cents: Option<i64>| cents.map_or_else(|| "—".to_string(), money);
    view! {
        <section class="card" aria-labelledby="days-title">
            <h2 id="days-title" class="card-title">"By day (UTC)"</h2>
            <table class="data-table compact" data-testid="reconciliation-days">
                <thead><tr>
                    <th scope="col">"Day"</th><th scope="col">"Figures"</th>
                    <th scope="col" class="num">"Console"</th><th scope="col" class="num">"Cost Explorer"</th>
                    <th scope="col" class="num">"Difference"</th><th scope="col" class="num">"At list prices"</th>
                    <th scope="col" class="num">"Instances"</th><th scope="col" class="num">"Hours recorded"</th>
                    <th scope="col">"Explained"</th>
                </tr></thead>
                <tbody>
                    {days.into_iter().map(|d| view! {
                        <tr data-testid="reconciliation-day" data-day=d.day.clone() data-source=d.source.clone()>
                            <td>{d.day.clone()}</td>
                            <td>{if d.source == "cost-explorer" { "the bill" } else { "list prices" }}</td>
                            <td class="num" data-testid="day-console">{money(d.console_cents)}</td>
                            <td class="num" data-testid="day-cost-explorer">{optional(d.cost_explorer_cents)}</td>
                            <td class="num" data-testid="day-difference">{optional(d.difference_cents)}</td>
                            <td class="num">{money(d.list_cents)}</td>
                            <td class="num">{d.instances_seen}</td>
                            <td class="num">{format!("{:.1}", f64::from(d.recorded_minutes) / 60.0)}</td>
                            <td>
                                <ul class="explained">
                                    {d.explained.iter().map(|e| view! {
                                        <li data-kind=e.kind.clone()>{if e.cents != 0 { format!("{}: {}", money(e.cents), e.text) } else { e.text.clone() }}</li>
                                    }).collect_view()}
                                </ul>
                            </td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
    .into_any()
}
