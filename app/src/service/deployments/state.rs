//! The state of a deployment, from its watch or from its audit record and ECS; and the records
//! left `pending`, `unknown` or `in_progress` (by a crash, a lost answer, a gone replica) settled
//! by asking ECS, at start and then periodically.

use super::deploy::refusal;
use crate::model::words::DeploymentStatus;
use crate::{
    model::{
        arn::TaskDefinitionId,
        audit::{AuditAction, AuditFilter, AuditOutcome, AuditRecord, Lock, Outcome},
        deployment::{LiveDeployment, LiveEvent, LiveService, RolloutResult, WatchState},
        ServiceError,
    },
    service::{clock, context::ServiceContext, ports::RolloutToWatch},
};

/// The state of the deployment of audit record `id`: from its watch when this server follows
/// it, else from the record and ECS; a rollout still in progress gets a watch again (after a
/// restart). `None` for no such deployment.
pub async fn deployment_state(
    context: &ServiceContext,
    id: &str,
) -> Result<Option<WatchState>, ServiceError> {
    if let Some(state) = context.watches.current(id) {
        return Ok(Some(state));
    }
    let Some(record) = context.audit.get(id.to_string()).await? else {
        return Ok(None);
    };
    if record.action == AuditAction::Register {
        return Ok(None);
    }
    Ok(Some(state_of_record(context, record).await))
}

/// A deployment's state from its audit record and what ECS says of the service now.
async fn state_of_record(context: &ServiceContext, record: AuditRecord) -> WatchState {
    let (cluster, service) = record
        .resource
        .split_once('/')
        .map(|(c, s)| (c.to_string(), s.to_string()))
        .unwrap_or_default();
    // The service as it is now, for the page; a failed read shows it empty.
    let live = context
        .ecs
        .service(cluster.clone(), service.clone())
        .await
        .unwrap_or_default();
    let mut state = WatchState {
        audit_id: record.id.clone(),
        cluster,
        service,
        action: record.action,
        deployment_id: record.deployment_id.clone(),
        target: record.to_revision.clone().unwrap_or_default(),
        from: record.from_revision.clone().unwrap_or_default(),
        live,
        read_at: clock::now(),
        ..WatchState::default()
    };
    if let Some(result) = RolloutResult::of_outcome(record.outcome) {
        state.result = Some(result);
        state.detail = record.detail.clone();
        state.progress = if result == RolloutResult::Succeeded {
            1.0
        } else {
            0.0
        };
        return state;
    }
    if matches!(record.outcome, Outcome::Unknown | Outcome::Pending) {
        // Nobody knows yet whether ECS took it: say so rather than show a rollout that may not be.
        state.detail = record.detail.clone();
        state.watch_error = Some(format!(
            "whether ECS took this {} is not known yet{}; the console asks ECS and settles it within {} s",
            record.action.as_str(),
            record.detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default(),
            GRACE.as_secs() * 2
        ));
        return state;
    }
    if record.outcome == Outcome::InProgress {
        let from = TaskDefinitionId::parse(&state.from).map_or(state.from.clone(), |id| {
            id.arn_like(&state.live.task_definition)
        });
        return context.watches.start(RolloutToWatch {
            initial: state,
            from_task_definition: from,
            known_events: Vec::new(),
        });
    }
    state
}

/// How long a record must go unchanged before a periodic reconcile touches it: a change that
/// runs in this process is skipped by name, and this covers the instant between its intent and
/// its start.
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// The records a reconcile may settle now: not settled, this replica's or a gone replica's (the
/// store decides), not running in this process, and unchanged for `grace`.
pub async fn unsettled(
    context: &ServiceContext,
    grace: std::time::Duration,
) -> Result<Vec<AuditRecord>, ServiceError> {
    let cutoff = clock::rfc3339_micros(
        chrono::Utc::now() - chrono::Duration::from_std(grace).unwrap_or_default(),
    );
    Ok(context
        .audit
        .unsettled()
        .await?
        .into_iter()
        .filter(|r| !context.in_flight.contains(&r.id) && r.updated_at <= cutoff)
        .collect())
}

