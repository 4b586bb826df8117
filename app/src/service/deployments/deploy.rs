//! A deploy (or rollback) of a revision to a service: the checks, the audit intent before
//! UpdateService and the outcome after, the deploy lock, and the watch of the rollout.

use super::{
    pre_check, revision_number, running,
    send::{gate_then_send, Sender},
};
use crate::{
    model::{
        arn::{RevisionRef, TaskDefinitionId},
        audit::{AuditAction, AuditIntent, AuditOutcome, Lock, Outcome},
        budget::{BudgetVerdict, Delta},
        deployment::{DeployAnswer, DeployRequest, LiveService, RestartRequest, WatchState},
        identity::Actor,
        rollout::{RolloutCheck, Verdict},
        task_definition::{check_description, MaskLevel},
        ServiceError, ServiceRef,
    },
    service::{
        budget::{self, Approved},
        clock,
        context::ServiceContext,
        lookup,
        ports::RolloutToWatch,
        requests,
        task_definitions::compare_masked,
    },
};

/// The pre-check's verdict in words.
pub(crate) fn verdict_words(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Completes => "completes".to_string(),
        Verdict::Stalls { step, reason } => format!("stalls at step {step}: {reason}"),
        Verdict::Never { reason } => format!("never fits: {reason}"),
    }
}

/// An outcome that refuses with `detail`.
pub(super) fn refusal(detail: String) -> AuditOutcome {
    AuditOutcome {
        outcome: Outcome::Refused,
        detail: Some(detail),
        ..AuditOutcome::default()
    }
}

/// Rolls `request.revision` out to `cluster/service` after the checks: the revision the user
/// saw must still run (read from ECS, not the snapshot), the pre-check must complete unless
/// forced, and one deploy of a service is sent at a time (the deploy lock). The audit intent is
/// written before UpdateService and the outcome after; the rollout is then watched to its end.
/// A revision earlier than the running one is a rollback.
pub async fn deploy(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    service: &str,
    request: DeployRequest,
) -> Result<DeployAnswer, ServiceError> {
    let sender = Sender {
        actor,
        approved: None,
    };
    if request.restart {
        return Err(ServiceError::invalid(
            "restart is not a deploy's field: POST /api/v1/services/{cluster}/{service}/restart restarts a service",
        ));
    }
    deploy_as(context, sender, cluster, service, request).await
}

/// Restarts `cluster/service`: the revision it runs rolled out again as new tasks
/// (`forceNewDeployment`), with a deploy's checks — the revision the user saw must still run,
/// the pre-check, the deploy lock, the team's budget and the audit record.
pub async fn restart(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    service: &str,
    request: RestartRequest,
) -> Result<DeployAnswer, ServiceError> {
    let sender = Sender {
        actor,
        approved: None,
    };
    deploy_as(context, sender, cluster, service, request.as_deploy()).await
}

/// The deploy of an approved request, as its requester's: the same checks, and the team's use
/// no further past its budget than the request showed.
pub async fn deploy_approved(
    context: &ServiceContext,
    requester: &Actor,
    cluster: &str,
    service: &str,
    request: DeployRequest,
    approved: Approved,
) -> Result<DeployAnswer, ServiceError> {
    let sender = Sender {
        actor: requester,
        approved: Some(approved),
    };
    deploy_as(context, sender, cluster, service, request).await
}

