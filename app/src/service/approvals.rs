//! Approvals: the decisions about requests for changes past a team's budget — approve (the
//! checks run again, and the change is sent as the requester's as they are now, approved by the
//! approver), reject, withdraw — each audited with its actor, and the reads of requests. A
//! request is decided once: the store moves it out of `pending` atomically, on one replica or
//! several. The budget itself is judged in [`crate::service::budget`]; requests are made in
//! [`crate::service::requests`].

use crate::{
    model::{
        approval::{
            note_problem, ApprovalFilter, ApprovalItem, ApprovalRequest, ApprovalState,
            ApprovalsView, APPROVALS_PAGE,
        },
        audit::{AuditAction, AuditIntent, AuditOutcome, Outcome},
        deployment::DeployAnswer,
        identity::{Actor, AuthMode},
        ServiceError,
    },
    service::{
        audit,
        budget::{self, Approved},
        context::ServiceContext,
        deployments, detached,
        ports::{ApprovalQuery, Decision},
    },
};

/// The record of a decision about `request` by `actor`.
fn decision_intent(
    actor: &Actor,
    action: AuditAction,
    request: &ApprovalRequest,
    note: &str,
) -> AuditIntent {
    AuditIntent {
        from_revision: Some(request.from.clone()),
        to_revision: Some(request.target.clone()),
        description: Some(note.trim().to_string()).filter(|n| !n.is_empty()),
        approval_id: Some(request.id.clone()),
        ..AuditIntent::by(actor, action, request.resource())
    }
}

/// The request `id`, or that there is none.
async fn load(context: &ServiceContext, id: &str) -> Result<ApprovalRequest, ServiceError> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(ServiceError::invalid(format!(
            "{id:?} is not a request id; the ids are on /approvals"
        )));
    }
    context
        .approvals
        .get(id.to_string())
        .await?
        .ok_or_else(|| ServiceError::not_found(format!("there is no request {id}; see /approvals")))
}

/// Why a decided request cannot be decided again.
fn already(request: &ApprovalRequest) -> ServiceError {
    let by = request
        .decided_by_email
        .clone()
        .or_else(|| request.decided_by.clone())
        .map(|who| format!(" by {who}"))
        .unwrap_or_default();
    let when = request
        .decided_at
        .as_deref()
        .map(|at| format!(" at {at}"))
        .unwrap_or_default();
    ServiceError::conflict(format!(
        "Request {} was already decided{by}{when}: {}.",
        request.id,
        request.state.words()
    ))
}

/// Whether `actor` may approve or reject `request`, and why not.
fn may_decide(
    context: &ServiceContext,
    actor: &Actor,
    request: &ApprovalRequest,
) -> Result<(), String> {
    context
        .policy
        .may_approve(actor, &request.team, &request.cluster)?;
    if actor.auth != AuthMode::None && actor.subject == request.requester.subject {
        return Err(
            "You asked for this change; someone else who may approve it must decide.".into(),
        );
    }
    Ok(())
}

/// Refuses `actor`'s `action` on `request` and audits the refusal.
async fn refuse(
    context: &ServiceContext,
    actor: &Actor,
    action: AuditAction,
    request: &ApprovalRequest,
    why: String,
) -> ServiceError {
    let intent = decision_intent(actor, action, request, "");
    audit::refused(context, intent, ServiceError::forbidden(why)).await
}

/// Moves `request` out of `pending` for `actor`, or says who did first.
async fn take(
    context: &ServiceContext,
    actor: &Actor,
    request: &ApprovalRequest,
    to: ApprovalState,
    note: &str,
) -> Result<(), ServiceError> {
    let won = context
        .approvals
        .decide(
            request.id.clone(),
            Decision {
                to,
                by: actor.subject.clone(),
                by_email: actor.email.clone(),
                note: Some(note.trim().to_string()).filter(|n| !n.is_empty()),
            },
        )
        .await?;
    if won {
        return Ok(());
    }
    let now = load(context, &request.id).await?;
    Err(already(&now))
}

