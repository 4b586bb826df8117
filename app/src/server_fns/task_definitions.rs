//! Task definitions for the pages, read from ECS.

use leptos::prelude::*;

use serde::{Deserialize, Serialize};

use crate::model::{
    fit::FitReport,
    task_definition::{
        EditInput, FamilyDetail, FamilySummary, FieldError, RevisionDetail, SettingChange,
    },
};

/// The answer of checking an edit: what is wrong, or what changes and how it fits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EditCheck {
    pub errors: Vec<FieldError>,
    pub changes: Vec<SettingChange>,
    pub fit: Option<FitReport>,
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

#[cfg(feature = "ssr")]
fn context() -> Result<crate::ssr::console::ConsoleContext, ServerFnError> {
    use_context::<crate::ssr::console::ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))
}

/// Whether `family` is a family name ECS would accept.
pub fn valid_family(family: &str) -> bool {
    !family.is_empty()
        && family.len() <= 255
        && family
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
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

/// One family's active revisions, newest first; `None` when there is no such family.
#[server(name = GetTaskDefinitionFamily, prefix = "/api", endpoint = "task_definition_family")]
pub async fn task_definition_family(family: String) -> Result<Option<FamilyDetail>, ServerFnError> {
    if !valid_family(&family) {
        return Err(ServerFnError::new(format!(
            "{family:?} is not a task definition family: up to 255 letters, digits, hyphens and underscores"
        )));
    }
    context()?
        .task_definitions
        .family(family)
        .await
        .map_err(ServerFnError::new)
}

/// The revision an edit starts from.
#[cfg(feature = "ssr")]
async fn source_revision(family: &str, revision: u32) -> Result<RevisionDetail, ServerFnError> {
    if !valid_family(family) {
        return Err(ServerFnError::new(format!(
            "{family:?} is not a task definition family"
        )));
    }
    let detail = context()?
        .task_definitions
        .family(family.to_string())
        .await
        .map_err(ServerFnError::new)?
        .ok_or_else(|| {
            ServerFnError::new(format!("there is no task definition family {family:?}"))
        })?;
    detail
        .revisions
        .into_iter()
        .find(|r| r.revision == revision)
        .ok_or_else(|| {
            ServerFnError::new(format!(
                "{family} has no active revision {revision}; reload the page to see the revisions"
            ))
        })
}

/// An edit of `family:revision` from the form's text, checked with ECS's rules: the task's GPU
/// request, the changes and the settings; or what the user must fix.
#[cfg(feature = "ssr")]
#[allow(clippy::type_complexity)]
async fn checked_edit(
    family: &str,
    revision: u32,
    edits: &[EditInput],
) -> Result<
    Result<
        (
            placement::GpuRequest,
            Vec<SettingChange>,
            Vec<(String, crate::model::task_definition::GpuSetting)>,
        ),
        Vec<FieldError>,
    >,
    ServerFnError,
> {
    use crate::model::task_definition::{check_edit, parse_inputs};

    let source = source_revision(family, revision).await?;
    Ok(parse_inputs(edits).and_then(|settings| {
        check_edit(&source, &settings).map(|(request, changes)| (request, changes, settings))
    }))
}

/// Checks an edit of `family:revision`: the form's values, ECS's rules, the changes, and where
/// one task would fit in `cluster` (or the whole fleet).
#[server(name = CheckGpuEdit, prefix = "/api", endpoint = "check_gpu_edit")]
pub async fn check_gpu_edit(
    family: String,
    revision: u32,
    edits: Vec<EditInput>,
    cluster: Option<String>,
) -> Result<EditCheck, ServerFnError> {
    let (request, changes, _) = match checked_edit(&family, revision, &edits).await? {
        Ok(checked) => checked,
        Err(errors) => {
            return Ok(EditCheck {
                errors,
                ..EditCheck::default()
            })
        }
    };
    let cluster = cluster.filter(|c| !c.is_empty());
    let fit =
        if request == placement::GpuRequest::None {
            None
        } else {
            context()?.fleet.state().snapshot.map(|snapshot| {
                crate::model::fit::fit_check(&snapshot, cluster.as_deref(), &request)
            })
        };
    Ok(EditCheck {
        errors: Vec::new(),
        changes,
        fit,
    })
}

/// Registers the edit as a new revision, after the same checks.
#[server(name = RegisterGpuEdit, prefix = "/api", endpoint = "register_gpu_edit")]
pub async fn register_gpu_edit(
    family: String,
    revision: u32,
    edits: Vec<EditInput>,
    description: String,
) -> Result<EditResult, ServerFnError> {
    let (_, changes, settings) = match checked_edit(&family, revision, &edits).await? {
        Ok(checked) => checked,
        Err(errors) => {
            return Ok(EditResult {
                errors,
                ..EditResult::default()
            })
        }
    };
    if changes.is_empty() {
        return Ok(EditResult {
            errors: vec![FieldError {
                container: None,
                field: "edits".into(),
                message: "Nothing changes: every container keeps its GPU setting.".into(),
            }],
            ..EditResult::default()
        });
    }
    let description = description.trim().to_string();
    if description.chars().count() > 256 {
        return Ok(EditResult {
            errors: vec![FieldError {
                container: None,
                field: "description".into(),
                message: format!(
                    "The description has {} characters; ECS keeps at most 256 in a tag.",
                    description.chars().count()
                ),
            }],
            ..EditResult::default()
        });
    }
    match context()?
        .task_definitions
        .register_gpu_edit(
            family,
            revision,
            settings,
            (!description.is_empty()).then_some(description),
        )
        .await
    {
        Ok(registered) => Ok(EditResult {
            registered: Some(registered),
            ..EditResult::default()
        }),
        Err(error) => Ok(EditResult {
            ecs_error: Some(error),
            ..EditResult::default()
        }),
    }
}
