//! Every team's GPU budget per cluster as a bar: held, waiting for approval, free — with the
//! numbers in words beside it. Nothing when the policy sets no budget.

use crate::resource::fetched;
use leptos::prelude::*;

use crate::{
    model::budget::{mib_words, BudgetUse},
    server_fns::approvals::team_budgets,
};

/// The budgets of the policy (of `cluster` only, when given), read from the server.
#[component]
pub fn BudgetBars(cluster: Option<String>) -> impl IntoView {
    let budgets = fetched(|| (), |_| team_budgets());
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let cluster = cluster.clone();
                Suspend::new(async move {
                    match budgets.await {
                        Ok(list) => {
                            let shown: Vec<BudgetUse> = list
                                .into_iter()
                                .filter(|b| cluster.as_deref().is_none_or(|c| b.cluster == c))
                                .collect();
                            (!shown.is_empty()).then(|| view! { <BudgetTable budgets=shown /> }).into_any()
                        }
                        Err(error) => view! {
                            <p class="banner warn" role="status">{format!("The team budgets could not be read: {error}")}</p>
                        }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

/// The budgets as a table of bars.
#[component]
pub fn BudgetTable(budgets: Vec<BudgetUse>) -> impl IntoView {
    view! {
        <section class="card budgets" data-testid="budgets" aria-labelledby="budgets-title">
            <h2 id="budgets-title">"Team GPU budgets"</h2>
            <p class="muted">
                "What each team's services hold (desired tasks × the GPU memory of the revision they run; a whole GPU counts as the cluster's largest GPU), what waits for approval, and what is free. A deploy past the budget waits on "
                <a href="/approvals">"Approvals"</a>"."
            </p>
            <table class="data-table compact">
                <thead><tr>
                    <th scope="col">"Team"</th>
                    <th scope="col">"Cluster"</th>
                    <th scope="col" class="budget-bar-cell">"Use"</th>
                    <th scope="col" class="num">"Held"</th>
                    <th scope="col" class="num">"Waiting"</th>
                    <th scope="col" class="num">"Free"</th>
                    <th scope="col" class="num">"Budget"</th>
                </tr></thead>
                <tbody>
                    {budgets.into_iter().map(|b| view! { <BudgetRow budget=b /> }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

#[component]
fn BudgetRow(budget: BudgetUse) -> impl IntoView {
    let (held, pending) = budget.bar();
    let label = budget.holds_words();
    let over = budget.over();
    let whole = budget.whole_gpus_budget.map(|limit| {
        format!(
            "{} of {limit} whole GPUs",
            budget.held_whole_gpus + budget.pending_whole_gpus
        )
    });
    view! {
        <tr data-testid="budget-row" data-team=budget.team.clone() data-cluster=budget.cluster.clone() data-over=over.to_string()>
            <th scope="row">{budget.team.clone()}</th>
            <td>{budget.cluster.clone()}</td>
            <td class="budget-bar-cell">
                <BudgetBar first=held second=pending over label=label.clone() />
                {whole.map(|w| view! { <div class="muted">{w}</div> })}
                {(!budget.unknown.is_empty()).then(|| view! {
                    <div class="muted">{format!("Not counted (revision unreadable): {}", budget.unknown.join(", "))}</div>
                })}
            </td>
            <td class="num">{mib_words(budget.held_mib)}</td>
            <td class="num">{if budget.pending_requests > 0 { format!("{} ({})", mib_words(budget.pending_mib), budget.pending_requests) } else { "—".into() }}</td>
            <td class="num">{if over { format!("over by {}", mib_words(budget.held_mib + budget.pending_mib - budget.budget_mib)) } else { mib_words(budget.free_mib()) }}</td>
            <td class="num">{mib_words(budget.budget_mib)}</td>
        </tr>
    }
}

/// A budget's bar, in thousandths of the budget: what is used (`first`, solid), then what comes
/// on top of it (`second`: waiting for approval, or forecast), over the free rest; red when
/// over. `label` says it in words, for screen readers and as the tooltip.
#[component]
pub fn BudgetBar(first: u32, second: u32, over: bool, label: String) -> impl IntoView {
    let title = label.clone();
    view! {
        <svg class="budget-bar" class:over=over viewBox="0 0 1000 16" preserveAspectRatio="none" role="img" aria-label=label>
            <title>{title}</title>
            <rect class="free" x="0" y="0" width="1000" height="16" />
            <rect class="held" x="0" y="0" width=first.to_string() height="16" />
            <rect class="pending" x=first.to_string() y="0" width=second.to_string() height="16" />
        </svg>
    }
}
