//! The requests for approval as a table: when asked, by whom, the service, the change, its budget
//! and its state, each linked to its page.

use super::*;

#[component]
pub(super) fn RequestTable(items: Vec<ApprovalItem>) -> impl IntoView {
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