/// Request `id` if `actor` may make the decision `action` about it now: a plain note, a
/// request still waiting, and an approver (approve, reject) or its requester (withdraw); a
/// refusal of who is asking is audited.
async fn open(
    context: &ServiceContext,
    actor: &Actor,
    id: &str,
    note: &str,
    action: AuditAction,
) -> Result<ApprovalRequest, ServiceError> {
    if let Some(problem) = note_problem(note) {
        return Err(ServiceError::invalid(problem));
    }
    let request = load(context, id).await?;
    if request.state != ApprovalState::Pending {
        return Err(already(&request));
    }
    let allowed = if action == AuditAction::Withdraw {
        if actor.subject == request.requester.subject {
            Ok(())
        } else {
            Err(format!(
                "Only {}, who asked for it, may withdraw request {id}; an approver rejects it instead.",
                request.requester_words()
            ))
        }
    } else {
        may_decide(context, actor, &request)
    };
    match allowed {
        Ok(()) => Ok(request),
        Err(why) => Err(refuse(context, actor, action, &request, why).await),
    }
}

/// A decision named by its word: `approve`, `reject` or `withdraw`.
pub async fn decide(
    context: &ServiceContext,
    actor: &Actor,
    id: &str,
    decision: &str,
    note: &str,
) -> Result<ApprovalRequest, ServiceError> {
    match decision {
        "approve" => approve(context, actor, id, note).await,
        "reject" => reject(context, actor, id, note).await,
        "withdraw" => withdraw(context, actor, id, note).await,
        other => Err(ServiceError::invalid(format!(
            "decision {other:?} is not approve, reject or withdraw"
        ))),
    }
}

/// Approves request `id`: the checks run again on the fleet as it is now (the revision the
/// requester saw still runs, the pre-check, the budget no further past than the request showed)
/// and the change is sent as the requester's, approved by `approver`. When the checks no longer
/// pass the request is `refused`, nothing is sent, and the error says why.
pub async fn approve(
    context: &ServiceContext,
    approver: &Actor,
    id: &str,
    note: &str,
) -> Result<ApprovalRequest, ServiceError> {
    let request = open(context, approver, id, note, AuditAction::Approve).await?;
    take(context, approver, &request, ApprovalState::Sending, note).await?;
    // From here the approval runs to its end, whatever the HTTP request does.
    let (owned, approver, note) = (context.clone(), approver.clone(), note.to_string());
    detached::run_to_end(context, id, async move {
        send_approved(&owned, &approver, request, &note).await
    })
    .await
}

/// The approved request sent: its audit record, the deploy under the approval, the outcome.
async fn send_approved(
    context: &ServiceContext,
    approver: &Actor,
    request: ApprovalRequest,
    note: &str,
) -> Result<ApprovalRequest, ServiceError> {
    let id = request.id.clone();
    let settle = |state: ApprovalState, detail: String, audit_id: Option<String>| {
        context
            .approvals
            .settle(id.clone(), state, detail, audit_id)
    };
    let intent = decision_intent(approver, AuditAction::Approve, &request, note);
    let approval_record =
        match audit::recorded(context, intent, "approved; the checks run again".into()).await {
            Ok(record) => record,
            Err(error) => {
                let why = format!(
                    "the audit log could not record the approval ({error}); nothing was sent"
                );
                settle(ApprovalState::Refused, why.clone(), None).await?;
                return Err(ServiceError::unavailable(why));
            }
        };
    let approved = Approved {
        id: id.clone(),
        by: approver.clone(),
        after_mib: request.after_mib,
    };
    // The change is sent as its requester's, with their rights as they are now: a role or team
    // taken away since the request is not kept alive by it.
    let sent = match requester_now(context, &request.requester).await {
        Err(error) => Err(error),
        Ok(requester) => send_as(context, &requester, &request, approved).await,
    };
    let (state, detail, audit_id, error) = match sent {
        Ok(answer) => (
            ApprovalState::Sent,
            format!(
                "sent as {}'s {}, approved by {}; {}",
                request.requester_words(),
                answer.action.as_str(),
                approver.email.as_deref().unwrap_or(&approver.subject),
                if answer.action == AuditAction::Scale {
                    format!("see /audit?resource={}", request.resource())
                } else {
                    format!("watch it at /rollouts/{}", answer.audit_id)
                }
            ),
            Some(answer.audit_id),
            None,
        ),
        Err(error) => (
            ApprovalState::Refused,
            format!("approved, but nothing was sent: {}", error.message()),
            None,
            Some(error),
        ),
    };
    settle(state, detail.clone(), audit_id).await?;
    // The approval's record says how it ended.
    let _ = context
        .audit
        .finish(
            approval_record,
            AuditOutcome {
                outcome: Outcome::Recorded,
                detail: Some(detail.clone()),
                ..AuditOutcome::default()
            },
        )
        .await;
    match error {
        None => load(context, &id).await,
        Some(error) => Err(ServiceError::conflict(format!(
            "Request {id} is approved, but the checks no longer pass, so nothing was sent: {} The request is closed; ask again once it can pass.",
            error.message()
        ))),
    }
}

