//! The audit log for its page.

use leptos::prelude::*;

use crate::model::{
    audit::{AuditFilter, AuditRecord},
    ServiceError,
};

/// The records that match `filter`, newest first.
#[server(name = ListAudit, prefix = "/api", endpoint = "list_audit")]
pub async fn list_audit(
    #[server(default)] filter: AuditFilter,
) -> Result<Vec<AuditRecord>, ServiceError> {
    crate::service::audit::list(&super::context()?, &super::actor()?, filter).await
}
