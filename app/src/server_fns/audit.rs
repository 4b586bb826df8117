//! The audit log for its page.

use leptos::prelude::*;

use crate::model::audit::{AuditFilter, AuditRecord};

/// The records that match `filter`, newest first.
#[server(name = ListAudit, prefix = "/api", endpoint = "list_audit")]
pub async fn list_audit(
    #[server(default)] filter: AuditFilter,
) -> Result<Vec<AuditRecord>, ServerFnError> {
    if let Some(problem) = filter.problem() {
        return Err(ServerFnError::new(problem));
    }
    let context = use_context::<crate::ssr::console::ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))?;
    context.audit.list(filter).await.map_err(ServerFnError::new)
}
