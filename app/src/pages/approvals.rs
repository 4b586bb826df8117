//! `/approvals`: the changes past a team's GPU budget that wait for someone to say yes, and every
//! team's budget use; `/approvals/:id`: one request with its budget arithmetic, pre-check, diff
//! and note, the approve / reject / withdraw buttons, and its state followed live.

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
    let view_data = Resource::new(move || filter.get(), list_approvals);
    view! {
        <Title text="Approvals" />
        <h1>"Approvals"</h1>
        <p class="muted">"A deploy, rollback or change of the desired count that would take a team past its GPU budget is not sent: it waits here for an admin or the team's approvers. On approval the checks run again against the fleet as it is then, and the change is sent as the requester's, approved by the approver."</p>
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
                <input type="text" name="team" prop:value=move || filter.get().team.unwrap_or_default() />
            </label>
            <label><span>"Cluster"</span>
                <input type="text" name="cluster" prop:value=move || filter.get().cluster.unwrap_or_default() />
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

/// Which requests of how many the page shows, and links to the pages before and after.
#[component]
fn Pages(filter: ApprovalFilter, total: u64, page: u32) -> impl IntoView {
    let size = u64::from(APPROVALS_PAGE);
    let first = u64::from(page.saturating_sub(1)) * size + 1;
    let last = (first + size - 1).min(total);
    let link = |page: u32| {
        let mut query = vec![format!("page={page}")];
        for (key, value) in [
            ("state", &filter.state),
            ("team", &filter.team),
            ("cluster", &filter.cluster),
        ] {
            if let Some(value) = value {
                query.push(format!("{key}={}", encode(value)));
            }
        }
        format!("/approvals?{}", query.join("&"))
    };
    let before = (page > 1).then(|| view! { <a href=link(page - 1) rel="prev">"Newer"</a> });
    let after = (last < total).then(|| view! { <a href=link(page + 1) rel="next">"Older"</a> });
    view! {
        <nav class="pages" aria-label="Pages of requests" data-testid="approvals-pages">
            <span data-testid="approvals-total">{format!("Requests {first}–{last} of {total}")}</span>
            " " {before} " " {after}
        </nav>
    }
}

#[component]
fn RequestTable(items: Vec<ApprovalItem>) -> impl IntoView {
    view! {
        <table class="data-table" data-testid="approvals-table">
            <thead><tr>
                <th scope="col">"Asked"</th>
                <th scope="col">"By"</th>
                <th scope="col">"Service"</th>
                <th scope="col">"Change"</th>
                <th scope="col">"Budget"</th>
                <th scope="col">"State"</th>
            </tr></thead>
            <tbody>
                {items.into_iter().map(|item| {
                    let r = item.request;
                    let href = format!("/approvals/{}", encode(&r.id));
                    view! {
                        <tr data-testid="approval-row" data-state=r.state.as_str() data-id=r.id.clone()>
                            <td class="mono when" title=r.created_at.clone()>{when(&r.created_at)}</td>
                            <td>{r.requester_words()}</td>
                            <td>{format!("{} ({})", r.resource(), r.team)}</td>
                            <td><a href=href.clone()>{r.title()}</a></td>
                            <td>{r.arithmetic.clone()}</td>
                            <td>
                                <span class=format!("approval-state state-{}", r.state)>{r.state.words()}</span>
                                {item.may_decide.then(|| view! { <div><a href=href.clone()>"Decide"</a></div> })}
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// One request, live until it is decided and sent.
#[component]
pub fn ApprovalPage() -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.with(|p| p.get("id").unwrap_or_default()));
    let decide = ServerAction::<DecideApproval>::new();
    // Reads again after each decision, and every few seconds in the browser while it waits.
    let polls = RwSignal::new(0_u32);
    let item = Resource::new(
        move || (id.get(), decide.version().get(), polls.get()),
        |(id, _, _)| approval(id),
    );
    #[cfg(feature = "hydrate")]
    {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                let open = item
                    .get_untracked()
                    .and_then(Result::ok)
                    .is_some_and(|i| !i.request.state.is_final());
                if open {
                    polls.try_update(|n| *n += 1);
                }
            },
            std::time::Duration::from_secs(3),
        ) {
            on_cleanup(move || handle.clear());
        }
    }
    view! {
        <Title text="Approval request" />
        <p><a href="/approvals">"← Approvals"</a>" · "<a href="/audit?action=request">"Requests in the audit log"</a></p>
        <Transition fallback=|| view! { <p class="muted">"Reading the request…"</p> }>
            {move || Suspend::new(async move {
                match item.await {
                    Ok(item) => view! { <RequestDetail item decide /> }.into_any(),
                    Err(error) => {
                        set_status(error.status());
                        view! { <ErrorBanner error lead="The request could not be read: " /> }.into_any()
                    }
                }
            })}
        </Transition>
    }
}

#[component]
fn RequestDetail(item: ApprovalItem, decide: ServerAction<DecideApproval>) -> impl IntoView {
    let r: ApprovalRequest = item.request;
    let diff: Vec<DiffEntry> = serde_json::from_str(&r.diff).unwrap_or_default();
    let state_class = if matches!(
        r.state,
        ApprovalState::Refused | ApprovalState::Rejected | ApprovalState::Withdrawn
    ) {
        "banner warn"
    } else {
        "banner info"
    };
    let decided = r.decided_by.clone().map(|by| {
        let who = r.decided_by_email.clone().unwrap_or(by);
        let at = r.decided_at.clone().unwrap_or_default();
        let note = r
            .decision_note
            .clone()
            .map(|n| format!(": “{n}”"))
            .unwrap_or_default();
        format!("Decided by {who} {}{note}", when(&at))
    });
    let watch = r.audit_id.clone().map(|audit| {
        if r.scale.is_some() {
            view! { <p><a href=format!("/audit?action=scale&resource={}", encode(&r.resource())) data-testid="approval-watch">"The scale in the audit log"</a></p> }.into_any()
        } else {
            view! { <p><a href=format!("/rollouts/{}", encode(&audit)) data-testid="approval-watch">"Watch the rollout"</a></p> }.into_any()
        }
    });
    let title = r.title();
    view! {
        <h1>{title}</h1>
        <p class=state_class role="status" data-testid="approval-state" data-state=r.state.as_str()>
            {format!("{}.", capitalised(r.state.words()))}
            {r.detail.clone().map(|d| format!(" {d}"))}
        </p>
        {watch}
        <section class="card" data-testid="approval-summary">
            <h2>"What is asked"</h2>
            <dl class="facts">
                <dt>"Requested by"</dt><dd>{format!("{} ({}), {}", r.requester_words(), r.requester.role, when(&r.created_at))}</dd>
                <dt>"Service"</dt><dd>{format!("{} of team {}", r.resource(), r.team)}</dd>
                <dt>"Revision"</dt><dd class="mono">{format!("{} → {}", r.from, r.target)}</dd>
                <dt>"Budget"</dt><dd data-testid="approval-arithmetic">{r.arithmetic.clone()}</dd>
                <dt>"Pre-check"</dt><dd>{r.pre_check.clone()}{r.request.force.then_some(" (the requester chose to deploy anyway)")}</dd>
                <dt>"Note"</dt><dd data-testid="approval-note">{if r.note().is_empty() { "—".to_string() } else { r.note().to_string() }}</dd>
                {decided.map(|d| view! { <dt>"Decision"</dt><dd data-testid="approval-decision">{d}</dd> })}
            </dl>
        </section>
        <DecisionForms id=r.id.clone() item_may_decide=item.may_decide why_not=item.why_not.clone() may_withdraw=item.may_withdraw decide />
        <section class="card">
            <h2>"The change"</h2>
            <DiffTable entries=diff />
        </section>
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Approve or reject with a note (an approver), or withdraw (the requester). Plain forms that
/// post to the server function, so they work without JavaScript too.
#[component]
fn DecisionForms(
    id: String,
    item_may_decide: bool,
    why_not: Option<String>,
    may_withdraw: bool,
    decide: ServerAction<DecideApproval>,
) -> impl IntoView {
    let outcome = move || {
        decide.value().get().map(|result| match result {
            Ok(request) => view! {
                <p class="banner info" role="status" data-testid="decision-result">{format!("Done: {}.", request.state.words())}</p>
            }.into_any(),
            Err(error) => view! {
                <p class="banner error" role="alert" data-testid="decision-error">{error.to_string()}</p>
            }.into_any(),
        })
    };
    let pending = decide.pending();
    let decide_forms = item_may_decide.then(|| {
        let id = id.clone();
        view! {
            <section class="card" data-testid="approval-decide">
                <h2>"Decide"</h2>
                <ActionForm action=decide>
                    <input type="hidden" name="id" value=id.clone() />
                    <label class="edit-description">
                        <span>"Note (kept in the audit log)"</span>
                        <input type="text" name="note" maxlength="1024" data-testid="decision-note" />
                    </label>
                    <div class="edit-actions">
                        <button type="submit" name="decision" value="approve" data-testid="approve" disabled=move || pending.get()>"Approve and send"</button>
                        <button type="submit" name="decision" value="reject" class="secondary" data-testid="reject" disabled=move || pending.get()>"Reject"</button>
                    </div>
                </ActionForm>
            </section>
        }
    });
    let withdraw_form = may_withdraw.then(|| {
        view! {
            <section class="card" data-testid="approval-withdraw">
                <h2>"Your request"</h2>
                <p class="muted">"It waits for an approver. You can take it back; nothing has been sent."</p>
                <ActionForm action=decide>
                    <input type="hidden" name="id" value=id.clone() />
                    <input type="hidden" name="note" value="" />
                    <button type="submit" name="decision" value="withdraw" class="secondary" data-testid="withdraw" disabled=move || pending.get()>"Withdraw the request"</button>
                </ActionForm>
            </section>
        }
    });
    let why = (!item_may_decide && !may_withdraw)
        .then_some(why_not)
        .flatten()
        .map(|why| view! { <p class="not-allowed" role="note" data-testid="approval-not-allowed">{why}</p> });
    view! {
        {decide_forms}
        {withdraw_form}
        {why}
        {outcome}
    }
}
