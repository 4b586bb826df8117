//! Unit tests of the `approvals` module.

use std::sync::Arc;

use super::*;
use crate::{
    model::{arn::RevisionRef, audit::AuditRecord, deployment::DeployRequest},
    service::{budget::budgets, deployments::deploy, fake::Fake},
};

fn embed_2() -> DeployRequest {
    DeployRequest {
        revision: RevisionRef::number(2),
        expected_revision: RevisionRef::number(1),
        description: "bigger batch for the launch".into(),
        ..DeployRequest::default()
    }
}

fn admin() -> Actor {
    Fake::admin()
}

fn sent(fake: &Fake) -> usize {
    fake.calls()
        .iter()
        .filter(|c| c.starts_with("ecs.update_service"))
        .count()
}

fn of(fake: &Fake, action: AuditAction) -> Vec<AuditRecord> {
    fake.records()
        .into_iter()
        .filter(|r| r.action == action)
        .collect()
}

/// Asks for embed:2 past a 3 GiB budget (embed:1 holds 2 GiB, embed:2 asks 4 GiB).
async fn ask_embed_2(fake: &Arc<Fake>) -> String {
    let answer = deploy(
        &fake.context(),
        &Fake::deployer(),
        "prod",
        "embed",
        embed_2(),
    )
    .await
    .unwrap();
    answer.approval.expect("waits for approval")
}

#[tokio::test]
async fn a_deploy_past_the_budget_waits_and_its_approval_sends_it_as_the_requesters() {
    let fake = Fake::with_budget(3 * 1024);
    let id = ask_embed_2(&fake).await;
    assert_eq!(sent(&fake), 0, "nothing is sent before the approval");
    let request = fake
        .context()
        .approvals
        .get(id.clone())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(request.state, ApprovalState::Pending);
    assert_eq!(
        request.arithmetic,
        "search holds 2 GiB of 3 GiB on prod; this deploy adds 2 GiB, to 4 GiB: 1 GiB past the budget."
    );
    assert_eq!(request.request.description, "bigger batch for the launch");
    let asked = &of(&fake, AuditAction::Request)[0];
    assert_eq!(
        (asked.who.actor.as_str(), asked.outcome),
        ("ana", Outcome::Recorded)
    );
    assert_eq!(asked.approval_id.as_deref(), Some(id.as_str()));
    // Asked again, the same change of the same service is the same request: nothing new
    // is kept or audited.
    let again = ask_embed_2(&fake).await;
    assert_eq!(again, id);
    assert_eq!(fake.approvals.lock().unwrap().len(), 1);
    assert_eq!(of(&fake, AuditAction::Request).len(), 1);

    let done = approve(&fake.context(), &Fake::approver(), &id, "ok for the launch")
        .await
        .unwrap();
    assert_eq!(done.state, ApprovalState::Sent, "{:?}", done.detail);
    assert_eq!(sent(&fake), 1);
    let deployed = &of(&fake, AuditAction::Deploy)[0];
    assert_eq!(deployed.who.actor, "ana", "sent as the requester's");
    assert_eq!(deployed.approved_by.as_deref(), Some("cy"));
    assert_eq!(deployed.approval_id.as_deref(), Some(id.as_str()));
    assert_eq!(deployed.outcome, Outcome::InProgress);
    assert_eq!(done.audit_id.as_deref(), Some(deployed.id.as_str()));
    let approval = &of(&fake, AuditAction::Approve)[0];
    assert_eq!(approval.who.actor, "cy");
    assert_eq!(approval.description.as_deref(), Some("ok for the launch"));
    assert!(approval
        .detail
        .as_deref()
        .unwrap()
        .contains("sent as ana@example.com's deploy"));
    // Decided once: a second approval is refused with who decided.
    let again = approve(&fake.context(), &admin(), &id, "")
        .await
        .unwrap_err();
    assert_eq!(again.status(), 409);
    assert!(
        again
            .message()
            .contains("already decided by cy@example.com"),
        "{again}"
    );
    assert_eq!(sent(&fake), 1);
}

