//! Retiring a service: what it frees first (its GPUs, the instances left empty, its share of the
//! cost, the requests that wait for it), then — for its team or an admin, the name typed again —
//! UpdateService to 0 and DeleteService under the service's lock, audited as one record that
//! says how far it got.

use super::{deploy::lock_or_refuse, deploy::refusal, running, scale::sized, send::Sender};
use crate::{
    model::{
        approval::ApprovalState,
        audit::{AuditAction, AuditIntent, AuditOutcome, Lock, Outcome},
        cost::{CostQuery, Grouping, Period, Span},
        identity::Actor,
        retire::{blast_radius, RetireAnswer, RetirePreview, RetireRequest},
        task_definition::check_description,
        words::RolloutState,
        ServiceError,
    },
    service::{context::ServiceContext, detached, lookup, ports::ApprovalQuery},
};

/// What retiring `cluster/service` would stop and free, and whether `actor` may.
pub async fn retire_preview(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    service: &str,
) -> Result<RetirePreview, ServiceError> {
    let snapshot = lookup::snapshot(context)?;
    let (found, runs) = running(&snapshot, cluster, service)?;
    let mut preview = blast_radius(&snapshot, cluster, &found);
    preview.runs = runs.to_string();
    let resource = format!("{cluster}/{service}");
    if let Err(reason) =
        context
            .policy
            .may_change(actor, found.team.as_deref(), &format!("Service {resource}"))
    {
        preview.reason = Some(reason);
    } else {
        preview.allowed = true;
    }
    (preview.monthly_cents, preview.cost_note) = monthly_share(context, cluster, &resource).await;
    let waiting = context
        .approvals
        .list(ApprovalQuery {
            state: Some(ApprovalState::Pending),
            cluster: Some(cluster.to_string()),
            limit: 500,
            ..ApprovalQuery::default()
        })
        .await
        .map(|(requests, _)| requests.iter().filter(|r| r.service == service).count())
        .unwrap_or(0);
    preview.waiting_requests = waiting as u64;
    if found.rollout_state == Some(RolloutState::InProgress) {
        preview.in_flight = Some(
            "a rollout of this service is in progress: retiring it stops that rollout too".into(),
        );
    }
    Ok(preview)
}

/// The service's share of its GPUs' cost a month at today's allocations, and what the figure
/// means (or why there is none).
async fn monthly_share(
    context: &ServiceContext,
    cluster: &str,
    resource: &str,
) -> (Option<i64>, String) {
    let query = CostQuery {
        period: Period::Now,
        span: Span::Month,
        group: Grouping::Service,
        cluster: Some(cluster.to_string()),
        ..CostQuery::default()
    };
    match crate::service::cost::report(context, &query).await {
        Ok(report) => {
            let row = report.rows.iter().find(|r| r.name == resource);
            let unpriced = if report.unpriced.is_empty() {
                ""
            } else {
                " Some instance types of the cluster have no price, so their GPUs count nothing here."
            };
            (
                Some(row.map_or(0, |r| r.cost_cents)),
                format!(
                    "Its share of its GPUs' cost for a month at today's allocations, by GPU memory share, as the cost review splits it. The instances bill on until they are retired or hold other tasks.{unpriced}"
                ),
            )
        }
        Err(error) => (
            None,
            format!("Its share of the cost could not be worked out: {error}"),
        ),
    }
}

/// Scales `cluster/service` to 0 and deletes it, after the checks: its team or an admin, the
/// service's name typed as confirmation, the desired count the person saw. One audit record
/// says how far it got; when ECS refuses half-way (scaled to 0, delete refused), the error says
/// what exists now.
pub async fn retire(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    service: &str,
    request: RetireRequest,
) -> Result<RetireAnswer, ServiceError> {
    check_description(&request.description).map_err(ServiceError::invalid)?;
    if request.confirm.trim() != service {
        return Err(ServiceError::invalid(format!(
            "confirm: type the service's name, {service}, to retire it{}",
            if request.confirm.trim().is_empty() {
                String::new()
            } else {
                format!(" (you typed {:?})", request.confirm.trim())
            }
        )));
    }
    let snapshot = lookup::snapshot(context)?;
    let (found, runs) = running(&snapshot, cluster, service)?;
    let resource = format!("{cluster}/{service}");
    let description = Some(request.description.trim().to_string()).filter(|d| !d.is_empty());
    let intent = |runs: &str, desired: u32| AuditIntent {
        from_revision: Some(sized(runs, desired)),
        description: description.clone(),
        ..AuditIntent::by(actor, AuditAction::Retire, resource.clone())
    };
    let sender = Sender {
        actor,
        approved: None,
    };
    sender
        .may_change(
            context,
            &found,
            &resource,
            intent(&runs.to_string(), found.desired),
        )
        .await?;
    let live = context
        .ecs
        .service(cluster.to_string(), service.to_string())
        .await?;
    if !live.status.is_empty() && live.status != "ACTIVE" {
        return Err(ServiceError::conflict(format!(
            "{resource} is {} in ECS: it was deleted already",
            live.status
        )));
    }
    if let Some(expected) = request.expected_desired {
        if expected != live.desired {
            return Err(ServiceError::conflict(format!(
                "{resource} now has a desired count of {}, not {expected} as when you looked: someone changed it. Look again.",
                live.desired
            )));
        }
    }
    let runs_now = crate::model::arn::TaskDefinitionId::parse(&live.task_definition)
        .map_or_else(|| runs.to_string(), |id| id.to_string());
    let id = context
        .audit
        .begin(intent(&runs_now, live.desired))
        .await
        .map_err(|error| error.with_suffix("; nothing was sent"))?;
    let (owned, cluster, service, desired) = (
        context.clone(),
        cluster.to_string(),
        service.to_string(),
        live.desired,
    );
    let record = id.clone();
    detached::run_to_end(context, &id, async move {
        send_retire(&owned, &cluster, &service, desired, record).await
    })
    .await
}

