//! `/approvals`: the changes past a team's GPU budget that wait for someone to say yes, and every
//! team's budget use; `/approvals/:id`: one request with its budget arithmetic, pre-check, diff
//! and note, the approve / reject / withdraw buttons, and its state followed live.

mod approval_page;
mod decision_forms;
mod page_links;
mod request_detail;
mod request_table;

use crate::resource::fetched;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    components::{
        budget_bars::BudgetTable,
        error_banner::{set_status, ErrorBanner},
        td_views::DiffTable,
    },
    model::{
        activity::when,
        approval::{ApprovalFilter, ApprovalItem, ApprovalRequest, ApprovalState, APPROVALS_PAGE},
        fleet_view::encode,
        task_definition::DiffEntry,
    },
    server_fns::approvals::{approval, list_approvals, DecideApproval},
};

pub use self::approval_page::ApprovalPage;
use self::{
    decision_forms::DecisionForms, page_links::Pages, request_detail::RequestDetail,
    request_table::RequestTable,
};

/// The list of requests; the state filter is a GET form, so it works without JavaScript.
#[component]
pub fn ApprovalsPage() -> impl IntoView {
    let query = use_query_map();
    let filter = Memo::new(move |_| {
        query.with(|q| ApprovalFilter {
            state: q.get("state").filter(|v| !v.is_empty()),
            team: q.get("team").filter(|v| !v.is_empty()),
            cluster: q.get("cluster").filter(|v| !v.is_empty()),
            page: q.get("page").filter(|v| !v.is_empty()),
        })
    });
    let view_data = fetched(move || filter.get(), list_approvals);
    view! {
        <Title text="Approvals" />
        <h1>"Approvals"</h1>
        <p class="muted">"A deploy, rollback, restart, change of the desired count or new service that would take a team past its GPU budget is not sent: it waits here for an admin or the team's approvers. On approval the checks run again against the fleet as it is then, and the change is sent as the requester's, approved by the approver."</p>
        <form class="compare-picker card" method="get" data-testid="approvals-filter">
            <label><span>"State"</span>
                <select name="state">
                    <option value="">"any"</option>
                    {ApprovalState::ALL.map(|s| view! {
                        <option value=s.as_str() selected=move || filter.get().state.as_deref() == Some(s.as_str())>{s.as_str()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label><span>"Team"</span>
                <input type="text" name="team" prop:value=move || filter.get().team.unwrap_or_default() value=move || filter.get().team.unwrap_or_default() />
            </label>
            <label><span>"Cluster"</span>
                <input type="text" name="cluster" prop:value=move || filter.get().cluster.unwrap_or_default() value=move || filter.get().cluster.unwrap_or_default() />
            </label>
            <button type="submit">"Filter"</button>
        </form>
        <Suspense fallback=|| view! { <p class="muted">"Reading the requests…"</p> }>
            {move || Suspend::new(async move {
                match view_data.await {
                    Ok(data) => {
                        let budgets = (!data.budgets.is_empty()).then(|| view! { <BudgetTable budgets=data.budgets /> });
                        let pages = (data.total > u64::from(APPROVALS_PAGE) || data.page > 1)
                            .then(|| view! { <Pages filter=filter.get_untracked() total=data.total page=data.page /> });
                        let requests = if data.requests.is_empty() {
                            view! { <p data-testid="approvals-empty">"No request matches."</p> }.into_any()
                        } else {
                            view! { <RequestTable items=data.requests /> }.into_any()
                        };
                        view! { {requests} {pages} {budgets} }.into_any()
                    }
                    Err(error) => {
                        set_status(error.status());
                        view! { <ErrorBanner error lead="The requests could not be read: " /> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}
