//! A new revision of a task definition with other GPU settings, through aws-sdk-ecs: the
//! RegisterTaskDefinition request is built from the described revision field by field, and only
//! the GPU resource requirements of the edited containers change.

use app::{
    model::task_definition::{ContainerSummary, FamilyDetail, FamilySummary, RevisionDetail},
    ssr::task_definitions::{BoxFuture, TaskDefinitionSource},
};
use aws_sdk_ecs::{
    operation::register_task_definition::builders::RegisterTaskDefinitionFluentBuilder,
    types::{
        ContainerDefinition, NvidiaMpsAllocation, ResourceRequirement, ResourceType,
        SharingStrategy, Tag, TaskDefinition,
    },
};
use futures::StreamExt;

pub use app::model::task_definition::GpuSetting;

/// The tag that keeps a revision's change description (a comment on a revision).
pub const CHANGE_TAG: &str = "gpushare:change";
/// ECS tag values are at most 256 characters.
pub const TAG_VALUE_LIMIT: usize = 256;

/// Why an edit cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("the task definition has no container {0:?}")]
    NoSuchContainer(String),
    #[error("the change description has {0} characters; ECS keeps at most 256 in a tag")]
    DescriptionTooLong(usize),
    #[error("{0}")]
    Build(String),
}

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

