//! `POST /api/v1/task-definitions/validate` and `/fit-check`: a task definition's JSON (as
//! `aws ecs register-task-definition --cli-input-json` takes it) checked against ECS's GPU
//! rules, and against the fleet with the placement rules.

use axum::{
    body::Bytes,
    extract::{rejection::QueryRejection, Extension, Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};

use app::{
    model::identity::Actor,
    model::task_definition::{
        Comparison, EditCheck, EditResult, FamilyDetail, FamilySummary, FieldError, FitAnswer,
        GpuSetting, RevisionDetail, Validation,
    },
    service::task_definitions::{self as use_case, EditSpec},
};

use crate::{error::AppError, http::api, http::state::AppState};

/// The body as the text of a JSON object; malformed JSON is refused with its line and column.
fn text(body: &Bytes) -> Result<&str, AppError> {
    let how = "send the task definition as JSON, as `aws ecs register-task-definition --cli-input-json` takes it";
    let text = std::str::from_utf8(body)
        .map_err(|_| AppError::BadRequest(format!("the body is not UTF-8 text; {how}")))?;
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Ok(text),
        Ok(_) => Err(AppError::BadRequest(format!(
            "the body must be a JSON object with family and containerDefinitions; {how}"
        ))),
        Err(e) => Err(AppError::BadRequest(format!(
            "the body is not valid JSON: {e}; {how}"
        ))),
    }
}

/// `POST /api/v1/task-definitions/validate`: every check the console makes before registering.
pub async fn validate(
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Json<Validation>, AppError> {
    Ok(Json(
        use_case::validate(&state.services, text(&body)?).await?,
    ))
}

/// `GET /api/v1/task-definitions`: every active family, described by its latest revision.
pub async fn list_families(
    State(state): State<AppState>,
) -> Result<Json<Vec<FamilySummary>>, AppError> {
    Ok(Json(use_case::families(&state.services).await?))
}

/// `GET /api/v1/task-definitions/{family}`: the family's revisions, newest first.
pub async fn get_family(
    State(state): State<AppState>,
    Path(family): Path<String>,
) -> Result<Json<FamilyDetail>, AppError> {
    use_case::family(&state.services, &family)
        .await?
        .map(Json)
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "there is no active task definition family {family:?}; GET /api/v1/task-definitions lists them"
            ))
        })
}

/// The fit check's one parameter.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitQuery {
    /// The cluster to check; every cluster when absent.
    pub cluster: Option<String>,
}

/// `POST /api/v1/task-definitions/fit-check`: where one task of this task definition could go;
/// 422 with the errors when the task definition is invalid.
pub async fn fit_check(
    State(state): State<AppState>,
    query: Result<Query<FitQuery>, QueryRejection>,
    body: Bytes,
) -> Result<Response, AppError> {
    let query = api::parameters(query, "cluster")?;
    let answer =
        use_case::fit_check(&state.services, text(&body)?, query.cluster.as_deref()).await?;
    let status = match answer {
        FitAnswer::Fits(_) => StatusCode::OK,
        FitAnswer::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
    };
    Ok((status, Json(answer)).into_response())
}

/// `?reveal=true` shows secret-looking values.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevealQuery {
    #[serde(default)]
    pub reveal: bool,
}

/// The revision number of a path, or what to send instead.
fn revision_number(text: &str) -> Result<u32, AppError> {
    text.parse::<u32>()
        .ok()
        .filter(|r| *r >= 1)
        .ok_or_else(|| {
            AppError::BadRequest(format!(
                "{text:?} is not a revision: give a whole number from 1, as in /api/v1/task-definitions/embed-api/3"
            ))
        })
}

/// A revision as the API gives it.
#[derive(Debug, Serialize)]
pub struct RevisionAnswer {
    pub revision: RevisionDetail,
    /// The RegisterTaskDefinition request that registers it again, tags included.
    pub task_definition: serde_json::Value,
    /// How many secret-looking values `task_definition` masks.
    pub masked_values: usize,
    /// The containers' `ResourceRequirements` as CloudFormation YAML.
    pub cloudformation: String,
}

/// `GET /api/v1/task-definitions/{family}/{revision}[?reveal=true]`: one revision with its
/// RegisterTaskDefinition JSON (secret-looking values masked unless revealed) and its
/// CloudFormation requirements.
pub async fn get_revision(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((family, revision)): Path<(String, String)>,
    reveal: Result<Query<RevealQuery>, QueryRejection>,
) -> Result<Json<RevisionAnswer>, AppError> {
    let reveal = api::parameters(reveal, "reveal")?.reveal;
    let revision = revision_number(&revision)?;
    use_case::revision(&state.services, &actor, &family, revision, reveal)
        .await?
        .map(|view| {
            Json(RevisionAnswer {
                task_definition: serde_json::from_str(&view.json).unwrap_or_default(),
                revision: view.detail,
                masked_values: view.masked,
                cloudformation: view.cloudformation,
            })
        })
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "{family} has no revision {revision}; GET /api/v1/task-definitions/{family} lists them"
            ))
        })
}

/// The parameters of a comparison.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    pub from: u32,
    pub to: u32,
    #[serde(default)]
    pub reveal: bool,
}

