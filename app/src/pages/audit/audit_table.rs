//! The audit records as a table: when, who, the action and resource, the revisions, the pre-check,
//! the outcome and AWS's request id.

use super::*;

#[component]
pub(super) fn AuditTable(records: Vec<AuditRecord>) -> impl IntoView {
    view! {
        <table class="data-table" data-testid="audit-table">
            <thead><tr>
                <th scope="col">"When"</th>
                <th scope="col">"Who"</th>
                <th scope="col">"Action"</th>
                <th scope="col">"Resource"</th>
                <th scope="col">"Revisions"</th>
                <th scope="col">"Pre-check"</th>
                <th scope="col">"Outcome"</th>
                <th scope="col">"AWS request id"</th>
            </tr></thead>
            <tbody>
                {records.into_iter().map(|r| view! {
                    <tr data-outcome=r.outcome.as_str()>
                        <td class="mono when" title=r.at.clone()>{crate::model::activity::when(&r.at)}</td>
                        <td>
                            {r.who.actor.clone()}
                            {r.approved_by.clone().map(|by| view! { <div class="muted" data-testid="approved-by">{format!("approved by {by}")}</div> })}
                            {r.approval_id.clone().map(|id| view! { <div><a href=format!("/approvals/{}", encode(&id))>"the request"</a></div> })}
                        </td>
                        <td>{r.action.as_str()}</td>
                        <td>{r.resource.clone()}</td>
                        <td class="mono">{format!("{} → {}", r.from_revision.clone().unwrap_or_else(|| "—".into()), r.to_revision.clone().unwrap_or_else(|| "—".into()))}</td>
                        <td>{r.pre_check.clone().unwrap_or_else(|| "—".into())}</td>
                        <td>
                            <span class=format!("outcome outcome-{}", r.outcome)>{r.outcome.as_str()}</span>
                            {r.detail.clone().map(|d| view! { <div class="muted">{d}</div> })}
                            {r.description.clone().map(|d| view! { <div class="muted">{format!("Why: {d}")}</div> })}
                        </td>
                        <td class="mono">{r.request_id.clone().unwrap_or_else(|| "—".into())}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}
