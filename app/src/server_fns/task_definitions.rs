//! Task definitions for the pages: families, revisions with their JSON, comparisons, and edits
//! (the GPU form or the whole JSON) checked, then registered.

use leptos::prelude::*;

use serde::{Deserialize, Serialize};

use crate::model::{
    fit::FitReport,
    task_definition::{
        EditInput, FamilyDetail, FamilySummary, FieldError, RevisionDetail, SettingChange,
    },
    task_definition_json::DiffEntry,
};

/// The answer of checking an edit: what is wrong, or what changes, how it fits, and the new
/// revision as JSON and as CloudFormation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EditCheck {
    pub errors: Vec<FieldError>,
    /// The containers whose GPU setting changes.
    pub changes: Vec<SettingChange>,
    /// Every difference from the source revision, GPU requirements first.
    pub diff: Vec<DiffEntry>,
    pub fit: Option<FitReport>,
    /// The new revision for `aws ecs register-task-definition --cli-input-json`.
    pub export_json: String,
    /// The containers' `ResourceRequirements` for CloudFormation.
    pub cloudformation: String,
    /// Values masked in the exports (reveal them to copy a registrable JSON).
    pub masked: usize,
}

/// The answer of registering an edit: the new revision, or what is wrong (the form keeps its
/// values either way).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EditResult {
    pub errors: Vec<FieldError>,
    pub registered: Option<RevisionDetail>,
    /// ECS refused: its code and message.
    pub ecs_error: Option<String>,
}

/// One revision as the revision page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RevisionView {
    pub detail: RevisionDetail,
    /// The RegisterTaskDefinition request that registers it again, pretty.
    pub json: String,
    /// How many secret-looking values `json` masks.
    pub masked: usize,
    pub cloudformation: String,
}

/// Two revisions of a family compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub from: RevisionDetail,
    pub to: RevisionDetail,
    /// The containers whose GPU setting differs.
    pub gpu: Vec<SettingChange>,
    /// Every difference of the JSON, GPU requirements first; secret values masked unless
    /// revealed.
    pub diff: Vec<DiffEntry>,
}

/// Whether `family` is a family name ECS would accept.
pub fn valid_family(family: &str) -> bool {
    !family.is_empty()
        && family.len() <= 255
        && family
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(feature = "ssr")]
fn context() -> Result<crate::ssr::console::ConsoleContext, ServerFnError> {
    use_context::<crate::ssr::console::ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))
}

/// Every active family, described by its latest revision.
#[server(name = ListTaskDefinitionFamilies, prefix = "/api", endpoint = "task_definition_families")]
pub async fn task_definition_families() -> Result<Vec<FamilySummary>, ServerFnError> {
    context()?
        .task_definitions
        .families()
        .await
        .map_err(ServerFnError::new)
}

/// One family's revisions, active and inactive, newest first; `None` when there is no such
/// family.
#[server(name = GetTaskDefinitionFamily, prefix = "/api", endpoint = "task_definition_family")]
pub async fn task_definition_family(family: String) -> Result<Option<FamilyDetail>, ServerFnError> {
    use crate::ssr::task_definitions as edits;
    edits::check_family(&family)?;
    context()?
        .task_definitions
        .family(family)
        .await
        .map_err(ServerFnError::new)
}

/// One revision with its JSON (secret-looking values masked unless `reveal`) and its
/// CloudFormation requirements; `None` when there is no such revision.
#[server(name = GetTaskDefinitionRevision, prefix = "/api", endpoint = "task_definition_revision")]
pub async fn task_definition_revision(
    family: String,
    revision: u32,
    reveal: bool,
) -> Result<Option<RevisionView>, ServerFnError> {
    Ok(crate::ssr::task_definitions::revision_view(&context()?, &family, revision, reveal).await?)
}

/// Compares two revisions of `family`: GPU settings first, then every difference of the JSON.
/// `None` when either revision does not exist.
#[server(name = CompareTaskDefinitions, prefix = "/api", endpoint = "compare_task_definitions")]
pub async fn compare_revisions(
    family: String,
    from: u32,
    to: u32,
    reveal: bool,
) -> Result<Option<Comparison>, ServerFnError> {
    Ok(crate::ssr::task_definitions::compare(&context()?, &family, from, to, reveal).await?)
}

/// The form's text as GPU settings, or what to fix in which field.
#[cfg(feature = "ssr")]
fn form_spec(
    edits: &[EditInput],
) -> Result<crate::ssr::task_definitions::EditSpec, Vec<FieldError>> {
    crate::model::task_definition::parse_inputs(edits)
        .map(crate::ssr::task_definitions::EditSpec::Settings)
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
) -> Result<EditCheck, ServerFnError> {
    let spec = match form_spec(&edits) {
        Ok(spec) => spec,
        Err(errors) => {
            return Ok(EditCheck {
                errors,
                ..EditCheck::default()
            })
        }
    };
    Ok(
        crate::ssr::task_definitions::check(&context()?, &family, revision, spec, cluster, reveal)
            .await?,
    )
}

/// Checks a whole-JSON edit of `family:revision`, as [`check_gpu_edit`] checks a form edit.
#[server(name = CheckTaskDefinitionJson, prefix = "/api", endpoint = "check_task_definition_json")]
pub async fn check_task_definition_json(
    family: String,
    revision: u32,
    text: String,
    cluster: Option<String>,
    reveal: bool,
) -> Result<EditCheck, ServerFnError> {
    use crate::ssr::task_definitions::{check, EditSpec};
    Ok(check(
        &context()?,
        &family,
        revision,
        EditSpec::Json(text),
        cluster,
        reveal,
    )
    .await?)
}

/// Registers a GPU settings edit as a new revision, after the same checks.
#[server(name = RegisterGpuEdit, prefix = "/api", endpoint = "register_gpu_edit")]
pub async fn register_gpu_edit(
    family: String,
    revision: u32,
    edits: Vec<EditInput>,
    description: String,
) -> Result<EditResult, ServerFnError> {
    let spec = match form_spec(&edits) {
        Ok(spec) => spec,
        Err(errors) => {
            return Ok(EditResult {
                errors,
                ..EditResult::default()
            })
        }
    };
    Ok(
        crate::ssr::task_definitions::register(&context()?, &family, revision, spec, &description)
            .await?,
    )
}

/// Registers a whole-JSON edit as a new revision, after the same checks.
#[server(name = RegisterTaskDefinitionJson, prefix = "/api", endpoint = "register_task_definition_json")]
pub async fn register_task_definition_json(
    family: String,
    revision: u32,
    text: String,
    description: String,
) -> Result<EditResult, ServerFnError> {
    use crate::ssr::task_definitions::{register, EditSpec};
    Ok(register(
        &context()?,
        &family,
        revision,
        EditSpec::Json(text),
        &description,
    )
    .await?)
}
