//! The seam through which pages read and register task definitions in ECS.

pub use crate::model::task_definition::SourceRevision;
use crate::model::task_definition::{FamilyDetail, FamilySummary, FieldError, RevisionDetail};

/// A boxed future, so that implementations can be stored as trait objects.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Reads, checks and registers task definitions.
pub trait TaskDefinitionSource: Send + Sync {
    /// Every active family, described by its latest revision, or what failed and what to do.
    fn families(&self) -> BoxFuture<'_, Result<Vec<FamilySummary>, String>>;
    /// One family's revisions, active and inactive, newest first; `None` when the family does
    /// not exist.
    fn family(&self, family: String) -> BoxFuture<'_, Result<Option<FamilyDetail>, String>>;
    /// One revision with its RegisterTaskDefinition JSON; `None` when there is no such revision.
    fn revision(
        &self,
        family: String,
        revision: u32,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, String>>;
    /// Every check made before a registration, on a RegisterTaskDefinition request's JSON text:
    /// the request as JSON and its GPU request, or each error with its field and place.
    #[allow(clippy::type_complexity)]
    fn validate(
        &self,
        text: &str,
    ) -> Result<
        (
            serde_json::Map<String, serde_json::Value>,
            placement::GpuRequest,
        ),
        Vec<FieldError>,
    >;
    /// Registers the request `text` as a new revision; the revision and the AWS request id, or
    /// ECS's error with its code.
    fn register(
        &self,
        text: String,
    ) -> BoxFuture<'_, Result<(RevisionDetail, Option<String>), String>>;
}

use serde_json::{Map, Value};

use crate::{
    model::{
        task_definition::{check_edit, gpu_changes, GpuSetting},
        task_definition_json::{
            cli_json, cloudformation_yaml, diff, locate, mask_pair, mask_secrets, set_change_tag,
            unmask_secrets,
        },
    },
    server_fns::task_definitions::{valid_family, Comparison, EditCheck, EditResult, RevisionView},
    ssr::console::ConsoleContext,
};

/// Why a request about task definitions cannot be answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditFailure {
    /// The request is malformed (a family name ECS would refuse).
    BadRequest(String),
    /// No such family or revision.
    NotFound(String),
    /// ECS could not be read.
    Unavailable(String),
}

impl std::fmt::Display for EditFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditFailure::BadRequest(m) | EditFailure::NotFound(m) | EditFailure::Unavailable(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for EditFailure {}

/// An edit of a revision: new GPU settings for named containers, or the whole request's JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum EditSpec {
    Settings(Vec<(String, GpuSetting)>),
    Json(String),
}

/// Refuses a family name ECS would refuse.
pub fn check_family(family: &str) -> Result<(), EditFailure> {
    if valid_family(family) {
        Ok(())
    } else {
        Err(EditFailure::BadRequest(format!(
            "{family:?} is not a task definition family: up to 255 letters, digits, hyphens and underscores"
        )))
    }
}

/// A revision and its JSON, or `None` when ECS has no such revision.
pub async fn find_revision(
    context: &ConsoleContext,
    family: &str,
    revision: u32,
) -> Result<Option<SourceRevision>, EditFailure> {
    check_family(family)?;
    context
        .task_definitions
        .revision(family.to_string(), revision)
        .await
        .map_err(EditFailure::Unavailable)
}

/// The revision an edit starts from.
async fn source_revision(
    context: &ConsoleContext,
    family: &str,
    revision: u32,
) -> Result<SourceRevision, EditFailure> {
    find_revision(context, family, revision)
        .await?
        .ok_or_else(|| {
            EditFailure::NotFound(format!(
                "{family} has no revision {revision}; the family's page lists its revisions"
            ))
        })
}

