//! Task definitions for the pages: families, revisions with their JSON, comparisons, and edits
//! (the GPU form or the whole JSON) checked, then registered.

use leptos::prelude::*;

use crate::model::{
    task_definition::{
        Comparison, EditCheck, EditInput, EditResult, FamilyDetail, FamilySummary, RevisionView,
    },
    ServiceError,
};

#[cfg(feature = "ssr")]
use crate::service::task_definitions::{self as use_case, EditSpec};

/// Every active family, described by its latest revision.
#[server(name = ListTaskDefinitionFamilies, prefix = "/api", endpoint = "task_definition_families")]
pub async fn task_definition_families() -> Result<Vec<FamilySummary>, ServiceError> {
    use_case::families(&super::context()?).await
}

/// One family's revisions, active and inactive, newest first; `None` when there is no such
/// family.
#[server(name = GetTaskDefinitionFamily, prefix = "/api", endpoint = "task_definition_family")]
pub async fn task_definition_family(family: String) -> Result<Option<FamilyDetail>, ServiceError> {
    use_case::family(&super::context()?, &family).await
}

/// One revision with its JSON (secret-looking values masked unless `reveal`) and its
/// CloudFormation requirements; `None` when there is no such revision.
#[server(name = GetTaskDefinitionRevision, prefix = "/api", endpoint = "task_definition_revision")]
pub async fn task_definition_revision(
    family: String,
    revision: u32,
    reveal: bool,
) -> Result<Option<RevisionView>, ServiceError> {
    super::no_store_if(reveal);
    use_case::revision(
        &super::context()?,
        &super::actor()?,
        &family,
        revision,
        reveal,
    )
    .await
}

/// Compares two revisions of `family`: GPU settings first, then every difference of the JSON.
/// `None` when either revision does not exist.
#[server(name = CompareTaskDefinitions, prefix = "/api", endpoint = "compare_task_definitions")]
pub async fn compare_revisions(
    family: String,
    from: u32,
    to: u32,
    reveal: bool,
) -> Result<Option<Comparison>, ServiceError> {
    super::no_store_if(reveal);
    use_case::compare(
        &super::context()?,
        &super::actor()?,
        &family,
        from,
        to,
        reveal,
    )
    .await
}

/// Checks an edit of `family:revision`'s GPU settings: the form's values, ECS's rules, the
/// changes, where one task would fit in `cluster` (or the whole fleet), and the new revision's
/// exports.
#[server(name = CheckGpuEdit, prefix = "/api", endpoint = "check_gpu_edit")]
pub async fn check_gpu_edit(
    family: String,
    revision: u32,
    edits: Vec<EditInput>,
    cluster: Option<String>,
    reveal: bool,
) -> Result<EditCheck, ServiceError> {
    let spec = EditSpec::Form(edits);
    let (context, actor) = (super::context()?, super::actor()?);
    super::no_store_if(reveal);
    use_case::check(&context, &actor, &family, revision, spec, cluster, reveal).await
}

/// Checks a whole-JSON edit of `family:revision`, as [`check_gpu_edit`] checks a form edit.
#[server(name = CheckTaskDefinitionJson, prefix = "/api", endpoint = "check_task_definition_json")]
pub async fn check_task_definition_json(
    family: String,
    revision: u32,
    text: String,
    cluster: Option<String>,
    reveal: bool,
) -> Result<EditCheck, ServiceError> {
    let spec = EditSpec::Json(text);
    let (context, actor) = (super::context()?, super::actor()?);
    super::no_store_if(reveal);
    use_case::check(&context, &actor, &family, revision, spec, cluster, reveal).await
}

/// Registers a GPU settings edit as a new revision, after the same checks.
#[server(name = RegisterGpuEdit, prefix = "/api", endpoint = "register_gpu_edit")]
pub async fn register_gpu_edit(
    family: String,
    revision: u32,
    edits: Vec<EditInput>,
    description: String,
) -> Result<EditResult, ServiceError> {
    let spec = EditSpec::Form(edits);
    let (context, actor) = (super::context()?, super::actor()?);
    use_case::register(&context, &actor, &family, revision, spec, &description).await
}

/// Registers a whole-JSON edit as a new revision, after the same checks.
#[server(name = RegisterTaskDefinitionJson, prefix = "/api", endpoint = "register_task_definition_json")]
pub async fn register_task_definition_json(
    family: String,
    revision: u32,
    text: String,
    description: String,
) -> Result<EditResult, ServiceError> {
    let spec = EditSpec::Json(text);
    let (context, actor) = (super::context()?, super::actor()?);
    use_case::register(&context, &actor, &family, revision, spec, &description).await
}
