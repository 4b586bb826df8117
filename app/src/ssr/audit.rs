//! The seam through which the console writes and reads its audit log.

use crate::model::audit::{AuditFilter, AuditIntent, AuditOutcome, AuditRecord};
use crate::ssr::task_definitions::BoxFuture;

/// The audit log's store.
pub trait AuditLog: Send + Sync {
    /// Writes an intent before its AWS call; the record's id.
    fn begin(&self, intent: AuditIntent) -> BoxFuture<'_, Result<String, String>>;
    /// Writes the outcome of the record `id`.
    fn finish(&self, id: String, outcome: AuditOutcome) -> BoxFuture<'_, Result<(), String>>;
    /// The records that match `filter`, newest first.
    fn list(&self, filter: AuditFilter) -> BoxFuture<'_, Result<Vec<AuditRecord>, String>>;
    /// One record.
    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<AuditRecord>, String>>;
    /// Takes the deploy lock of `resource` for the record `id`: `false` when another holds it.
    fn lock(&self, resource: String, id: String) -> BoxFuture<'_, Result<bool, String>>;
    /// Gives the deploy lock of `resource` back.
    fn unlock(&self, resource: String) -> BoxFuture<'_, Result<(), String>>;
}
