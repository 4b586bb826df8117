//! One request for approval: its state, the change and its budget arithmetic, the pre-check, the
//! diff, the note, and the decision forms for those who may decide.

use super::*;

#[component]
pub(super) fn RequestDetail(
    item: ApprovalItem,
    decide: ServerAction<DecideApproval>,
) -> impl IntoView {
    let read_at = item.read_at.clone();
    let r: ApprovalRequest = item.request;
    // Read as bytes, as the page's data is (`crate::resource`): one JSON reader in the browser.
    let diff: Vec<DiffEntry> = serde_json::from_slice(r.diff.as_bytes()).unwrap_or_default();
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
        {(r.state == ApprovalState::Pending && !read_at.is_empty()).then(|| view! {
            <p class="muted" data-testid="approval-read-at" data-read-at=read_at.clone()>{format!("As of {}.", when(&read_at))}</p>
        })}
        {watch}
        <section class="card" data-testid="approval-summary">
            <h2>"What is asked"</h2>
            <dl class="facts">
                <dt>"Requested by"</dt><dd>{format!("{} ({}), {}", r.requester_words(), r.requester.role, when(&r.created_at))}</dd>
                <dt>"Service"</dt><dd>{format!("{} of team {}", r.resource(), r.team)}</dd>
                {match r.creation.clone() {
                    Some(creation) => view! {
                        <dt>"Creates"</dt>
                        <dd data-testid="approval-creation">{format!(
                            "a new service: {} task{} of {}{}",
                            creation.desired,
                            if creation.desired == 1 { "" } else { "s" },
                            creation.task_definition,
                            creation.provider.map(|p| format!(" on capacity provider {p}")).unwrap_or_default()
                        )}</dd>
                        <dt>"GPUs per task"</dt><dd>{if creation.gpu.is_empty() { "—".to_string() } else { creation.gpu.join("; ") }}</dd>
                    }.into_any(),
                    None => view! { <dt>"Revision"</dt><dd class="mono">{format!("{} → {}", r.from, r.target)}</dd> }.into_any(),
                }}
                <dt>"Budget"</dt><dd data-testid="approval-arithmetic">{r.arithmetic.clone()}</dd>
                <dt>"Pre-check"</dt><dd>{r.pre_check.clone()}{r.request.force.then_some(" (the requester chose to deploy anyway)")}</dd>
                <dt>"Note"</dt><dd data-testid="approval-note">{if r.note().is_empty() { "—".to_string() } else { r.note().to_string() }}</dd>
                {decided.map(|d| view! { <dt>"Decision"</dt><dd data-testid="approval-decision">{d}</dd> })}
            </dl>
        </section>
        <DecisionForms id=r.id.clone() item_may_decide=item.may_decide why_not=item.why_not.clone() may_withdraw=item.may_withdraw decide />
        {r.creation.is_none().then(|| view! {
            <section class="card">
                <h2>"The change"</h2>
                <DiffTable entries=diff />
            </section>
        })}
    }
}

pub(super) fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