/// The requester of a request as they are now: the groups of their latest sign-in (the ones
/// they asked with, if none since) under the policy as it is now. Someone who no longer has a
/// role is refused here, with why.
async fn requester_now(context: &ServiceContext, asked: &Actor) -> Result<Actor, ServiceError> {
    if asked.auth == AuthMode::None {
        return Ok(asked.clone());
    }
    let latest = context.people.latest(asked.subject.clone()).await?;
    let (groups, email, seen) = match latest {
        Some(person) => (person.groups, person.email, Some(person.seen_at)),
        None => (asked.groups.clone(), asked.email.clone(), None),
    };
    let who = email.clone().unwrap_or_else(|| asked.subject.clone());
    let since = seen
        .map(|at| format!(" (as of their latest sign-in, at {at})"))
        .unwrap_or_default();
    let role = context.policy.role_for(&groups).ok_or_else(|| {
        ServiceError::forbidden(format!(
            "{who} no longer has a role in the console{since}, so their request cannot be sent as theirs."
        ))
    })?;
    Ok(Actor {
        teams: context.policy.teams_for(&groups),
        groups,
        email,
        role,
        ..asked.clone()
    })
}

/// Sends an approved request's change as `requester`'s.
async fn send_as(
    context: &ServiceContext,
    requester: &Actor,
    request: &ApprovalRequest,
    approved: Approved,
) -> Result<DeployAnswer, ServiceError> {
    match &request.scale {
        Some(scale) => {
            deployments::scale_approved(
                context,
                requester,
                &request.cluster,
                &request.service,
                scale.clone(),
                approved,
            )
            .await
        }
        None => {
            deployments::deploy_approved(
                context,
                requester,
                &request.cluster,
                &request.service,
                request.request.clone(),
                approved,
            )
            .await
        }
    }
}

/// Rejects request `id` with `note`: nothing is sent.
pub async fn reject(
    context: &ServiceContext,
    approver: &Actor,
    id: &str,
    note: &str,
) -> Result<ApprovalRequest, ServiceError> {
    close(context, approver, id, note, AuditAction::Reject).await
}

/// Withdraws request `id`: only its requester may, while it waits.
pub async fn withdraw(
    context: &ServiceContext,
    actor: &Actor,
    id: &str,
    note: &str,
) -> Result<ApprovalRequest, ServiceError> {
    close(context, actor, id, note, AuditAction::Withdraw).await
}

/// Rejects or withdraws request `id` (`action`), audited with `actor` and `note`.
async fn close(
    context: &ServiceContext,
    actor: &Actor,
    id: &str,
    note: &str,
    action: AuditAction,
) -> Result<ApprovalRequest, ServiceError> {
    let (state, words) = match action {
        AuditAction::Withdraw => (ApprovalState::Withdrawn, "withdrawn; nothing was sent"),
        _ => (ApprovalState::Rejected, "rejected; nothing was sent"),
    };
    let request = open(context, actor, id, note, action).await?;
    take(context, actor, &request, state, note).await?;
    let intent = decision_intent(actor, action, &request, note);
    audit::recorded(context, intent, words.into()).await?;
    load(context, id).await
}

/// A request with what `actor` may do with it.
fn item(context: &ServiceContext, actor: &Actor, request: ApprovalRequest) -> ApprovalItem {
    let waiting = request.state == ApprovalState::Pending;
    let decision = if waiting {
        may_decide(context, actor, &request)
    } else {
        Err(format!("It is {}.", request.state.words()))
    };
    ApprovalItem {
        may_decide: decision.is_ok(),
        why_not: decision.err(),
        may_withdraw: waiting && actor.subject == request.requester.subject,
        request,
    }
}

