//! The state of a deployment, from its watch or from its audit record and ECS; and at start,
//! the records a crash left `pending` or `in_progress` settled by asking ECS.

use super::deploy::refusal;
use crate::{
    model::{
        arn::TaskDefinitionId,
        audit::{AuditAction, AuditFilter, AuditOutcome, AuditRecord, Outcome},
        deployment::{RolloutResult, WatchState},
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

/// At start: every record left `pending` by a crash between its intent and its AWS call is
/// settled by asking ECS what the service runs; every rollout `in_progress` is watched again.
/// The number of records settled; an error when some could not be.
pub async fn reconcile(context: &ServiceContext) -> Result<u32, ServiceError> {
    let mut settled = 0;
    let mut failures: Vec<ServiceError> = Vec::new();
    // Both lists first: a pending record settled as sent is in progress next.
    let mut lists = Vec::new();
    for outcome in [Outcome::Pending, Outcome::InProgress] {
        let records = context
            .audit
            .list(AuditFilter {
                outcome: Some(outcome.as_str().into()),
                limit: Some(10_000),
                ..AuditFilter::default()
            })
            .await?;
        lists.push((outcome, records));
    }
    for (outcome, records) in lists {
        for record in records {
            match settle(context, outcome, record).await {
                Ok(true) => settled += 1,
                Ok(false) => {}
                Err(error) => failures.push(error),
            }
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

/// Settles one record left `pending` or `in_progress`; whether it was settled.
async fn settle(
    context: &ServiceContext,
    outcome: Outcome,
    record: AuditRecord,
) -> Result<bool, ServiceError> {
    if record.action == AuditAction::Register {
        if outcome != Outcome::Pending {
            return Ok(false);
        }
        let lost = AuditOutcome {
            outcome: Outcome::Failed,
            detail: Some("the server stopped before ECS answered; see the family's revisions for whether it was registered".into()),
            ..AuditOutcome::default()
        };
        context.audit.finish(record.id, lost).await?;
        return Ok(true);
    }
    let Some((cluster, service)) = record.resource.split_once('/') else {
        return Ok(false);
    };
    if outcome == Outcome::InProgress {
        state_of_record(context, record).await;
        return Ok(true);
    }
    let Ok(live) = context
        .ecs
        .service(cluster.to_string(), service.to_string())
        .await
    else {
        // ECS cannot say now; the next start tries again.
        return Ok(false);
    };
    let target = record.to_revision.clone().unwrap_or_default();
    let primary = live
        .deployments
        .iter()
        .find(|d| d.status == "PRIMARY")
        .cloned();
    let sent = primary.as_ref().is_some_and(|d| {
        TaskDefinitionId::parse(&d.task_definition).map(|id| id.to_string()) == Some(target.clone())
    });
    let settled = if sent {
        AuditOutcome {
            outcome: Outcome::InProgress,
            deployment_id: primary.map(|d| d.id),
            detail: Some("reconciled at start: ECS runs the deployment".into()),
            ..AuditOutcome::default()
        }
    } else {
        refusal("reconciled at start: the server stopped before UpdateService was sent".into())
    };
    context.audit.finish(record.id.clone(), settled).await?;
    context.audit.unlock(record.resource.clone()).await?;
    if sent {
        if let Some(record) = context.audit.get(record.id).await? {
            state_of_record(context, record).await;
        }
    }
    Ok(true)
}
