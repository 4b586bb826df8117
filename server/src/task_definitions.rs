//! A new revision of a task definition with other GPU settings, through aws-sdk-ecs: the
//! RegisterTaskDefinition request is built from the described revision field by field, and only
//! the GPU resource requirements of the edited containers change.

use aws_sdk_ecs::{
    operation::register_task_definition::builders::RegisterTaskDefinitionFluentBuilder,
    types::{
        ContainerDefinition, NvidiaMpsAllocation, ResourceRequirement, ResourceType,
        SharingStrategy, Tag, TaskDefinition,
    },
};
use serde::{Deserialize, Serialize};

/// How one container uses GPUs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpuSetting {
    /// No GPU.
    None,
    /// Whole GPUs to itself.
    Whole { count: u32 },
    /// A share of one GPU through MPS: memory it may allocate, and a compute limit.
    Mps {
        memory_mib: u32,
        max_compute_percent: Option<u32>,
    },
}

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

/// The container's GPU setting, as its resource requirements say.
pub fn gpu_setting(container: &ContainerDefinition) -> GpuSetting {
    for requirement in container.resource_requirements() {
        if requirement.r#type() != &ResourceType::Gpu {
            continue;
        }
        if let Some(SharingStrategy::NvidiaMps(mps)) = requirement.sharing_strategy() {
            return GpuSetting::Mps {
                memory_mib: mps.memory().max(0) as u32,
                max_compute_percent: mps.max_compute_percent().map(|p| p.max(0) as u32),
            };
        }
        if let Ok(count) = requirement.value().parse::<u32>() {
            return GpuSetting::Whole { count };
        }
    }
    GpuSetting::None
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

#[cfg(test)]
mod tests {
    use super::*;
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

        let none = with_gpu(&container(vec![whole("2")]), &GpuSetting::None).expect("edited");
        assert_eq!(gpu_setting(&none), GpuSetting::None);
        assert!(none.resource_requirements.is_none());
        let back = with_gpu(&after, &GpuSetting::Whole { count: 2 }).expect("edited");
        assert_eq!(gpu_setting(&back), GpuSetting::Whole { count: 2 });
        assert_eq!(back.resource_requirements().len(), 2);
    }
}
