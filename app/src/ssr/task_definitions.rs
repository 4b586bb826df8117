//! The seam through which pages read task definitions from ECS.

use crate::model::task_definition::{FamilyDetail, FamilySummary};

/// A boxed future, so that implementations can be stored as trait objects.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Reads task definitions.
pub trait TaskDefinitionSource: Send + Sync {
    /// Every active family, described by its latest revision, or what failed and what to do.
    fn families(&self) -> BoxFuture<'_, Result<Vec<FamilySummary>, String>>;
    /// One family's revisions, newest first; `None` when the family does not exist.
    fn family(&self, family: String) -> BoxFuture<'_, Result<Option<FamilyDetail>, String>>;
}