/// The container with `setting` as its GPU requirement; its other requirements (an inference
/// accelerator) and every other field stay as they are.
pub fn with_gpu(
    container: &ContainerDefinition,
    setting: &GpuSetting,
) -> Result<ContainerDefinition, EditError> {
    let mut requirements: Vec<ResourceRequirement> = container
        .resource_requirements()
        .iter()
        .filter(|r| r.r#type() != &ResourceType::Gpu)
        .cloned()
        .collect();
    let built = match setting {
        GpuSetting::None => None,
        GpuSetting::Whole { count } => Some(
            ResourceRequirement::builder()
                .r#type(ResourceType::Gpu)
                .value(count.to_string())
                .build(),
        ),
        GpuSetting::Mps {
            memory_mib,
            max_compute_percent,
        } => {
            let mps = NvidiaMpsAllocation::builder()
                .memory(i32::try_from(*memory_mib).unwrap_or(i32::MAX))
                .set_max_compute_percent(max_compute_percent.map(|p| p as i32))
                .build()
                .map_err(|e| EditError::Build(e.to_string()))?;
            Some(
                ResourceRequirement::builder()
                    .r#type(ResourceType::Gpu)
                    .sharing_strategy(SharingStrategy::NvidiaMps(mps))
                    .build(),
            )
        }
    };
    if let Some(built) = built {
        requirements.push(built.map_err(|e| EditError::Build(e.to_string()))?);
    }
    let mut edited = container.clone();
    edited.resource_requirements = (!requirements.is_empty()).then_some(requirements);
    Ok(edited)
}

/// The RegisterTaskDefinition request for a new revision of `source` (with its `tags`) in which
/// the named containers get the given GPU settings, and a change description tag when given.
// Elastic Inference accelerators are deprecated in the SDK; a revision that has them keeps them.
#[allow(deprecated)]
pub fn register_request(
    ecs: &aws_sdk_ecs::Client,
    source: &TaskDefinition,
    tags: &[Tag],
    edits: &[(String, GpuSetting)],
    description: Option<&str>,
) -> Result<RegisterTaskDefinitionFluentBuilder, EditError> {
    let mut containers = source.container_definitions().to_vec();
    for (name, setting) in edits {
        let container = containers
            .iter_mut()
            .find(|c| c.name() == Some(name.as_str()))
            .ok_or_else(|| EditError::NoSuchContainer(name.clone()))?;
        *container = with_gpu(container, setting)?;
    }
    let mut tags: Vec<Tag> = tags
        .iter()
        .filter(|t| t.key() != Some(CHANGE_TAG))
        .cloned()
        .collect();
    if let Some(description) = description.map(str::trim).filter(|d| !d.is_empty()) {
        let length = description.chars().count();
        if length > TAG_VALUE_LIMIT {
            return Err(EditError::DescriptionTooLong(length));
        }
        tags.push(Tag::builder().key(CHANGE_TAG).value(description).build());
    }
    Ok(ecs
        .register_task_definition()
        .set_family(source.family().map(str::to_string))
        .set_task_role_arn(source.task_role_arn().map(str::to_string))
        .set_execution_role_arn(source.execution_role_arn().map(str::to_string))
        .set_network_mode(source.network_mode().cloned())
        .set_container_definitions(Some(containers))
        .set_volumes(non_empty(source.volumes()))
        .set_placement_constraints(non_empty(source.placement_constraints()))
        .set_requires_compatibilities(non_empty(source.requires_compatibilities()))
        .set_cpu(source.cpu().map(str::to_string))
        .set_memory(source.memory().map(str::to_string))
        .set_tags(non_empty(&tags))
        .set_pid_mode(source.pid_mode().cloned())
        .set_ipc_mode(source.ipc_mode().cloned())
        .set_proxy_configuration(source.proxy_configuration().cloned())
        .set_inference_accelerators(non_empty(source.inference_accelerators()))
        .set_ephemeral_storage(source.ephemeral_storage().cloned())
        .set_runtime_platform(source.runtime_platform().cloned())
        .set_enable_fault_injection(source.enable_fault_injection()))
}

fn non_empty<T: Clone>(items: &[T]) -> Option<Vec<T>> {
    (!items.is_empty()).then(|| items.to_vec())
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

    async fn describe(&self, reference: &str) -> Result<RevisionDetail, String> {
        let out = self
            .ecs
            .describe_task_definition()
            .task_definition(reference)
            .include(aws_sdk_ecs::types::TaskDefinitionField::Tags)
            .send()
            .await
            .map_err(|e| ecs_failed("DescribeTaskDefinition", e))?;
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
        Ok(RevisionDetail {
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
        })
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
        let describes: Vec<_> = names.iter().map(|name| self.describe(name)).collect();
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

    async fn read_family(&self, family: String) -> Result<Option<FamilyDetail>, String> {
        let mut arns = Vec::new();
        let mut token = None;
        loop {
            let page = self
                .ecs
                .list_task_definitions()
                .family_prefix(&family)
                .status(aws_sdk_ecs::types::TaskDefinitionStatus::Active)
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
        if arns.is_empty() {
            return Ok(None);
        }
        arns.truncate(REVISIONS_SHOWN);
        let describes: Vec<_> = arns.iter().map(|arn| self.describe(arn)).collect();
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
    async fn register_edit(
        &self,
        family: String,
        revision: u32,
        edits: Vec<(String, GpuSetting)>,
        description: Option<String>,
    ) -> Result<RevisionDetail, String> {
        let source = self
            .ecs
            .describe_task_definition()
            .task_definition(format!("{family}:{revision}"))
            .include(aws_sdk_ecs::types::TaskDefinitionField::Tags)
            .send()
            .await
            .map_err(|e| ecs_failed("DescribeTaskDefinition", e))?;
        let td = source
            .task_definition()
            .ok_or("DescribeTaskDefinition answered without a task definition")?;
        let registered =
            register_request(&self.ecs, td, source.tags(), &edits, description.as_deref())
                .map_err(|e| e.to_string())?
                .send()
                .await
                .map_err(|e| ecs_failed("RegisterTaskDefinition", e))?;
        let arn = registered
            .task_definition()
            .and_then(|td| td.task_definition_arn())
            .ok_or("RegisterTaskDefinition answered without an ARN")?;
        self.describe(arn).await
    }
}

impl TaskDefinitionSource for EcsTaskDefinitions {
    fn register_gpu_edit(
        &self,
        family: String,
        revision: u32,
        edits: Vec<(String, GpuSetting)>,
        description: Option<String>,
    ) -> BoxFuture<'_, Result<RevisionDetail, String>> {
        Box::pin(self.register_edit(family, revision, edits, description))
    }

    fn families(&self) -> BoxFuture<'_, Result<Vec<FamilySummary>, String>> {
        Box::pin(self.read_families())
    }

    fn family(&self, family: String) -> BoxFuture<'_, Result<Option<FamilyDetail>, String>> {
        Box::pin(self.read_family(family))
    }
}

/// The family of a task definition ARN (`…:task-definition/<family>:<revision>`).
pub fn family_of(arn: &str) -> &str {
    arn.rsplit('/')
        .next()
        .and_then(|tail| tail.rsplit_once(':').map(|(family, _)| family))
        .unwrap_or_default()
}

fn ecs_failed<E: std::error::Error + 'static>(operation: &str, error: E) -> String {
    format!(
        "{operation} failed ({}); check the AWS credentials, region and permissions",
        aws_sdk_ecs::error::DisplayErrorContext(error)
    )
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
    use aws_sdk_ecs::types::{KeyValuePair, ResourceType};

    fn container(requirements: Vec<ResourceRequirement>) -> ContainerDefinition {
        ContainerDefinition::builder()
            .name("model")
            .image("app/model:1")
            .environment(KeyValuePair::builder().name("A").value("1").build())
            .set_resource_requirements(Some(requirements))
            .build()
    }

    fn whole(count: &str) -> ResourceRequirement {
        ResourceRequirement::builder()
            .r#type(ResourceType::Gpu)
            .value(count)
            .build()
            .expect("valid")
    }

    #[test]
    fn only_the_gpu_requirement_changes() {
        let accelerator = ResourceRequirement::builder()
            .r#type(ResourceType::InferenceAccelerator)
            .value("device_1")
            .build()
            .expect("valid");
        let before = container(vec![whole("1"), accelerator.clone()]);
        assert_eq!(gpu_setting(&before), GpuSetting::Whole { count: 1 });
        let mps = GpuSetting::Mps {
            memory_mib: 8_192,
            max_compute_percent: Some(50),
        };
        let after = with_gpu(&before, &mps).expect("edited");
        assert_eq!(gpu_setting(&after), mps);
        assert_eq!(after.resource_requirements()[0], accelerator, "kept");
        let mut unchanged = after.clone();
        unchanged.resource_requirements = before.resource_requirements.clone();
        assert_eq!(unchanged, before, "every other field is the same");

        assert_eq!(
            gpu_setting(&container(vec![whole("ALL")])),
            GpuSetting::Whole { count: u32::MAX },
            "ALL is every GPU, not none"
        );
        let none = with_gpu(&container(vec![whole("2")]), &GpuSetting::None).expect("edited");
        assert_eq!(gpu_setting(&none), GpuSetting::None);
        assert!(none.resource_requirements.is_none());
        let back = with_gpu(&after, &GpuSetting::Whole { count: 2 }).expect("edited");
        assert_eq!(gpu_setting(&back), GpuSetting::Whole { count: 2 });
        assert_eq!(back.resource_requirements().len(), 2);
    }
}
