//! The audit log: read, newest first; the record of an attempt refused before anything was
//! sent; and the record of a step that sends nothing (a request, a decision).

use crate::{
    model::{
        audit::{AuditFilter, AuditIntent, AuditOutcome, AuditRecord, Outcome},
        identity::{Actor, Role},
        ServiceError,
    },
    service::context::ServiceContext,
};

/// The records that match `filter`, newest first, as `actor` may see them: the source address
/// of each only for admins.
pub async fn list(
    context: &ServiceContext,
    actor: &Actor,
    filter: AuditFilter,
) -> Result<Vec<AuditRecord>, ServiceError> {
    if let Some(problem) = filter.problem() {
        return Err(ServiceError::invalid(problem));
    }
    let mut records = context.audit.list(filter).await?;
    // Where people were when they acted is for those who look into incidents, not for everyone
    // who may read the log.
    if actor.role != Role::Admin {
        for record in &mut records {
            record.who.source = None;
        }
    }
    Ok(records)
}

/// Records that `intent` was refused before anything was sent, and why; the refusal to answer
/// with, or the audit log's failure.
pub async fn refused(
    context: &ServiceContext,
    intent: AuditIntent,
    refusal: ServiceError,
) -> ServiceError {
    let outcome = AuditOutcome {
        outcome: Outcome::Refused,
        detail: Some(refusal.message().to_string()),
        ..AuditOutcome::default()
    };
    let written = match context.audit.begin(intent).await {
        Ok(id) => context.audit.finish(id, outcome).await,
        Err(error) => Err(error),
    };
    match written {
        Ok(()) => refusal,
        Err(error) => error.with_suffix(&format!("; the attempt was refused: {refusal}")),
    }
}

/// Writes a record that sends nothing: its intent, then `recorded` with `detail`.
pub async fn recorded(
    context: &ServiceContext,
    intent: AuditIntent,
    detail: String,
) -> Result<String, ServiceError> {
    let id = context.audit.begin(intent).await?;
    context
        .audit
        .finish(
            id.clone(),
            AuditOutcome {
                outcome: Outcome::Recorded,
                detail: Some(detail),
                ..AuditOutcome::default()
            },
        )
        .await?;
    Ok(id)
}