#[tokio::test]
async fn within_the_budget_a_deploy_is_sent_at_once() {
    let fake = Fake::with_budget(8 * 1024);
    let answer = deploy(
        &fake.context(),
        &Fake::deployer(),
        "prod",
        "embed",
        embed_2(),
    )
    .await
    .unwrap();
    assert_eq!(answer.approval, None);
    assert_eq!(sent(&fake), 1);
    assert!(fake.approvals.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_rejection_sends_nothing_and_is_audited_with_its_note() {
    let fake = Fake::with_budget(3 * 1024);
    let id = ask_embed_2(&fake).await;
    let rejected = reject(
        &fake.context(),
        &Fake::approver(),
        &id,
        "use the spare pool",
    )
    .await
    .unwrap();
    assert_eq!(rejected.state, ApprovalState::Rejected);
    assert_eq!(
        rejected.decision_note.as_deref(),
        Some("use the spare pool")
    );
    assert_eq!(sent(&fake), 0);
    assert_eq!(of(&fake, AuditAction::Reject)[0].who.actor, "cy");
    let late = approve(&fake.context(), &admin(), &id, "")
        .await
        .unwrap_err();
    assert_eq!(late.status(), 409);
    assert!(late.message().contains("rejected"), "{late}");
}

#[tokio::test]
async fn only_an_approver_other_than_the_requester_decides() {
    let fake = Fake::with_budget(3 * 1024);
    let id = ask_embed_2(&fake).await;
    let own = approve(&fake.context(), &Fake::deployer(), &id, "")
        .await
        .unwrap_err();
    assert_eq!(own.status(), 403);
    let outsider = approve(&fake.context(), &Fake::outsider(), &id, "")
        .await
        .unwrap_err();
    assert_eq!(outsider.status(), 403);
    assert!(
        outsider.message().contains("group search-leads"),
        "{outsider}"
    );
    let refused = of(&fake, AuditAction::Approve);
    assert_eq!(refused.len(), 2, "both refusals are audited");
    assert!(refused.iter().all(|r| r.outcome == Outcome::Refused));
    assert_eq!(sent(&fake), 0);
    let item = get(&fake.context(), &Fake::approver(), &id).await.unwrap();
    assert!(item.may_decide && !item.may_withdraw);
    let own = get(&fake.context(), &Fake::deployer(), &id).await.unwrap();
    assert!(!own.may_decide && own.may_withdraw);
    // Each read says when it was made, later reads later.
    assert!(
        item.read_at.ends_with('Z') && own.read_at >= item.read_at,
        "{} {}",
        item.read_at,
        own.read_at
    );
    assert_eq!(
        waiting_on(&fake.context(), &Fake::approver())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        waiting_on(&fake.context(), &Fake::outsider())
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn the_requester_withdraws_and_nobody_else_does() {
    let fake = Fake::with_budget(3 * 1024);
    let id = ask_embed_2(&fake).await;
    assert_eq!(
        withdraw(&fake.context(), &Fake::approver(), &id, "")
            .await
            .unwrap_err()
            .status(),
        403
    );
    let gone = withdraw(&fake.context(), &Fake::deployer(), &id, "not needed")
        .await
        .unwrap();
    assert_eq!(gone.state, ApprovalState::Withdrawn);
    assert_eq!(
        of(&fake, AuditAction::Withdraw).last().unwrap().outcome,
        Outcome::Recorded
    );
    assert_eq!(sent(&fake), 0);
}

#[tokio::test]
async fn an_approval_after_the_service_changed_sends_nothing_and_says_why() {
    let fake = Fake::with_budget(3 * 1024);
    let id = ask_embed_2(&fake).await;
    // Someone else rolled the service forward meanwhile.
    *fake.running.lock().unwrap() = 2;
    let error = approve(&fake.context(), &Fake::approver(), &id, "")
        .await
        .unwrap_err();
    assert_eq!(error.status(), 409);
    assert!(error.message().contains("nothing was sent"), "{error}");
    assert!(error.message().contains("now runs embed:2"), "{error}");
    let request = fake.context().approvals.get(id).await.unwrap().unwrap();
    assert_eq!(request.state, ApprovalState::Refused);
    assert!(request.detail.unwrap().contains("now runs embed:2"));
    assert_eq!(sent(&fake), 0);
}

#[tokio::test]
async fn of_two_approvers_at_once_one_sends() {
    let fake = Fake::with_budget(3 * 1024);
    let id = ask_embed_2(&fake).await;
    let (context, approver, root) = (fake.context(), Fake::approver(), admin());
    let (a, b) = tokio::join!(
        approve(&context, &approver, &id, "yes"),
        approve(&context, &root, &id, "yes")
    );
    assert_eq!(
        [a.is_ok(), b.is_ok()].iter().filter(|ok| **ok).count(),
        1,
        "{a:?} {b:?}"
    );
    let loser = a.err().or(b.err()).unwrap();
    assert_eq!(loser.status(), 409, "{loser}");
    assert_eq!(sent(&fake), 1);
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_read() {
    let fake = Fake::with_budget(3 * 1024);
    let context = fake.context();
    assert_eq!(
        approve(&context, &admin(), "../etc", "")
            .await
            .unwrap_err()
            .status(),
        400
    );
    assert_eq!(
        approve(&context, &admin(), "nope-1", "")
            .await
            .unwrap_err()
            .status(),
        404
    );
    let id = ask_embed_2(&fake).await;
    let long = "x".repeat(2000);
    assert_eq!(
        reject(&context, &admin(), &id, &long)
            .await
            .unwrap_err()
            .status(),
        400
    );
    let filter = ApprovalFilter {
        state: Some("open".into()),
        ..ApprovalFilter::default()
    };
    assert_eq!(
        list(&context, &admin(), &filter)
            .await
            .unwrap_err()
            .status(),
        400
    );
}

#[tokio::test]
async fn budgets_count_what_runs_and_what_waits() {
    let fake = Fake::with_budget(3 * 1024);
    let before = budgets(&fake.context()).await.unwrap();
    assert_eq!(before[0].held_mib, 2048);
    assert_eq!(before[0].pending_mib, 0);
    ask_embed_2(&fake).await;
    let after = budgets(&fake.context()).await.unwrap();
    assert_eq!((after[0].held_mib, after[0].pending_mib), (2048, 2048));
    assert_eq!(after[0].pending_requests, 1);
    assert!(after[0].over());
}