/// One revision with its JSON (secret-looking values masked unless `reveal`) and its
/// CloudFormation requirements; `None` when there is no such revision.
pub async fn revision_view(
    context: &ConsoleContext,
    family: &str,
    revision: u32,
    reveal: bool,
) -> Result<Option<RevisionView>, EditFailure> {
    Ok(find_revision(context, family, revision)
        .await?
        .map(|source| {
            let mut task = source.task;
            let masked = if reveal { 0 } else { mask_secrets(&mut task) };
            RevisionView {
                detail: source.detail,
                json: cli_json(&task),
                masked,
                cloudformation: cloudformation_yaml(&task),
            }
        }))
}

/// Two revisions of `family` compared: GPU settings first, then every difference of the JSON;
/// `None` when either does not exist.
pub async fn compare(
    context: &ConsoleContext,
    family: &str,
    from: u32,
    to: u32,
    reveal: bool,
) -> Result<Option<Comparison>, EditFailure> {
    let (Some(old), Some(new)) = (
        find_revision(context, family, from).await?,
        find_revision(context, family, to).await?,
    ) else {
        return Ok(None);
    };
    let (mut before, mut after) = (old.task.clone(), new.task.clone());
    if !reveal {
        mask_pair(&mut before, &mut after);
    }
    Ok(Some(Comparison {
        diff: diff(&before, &after),
        gpu: gpu_changes(&old, &new.task),
        from: old.detail,
        to: new.detail,
    }))
}

/// An edit applied to its source and checked: the new request's JSON and GPU request, or what
/// to fix. Masked values of a JSON edit are put back from the source, and its family must stay.
#[allow(clippy::type_complexity)]
fn apply(
    context: &ConsoleContext,
    source: &SourceRevision,
    spec: &EditSpec,
) -> Result<(Map<String, Value>, placement::GpuRequest), Vec<FieldError>> {
    let text = match spec {
        EditSpec::Settings(settings) => {
            return check_edit(source, settings).map(|checked| (checked.task, checked.request))
        }
        EditSpec::Json(text) => text,
    };
    let (mut task, request) = context.task_definitions.validate(text)?;
    let family = &source.detail.family;
    let named = task
        .get("family")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if named != family {
        let at = locate(text, "family");
        return Err(vec![FieldError {
            field: "family".into(),
            message: format!(
                "The family is {named:?}, but this edit makes a revision of {family:?}; keep the family, or edit the other family from its own page."
            ),
            line: at.map(|(line, _)| line),
            column: at.map(|(_, column)| column),
            ..FieldError::default()
        }]);
    }
    let still_masked = unmask_secrets(&mut task, &source.task);
    if !still_masked.is_empty() {
        return Err(still_masked
            .into_iter()
            .map(|place| FieldError {
                field: "containerDefinitions".into(),
                message: format!(
                    "{place} is masked and revision {} has no value for it; type its value.",
                    source.detail.revision
                ),
                ..FieldError::default()
            })
            .collect());
    }
    Ok((task, request))
}

/// Checks an edit of `family:revision`: ECS's rules, the changes, the diff, where one task
/// would fit in `cluster` (or the whole fleet), and the new revision's exports (secret-looking
/// values masked unless `reveal`).
pub async fn check(
    context: &ConsoleContext,
    family: &str,
    revision: u32,
    spec: EditSpec,
    cluster: Option<String>,
    reveal: bool,
) -> Result<EditCheck, EditFailure> {
    let source = source_revision(context, family, revision).await?;
    let (task, request) = match apply(context, &source, &spec) {
        Ok(checked) => checked,
        Err(errors) => {
            return Ok(EditCheck {
                errors,
                ..EditCheck::default()
            })
        }
    };
    let cluster = cluster.filter(|c| !c.trim().is_empty());
    let fit = if request == placement::GpuRequest::None {
        None
    } else {
        let snapshot = context.fleet.state().snapshot;
        if let (Some(snapshot), Some(name)) = (&snapshot, &cluster) {
            if let Err(missing) = crate::ssr::deployments::cluster_view(snapshot, name) {
                return Ok(EditCheck {
                    errors: vec![FieldError {
                        field: "cluster".into(),
                        message: format!("{missing}; pick one of them."),
                        ..FieldError::default()
                    }],
                    ..EditCheck::default()
                });
            }
        }
        snapshot
            .map(|snapshot| crate::model::fit::fit_check(&snapshot, cluster.as_deref(), &request))
    };
    let (mut before, mut after) = (source.task.clone(), task.clone());
    let mut exported = task.clone();
    let masked = if reveal {
        0
    } else {
        mask_pair(&mut before, &mut after);
        mask_secrets(&mut exported)
    };
    let entries = diff(&before, &after);
    Ok(EditCheck {
        errors: Vec::new(),
        changes: gpu_changes(&source, &task),
        diff: entries,
        fit,
        export_json: cli_json(&exported),
        cloudformation: cloudformation_yaml(&exported),
        masked,
    })
}