/// Under the service's lock: UpdateService to 0 (when it is not 0 already), then DeleteService,
/// and the outcome of both in the record.
async fn send_retire(
    context: &ServiceContext,
    cluster: &str,
    service: &str,
    desired: u32,
    id: String,
) -> Result<RetireAnswer, ServiceError> {
    let lock = Lock::Service {
        cluster: cluster.to_string(),
        service: service.to_string(),
    };
    lock_or_refuse(context, &lock, &id, AuditAction::Retire).await?;
    let scaled = desired > 0;
    if scaled {
        scale_to_zero(context, &lock, &id).await?;
    }
    let from = if scaled {
        format!("scaled from {desired} to 0 tasks, so its tasks stop")
    } else {
        "it had 0 desired tasks already".to_string()
    };
    delete_and_record(context, &lock, &id, &from).await
}

/// UpdateService to 0; when it fails, the record says that nothing was deleted.
async fn scale_to_zero(
    context: &ServiceContext,
    lock: &Lock,
    id: &str,
) -> Result<(), ServiceError> {
    let Lock::Service { cluster, service } = lock else {
        return Ok(());
    };
    let Err(error) = context
        .ecs_writes
        .scale_service(cluster.clone(), service.clone(), 0)
        .await
    else {
        return Ok(());
    };
    let unknown = matches!(error, ServiceError::NoAnswer { .. });
    let outcome = if unknown {
        AuditOutcome {
            outcome: Outcome::Unknown,
            detail: Some(format!(
                "UpdateService to 0 got no answer ({}); DeleteService was not sent",
                error.message()
            )),
            ..AuditOutcome::default()
        }
    } else {
        refusal(format!(
            "ECS refused UpdateService to 0, so nothing changed: {}",
            error.message()
        ))
    };
    finish(context, lock, id, outcome, unknown).await?;
    Err(error.with_suffix("; the service was not scaled down or deleted"))
}

/// DeleteService of a service at 0 tasks, and the record of how far the retirement got (`from`:
/// what the scale did).
async fn delete_and_record(
    context: &ServiceContext,
    lock: &Lock,
    id: &str,
    from: &str,
) -> Result<RetireAnswer, ServiceError> {
    let resource = lock.key();
    let Lock::Service { cluster, service } = lock else {
        return Err(ServiceError::internal(
            "a retirement holds a service's lock",
        ));
    };
    let deleted = context
        .ecs_writes
        .delete_service(cluster.clone(), service.clone())
        .await;
    let (outcome, answer) = match deleted {
        Ok(deleted) => (
            AuditOutcome {
                outcome: Outcome::Succeeded,
                request_id: deleted.request_id.clone(),
                detail: Some(format!(
                    "{from}; deleted (DeleteService): ECS has it {} while its tasks stop, then INACTIVE",
                    if deleted.status.is_empty() { "DRAINING" } else { &deleted.status }
                )),
                ..AuditOutcome::default()
            },
            Ok(deleted),
        ),
        Err(error) => {
            let unknown = matches!(error, ServiceError::NoAnswer { .. });
            let now = format!(
                "{from}; DeleteService {}: {}. {resource} still exists with 0 desired tasks; retire it again to delete it",
                if unknown { "got no answer" } else { "was refused" },
                error.message(),
            );
            let outcome = AuditOutcome {
                outcome: if unknown { Outcome::Unknown } else { Outcome::Failed },
                detail: Some(now.clone()),
                ..AuditOutcome::default()
            };
            let error = if unknown {
                ServiceError::no_answer(now)
            } else {
                ServiceError::refused_by_aws(now)
            };
            (outcome, Err(error))
        }
    };
    let unknown = outcome.outcome == Outcome::Unknown;
    let recorded = finish(context, lock, id, outcome, unknown).await;
    let deleted = answer?;
    recorded.map_err(|error| {
        error.with_suffix(&format!(
            "; {resource} was retired, but the audit log could not record it"
        ))
    })?;
    Ok(RetireAnswer {
        audit_id: id.to_string(),
        scaled_to_zero: from.starts_with("scaled"),
        status: deleted.status,
        request_id: deleted.request_id,
    })
}

/// Writes the outcome and gives the lock back, unless the answer never came (a reconcile asks
/// ECS, then gives it back).
async fn finish(
    context: &ServiceContext,
    lock: &Lock,
    id: &str,
    outcome: AuditOutcome,
    unknown: bool,
) -> Result<(), ServiceError> {
    let recorded = context.audit.finish(id.to_string(), outcome).await;
    if !unknown {
        context.audit.unlock(lock.clone(), id.to_string()).await?;
    }
    recorded
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
