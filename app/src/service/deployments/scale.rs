//! A change of a service's desired count: the checks (who, the count the user saw, ECS's quota,
//! the team's budget — past it, a request for approval), the audit intent before UpdateService
//! and the outcome after, under the service's deploy lock.

use super::{
    deploy::{lock_or_refuse, refusal},
    running,
    send::{gate_then_send, Sender},
};
use crate::{
    model::{
        arn::{RevisionRef, TaskDefinitionId},
        audit::{AuditAction, AuditIntent, AuditOutcome, Lock, Outcome},
        budget::{BudgetVerdict, Delta},
        deployment::{DeployAnswer, DeployRequest, ScaleRequest, MAX_DESIRED},
        identity::Actor,
        task_definition::check_description,
        ServiceError, ServiceRef,
    },
    service::{
        budget::{self, Approved},
        context::ServiceContext,
        lookup, requests,
    },
};

/// `family:N × count`, the audit record's form of a service's size (`from_revision` and
/// `to_revision`), which a reconcile reads back.
pub(super) fn sized(runs: &str, desired: u32) -> String {
    format!("{runs} × {desired}")
}

/// The count of a [`sized`] text.
pub(super) fn size_of(text: &str) -> Option<u32> {
    text.rsplit_once(" × ")?.1.parse().ok()
}

/// Sets `cluster/service`'s desired count after the checks; past the team's budget, a request
/// for approval instead.
pub async fn scale(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    service: &str,
    request: ScaleRequest,
) -> Result<DeployAnswer, ServiceError> {
    let sender = Sender {
        actor,
        approved: None,
    };
    scale_as(context, sender, cluster, service, request).await
}

/// The scale of an approved request, as its requester's.
pub async fn scale_approved(
    context: &ServiceContext,
    requester: &Actor,
    cluster: &str,
    service: &str,
    request: ScaleRequest,
    approved: Approved,
) -> Result<DeployAnswer, ServiceError> {
    let sender = Sender {
        actor: requester,
        approved: Some(approved),
    };
    scale_as(context, sender, cluster, service, request).await
}

/// A scale's checks, then the one path of a change.
async fn scale_as(
    context: &ServiceContext,
    sender: Sender<'_>,
    cluster: &str,
    service: &str,
    request: ScaleRequest,
) -> Result<DeployAnswer, ServiceError> {
    check_description(&request.description).map_err(ServiceError::invalid)?;
    if request.desired > MAX_DESIRED {
        return Err(ServiceError::invalid(format!(
            "desired {} is more than ECS's {MAX_DESIRED} tasks per service; ask for fewer",
            request.desired
        )));
    }
    let snapshot = lookup::snapshot(context)?;
    let (found, runs) = running(&snapshot, cluster, service)?;
    let resource = format!("{cluster}/{service}");
    let intent = |runs: &TaskDefinitionId, from: u32| AuditIntent {
        from_revision: Some(sized(&runs.to_string(), from)),
        to_revision: Some(sized(&runs.to_string(), request.desired)),
        description: Some(request.description.trim().to_string()).filter(|d| !d.is_empty()),
        ..AuditIntent::by(sender.actor, AuditAction::Scale, resource.clone())
    };
    let refused = intent(&runs, request.expected_desired);
    sender
        .may_change(context, &found, &resource, refused)
        .await?;
    // The count now, and the revision it counts, from ECS itself rather than the snapshot.
    let live = context
        .ecs
        .service(cluster.to_string(), service.to_string())
        .await?;
    let runs_now = TaskDefinitionId::parse(&live.task_definition).unwrap_or_else(|| runs.clone());
    still_as_seen(&resource, &request, live.desired, &runs_now)?;
    let intent = intent(&runs_now, live.desired);
    let what = format!(
        "{} from {} to {} tasks",
        if request.desired > live.desired {
            "scaling up"
        } else {
            "scaling down"
        },
        live.desired,
        request.desired
    );
    let change = budget::Change {
        cluster,
        service: &found,
        before: (live.desired, &runs_now),
        after: (request.desired, &runs_now),
        what: &what,
    };
    let desired = request.desired;
    let ask = ask_for(cluster, &found, request, &runs_now, live.desired);
    let (cluster_name, service_name) = (cluster.to_string(), service.to_string());
    let send = move |owned: ServiceContext, record: String| async move {
        send_scale(&owned, &cluster_name, &service_name, desired, record).await
    };
    gate_then_send(context, &sender, &snapshot, change, intent, ask, send).await
}