/// Registers an edit of `family:revision` as a new revision with the change `description`,
/// after the same checks; an edit that changes nothing is refused. ECS's refusal comes back
/// with its code, in the answer.
pub async fn register(
    context: &ConsoleContext,
    family: &str,
    revision: u32,
    spec: EditSpec,
    description: &str,
) -> Result<EditResult, EditFailure> {
    let source = source_revision(context, family, revision).await?;
    let refused = |errors: Vec<FieldError>| EditResult {
        errors,
        ..EditResult::default()
    };
    let mut task = match apply(context, &source, &spec) {
        Ok((task, _)) => task,
        Err(errors) => return Ok(refused(errors)),
    };
    let mut unchanged = source.task.clone();
    set_change_tag(&mut unchanged, "").ok();
    let mut compared = task.clone();
    set_change_tag(&mut compared, "").ok();
    if compared == unchanged {
        return Ok(refused(vec![FieldError {
            field: "edits".into(),
            message: format!(
                "Nothing changes: the edit is the same as revision {revision}. Change a setting first."
            ),
            ..FieldError::default()
        }]));
    }
    if let Err(message) = set_change_tag(&mut task, description) {
        return Ok(refused(vec![FieldError {
            field: "description".into(),
            message,
            ..FieldError::default()
        }]));
    }
    // The intent is written before the AWS call; without it, nothing is sent.
    let mut masked_before = source.task.clone();
    let mut masked_after = task.clone();
    mask_pair(&mut masked_before, &mut masked_after);
    let intent = crate::model::audit::AuditIntent {
        actor: "local".into(),
        action: crate::model::audit::AuditAction::Register,
        resource: family.to_string(),
        from_revision: Some(format!("{family}:{revision}")),
        to_revision: None,
        diff: serde_json::to_string(&diff(&masked_before, &masked_after)).unwrap_or_default(),
        pre_check: None,
        description: Some(description.trim().to_string()).filter(|d| !d.is_empty()),
    };
    let audit_id =
        context.audit.begin(intent).await.map_err(|error| {
            EditFailure::Unavailable(format!("{error}; nothing was registered"))
        })?;
    let text = Value::Object(task).to_string();
    let (result, outcome) = match context.task_definitions.register(text).await {
        Ok((registered, request_id)) => {
            let outcome = crate::model::audit::AuditOutcome {
                outcome: "registered".into(),
                request_id,
                to_revision: Some(format!("{}:{}", registered.family, registered.revision)),
                ..Default::default()
            };
            (
                EditResult {
                    registered: Some(registered),
                    ..EditResult::default()
                },
                outcome,
            )
        }
        Err(error) => (
            EditResult {
                ecs_error: Some(error.clone()),
                ..EditResult::default()
            },
            crate::model::audit::AuditOutcome {
                outcome: "refused".into(),
                detail: Some(error),
                ..Default::default()
            },
        ),
    };
    if let Err(error) = context.audit.finish(audit_id, outcome).await {
        tracing_warn(&error);
    }
    Ok(result)
}

/// An audit outcome that could not be written is logged; the AWS call it follows happened.
fn tracing_warn(error: &str) {
    leptos::logging::warn!("the audit log could not record an outcome: {error}");
}
