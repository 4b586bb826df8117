//! The audit log, read: registrations, deployments and rollbacks, newest first.

use crate::{
    model::{
        audit::{AuditFilter, AuditRecord},
        ServiceError,
    },
    service::context::ServiceContext,
};

/// The records that match `filter`, newest first.
pub async fn list(
    context: &ServiceContext,
    filter: AuditFilter,
) -> Result<Vec<AuditRecord>, ServiceError> {
    if let Some(problem) = filter.problem() {
        return Err(ServiceError::invalid(problem));
    }
    context.audit.list(filter).await
}
