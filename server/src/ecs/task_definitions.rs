//! Task definitions through aws-sdk-ecs: the latest revision of every family, a family's
//! revisions, one revision with its full JSON, and registration; and the checks of a
//! RegisterTaskDefinition request's JSON (the SDK's shapes, the request's shape and ECS's GPU
//! rules) that run before any registration.

pub mod json;

use app::{
    model::{
        arn::{family_of, TaskDefinitionId},
        task_definition::{
            limits, locate_all, valid_family, ContainerSummary, FieldError, GpuSetting,
            RevisionDetail, SourceRevision, AUDIT_TAG, CHANGE_TAG,
        },
        ServiceError,
    },
    service::{
        ports::{BoxFuture, Registered, TaskDefinitionSchema, ValidRequest},
        task_definitions::REVISIONS_SHOWN,
    },
};
use aws_sdk_ecs::{
    error::ProvideErrorMetadata,
    operation::RequestId,
    types::{ContainerDefinition, SortOrder, Tag, TaskDefinition, TaskDefinitionStatus},
};
use std::{collections::HashSet, sync::Arc};

use futures::{StreamExt, TryStreamExt};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use super::Ecs;
use crate::aws::errors;

/// DescribeTaskDefinition calls in flight at once for one page.
const CONCURRENCY: usize = 16;

/// How long a revision described by its ARN is kept for a family's list: its definition never
/// changes, only its tags may (TagResource, for example a family handed to another team), so it
/// is described again after a while rather than each time the list is read (a family of ten
/// revisions cost ten DescribeTaskDefinition calls every 30 s, more than the console's share of
/// ECS's rate feeds for a few families).
const DESCRIBED_TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// The container's GPU setting, as its resource requirements say: the fleet reader's parsing,
/// so that `ALL` and a sharing strategy beside an empty `value` read the same everywhere.
pub fn gpu_setting(container: &ContainerDefinition) -> GpuSetting {
    use crate::fleet::join::GpuAsk;
    match crate::fleet::reader::gpu_ask(container.resource_requirements()) {
        GpuAsk::None => GpuSetting::None,
        GpuAsk::Whole(count) => GpuSetting::Whole { count },
        GpuAsk::Mps {
            memory_mib,
            max_compute_percent,
        } => GpuSetting::Mps {
            memory_mib,
            max_compute_percent,
        },
    }
}

impl Ecs {
    /// One revision with its RegisterTaskDefinition JSON; `None` when ECS has no such revision.
    pub async fn describe(&self, reference: &str) -> Result<Option<SourceRevision>, ServiceError> {
        self.paced("DescribeTaskDefinition").await?;
        let out = match self
            .client
            .describe_task_definition()
            .task_definition(reference)
            .include(aws_sdk_ecs::types::TaskDefinitionField::Tags)
            .send()
            .await
        {
            Ok(out) => out,
            Err(error) if error.code() == Some("ClientException") => return Ok(None),
            Err(error) => return Err(errors::ecs_read("DescribeTaskDefinition", &error)),
        };
        let td = out.task_definition().ok_or_else(|| {
            ServiceError::unavailable(
                "DescribeTaskDefinition answered without a task definition; try again",
            )
        })?;
        Ok(Some(SourceRevision {
            detail: self.detail_of(td, out.tags()),
            task: json::register_json(td, out.tags()),
        }))
    }

    /// A revision as the console shows it, from ECS's description and its tags.
    fn detail_of(&self, td: &TaskDefinition, tags: &[Tag]) -> RevisionDetail {
        let tag = |key: &str| {
            tags.iter()
                .find(|t| t.key() == Some(key))
                .and_then(|t| t.value())
                .map(str::to_string)
        };
        RevisionDetail {
            family: td.family().unwrap_or_default().to_string(),
            revision: td.revision().max(0) as u32,
            arn: td.task_definition_arn().unwrap_or_default().to_string(),
            active: td.status() == Some(&TaskDefinitionStatus::Active),
            registered_at: td.registered_at().map(crate::aws::rfc3339),
            compatibilities: td
                .requires_compatibilities()
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            network_mode: td.network_mode().map(|m| m.as_str().to_string()),
            cpu: td.cpu().map(str::to_string),
            memory: td.memory().map(str::to_string),
            containers: td
                .container_definitions()
                .iter()
                .map(|c| ContainerSummary {
                    name: c.name().unwrap_or_default().to_string(),
                    image: c.image().unwrap_or_default().to_string(),
                    cpu: c.cpu().max(0) as u32,
                    memory_mib: c.memory().map(|m| m.max(0) as u32),
                    gpu: gpu_setting(c),
                })
                .collect(),
            team: tag(&self.team_tag),
            change: tag(CHANGE_TAG),
            audit_id: tag(AUDIT_TAG),
        }
    }