/// A deploy's checks, then the one path of a change (past the team's budget, a request for
/// approval unless the sender carries one).
async fn deploy_as(
    context: &ServiceContext,
    sender: Sender<'_>,
    cluster: &str,
    service: &str,
    request: DeployRequest,
) -> Result<DeployAnswer, ServiceError> {
    check_description(&request.description).map_err(ServiceError::invalid)?;
    let snapshot = lookup::snapshot(context)?;
    let (found, runs) = running(&snapshot, cluster, service)?;
    let (revision, expected) = revisions_asked(&request, &runs.family)?;
    let resource = format!("{cluster}/{service}");
    let action = if request.restart {
        if revision != expected {
            return Err(ServiceError::invalid(format!(
                "a restart rolls out the revision running ({expected}) again, not {revision}; POST …/deploy rolls another revision out"
            )));
        }
        AuditAction::Restart
    } else if revision < expected {
        AuditAction::Rollback
    } else {
        AuditAction::Deploy
    };
    let description = Some(request.description.trim().to_string()).filter(|d| !d.is_empty());
    let refused = AuditIntent {
        from_revision: Some(format!("{}:{expected}", runs.family)),
        to_revision: Some(format!("{}:{revision}", runs.family)),
        description: description.clone(),
        ..AuditIntent::by(sender.actor, action, resource.clone())
    };
    sender
        .may_change(context, &found, &resource, refused)
        .await?;
    let sending = Sending {
        cluster: cluster.to_string(),
        service: service.to_string(),
        resource: resource.clone(),
        target: TaskDefinitionId::new(runs.family.clone(), revision),
        from: TaskDefinitionId::new(runs.family, expected),
        action,
    };
    // A change made since the person looked is refused before the pre-check's reads.
    let before = running_now(context, &sending).await?;
    let check = pre_check(
        context,
        sender.actor,
        cluster,
        service,
        Some(RevisionRef::number(revision)),
    )
    .await?;
    still_active(&sending.target, check.target.active)?;
    let pre_check_words = pre_check_passed(check.rollout, request.force)?;
    let diff = masked_diff(context, &sending).await?;
    let intent = AuditIntent {
        from_revision: Some(sending.from.to_string()),
        to_revision: Some(sending.target.to_string()),
        diff: diff.clone(),
        pre_check: Some(pre_check_words.clone()),
        description,
        ..AuditIntent::by(sender.actor, action, resource)
    };
    let (from, target, desired) = (sending.from.clone(), sending.target.clone(), before.desired);
    let what = format!("this {}", action.as_str());
    let change = budget::Change {
        cluster,
        service: &found,
        before: (desired, &from),
        after: (desired, &target),
        what: &what,
    };
    let ask = ask_for(cluster, &found, request, &sending, (diff, pre_check_words));
    let send = move |owned: ServiceContext, record: String| async move {
        send_after_intent(&owned, sending, record, before).await
    };
    gate_then_send(context, &sender, &snapshot, change, intent, ask, send).await
}

/// Past the budget: a request that binds the exact revisions, with their family, and what the
/// user was shown (the masked diff and the pre-check's words).
fn ask_for<'a>(
    cluster: &'a str,
    found: &'a ServiceRef,
    request: DeployRequest,
    sending: &Sending,
    (diff, pre_check): (String, String),
) -> impl FnOnce(Delta, BudgetVerdict) -> requests::Asked<'a> {
    let (from, target, action) = (sending.from.clone(), sending.target.clone(), sending.action);
    move |delta, verdict| {
        let bound = |number: u32| RevisionRef {
            family: Some(target.family.clone()),
            number,
        };
        requests::Asked {
            cluster,
            service: found,
            request: DeployRequest {
                revision: bound(target.revision),
                expected_revision: bound(from.revision),
                ..request
            },
            scale: None,
            action,
            from: from.to_string(),
            target: target.to_string(),
            diff,
            pre_check,
            delta,
            verdict,
            creation: None,
        }
    }
}

/// The revision asked for and the one the user saw running, as numbers of `family`.
fn revisions_asked(request: &DeployRequest, family: &str) -> Result<(u32, u32), ServiceError> {
    let revision = revision_number(&request.revision, family)?;
    let expected = revision_number(&request.expected_revision, family)?;
    if revision == 0 || expected == 0 {
        return Err(ServiceError::invalid(
            "revision and expected_revision are revision numbers from 1",
        ));
    }
    Ok((revision, expected))
}

/// What the service runs now, from ECS itself rather than the snapshot, refused unless it is
/// what the person saw ([`still_as_seen`]).
async fn running_now(
    context: &ServiceContext,
    sending: &Sending,
) -> Result<LiveService, ServiceError> {
    let before = context
        .ecs
        .service(sending.cluster.clone(), sending.service.clone())
        .await?;
    still_as_seen(sending, &before)?;
    Ok(before)
}

/// Refuses a deploy when ECS says the service no longer runs what the user saw, or already runs
/// the target (and it is not a restart).
fn still_as_seen(sending: &Sending, before: &LiveService) -> Result<(), ServiceError> {
    let Sending {
        resource,
        target,
        from,
        ..
    } = sending;
    let family = &target.family;
    let now_running = TaskDefinitionId::parse(&before.task_definition).map_or(0, |id| id.revision);
    if now_running != from.revision {
        return Err(ServiceError::conflict(format!(
            "{resource} now runs {family}:{now_running}, not {from} as when you looked: another deploy changed it. Review the change against {family}:{now_running} and deploy again."
        )));
    }
    if target.revision == now_running && sending.action != AuditAction::Restart {
        return Err(ServiceError::invalid(format!(
            "{resource} already runs {family}:{now_running}; choose another revision, or restart it (POST …/restart) for new tasks of the same one"
        )));
    }
    Ok(())
}

