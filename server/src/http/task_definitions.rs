//! `POST /api/v1/task-definitions/validate` and `/fit-check`: a task definition's JSON (as
//! `aws ecs register-task-definition --cli-input-json` takes it) checked against ECS's GPU
//! rules, and against the fleet with the placement rules.

use axum::{
    body::Bytes,
    extract::{rejection::QueryRejection, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use placement::{
    rules::{check_task, RuleError},
    GpuRequest,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use app::model::fit::{fit_check as check_fit, FitReport};

use crate::{error::AppError, state::AppState};

/// The fields RegisterTaskDefinition takes (ECS API reference); any other is refused, as ECS
/// refuses it.
pub const REGISTER_FIELDS: [&str; 18] = [
    "family",
    "taskRoleArn",
    "executionRoleArn",
    "networkMode",
    "containerDefinitions",
    "volumes",
    "placementConstraints",
    "requiresCompatibilities",
    "cpu",
    "memory",
    "tags",
    "pidMode",
    "ipcMode",
    "proxyConfiguration",
    "inferenceAccelerators",
    "ephemeralStorage",
    "runtimePlatform",
    "enableFaultInjection",
];

/// What a task definition asks of the GPUs.
#[derive(Debug, Serialize)]
pub struct GpuAskSummary {
    /// `none`, `whole` or `mps`.
    pub kind: &'static str,
    /// Whole GPUs the task needs on one instance.
    pub whole_gpus: u32,
    /// MiB the task's MPS containers need together on one GPU.
    pub mps_memory_mib: u32,
}

impl From<&GpuRequest> for GpuAskSummary {
    fn from(request: &GpuRequest) -> Self {
        GpuAskSummary {
            kind: match request {
                GpuRequest::None => "none",
                GpuRequest::Whole(_) => "whole",
                GpuRequest::Mps(_) => "mps",
            },
            whole_gpus: request.whole_gpus(),
            mps_memory_mib: request.mps_memory_mib(),
        }
    }
}

/// The answer of `validate`.
#[derive(Debug, Serialize)]
pub struct Validation {
    pub valid: bool,
    pub errors: Vec<RuleError>,
    pub gpu: Option<GpuAskSummary>,
}

/// Parses the body as a task definition object; malformed JSON names its line and column.
fn parse(body: &Bytes) -> Result<Map<String, Value>, AppError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        AppError::BadRequest(format!(
            "the body is not valid JSON: {e}; send the task definition as `aws ecs register-task-definition --cli-input-json` takes it"
        ))
    })?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(AppError::BadRequest(
            "the body must be a JSON object: a task definition with family and containerDefinitions".into(),
        )),
    }
}

/// Every rule the console checks before a registration: the request's shape (known fields, a
/// family, containers with names and images) and ECS's GPU rules.
pub fn validate_task_definition(task: &Map<String, Value>) -> Result<GpuRequest, Vec<RuleError>> {
    let mut errors: Vec<RuleError> = task
        .keys()
        .filter(|key| !REGISTER_FIELDS.contains(&key.as_str()))
        .map(|key| RuleError {
            container: None,
            path: key.clone(),
            message: format!(
                "RegisterTaskDefinition has no field '{key}'; remove it (fields such as taskDefinitionArn, revision and status come from DescribeTaskDefinition and cannot be registered)."
            ),
        })
        .collect();
    match task.get("family").and_then(Value::as_str) {
        Some(family)
            if !family.is_empty()
                && family.len() <= 255
                && family
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') => {}
        _ => errors.push(RuleError {
            container: None,
            path: "family".into(),
            message: "family is required: up to 255 letters, digits, hyphens and underscores."
                .into(),
        }),
    }
    match task.get("containerDefinitions").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => {
            for (index, container) in list.iter().enumerate() {
                let Some(container) = container.as_object() else {
                    errors.push(RuleError {
                        container: None,
                        path: format!("containerDefinitions[{index}]"),
                        message: "Each container definition must be an object.".into(),
                    });
                    continue;
                };
                let name = container.get("name").and_then(Value::as_str);
                if name.is_none_or(str::is_empty) {
                    errors.push(RuleError {
                        container: None,
                        path: format!("containerDefinitions[{index}].name"),
                        message: "Each container needs a name.".into(),
                    });
                }
                if container
                    .get("image")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    errors.push(RuleError {
                        container: name.map(str::to_string),
                        path: format!("containerDefinitions[{index}].image"),
                        message: format!("Container '{}' needs an image.", name.unwrap_or("?")),
                    });
                }
            }
        }
        _ => errors.push(RuleError {
            container: None,
            path: "containerDefinitions".into(),
            message: "containerDefinitions must list at least one container.".into(),
        }),
    }
    match check_task(task) {
        Ok(request) if errors.is_empty() => Ok(request),
        Ok(_) => Err(errors),
        Err(more) => {
            errors.extend(more);
            Err(errors)
        }
    }
}