    async fn detail(&self, reference: &str) -> Result<RevisionDetail, ServiceError> {
        self.describe(reference)
            .await?
            .map(|source| source.detail)
            .ok_or_else(|| {
                ServiceError::not_found(format!("ECS has no task definition {reference}"))
            })
    }

    /// The latest active revision of every active family: the first of each family in ECS's
    /// list of active revisions, newest first (a page of 100 names about as many families as
    /// describing each family by name did, one call each), described through the cache.
    pub async fn read_latest_revisions(&self) -> Result<Vec<RevisionDetail>, ServiceError> {
        let pages = self
            .client
            .list_task_definitions()
            .status(TaskDefinitionStatus::Active)
            .sort(SortOrder::Desc)
            .into_paginator()
            .send();
        let mut seen = HashSet::new();
        let mut newest = Vec::new();
        self.paced_pages("ListTaskDefinitions", pages, |page| {
            for arn in page.task_definition_arns() {
                if seen.insert(family_of(arn).to_string()) {
                    newest.push(arn.clone());
                }
            }
            page.next_token().is_some()
        })
        .await?;
        newest.sort_by(|a, b| family_of(a).cmp(family_of(b)));
        let active: HashSet<String> = newest.iter().cloned().collect();
        self.details_by_arn(newest, &active).await
    }

    /// The ARNs of `family`'s revisions with `status`, newest first, at most
    /// [`REVISIONS_SHOWN`].
    async fn revision_arns(
        &self,
        family: &str,
        status: TaskDefinitionStatus,
    ) -> Result<Vec<String>, ServiceError> {
        let pages = self
            .client
            .list_task_definitions()
            .family_prefix(family)
            .status(status)
            .sort(SortOrder::Desc)
            .into_paginator()
            .send();
        let mut arns = Vec::new();
        self.paced_pages("ListTaskDefinitions", pages, |page| {
            arns.extend(
                page.task_definition_arns()
                    .iter()
                    .filter(|arn| family_of(arn) == family)
                    .cloned(),
            );
            page.next_token().is_some() && arns.len() < REVISIONS_SHOWN
        })
        .await?;
        Ok(arns)
    }

    /// `family`'s revisions, active and inactive, newest first, at most [`REVISIONS_SHOWN`].
    pub async fn read_revisions(
        &self,
        family: String,
    ) -> Result<Vec<RevisionDetail>, ServiceError> {
        let (active, inactive) = futures::try_join!(
            self.revision_arns(&family, TaskDefinitionStatus::Active),
            self.revision_arns(&family, TaskDefinitionStatus::Inactive),
        )?;
        let mut arns: Vec<(u32, String)> = active
            .iter()
            .cloned()
            .chain(inactive)
            .map(|arn| {
                let revision = TaskDefinitionId::parse(&arn).map_or(0, |id| id.revision);
                (revision, arn)
            })
            .collect();
        arns.sort_by_key(|(revision, _)| std::cmp::Reverse(*revision));
        arns.truncate(REVISIONS_SHOWN);
        let active: HashSet<String> = active.into_iter().collect();
        self.details_by_arn(arns.into_iter().map(|(_, arn)| arn).collect(), &active)
            .await
    }

    /// Each revision of `arns` described, in order, through the cache (see [`DESCRIBED_TTL`]);
    /// whether it is active comes from ECS's lists just read (`active` holds the active ones),
    /// not from the description kept.
    async fn details_by_arn(
        &self,
        arns: Vec<String>,
        active: &HashSet<String>,
    ) -> Result<Vec<RevisionDetail>, ServiceError> {
        futures::stream::iter(arns.into_iter().map(|arn| async move {
            let me = self.clone();
            let is_active = active.contains(&arn);
            let mut detail = self
                .cache
                .read(
                    format!("described/{arn}"),
                    Some(DESCRIBED_TTL),
                    async move { me.detail(&arn).await },
                )
                .await?;
            detail.active = is_active;
            Ok::<_, ServiceError>(detail)
        }))
        .buffered(CONCURRENCY)
        .try_collect()
        .await
    }