/// Past the budget: a request that binds the revision the count is of, from the count ECS
/// has (`from`) to the one asked for.
fn ask_for<'a>(
    cluster: &'a str,
    found: &'a ServiceRef,
    request: ScaleRequest,
    runs_now: &TaskDefinitionId,
    from: u32,
) -> impl FnOnce(Delta, BudgetVerdict) -> requests::Asked<'a> {
    let runs_now = runs_now.clone();
    move |delta, verdict| {
        let bound = RevisionRef {
            family: Some(runs_now.family.clone()),
            number: runs_now.revision,
        };
        let desired = request.desired;
        requests::Asked {
            cluster,
            service: found,
            request: DeployRequest {
                revision: bound.clone(),
                expected_revision: bound.clone(),
                ..DeployRequest::default()
            },
            scale: Some(ScaleRequest {
                expected_revision: Some(bound),
                ..request
            }),
            action: AuditAction::Scale,
            from: sized(&runs_now.to_string(), from),
            target: sized(&runs_now.to_string(), desired),
            diff: "[]".into(),
            pre_check: "not simulated for a change of the desired count".into(),
            delta,
            verdict,
            creation: None,
        }
    }
}

/// Refuses a change of the count when ECS says the count or the revision it counts is no
/// longer what the user saw, or the count is already the one asked for.
fn still_as_seen(
    resource: &str,
    request: &ScaleRequest,
    desired_now: u32,
    runs_now: &TaskDefinitionId,
) -> Result<(), ServiceError> {
    if desired_now != request.expected_desired {
        return Err(ServiceError::conflict(format!(
            "{resource} now has a desired count of {desired_now}, not {} as when you looked: someone changed it. Look again.",
            request.expected_desired
        )));
    }
    if let Some(expected) = &request.expected_revision {
        let named = expected
            .of_family(&runs_now.family)
            .map_err(ServiceError::conflict)?;
        if named != runs_now.revision {
            return Err(ServiceError::conflict(format!(
                "{resource} now runs {runs_now}, not {}:{named} as when you looked: another deploy changed it, so this count would be of other tasks. Look again.",
                runs_now.family
            )));
        }
    }
    if desired_now == request.desired {
        return Err(ServiceError::invalid(format!(
            "{resource} already has a desired count of {desired_now}; choose another"
        )));
    }
    Ok(())
}

