//! The seam through which pages read task definitions from ECS.

use crate::model::task_definition::{FamilyDetail, FamilySummary, GpuSetting, RevisionDetail};

/// A boxed future, so that implementations can be stored as trait objects.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Reads task definitions.
pub trait TaskDefinitionSource: Send + Sync {
    /// Every active family, described by its latest revision, or what failed and what to do.
    fn families(&self) -> BoxFuture<'_, Result<Vec<FamilySummary>, String>>;
    /// One family's revisions, newest first; `None` when the family does not exist.
    fn family(&self, family: String) -> BoxFuture<'_, Result<Option<FamilyDetail>, String>>;
    /// Registers a new revision of `family:revision` with the containers' GPU settings changed
    /// and nothing else; the new revision, or ECS's error with its code.
    fn register_gpu_edit(
        &self,
        family: String,
        revision: u32,
        edits: Vec<(String, GpuSetting)>,
        description: Option<String>,
    ) -> BoxFuture<'_, Result<RevisionDetail, String>>;
}