/// The requests the filter names, newest first, a page at a time, with what `actor` may do,
/// how many match in all, and every budget.
pub async fn list(
    context: &ServiceContext,
    actor: &Actor,
    filter: &ApprovalFilter,
) -> Result<ApprovalsView, ServiceError> {
    let state = filter.state().map_err(ServiceError::invalid)?;
    let page = filter.page().map_err(ServiceError::invalid)?;
    let named = |text: &Option<String>| {
        text.as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    let (requests, total) = context
        .approvals
        .list(ApprovalQuery {
            state,
            team: named(&filter.team),
            cluster: named(&filter.cluster),
            limit: APPROVALS_PAGE,
            offset: (page - 1).saturating_mul(APPROVALS_PAGE),
        })
        .await?;
    let requests = requests
        .into_iter()
        .map(|r| item(context, actor, r))
        .collect();
    // The budgets need the fleet; the requests are shown without them when it is not read yet.
    let budgets = budget::budgets(context).await.unwrap_or_default();
    Ok(ApprovalsView {
        requests,
        budgets,
        total,
        page,
    })
}

/// One request with what `actor` may do with it.
pub async fn get(
    context: &ServiceContext,
    actor: &Actor,
    id: &str,
) -> Result<ApprovalItem, ServiceError> {
    let request = load(context, id).await?;
    Ok(item(context, actor, request))
}

/// How many requests wait on `actor`: their own, and those of others they may decide. Counted
/// by the database, however many there are.
pub async fn waiting_on(context: &ServiceContext, actor: &Actor) -> Result<u64, ServiceError> {
    if context.policy.budgets.is_empty() {
        return Ok(0);
    }
    let counts = context
        .approvals
        .pending_counts(actor.subject.clone(), None)
        .await?;
    Ok(counts
        .iter()
        .filter(|c| {
            c.own
                || context
                    .policy
                    .may_approve(actor, &c.team, &c.cluster)
                    .is_ok()
        })
        .map(|c| c.count)
        .sum())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{
        model::{
            arn::RevisionRef, audit::AuditRecord, budget::BudgetRule, deployment::DeployRequest,
            identity::Role,
        },
        service::{budget::budgets, deployments::deploy, fake::Fake},
    };

    /// A fake where team `search` may hold `budget_mib` on `prod`, approved by `search-leads`.
    fn fake_with_budget(budget_mib: u64) -> Arc<Fake> {
        let fake = Fake::new();
        *fake.budgets.lock().unwrap() = vec![BudgetRule {
            team: "search".into(),
            cluster: "prod".into(),
            gpu_memory_mib: budget_mib,
            whole_gpus: None,
            monthly_cost_cents: None,
            approvers: vec!["search-leads".into()],
        }];
        fake
    }

    fn embed_2() -> DeployRequest {
        DeployRequest {
            revision: RevisionRef::number(2),
            expected_revision: RevisionRef::number(1),
            description: "bigger batch for the launch".into(),
            ..DeployRequest::default()
        }
    }

    fn admin() -> Actor {
        Actor {
            subject: "root".into(),
            email: Some("root@example.com".into()),
            groups: vec!["platform".into()],
            role: Role::Admin,
            ..Fake::deployer()
        }
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
        let fake = fake_with_budget(3 * 1024);
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
            (asked.actor.as_str(), asked.outcome),
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
        assert_eq!(deployed.actor, "ana", "sent as the requester's");
        assert_eq!(deployed.approved_by.as_deref(), Some("cy"));
        assert_eq!(deployed.approval_id.as_deref(), Some(id.as_str()));
        assert_eq!(deployed.outcome, Outcome::InProgress);
        assert_eq!(done.audit_id.as_deref(), Some(deployed.id.as_str()));
        let approval = &of(&fake, AuditAction::Approve)[0];
        assert_eq!(approval.actor, "cy");
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
        let fake = fake_with_budget(8 * 1024);
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
        let fake = fake_with_budget(3 * 1024);
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
        assert_eq!(of(&fake, AuditAction::Reject)[0].actor, "cy");
        let late = approve(&fake.context(), &admin(), &id, "")
            .await
            .unwrap_err();
        assert_eq!(late.status(), 409);
        assert!(late.message().contains("rejected"), "{late}");
    }

    #[tokio::test]
    async fn only_an_approver_other_than_the_requester_decides() {
        let fake = fake_with_budget(3 * 1024);
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
        let fake = fake_with_budget(3 * 1024);
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
        let fake = fake_with_budget(3 * 1024);
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
        let fake = fake_with_budget(3 * 1024);
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
        let fake = fake_with_budget(3 * 1024);
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
        let fake = fake_with_budget(3 * 1024);
        let before = budgets(&fake.context()).await.unwrap();
        assert_eq!(before[0].held_mib, 2048);
        assert_eq!(before[0].pending_mib, 0);
        ask_embed_2(&fake).await;
        let after = budgets(&fake.context()).await.unwrap();
        assert_eq!((after[0].held_mib, after[0].pending_mib), (2048, 2048));
        assert_eq!(after[0].pending_requests, 1);
        assert!(after[0].over());
    }
}