/// Refuses a revision ECS has deregistered: it does not roll an inactive revision out.
fn still_active(target: &TaskDefinitionId, active: bool) -> Result<(), ServiceError> {
    if !active {
        return Err(ServiceError::conflict(format!(
            "{target} is INACTIVE (deregistered), and ECS does not roll an inactive revision out; register it again as a new revision, or choose another"
        )));
    }
    Ok(())
}

/// The pre-check's verdict in the audit log's words, or a refusal when the rollout would not
/// complete and the deploy is not forced.
fn pre_check_passed(rollout: RolloutCheck, force: bool) -> Result<String, ServiceError> {
    let verdict = verdict_words(&rollout.verdict);
    if rollout.verdict == Verdict::Completes {
        return Ok(verdict);
    }
    if !force {
        return Err(ServiceError::PreCheck {
            message: format!(
                "The pre-check says the rollout will not complete ({verdict}). Send it with force to deploy anyway."
            ),
            check: Box::new(rollout),
        });
    }
    Ok(format!("{verdict} (deployed anyway)"))
}

/// The diff of the deploy as the audit log and the approvers keep it: they may be of any team,
/// so it tells what changed, not the values.
async fn masked_diff(context: &ServiceContext, sending: &Sending) -> Result<String, ServiceError> {
    Ok(compare_masked(
        context,
        &sending.target.family,
        sending.from.revision,
        sending.target.revision,
        Some(MaskLevel::Everything),
    )
    .await?
    .and_then(|c| serde_json::to_string(&c.diff).ok())
    .unwrap_or_else(|| "[]".into()))
}

/// What follows a deploy's intent: the deploy lock, UpdateService and the outcome. A call that
/// got no answer is recorded `unknown` and keeps the lock until a reconcile asks ECS.
async fn send_after_intent(
    context: &ServiceContext,
    sending: Sending,
    id: String,
    before: LiveService,
) -> Result<DeployAnswer, ServiceError> {
    let resource = sending.resource.clone();
    let lock = Lock::Service {
        cluster: sending.cluster.clone(),
        service: sending.service.clone(),
    };
    lock_or_refuse(context, &lock, &id, sending.action).await?;
    let sent = send_update(context, &sending, &id, &before).await;
    if let Err(ServiceError::NoAnswer { message }) = &sent {
        let unknown = AuditOutcome {
            outcome: Outcome::Unknown,
            detail: Some(message.clone()),
            ..AuditOutcome::default()
        };
        let recorded = context.audit.finish(id.clone(), unknown).await;
        let message = format!(
            "{message}. Until then {resource} takes no other deploy; the record is /audit?resource={resource}"
        );
        return Err(match recorded {
            Ok(()) => ServiceError::no_answer(message),
            Err(error) => error.with_suffix(&format!("; and {message}")),
        });
    }
    let unlocked = context.audit.unlock(lock, id.clone()).await;
    match sent {
        Ok(answer) => match unlocked {
            Ok(()) => Ok(answer),
            Err(error) => Err(error.with_suffix(&format!(
                "; the deploy was sent and is watched at /rollouts/{}, but {resource} stays locked for other deploys for up to five minutes",
                answer.audit_id
            ))),
        },
        Err(refused) => {
            context
                .audit
                .finish(id, refusal(refused.message().to_string()))
                .await
                .map_err(|error| {
                    error.with_suffix(&format!("; nothing was sent: {}", refused.message()))
                })?;
            Err(refused)
        }
    }
}

/// Takes the lock of a service for record `id` about to send `action`, or finishes the record
/// refused and says that another change of the service is being sent.
pub(crate) async fn lock_or_refuse(
    context: &ServiceContext,
    lock: &Lock,
    id: &str,
    action: AuditAction,
) -> Result<(), ServiceError> {
    let locked = context
        .audit
        .lock(lock.clone(), id.to_string())
        .await
        .map_err(|error| error.with_suffix("; nothing was sent"))?;
    if locked {
        return Ok(());
    }
    let what = if action == AuditAction::Scale {
        "change"
    } else {
        "deploy"
    };
    let resource = lock.key();
    let message = format!(
        "Another {what} of {resource} is being sent right now; wait for it and look again."
    );
    context
        .audit
        .finish(id.to_string(), refusal(message.clone()))
        .await
        .map_err(|error| error.with_suffix(&format!("; nothing was sent: {message}")))?;
    Err(ServiceError::conflict(message))
}