/// Under the deploy lock: UpdateService with the desired count, and the outcome.
async fn send_scale(
    context: &ServiceContext,
    cluster: &str,
    service: &str,
    desired: u32,
    id: String,
) -> Result<DeployAnswer, ServiceError> {
    let lock = Lock::Service {
        cluster: cluster.to_string(),
        service: service.to_string(),
    };
    let resource = lock.key();
    lock_or_refuse(context, &lock, &id, AuditAction::Scale).await?;
    let sent = context
        .ecs_writes
        .scale_service(cluster.to_string(), service.to_string(), desired)
        .await;
    let outcome = match &sent {
        Ok(updated) => AuditOutcome {
            outcome: Outcome::Succeeded,
            request_id: updated.request_id.clone(),
            detail: Some(format!(
                "desired count set to {desired}; ECS starts or stops tasks to match"
            )),
            ..AuditOutcome::default()
        },
        Err(ServiceError::NoAnswer { message }) => AuditOutcome {
            outcome: Outcome::Unknown,
            detail: Some(message.clone()),
            ..AuditOutcome::default()
        },
        Err(error) => refusal(error.message().to_string()),
    };
    let unknown = outcome.outcome == Outcome::Unknown;
    let recorded = context.audit.finish(id.clone(), outcome).await;
    // An answer that never came keeps the lock until a reconcile asks ECS.
    let unlocked = if unknown {
        Ok(())
    } else {
        context.audit.unlock(lock, id.clone()).await
    };
    let updated = sent?;
    recorded.map_err(|error| {
        error.with_suffix(&format!(
            "; the desired count of {resource} was set to {desired}, but the audit log could not record it"
        ))
    })?;
    unlocked.map_err(|error| {
        error.with_suffix(&format!(
            "; the desired count of {resource} was set to {desired}, but {resource} stays locked for other changes for up to five minutes"
        ))
    })?;
    Ok(DeployAnswer {
        audit_id: id,
        deployment_id: updated.deployment_id,
        request_id: updated.request_id,
        action: AuditAction::Scale,
        approval: None,
        already_asked: false,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{
        model::budget::BudgetRule,
        service::{approvals::approve, fake::Fake},
    };

    fn to(desired: u32, expected: u32) -> ScaleRequest {
        ScaleRequest {
            desired,
            expected_desired: expected,
            expected_revision: None,
            description: "launch traffic".into(),
        }
    }

    #[test]
    fn a_size_reads_back() {
        assert_eq!(size_of(&sized("embed:1", 12)), Some(12));
        assert_eq!(size_of("embed:1"), None);
    }

    #[tokio::test]
    async fn a_scale_is_audited_and_sent_with_the_count_the_user_saw() {
        let fake = Fake::new();
        let context = fake.context();
        let stale = scale(&context, &Fake::deployer(), "prod", "embed", to(3, 2))
            .await
            .unwrap_err();
        assert_eq!(stale.status(), 409);
        assert!(
            stale.message().contains("desired count of 1, not 2"),
            "{stale}"
        );
        let answer = scale(&context, &Fake::deployer(), "prod", "embed", to(3, 1))
            .await
            .unwrap();
        assert_eq!(answer.action, AuditAction::Scale);
        assert!(fake.calls().iter().any(|c| c == "ecs.scale_service 3"));
        let record = fake.records().pop().unwrap();
        assert_eq!(record.outcome, Outcome::Succeeded);
        assert_eq!(record.from_revision.as_deref(), Some("embed:1 × 1"));
        assert_eq!(record.to_revision.as_deref(), Some("embed:1 × 3"));
        let refused = scale(&context, &Fake::outsider(), "prod", "embed", to(5, 3))
            .await
            .unwrap_err();
        assert_eq!(refused.status(), 403);
        let huge = scale(&context, &Fake::deployer(), "prod", "embed", to(9_999, 3))
            .await
            .unwrap_err();
        assert_eq!(huge.status(), 400);
    }

    #[tokio::test]
    async fn a_scale_past_the_budget_waits_for_approval_then_is_sent() {
        let fake = Fake::new();
        *fake.budgets.lock().unwrap() = vec![BudgetRule {
            team: "search".into(),
            cluster: "prod".into(),
            gpu_memory_mib: 4096,
            whole_gpus: None,
            monthly_cost_cents: None,
            approvers: vec!["search-leads".into()],
        }];
        let context = fake.context();
        // Within: 1 → 2 tasks of 2 GiB is 4 GiB.
        let answer = scale(&context, &Fake::deployer(), "prod", "embed", to(2, 1))
            .await
            .unwrap();
        assert_eq!(answer.approval, None);
        // Past: 2 → 4 tasks adds 4 GiB to the snapshot's 2 GiB.
        let asked = scale(&context, &Fake::deployer(), "prod", "embed", to(4, 2))
            .await
            .unwrap();
        let id = asked.approval.expect("waits");
        assert!(!fake.calls().iter().any(|c| c == "ecs.scale_service 4"));
        let request = context.approvals.get(id.clone()).await.unwrap().unwrap();
        assert_eq!(request.title(), "Scale prod/embed from 2 to 4 tasks");
        assert!(
            request
                .arithmetic
                .contains("scaling up from 2 to 4 tasks adds 4 GiB"),
            "{}",
            request.arithmetic
        );
        let done = approve(&context, &Fake::approver(), &id, "").await.unwrap();
        assert!(fake.calls().iter().any(|c| c == "ecs.scale_service 4"));
        let record = fake
            .records()
            .into_iter()
            .rfind(|r| r.action == AuditAction::Scale)
            .unwrap();
        assert_eq!(record.who.actor, "ana");
        assert_eq!(record.approved_by.as_deref(), Some("cy"));
        assert_eq!(done.audit_id.as_deref(), Some(record.id.as_str()));
    }
}