/// Settles `records` by asking ECS: a deploy left `pending` (the server stopped around the call)
/// or `unknown` (no answer came) is in progress when ECS runs its revision, else it did not
/// happen; a registration is registered when a revision of the family carries its audit tag;
/// a rollout `in_progress` is watched again. The number settled; an error when some could not be
/// (they are tried again next time).
pub async fn settle_all(
    context: &ServiceContext,
    records: Vec<AuditRecord>,
) -> Result<u32, ServiceError> {
    let mut settled = 0;
    let mut failures: Vec<ServiceError> = Vec::new();
    for record in records {
        match settle(context, record).await {
            Ok(true) => settled += 1,
            Ok(false) => {}
            Err(error) => failures.push(error),
        }
    }
    match failures.first() {
        None => Ok(settled),
        Some(first) => Err(ServiceError::unavailable(format!(
            "{} audit records could not be reconciled ({settled} were): {first}",
            failures.len()
        ))),
    }
}

/// [`unsettled`] then [`settle_all`]: at start with no grace, then every reconcile interval.
pub async fn reconcile(
    context: &ServiceContext,
    grace: std::time::Duration,
) -> Result<u32, ServiceError> {
    let records = unsettled(context, grace).await?;
    settle_all(context, records).await
}

/// Settles one record; whether it was settled.
async fn settle(context: &ServiceContext, record: AuditRecord) -> Result<bool, ServiceError> {
    match (record.action, record.outcome) {
        (_, Outcome::InProgress) if record.action != AuditAction::Register => {
            state_of_record(context, record).await;
            Ok(true)
        }
        (AuditAction::Register, Outcome::Pending | Outcome::Unknown) => {
            settle_registration(context, record).await
        }
        // A request or a decision sends nothing: one left pending (the server stopped between
        // its two writes) is simply recorded.
        (action, Outcome::Pending | Outcome::Unknown) if action.is_decision() => {
            context
                .audit
                .finish(
                    record.id,
                    AuditOutcome {
                        outcome: Outcome::Recorded,
                        ..AuditOutcome::default()
                    },
                )
                .await?;
            Ok(true)
        }
        (AuditAction::Reprice, Outcome::Pending | Outcome::Unknown) => {
            crate::service::cost::sealing::settle(context, record.id).await
        }
        (AuditAction::Retire, Outcome::Pending | Outcome::Unknown) => {
            settle_retirement(context, record).await
        }
        (_, Outcome::Pending | Outcome::Unknown) => settle_update(context, record).await,
        _ => Ok(false),
    }
}

/// Whether ECS made deployment `d` at or after `at` (RFC 3339); `false` when either time does
/// not read.
fn made_after(d: &LiveDeployment, at: &str) -> bool {
    let read = |text: &str| chrono::DateTime::parse_from_rfc3339(text).ok();
    match (d.created_at.as_deref().and_then(read), read(at)) {
        // ECS keeps milliseconds, the record microseconds.
        (Some(made), Some(at)) => made >= at - chrono::Duration::milliseconds(1),
        _ => false,
    }
}

/// Whether the service's events name deployment `id` before `at` (RFC 3339), or as the one
/// the circuit breaker rolled back to.
fn known_before(events: &[LiveEvent], id: &str, at: &str) -> bool {
    let read = |text: &str| chrono::DateTime::parse_from_rfc3339(text).ok();
    let named = format!("(deployment {id})");
    let rolled_back_to = format!("rolling back to deployment {id}");
    events.iter().any(|e| {
        e.message.contains(&rolled_back_to)
            || (e.message.contains(&named)
                && matches!((read(&e.at), read(at)), (Some(when), Some(at)) if when < at))
    })
}

/// The deployments other audit records of `record`'s service name as their own.
async fn owned_by_others(
    context: &ServiceContext,
    record: &AuditRecord,
) -> Result<Vec<String>, ServiceError> {
    let records = context
        .audit
        .list(AuditFilter {
            resource: Some(record.resource.clone()),
            limit: Some(10_000),
            ..AuditFilter::default()
        })
        .await?;
    Ok(records
        .into_iter()
        .filter(|other| other.id != record.id && other.resource == record.resource)
        .filter_map(|other| other.deployment_id)
        .collect())
}

