//! Task definitions through aws-sdk-ecs: families, revisions with their full JSON, validation of
//! a RegisterTaskDefinition request (the SDK's shapes, the request's shape and ECS's GPU rules),
//! and registration. An edit is made on the described revision's JSON, so that only what the
//! user changed changes.

pub mod json;

use app::{
    model::{
        task_definition::{
            ContainerSummary, FamilyDetail, FamilySummary, FieldError, RevisionDetail,
        },
        task_definition_json::{locate, CHANGE_TAG},
    },
    ssr::task_definitions::{BoxFuture, SourceRevision, TaskDefinitionSource},
};
use aws_sdk_ecs::{error::ProvideErrorMetadata, types::ContainerDefinition};
use futures::StreamExt;
use placement::GpuRequest;
use serde_json::{Map, Value};

pub use app::model::task_definition::GpuSetting;

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

/// Every check the console makes before a registration, on the request's JSON `text`: the
/// SDK's shapes (types, unknown fields), the request's shape (a family, containers with names
/// and images) and ECS's GPU rules. Each error names its field and, where the text has it, its
/// line and column.
pub fn validate(text: &str) -> Result<(Map<String, Value>, GpuRequest), Vec<FieldError>> {
    let located = |errors: Vec<placement::rules::RuleError>| -> Vec<FieldError> {
        errors
            .into_iter()
            .map(|e| {
                let at = (!e.path.is_empty())
                    .then(|| locate(text, &e.path))
                    .flatten();
                FieldError {
                    container: e.container,
                    line: at.map(|(line, _)| line),
                    column: at.map(|(_, column)| column),
                    field: e.path,
                    message: e.message,
                }
            })
            .collect()
    };
    // The SDK's reading finds unknown fields and wrong types; the checks below still run, so
    // that one answer lists every error.
    let mut errors = json::parse_register(text).err().unwrap_or_default();
    let task: Map<String, Value> = match serde_json::from_str(text) {
        Ok(Value::Object(task)) => task,
        Ok(_) => {
            return Err(vec![FieldError {
            field: String::new(),
            message:
                "The task definition must be a JSON object with family and containerDefinitions."
                    .into(),
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

/// What RegisterTaskDefinition requires beyond types: a valid family, and containers with names
/// and images.
fn shape_errors(task: &Map<String, Value>) -> Vec<placement::rules::RuleError> {
    use placement::rules::RuleError;
    let mut errors = Vec::new();
    if !task
        .get("family")
        .and_then(Value::as_str)
        .is_some_and(app::server_fns::task_definitions::valid_family)
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
    errors
}

/// Task definitions read from ECS for the pages, with the services of the latest fleet snapshot.
pub struct EcsTaskDefinitions {
    ecs: aws_sdk_ecs::Client,
    team_tag: String,
    fleet: std::sync::Arc<crate::fleet::store::SnapshotStore>,
}

/// Revisions of one family shown at most.
pub const REVISIONS_SHOWN: usize = 25;

impl EcsTaskDefinitions {
    pub fn new(
        ecs: aws_sdk_ecs::Client,
        team_tag: &str,
        fleet: std::sync::Arc<crate::fleet::store::SnapshotStore>,
    ) -> EcsTaskDefinitions {
        EcsTaskDefinitions {
            ecs,
            team_tag: team_tag.to_string(),
            fleet,
        }
    }

    /// `cluster/service` of every service running a revision of `family`.
    fn services_of(&self, family: &str) -> Vec<String> {
        let Some(snapshot) = self.fleet.state().snapshot else {
            return Vec::new();
        };
        let mut services: Vec<String> = snapshot
            .clusters
            .iter()
            .flat_map(|c| {
                c.service_list
                    .iter()
                    .filter(|s| family_of(&s.task_definition_arn) == family)
                    .map(move |s| format!("{}/{}", c.name, s.name))
            })
            .collect();
        services.sort();
        services
    }

    /// One revision with its RegisterTaskDefinition JSON; `None` when ECS has no such revision.
    async fn describe(&self, reference: &str) -> Result<Option<SourceRevision>, String> {
        let out = match self
            .ecs
            .describe_task_definition()
            .task_definition(reference)
            .include(aws_sdk_ecs::types::TaskDefinitionField::Tags)
            .send()
            .await
        {
            Ok(out) => out,
            Err(error) if error.code() == Some("ClientException") => return Ok(None),
            Err(error) => return Err(ecs_failed("DescribeTaskDefinition", error)),
        };
        let td = out
            .task_definition()
            .ok_or("DescribeTaskDefinition answered without a task definition")?;
        let tag = |key: &str| {
            out.tags()
                .iter()
                .find(|t| t.key() == Some(key))
                .and_then(|t| t.value())
                .map(str::to_string)
        };
        let detail = RevisionDetail {
            family: td.family().unwrap_or_default().to_string(),
            revision: td.revision().max(0) as u32,
            arn: td.task_definition_arn().unwrap_or_default().to_string(),
            active: td.status() == Some(&aws_sdk_ecs::types::TaskDefinitionStatus::Active),
            registered_at: td.registered_at().and_then(|at| {
                at.fmt(aws_sdk_ecs::primitives::DateTimeFormat::DateTime)
                    .ok()
            }),
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
        };
        Ok(Some(SourceRevision {
            detail,
            task: json::register_json(td, out.tags()),
        }))
    }

    async fn detail(&self, reference: &str) -> Result<RevisionDetail, String> {
        self.describe(reference)
            .await?
            .map(|source| source.detail)
            .ok_or_else(|| format!("ECS has no task definition {reference}"))
    }

    async fn read_families(&self) -> Result<Vec<FamilySummary>, String> {
        let mut names = Vec::new();
        let mut token = None;
        loop {
            let page = self
                .ecs
                .list_task_definition_families()
                .status(aws_sdk_ecs::types::TaskDefinitionFamilyStatus::Active)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| ecs_failed("ListTaskDefinitionFamilies", e))?;
            names.extend(page.families().iter().cloned());
            token = page.next_token().map(str::to_string);
            if token.is_none() {
                break;
            }
        }
        let describes: Vec<_> = names.iter().map(|name| self.detail(name)).collect();
        let latest: Vec<Result<RevisionDetail, String>> = futures::stream::iter(describes)
            .buffered(16)
            .collect()
            .await;
        latest
            .into_iter()
            .map(|revision| {
                let revision = revision?;
                Ok(FamilySummary {
                    services: self.services_of(&revision.family),
                    gpu: revision
                        .containers
                        .iter()
                        .filter(|c| c.gpu.uses_gpu())
                        .map(|c| format!("{}: {}", c.name, c.gpu.describe()))
                        .collect(),
                    family: revision.family,
                    latest_revision: revision.revision,
                    team: revision.team,
                })
            })
            .collect()
    }

    /// The ARNs of `family`'s revisions with `status`, newest first, at most [`REVISIONS_SHOWN`].
    async fn revision_arns(
        &self,
        family: &str,
        status: aws_sdk_ecs::types::TaskDefinitionStatus,
    ) -> Result<Vec<String>, String> {
        let mut arns = Vec::new();
        let mut token = None;
        loop {
            let page = self
                .ecs
                .list_task_definitions()
                .family_prefix(family)
                .status(status.clone())
                .sort(aws_sdk_ecs::types::SortOrder::Desc)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| ecs_failed("ListTaskDefinitions", e))?;
            arns.extend(
                page.task_definition_arns()
                    .iter()
                    .filter(|arn| family_of(arn) == family)
                    .cloned(),
            );
            token = page.next_token().map(str::to_string);
            if token.is_none() || arns.len() >= REVISIONS_SHOWN {
                break;
            }
        }
        Ok(arns)
    }

    async fn read_family(&self, family: String) -> Result<Option<FamilyDetail>, String> {
        use aws_sdk_ecs::types::TaskDefinitionStatus;
        let (active, inactive) = futures::try_join!(
            self.revision_arns(&family, TaskDefinitionStatus::Active),
            self.revision_arns(&family, TaskDefinitionStatus::Inactive),
        )?;
        let mut arns: Vec<(u32, String)> = active
            .into_iter()
            .chain(inactive)
            .map(|arn| (revision_of(&arn), arn))
            .collect();
        if arns.is_empty() {
            return Ok(None);
        }
        arns.sort_by_key(|(revision, _)| std::cmp::Reverse(*revision));
        arns.truncate(REVISIONS_SHOWN);
        let describes: Vec<_> = arns.iter().map(|(_, arn)| self.detail(arn)).collect();
        let revisions: Vec<Result<RevisionDetail, String>> = futures::stream::iter(describes)
            .buffered(16)
            .collect()
            .await;
        Ok(Some(FamilyDetail {
            services: self.services_of(&family),
            family,
            revisions: revisions.into_iter().collect::<Result<_, _>>()?,
        }))
    }
}

impl EcsTaskDefinitions {
    /// Registers the RegisterTaskDefinition request `text`, after every check; the new revision,
    /// or what is wrong, or ECS's error with its code.
    async fn register_text(
        &self,
        text: String,
    ) -> Result<(RevisionDetail, Option<String>), String> {
        use aws_sdk_ecs::operation::RequestId;
        validate(&text).map_err(|errors| {
            errors
                .iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        let input = json::parse_register(&text).map_err(|errors| {
            errors
                .into_iter()
                .map(|e| e.message)
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        let registered = json::register_call(&self.ecs, input)
            .send()
            .await
            .map_err(|e| ecs_failed("RegisterTaskDefinition", e))?;
        let arn = registered
            .task_definition()
            .and_then(|td| td.task_definition_arn())
            .ok_or("RegisterTaskDefinition answered without an ARN")?;
        let request_id = registered.request_id().map(str::to_string);
        Ok((self.detail(arn).await?, request_id))
    }
}

impl TaskDefinitionSource for EcsTaskDefinitions {
    fn families(&self) -> BoxFuture<'_, Result<Vec<FamilySummary>, String>> {
        Box::pin(self.read_families())
    }

    fn family(&self, family: String) -> BoxFuture<'_, Result<Option<FamilyDetail>, String>> {
        Box::pin(self.read_family(family))
    }

    fn revision(
        &self,
        family: String,
        revision: u32,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, String>> {
        Box::pin(async move { self.describe(&format!("{family}:{revision}")).await })
    }

    fn validate(&self, text: &str) -> Result<(Map<String, Value>, GpuRequest), Vec<FieldError>> {
        validate(text)
    }

    fn register(
        &self,
        text: String,
    ) -> BoxFuture<'_, Result<(RevisionDetail, Option<String>), String>> {
        Box::pin(self.register_text(text))
    }
}

/// The revision number at the end of a task definition ARN.
pub fn revision_of(arn: &str) -> u32 {
    arn.rsplit(':')
        .next()
        .and_then(|r| r.parse().ok())
        .unwrap_or_default()
}

/// The family of a task definition ARN (`…:task-definition/<family>:<revision>`).
pub fn family_of(arn: &str) -> &str {
    arn.rsplit('/')
        .next()
        .and_then(|tail| tail.rsplit_once(':').map(|(family, _)| family))
        .unwrap_or_default()
}

/// What an ECS call's failure means for the user: ECS's own code and message when it answered,
/// otherwise where to look (credentials, region, network).
pub fn ecs_failed<E>(operation: &str, error: aws_sdk_ecs::error::SdkError<E>) -> String
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
{
    match (error.code(), error.message()) {
        (Some(code), message) => format!(
            "ECS refused {operation}: {code}: {}",
            message.unwrap_or("no message")
        ),
        _ => format!(
            "{operation} failed ({}); check the AWS credentials, region and permissions",
            aws_sdk_ecs::error::DisplayErrorContext(error)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_is_read_off_its_arn() {
        assert_eq!(
            family_of("arn:aws:ecs:us-east-1:123456789012:task-definition/embed-api:12"),
            "embed-api"
        );
        assert_eq!(family_of("nonsense"), "");
    }
    #[test]
    fn a_revision_is_read_off_its_arn() {
        assert_eq!(
            revision_of("arn:aws:ecs:us-east-1:123456789012:task-definition/embed-api:12"),
            12
        );
        assert_eq!(revision_of("nonsense"), 0);
    }
}