/// `GET /api/v1/task-definitions/{family}/compare?from=&to=[&reveal=true]`: two revisions'
/// GPU settings and every difference of their JSON, GPU requirements first.
pub async fn compare(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(family): Path<String>,
    parameters: Result<Query<CompareQuery>, QueryRejection>,
) -> Result<Json<Comparison>, AppError> {
    let parameters = api::parameters(parameters, "from and to (revision numbers), and reveal")?;
    use_case::compare(
        &state.services,
        &actor,
        &family,
        parameters.from,
        parameters.to,
        parameters.reveal,
    )
    .await?
    .map(Json)
    .ok_or_else(|| {
        AppError::NotFound(format!(
            "{family} has no revision {} or {}; GET /api/v1/task-definitions/{family} lists them",
            parameters.from, parameters.to
        ))
    })
}

/// One container's new GPU setting in an edit.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerEdit {
    pub container: String,
    pub gpu: GpuSetting,
}

/// The body of an edit: new GPU settings for named containers, or the whole
/// RegisterTaskDefinition JSON; a change description; the cluster of the fit check.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditBody {
    #[serde(default)]
    pub edits: Option<Vec<ContainerEdit>>,
    #[serde(default)]
    pub task_definition: Option<serde_json::Value>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub cluster: Option<String>,
    #[serde(default)]
    pub reveal: bool,
}

/// The edit a body asks for, or what is wrong with the body.
fn edit_body(body: &Bytes) -> Result<(EditSpec, EditBody), AppError> {
    let mut parsed: EditBody = serde_json::from_slice(body).map_err(|e| {
        AppError::BadRequest(format!(
            "the body is not an edit: {e}; send {{\"edits\": [{{\"container\": \"model\", \"gpu\": {{\"kind\": \"mps\", \"memory_mib\": 8192, \"max_compute_percent\": 50}}}}], \"description\": \"why\"}} or {{\"task_definition\": {{…}}}}"
        ))
    })?;
    let spec = match (parsed.edits.take(), parsed.task_definition.take()) {
        (Some(edits), None) => {
            if let Some(setting) = edits.iter().find_map(|e| invalid_setting(&e.gpu)) {
                return Err(AppError::BadRequest(setting));
            }
            EditSpec::Settings(edits.into_iter().map(|e| (e.container, e.gpu)).collect())
        }
        (None, Some(task)) => EditSpec::Json(task.to_string()),
        _ => {
            return Err(AppError::BadRequest(
                "give either edits (new GPU settings of named containers) or task_definition (the whole RegisterTaskDefinition JSON), not both and not neither".into(),
            ))
        }
    };
    Ok((spec, parsed))
}

/// What is wrong with a GPU setting sent as JSON (the form checks its own text).
fn invalid_setting(setting: &GpuSetting) -> Option<String> {
    match setting {
        GpuSetting::Whole { count } if !(1..=64).contains(count) => {
            Some(format!("{count} whole GPUs: give a number from 1 to 64"))
        }
        GpuSetting::Mps { memory_mib: 0, .. } => {
            Some("memory_mib must be at least 1 (MiB; 8 GiB is 8192)".into())
        }
        GpuSetting::Mps {
            max_compute_percent: Some(p),
            ..
        } if !(1..=100).contains(p) => Some(format!(
            "max_compute_percent {p}: give a whole number from 1 to 100, or leave it out"
        )),
        _ => None,
    }
}

/// Lines and columns refer to the text the console checked, which for an API edit is not the
/// body the client sent; the JSON path in `field` says where.
fn without_places(errors: &mut [FieldError]) {
    for error in errors {
        error.line = None;
        error.column = None;
    }
}

/// `POST /api/v1/task-definitions/{family}/{revision}/check`: an edit checked as the page
/// checks it — ECS's rules, the changes, the diff, the fit and the exports — without
/// registering. 422 with the errors when a rule is broken.
pub async fn check_edit(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((family, revision)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, AppError> {
    let revision = revision_number(&revision)?;
    let (spec, body) = edit_body(&body)?;
    let revealed = body.reveal;
    let mut answer: EditCheck = use_case::check(
        &state.services,
        &actor,
        &family,
        revision,
        spec,
        body.cluster,
        body.reveal,
    )
    .await?;
    without_places(&mut answer.errors);
    let status = if answer.errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let mut response = (status, Json(answer)).into_response();
    if revealed {
        response
            .extensions_mut()
            .insert(crate::http::security::Revealed);
    }
    Ok(response)
}

/// `POST /api/v1/task-definitions/{family}/{revision}/register`: the edit registered as a new
/// revision after the same checks. 201 with the new revision; 422 with the errors; 502 with
/// ECS's code and message when ECS refuses.
pub async fn register_edit(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((family, revision)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, AppError> {
    let revision = revision_number(&revision)?;
    let (spec, body) = edit_body(&body)?;
    let mut answer: EditResult = use_case::register(
        &state.services,
        &actor,
        &family,
        revision,
        spec,
        &body.description,
    )
    .await?;
    without_places(&mut answer.errors);
    let status = match (&answer.registered, &answer.ecs_error) {
        (Some(_), _) => StatusCode::CREATED,
        (None, Some(_)) => StatusCode::BAD_GATEWAY,
        (None, None) => StatusCode::UNPROCESSABLE_ENTITY,
    };
    Ok((status, Json(answer)).into_response())
}
