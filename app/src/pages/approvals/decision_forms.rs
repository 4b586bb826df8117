//! Approve or reject with a note (an approver), or withdraw (the requester). Plain forms that post
//! to the server function, so they work without JavaScript too.

use super::*;

/// Approve or reject with a note (an approver), or withdraw (the requester). Plain forms that
/// post to the server function, so they work without JavaScript too.
#[component]
pub(super) fn DecisionForms(
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