    /// Registers the RegisterTaskDefinition request `task`, after every check: the new
    /// revision, or ECS's error with its code.
    pub async fn register_task(
        &self,
        task: Map<String, Value>,
    ) -> Result<Registered, ServiceError> {
        let text = Value::Object(task).to_string();
        let unsent = |errors: Vec<String>| {
            ServiceError::invalid(format!("{}; nothing was sent to ECS", errors.join("; ")))
        };
        SdkSchema::check(&text).map_err(|errors| {
            unsent(
                errors
                    .iter()
                    .map(|e| format!("{}: {}", e.field, e.message))
                    .collect(),
            )
        })?;
        let input = json::parse_register(&text)
            .map_err(|errors| unsent(errors.into_iter().map(|e| e.message).collect()))?;
        let registered = json::register(&self.client, input)
            .await
            .map_err(|e| errors::ecs_write("RegisterTaskDefinition", &e))?;
        // ECS's answer describes the new revision: no second call that could fail after it.
        let td = registered.task_definition().ok_or_else(|| {
            ServiceError::no_answer(
                "RegisterTaskDefinition answered without the revision it registered; the console asks ECS and settles the audit record within a minute",
            )
        })?;
        Ok(Registered {
            revision: self.detail_of(td, registered.tags()),
            request_id: registered.request_id().map(str::to_string),
        })
    }
}

/// Checks that run at once at most: each takes a blocking thread for up to tens of
/// milliseconds, so a burst of large texts waits its turn instead of taking every core.
pub const CHECKS_AT_ONCE: usize = 2;

/// A RegisterTaskDefinition request read with aws-sdk-ecs's own shapes, and checked against
/// ECS's limits, the request's shape and ECS's GPU rules — on the blocking pool, at most
/// [`CHECKS_AT_ONCE`] at a time.
#[derive(Clone, Debug)]
pub struct SdkSchema {
    turns: Arc<Semaphore>,
}

impl Default for SdkSchema {
    fn default() -> Self {
        SdkSchema::new(CHECKS_AT_ONCE)
    }
}

impl TaskDefinitionSchema for SdkSchema {
    fn validate(&self, text: String) -> BoxFuture<'_, Result<ValidRequest, Vec<FieldError>>> {
        let turns = self.turns.clone();
        Box::pin(async move {
            let failed = |message: &str| {
                vec![FieldError {
                    message: message.into(),
                    ..FieldError::default()
                }]
            };
            // Waiting for a turn ends with the request: a dropped request leaves the queue.
            let Ok(turn) = turns.acquire_owned().await else {
                return Err(failed("The server is stopping; check again in a moment."));
            };
            tokio::task::spawn_blocking(move || {
                let _turn = turn;
                SdkSchema::check(&text)
            })
            .await
            .unwrap_or_else(|_| {
                Err(failed(
                    "The checks stopped unexpectedly; check again, and report it if it happens again.",
                ))
            })
        })
    }

    fn create_service(
        &self,
        text: String,
    ) -> BoxFuture<'_, Result<Map<String, Value>, Vec<FieldError>>> {
        Box::pin(async move {
            if text.len() > app::model::new_service::BODY_LIMIT {
                return Err(vec![FieldError {
                    message: format!(
                        "the request is {} bytes, more than the {} a CreateService request takes here",
                        text.len(),
                        app::model::new_service::BODY_LIMIT
                    ),
                    ..FieldError::default()
                }]);
            }
            crate::ecs::create_service::parse(&text).map(|(_, body)| body)
        })
    }

    fn registration_as_sent(&self, task: Map<String, Value>) -> Map<String, Value> {
        let text = Value::Object(task.clone()).to_string();
        match json::parse_register(&text) {
            Ok(input) => json::as_sent(&input),
            Err(_) => task,
        }
    }
}

impl SdkSchema {
    /// A schema that runs at most `at_once` checks at a time.
    pub fn new(at_once: usize) -> SdkSchema {
        SdkSchema {
            turns: Arc::new(Semaphore::new(at_once.max(1))),
        }
    }