/// The deployment a deploy's, rollback's or restart's record made, running `target`; `None`
/// when ECS has no deployment the record can have made, so UpdateService did not take effect.
///
/// With the deployments ECS had before the call, it is one not among them and not another
/// record's: the earliest made of those ECS lists running `target`, else the first its events
/// name (one the circuit breaker failed and rolled back, which ECS no longer lists; the watch
/// then settles it). ECS makes no deployment of its own but the rollback, which re-activates
/// one it had. No clock is compared.
async fn its_deployment(
    context: &ServiceContext,
    record: &AuditRecord,
    live: &LiveService,
    target: &str,
) -> Result<Option<String>, ServiceError> {
    let owned = owned_by_others(context, record).await?;
    let Some(prior) = record.prior_deployments.as_ref() else {
        return Ok(its_deployment_by_time(record, live, target).filter(|id| !owned.contains(id)));
    };
    let new = |id: &str| !prior.iter().any(|p| p == id) && !owned.iter().any(|o| o == id);
    let read = |text: &Option<String>| {
        text.as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    };
    let mut listed: Vec<&LiveDeployment> = live
        .deployments
        .iter()
        .filter(|d| runs(d, target) && new(&d.id))
        .collect();
    listed.sort_by_key(|d| (read(&d.created_at).is_none(), read(&d.created_at)));
    let named = live.named_deployments(&["(deployment "]);
    Ok(listed
        .iter()
        .map(|d| d.id.as_str())
        .chain(named.into_iter().filter(|id| new(id)))
        .next()
        .map(str::to_string))
}

/// Whether deployment `d` runs `target` (`family:revision`).
fn runs(d: &LiveDeployment, target: &str) -> bool {
    TaskDefinitionId::parse(&d.task_definition).map(|id| id.to_string()) == Some(target.to_string())
}

/// [`its_deployment`] for a record written before records kept the deployments ECS had: the
/// PRIMARY deployment running `target`, for a restart one ECS made after the intent, and not
/// one ECS spoke of before it or rolled back to.
fn its_deployment_by_time(
    record: &AuditRecord,
    live: &LiveService,
    target: &str,
) -> Option<String> {
    live.deployments
        .iter()
        .find(|d| d.status == DeploymentStatus::Primary)
        .filter(|d| runs(d, target))
        .filter(|d| record.action != AuditAction::Restart || made_after(d, &record.at))
        .filter(|d| !known_before(&live.events, &d.id, &record.at))
        .map(|d| d.id.clone())
}

/// A scale's or a deploy's record settled by what ECS has now: the desired count it asked for,
/// or its revision as the primary deployment (in progress, then watched); or not, and the
/// UpdateService did not take effect (or was never sent). Its lock is given back.
async fn settle_update(
    context: &ServiceContext,
    record: AuditRecord,
) -> Result<bool, ServiceError> {
    let Some((cluster, service)) = record.resource.split_once('/') else {
        return Ok(false);
    };
    let Ok(live) = context
        .ecs
        .service(cluster.to_string(), service.to_string())
        .await
    else {
        // ECS cannot say now; the next reconcile asks again.
        return Ok(false);
    };
    let scale = record.action == AuditAction::Scale;
    // What ECS has when the change took effect, and in words what it has when it did not.
    let (reached, instead) = if scale {
        let target = record
            .to_revision
            .as_deref()
            .and_then(super::scale::size_of);
        (
            target
                .filter(|target| live.desired == *target)
                .map(|target| AuditOutcome {
                    outcome: Outcome::Succeeded,
                    detail: Some(format!("reconciled: ECS has the desired count {target}")),
                    ..AuditOutcome::default()
                }),
            format!(
                "the desired count of {} is {}",
                record.resource, live.desired
            ),
        )
    } else {
        let target = record.to_revision.clone().unwrap_or_default();
        let made = its_deployment(context, &record, &live, &target).await?;
        (
            made.map(|id| AuditOutcome {
                outcome: Outcome::InProgress,
                detail: Some(format!("reconciled: ECS made deployment {id}")),
                deployment_id: Some(id),
                ..AuditOutcome::default()
            }),
            format!("ECS does not run {target} on {}", record.resource),
        )
    };
    let watch = !scale && reached.is_some();
    let settled = match (reached, record.outcome) {
        (Some(outcome), _) => outcome,
        (None, Outcome::Unknown) => AuditOutcome {
            outcome: Outcome::Failed,
            detail: Some(format!(
                "reconciled: {instead}, so UpdateService did not take effect"
            )),
            ..AuditOutcome::default()
        },
        (None, _) => refusal("reconciled: the server stopped before UpdateService was sent".into()),
    };
    context.audit.finish(record.id.clone(), settled).await?;
    if let Some(lock) = Lock::of_service_resource(&record.resource) {
        context.audit.unlock(lock, record.id.clone()).await?;
    }
    if watch {
        if let Some(record) = context.audit.get(record.id).await? {
            state_of_record(context, record).await;
        }
    }
    Ok(true)
}