/// A rollback: a deploy of an earlier revision of the family — any earlier one — with the
/// same checks.
pub async fn rollback(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    service: &str,
    request: DeployRequest,
) -> Result<DeployAnswer, ServiceError> {
    if request.revision.number >= request.expected_revision.number {
        return Err(ServiceError::invalid(format!(
            "a rollback goes to an earlier revision than the running {}; POST …/deploy rolls {} out",
            request.expected_revision.number, request.revision.number
        )));
    }
    deploy(context, actor, cluster, service, request).await
}

/// A deploy being sent: where, what, from what, and its kind.
struct Sending {
    cluster: String,
    service: String,
    /// `cluster/service`, the deploy lock's and the audit record's resource.
    resource: String,
    target: TaskDefinitionId,
    from: TaskDefinitionId,
    action: AuditAction,
}

/// ECS's service read once more under the lock: refused when it changed since the deploy was
/// checked; else the deployments it has are kept on the record before the call, so that a
/// reconcile of an unanswered call tells the deployment it made as the one not among them,
/// whatever the clocks say.
async fn unchanged_then_kept(
    context: &ServiceContext,
    sending: &Sending,
    id: &str,
    before: &LiveService,
) -> Result<LiveService, ServiceError> {
    let Sending {
        cluster, service, ..
    } = sending;
    let now_running = context
        .ecs
        .service(cluster.to_string(), service.to_string())
        .await?;
    if now_running.task_definition != before.task_definition {
        return Err(ServiceError::conflict(format!(
            "{cluster}/{service} changed while this deploy was checked: it now runs {}. Look again.",
            TaskDefinitionId::parse(&now_running.task_definition)
                .map_or(now_running.task_definition.clone(), |id| id.to_string())
        )));
    }
    context
        .audit
        .finish(
            id.to_string(),
            AuditOutcome {
                outcome: Outcome::Pending,
                prior_deployments: Some(now_running.known_deployments()),
                ..AuditOutcome::default()
            },
        )
        .await
        .map_err(|error| error.with_suffix("; nothing was sent"))?;
    Ok(now_running)
}

/// Under the deploy lock: checks once more that the service runs what it ran, sends
/// UpdateService, records the deployment, and starts its watch.
async fn send_update(
    context: &ServiceContext,
    sending: &Sending,
    id: &str,
    before: &LiveService,
) -> Result<DeployAnswer, ServiceError> {
    let Sending {
        cluster,
        service,
        target,
        from,
        action,
        ..
    } = sending;
    let now_running = unchanged_then_kept(context, sending, id, before).await?;
    let updated = context
        .ecs_writes
        .update_service(
            cluster.to_string(),
            service.to_string(),
            target.to_string(),
            *action == AuditAction::Restart,
        )
        .await?;
    let recorded = context
        .audit
        .finish(
            id.to_string(),
            AuditOutcome {
                outcome: Outcome::InProgress,
                request_id: updated.request_id.clone(),
                deployment_id: updated.deployment_id.clone(),
                ..AuditOutcome::default()
            },
        )
        .await;
    let known_events = now_running.events.iter().map(|e| e.id.clone()).collect();
    context.watches.start(RolloutToWatch {
        initial: WatchState {
            audit_id: id.to_string(),
            cluster: cluster.to_string(),
            service: service.to_string(),
            action: *action,
            deployment_id: updated.deployment_id.clone(),
            target: target.to_string(),
            from: from.to_string(),
            live: now_running,
            read_at: clock::now(),
            ..WatchState::default()
        },
        from_task_definition: before.task_definition.clone(),
        known_events,
    });
    if let Err(error) = recorded {
        // UpdateService was sent and the rollout is watched: say so, and that the log lags.
        return Err(ServiceError::unavailable(format!(
            "UpdateService was sent and the rollout is watched at /rollouts/{id}, but the audit log could not record it: {error}"
        )));
    }
    Ok(DeployAnswer {
        audit_id: id.to_string(),
        deployment_id: updated.deployment_id,
        request_id: updated.request_id,
        action: *action,
        approval: None,
        already_asked: false,
    })
}

#[cfg(test)]
mod tests;
