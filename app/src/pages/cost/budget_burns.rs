//! Each team's monthly cost budget against this month's spend, with the forecast to the month's
//! end: a bar (spent solid, forecast beyond it hatched) and the figures.

use super::*;
use crate::components::budget_bars::BudgetBar;

/// Each team's monthly cost budget against this month's spend, with the forecast to the month's
/// end: a bar (spent solid, forecast beyond it hatched) and the figures.
#[component]
pub(super) fn BudgetBurns(burns: Vec<crate::model::budget::BudgetBurn>) -> impl IntoView {
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
                                    <BudgetBar first=spent second=ahead over label />
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