/// `POST /api/v1/task-definitions/validate`.
pub async fn validate(body: Bytes) -> Result<Json<Validation>, AppError> {
    let task = parse(&body)?;
    Ok(Json(match validate_task_definition(&task) {
        Ok(request) => Validation {
            valid: true,
            errors: Vec::new(),
            gpu: Some(GpuAskSummary::from(&request)),
        },
        Err(errors) => Validation {
            valid: false,
            errors,
            gpu: None,
        },
    }))
}

/// `GET /api/v1/task-definitions`: every active family, described by its latest revision.
pub async fn list_families(
    State(state): State<AppState>,
) -> Result<Json<Vec<app::model::task_definition::FamilySummary>>, AppError> {
    state
        .console
        .task_definitions
        .families()
        .await
        .map(Json)
        .map_err(AppError::Unavailable)
}

/// `GET /api/v1/task-definitions/{family}`: the family's active revisions, newest first.
pub async fn get_family(
    State(state): State<AppState>,
    axum::extract::Path(family): axum::extract::Path<String>,
) -> Result<Json<app::model::task_definition::FamilyDetail>, AppError> {
    if !app::server_fns::task_definitions::valid_family(&family) {
        return Err(AppError::BadRequest(format!(
            "{family:?} is not a task definition family: up to 255 letters, digits, hyphens and underscores"
        )));
    }
    state
        .console
        .task_definitions
        .family(family.clone())
        .await
        .map_err(AppError::Unavailable)?
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

/// `POST /api/v1/task-definitions/fit-check`: where one task of this task definition could go.
pub async fn fit_check(
    State(state): State<AppState>,
    query: Result<Query<FitQuery>, QueryRejection>,
    body: Bytes,
) -> Result<Response, AppError> {
    let Query(query) = query.map_err(|rejection| {
        AppError::BadRequest(format!(
            "{}; the only parameter is cluster",
            rejection.body_text()
        ))
    })?;
    let task = parse(&body)?;
    let request = match validate_task_definition(&task) {
        Ok(request) => request,
        Err(errors) => {
            let answer = Validation {
                valid: false,
                errors,
                gpu: None,
            };
            return Ok((StatusCode::UNPROCESSABLE_ENTITY, Json(answer)).into_response());
        }
    };
    if request == GpuRequest::None {
        return Err(AppError::BadRequest(
            "the task definition asks for no GPU; give a container a GPU resource requirement to check its fit".into(),
        ));
    }
    let fleet = state.fleet.state();
    let Some(snapshot) = fleet.snapshot else {
        return Err(AppError::Unavailable(
            "the first fleet snapshot is still being read; try again in a few seconds".into(),
        ));
    };
    super::fleet::known_cluster(&snapshot, query.cluster.as_deref())?;
    let report: FitReport = check_fit(&snapshot, query.cluster.as_deref(), &request);
    Ok(Json(report).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_request_shape_is_checked_with_the_gpu_rules() {
        let errors = validate_task_definition(&task(json!({
            "family": "bad family!",
            "revision": 3,
            "containerDefinitions": [
                {"name": "a", "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 0}}}]},
                "not an object",
            ],
        })))
        .expect_err("broken");
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "revision",
                "family",
                "containerDefinitions[0].image",
                "containerDefinitions[1]",
                "containerDefinitions[0].resourceRequirements[0].sharingStrategy.nvidiaMps.memory",
            ]
        );
        let ok = validate_task_definition(&task(json!({
            "family": "embed-api",
            "requiresCompatibilities": ["EC2"],
            "containerDefinitions": [{"name": "a", "image": "i", "resourceRequirements": [
                {"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}}}]}],
        })));
        assert_eq!(ok, Ok(GpuRequest::Mps(vec![8192])));
        assert!(validate_task_definition(&task(json!({"family": "x"}))).is_err());
    }
}
