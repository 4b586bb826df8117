//! Approvals: the decisions about requests for changes past a team's budget — approve (the
//! checks run again, and the change is sent as the requester's as they are now, approved by the
//! approver), reject, withdraw — each audited with its actor, and the reads of requests. A
//! request is decided once: the store moves it out of `pending` atomically, on one replica or
//! several. The budget itself is judged in [`crate::service::budget`]; requests are made in
//! [`crate::service::requests`].

use crate::{
    model::{
        approval::{
            note_problem, ApprovalDecision, ApprovalFilter, ApprovalItem, ApprovalRequest,
            ApprovalState, ApprovalsView, APPROVALS_PAGE,
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
        deployments, detached, new_service,
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

/// A decision named by its word: `approve`, `reject` or `withdraw`; another word is refused
/// with what the words are. The request as it stands after, as pages and the API show it.
pub async fn decide(
    context: &ServiceContext,
    actor: &Actor,
    id: &str,
    decision: &str,
    note: &str,
) -> Result<ApprovalRequest, ServiceError> {
    let decided = match decision
        .parse::<ApprovalDecision>()
        .map_err(ServiceError::invalid)?
    {
        ApprovalDecision::Approve => approve(context, actor, id, note).await,
        ApprovalDecision::Reject => reject(context, actor, id, note).await,
        ApprovalDecision::Withdraw => withdraw(context, actor, id, note).await,
    };
    decided.map(ApprovalRequest::shown)
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

/// How an approved request ended: sent (with the record to watch), or refused by the checks
/// that ran again, in words for the request and its record.
fn how_it_ended(
    approver: &Actor,
    request: &ApprovalRequest,
    sent: Result<DeployAnswer, ServiceError>,
) -> (ApprovalState, String, Option<String>, Option<ServiceError>) {
    match sent {
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
    }
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
    let (state, detail, audit_id, error) = how_it_ended(approver, &request, sent);
    settle(state, detail.clone(), audit_id).await?;
    // The approval's record says how it ended.
    let recorded = context
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
    if let Err(recording) = recorded {
        return Err(recording.with_suffix(&format!(
            "; request {id} is settled ({detail}), but the approval's own audit record could not be finished"
        )));
    }
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
    if let Some(creation) = &request.creation {
        return new_service::create_approved(
            context,
            requester,
            &request.cluster,
            creation.form.clone(),
            approved,
        )
        .await;
    }
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
        request: request.shown(),
        read_at: super::clock::now(),
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
mod tests;