/// A retirement's record settled by what ECS has now: the service deleted (DRAINING, INACTIVE
/// or no longer known), or still ACTIVE and so not deleted. Its lock is given back.
async fn settle_retirement(
    context: &ServiceContext,
    record: AuditRecord,
) -> Result<bool, ServiceError> {
    let Some((cluster, service)) = record.resource.split_once('/') else {
        return Ok(false);
    };
    let status = match context
        .ecs
        .service(cluster.to_string(), service.to_string())
        .await
    {
        Ok(live) => live.status,
        Err(error) if error.status() == 404 => "gone".to_string(),
        // ECS cannot say now; the next reconcile asks again.
        Err(_) => return Ok(false),
    };
    let settled = match (status.as_str(), record.outcome) {
        ("DRAINING" | "INACTIVE" | "gone", _) => AuditOutcome {
            outcome: Outcome::Succeeded,
            detail: Some(format!(
                "reconciled: ECS has {} {}",
                record.resource,
                if status == "gone" {
                    "no longer".to_string()
                } else {
                    status.clone()
                }
            )),
            ..AuditOutcome::default()
        },
        (_, Outcome::Unknown) => AuditOutcome {
            outcome: Outcome::Failed,
            detail: Some(format!(
                "reconciled: ECS still has {} ACTIVE, so DeleteService did not take effect; retire it again",
                record.resource
            )),
            ..AuditOutcome::default()
        },
        _ => refusal("reconciled: the server stopped before the retirement was sent".into()),
    };
    context.audit.finish(record.id.clone(), settled).await?;
    if let Some(lock) = Lock::of_service_resource(&record.resource) {
        context.audit.unlock(lock, record.id).await?;
    }
    Ok(true)
}

/// A registration's record settled by its audit tag: the revision of the family that carries
/// it, or none.
async fn settle_registration(
    context: &ServiceContext,
    record: AuditRecord,
) -> Result<bool, ServiceError> {
    let Ok(revisions) = context.ecs.revisions(record.resource.clone()).await else {
        // ECS cannot say now; the next reconcile asks again.
        return Ok(false);
    };
    let found = revisions
        .iter()
        .find(|r| r.audit_id.as_deref() == Some(record.id.as_str()));
    let outcome = match found {
        Some(revision) => AuditOutcome {
            outcome: Outcome::Registered,
            to_revision: Some(format!("{}:{}", revision.family, revision.revision)),
            detail: Some(format!(
                "reconciled: ECS has {}:{}, tagged with this record",
                revision.family, revision.revision
            )),
            ..AuditOutcome::default()
        },
        None => AuditOutcome {
            outcome: Outcome::Failed,
            detail: Some(format!(
                "reconciled: no revision of {} carries this record's tag, so nothing was registered",
                record.resource
            )),
            ..AuditOutcome::default()
        },
    };
    context.audit.finish(record.id, outcome).await?;
    Ok(true)
}