    /// Every check the console makes before a registration, on the request's JSON `text`, on
    /// the calling thread: ECS's limits first (more containers or tags than ECS takes, or
    /// nesting no request has, ends the checks there), then the SDK's shapes (types, unknown
    /// fields), the request's shape (a family, containers with names and images) and ECS's GPU
    /// rules. Each error names its field and, where the text has it, its line and column, all
    /// found in one pass; at most [`limits::MAX_ERRORS`] are listed, the rest counted.
    pub fn check(text: &str) -> Result<ValidRequest, Vec<FieldError>> {
        let over = limits::over_limits(text);
        if !over.is_empty() {
            return Err(over);
        }
        let located = |errors: Vec<placement::rules::RuleError>| -> Vec<FieldError> {
            let errors = limits::capped(errors, |left_out| placement::rules::RuleError {
                container: None,
                path: String::new(),
                message: limits::more_errors(left_out).message,
            });
            let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
            let places = locate_all(text, &paths);
            errors
                .into_iter()
                .zip(places)
                .map(|(e, at)| FieldError {
                    container: e.container,
                    line: at.map(|(line, _)| line),
                    column: at.map(|(_, column)| column),
                    field: e.path,
                    message: e.message,
                })
                .collect()
        };
        // The SDK's reading finds unknown fields and wrong types; the checks below still run,
        // so that one answer lists every error.
        let mut errors = json::parse_register(text).err().unwrap_or_default();
        let task: Map<String, Value> = match serde_json::from_str(text) {
            Ok(Value::Object(task)) => task,
            Ok(_) => {
                return Err(vec![FieldError {
                    field: String::new(),
                    message: "The task definition must be a JSON object with family and containerDefinitions.".into(),
                    ..FieldError::default()
                }])
            }
            Err(_) => return Err(located(errors)),
        };
        errors.extend(shape_errors(&task));
        match placement::rules::check_task(&task) {
            Ok(request) if errors.is_empty() => Ok((task, request)),
            Ok(_) => Err(located(errors)),
            Err(more) => {
                errors.extend(more);
                Err(located(errors))
            }
        }
    }
}

/// What RegisterTaskDefinition requires beyond types: a valid family, and containers with names
/// and images.
fn shape_errors(task: &Map<String, Value>) -> Vec<placement::rules::RuleError> {
    use placement::rules::RuleError;
    let mut errors = Vec::new();
    if !task
        .get("family")
        .and_then(Value::as_str)
        .is_some_and(valid_family)
    {
        errors.push(RuleError {
            container: None,
            path: "family".into(),
            message: "family is required: up to 255 letters, digits, hyphens and underscores."
                .into(),
        });
    }
    match task.get("containerDefinitions").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => {
            for (index, container) in list.iter().enumerate() {
                let name = container.get("name").and_then(Value::as_str);
                if name.is_none_or(str::is_empty) {
                    errors.push(RuleError {
                        container: None,
                        path: format!("containerDefinitions[{index}]"),
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
                        path: format!("containerDefinitions[{index}]"),
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
    // ECS refuses a request that gives a tag key twice; the console's team rules read the team
    // from one key, so a repeat must not reach them either.
    for key in app::model::task_definition::duplicate_tag_keys(task) {
        errors.push(RuleError {
            container: None,
            path: "tags".into(),
            message: format!(
                "The tag key {key:?} is given more than once; ECS refuses duplicate tag keys. Keep one."
            ),
        });
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_without_family_or_images_lists_every_error() {
        let errors =
            SdkSchema::check(r#"{"family": "bad name", "containerDefinitions": [{"name": "a"}]}"#)
                .expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert!(fields.contains(&"family"), "{fields:?}");
        assert!(fields.contains(&"containerDefinitions[0]"), "{fields:?}");
        let valid = SdkSchema::check(
            r#"{"family": "embed", "containerDefinitions": [{"name": "a", "image": "x"}]}"#,
        )
        .expect("valid");
        assert_eq!(valid.1, placement::GpuRequest::None);
        let twice = SdkSchema::check(
            r#"{"family": "embed", "containerDefinitions": [{"name": "a", "image": "x"}],
                "tags": [{"key": "team", "value": "search"}, {"key": "team", "value": "vision"}]}"#,
        )
        .expect_err("a tag key twice");
        assert!(
            twice.iter().any(
                |e| e.field == "tags" && e.message.contains("\"team\" is given more than once")
            ),
            "{twice:?}"
        );
    }
}
