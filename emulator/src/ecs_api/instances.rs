//! ListContainerInstances, DescribeContainerInstances and UpdateContainerInstancesState. The answer is written straight to
//! text through typed structs, without a `serde_json::Value` tree (a hundred GPU instances are
//! about 300 KB of JSON).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::{
    clusters::cluster_of,
    input,
    output::{epoch_seconds, listed, missing, page, tags_of},
    DESCRIBE_LIMIT,
};
use crate::{
    error::{invalid, EcsError},
    model::{ContainerInstance, Fleet},
    placement::SharingMode,
};

/// The statuses ListContainerInstances filters by.
const STATUSES: [&str; 5] = [
    "ACTIVE",
    "DRAINING",
    "REGISTERING",
    "DEREGISTERING",
    "REGISTRATION_FAILED",
];

pub fn list(fleet: &Fleet, input: &input::ListContainerInstances) -> Result<Value, EcsError> {
    let cluster = cluster_of(fleet, input.cluster.as_deref())?;
    if let Some(status) = input.status.as_deref() {
        if !STATUSES.contains(&status) {
            return Err(invalid(format!("status '{status}' is not valid.")));
        }
    }
    // Without a status, every instance that is not INACTIVE (the emulator keeps none).
    let arns: Vec<String> = cluster
        .instances
        .iter()
        .filter(|i| input.status.as_deref().is_none_or(|s| s == i.room.status))
        .map(|i| i.arn.clone())
        .collect();
    let (items, next) = page(&arns, &input.paging, 100)?;
    Ok(listed("containerInstanceArns", items, next))
}

pub fn describe(
    fleet: &Fleet,
    input: &input::DescribeContainerInstances,
) -> Result<String, EcsError> {
    let cluster = cluster_of(fleet, input.cluster.as_deref())?;
    let wanted = &input.container_instances;
    if wanted.is_empty() {
        return Err(invalid(
            "containerInstances must list at least one container instance.",
        ));
    }
    if wanted.len() > DESCRIBE_LIMIT {
        return Err(invalid("containerInstances can have at most 100 items."));
    }
    let (tags, health) = (input.include.tags(), input.include.health());
    let mut found = Vec::with_capacity(wanted.len());
    let mut failures = Vec::new();
    for reference in wanted {
        let arn = if reference.starts_with("arn:") {
            reference.clone()
        } else {
            format!(
                "{}:container-instance/{}/{reference}",
                cluster.arn.split(":cluster/").next().unwrap_or_default(),
                cluster.name
            )
        };
        match cluster.instance(&arn) {
            Some(instance) => {
                let tags = tags.then(|| tags_of(fleet, &instance.arn));
                found.push(InstanceOut::new(instance, tags, health));
            }
            None => failures.push(missing(&arn)),
        }
    }
    serde_json::to_string(&Described {
        container_instances: found,
        failures,
    })
    .map_err(|e| EcsError::Server(format!("could not write the answer: {e}")))
}

/// UpdateContainerInstancesState: sets up to 10 instances `ACTIVE` or `DRAINING`. A DRAINING
/// instance takes no new task; its services' tasks are replaced elsewhere within each service's
/// `minimumHealthyPercent` and `maximumPercent` and then stopped (the service scheduler does it
/// as it reconciles); standalone tasks keep running. The answer describes the instances.
pub fn update_state(
    fleet: &mut Fleet,
    input: &input::UpdateContainerInstancesState,
) -> Result<String, EcsError> {
    let status = status_asked(input)?;
    let key = fleet
        .cluster_key(input.cluster.as_deref().unwrap_or("default"))
        .ok_or(EcsError::ClusterNotFound)?;
    let mut changed = Vec::new();
    let mut failures = Vec::new();
    {
        let cluster = fleet
            .clusters
            .get_mut(&key)
            .ok_or(EcsError::ClusterNotFound)?;
        let prefix = cluster
            .arn
            .split(":cluster/")
            .next()
            .unwrap_or_default()
            .to_string();
        for reference in &input.container_instances {
            let arn = if reference.starts_with("arn:") {
                reference.clone()
            } else {
                format!("{prefix}:container-instance/{}/{reference}", cluster.name)
            };
            match cluster.instance_mut(&arn) {
                Some(instance) => {
                    if instance.room.status != status {
                        instance.room.status = status.to_string();
                        instance.version += 1;
                    }
                    changed.push(arn);
                }
                None => failures.push(missing(&arn)),
            }
        }
        if status == "DRAINING" {
            crate::engine::unsettle_services_on(cluster, &changed);
        }
    }
    let cluster = &fleet.clusters[&key];
    let found = changed
        .iter()
        .filter_map(|arn| cluster.instance(arn))
        .map(|instance| InstanceOut::new(instance, None, false))
        .collect();
    serde_json::to_string(&Described {
        container_instances: found,
        failures,
    })
    .map_err(|e| EcsError::Server(format!("could not write the answer: {e}")))
}

/// The status an UpdateContainerInstancesState request asks for, once its instances list is
/// checked.
fn status_asked(input: &input::UpdateContainerInstancesState) -> Result<&str, EcsError> {
    let status = match input.status.as_deref() {
        Some(status @ ("ACTIVE" | "DRAINING")) => status,
        Some(other) => {
            return Err(invalid(format!(
                "status '{other}' is not valid: give ACTIVE or DRAINING."
            )))
        }
        None => return Err(invalid("status is required: give ACTIVE or DRAINING.")),
    };
    let wanted = &input.container_instances;
    if wanted.is_empty() {
        return Err(invalid(
            "containerInstances must list at least one container instance.",
        ));
    }
    if wanted.len() > 10 {
        return Err(invalid("containerInstances can have at most 10 items."));
    }
    Ok(status)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Described<'a> {
    pub container_instances: Vec<InstanceOut<'a>>,
    pub failures: Vec<Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceOut<'a> {
    container_instance_arn: &'a str,
    ec2_instance_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity_provider_name: Option<&'a str>,
    version: u64,
    version_info: VersionInfo,
    status: &'a str,
    agent_connected: bool,
    running_tasks_count: u32,
    pending_tasks_count: u32,
    registered_at: f64,
    attributes: Vec<Attribute<'a>>,
    registered_resources: [Resource<'a>; 5],
    remaining_resources: [Resource<'a>; 5],
    /// Only on instances that support GPU sharing, as ECS answers: an instance on an older agent
    /// or AMI, or without MPS, has its GPUs only in the GPU resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_devices: Option<Vec<GpuDevice<'a>>>,
    /// Only when the request's `include` asks for `CONTAINER_INSTANCE_HEALTH`.
    #[serde(skip_serializing_if = "Option::is_none")]
    health_status: Option<Health<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tags: Option<Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionInfo {
    agent_version: &'static str,
    agent_hash: &'static str,
    docker_version: &'static str,
}

#[derive(Serialize)]
struct Attribute<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Resource<'a> {
    name: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    integer_value: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    string_set_value: Option<Vec<Cow<'a, str>>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GpuDevice<'a> {
    gpu_id: &'a str,
    sharing_mode: &'static str,
    #[serde(rename = "totalMemoryInMiB")]
    total_memory_in_mib: u32,
    #[serde(rename = "remainingMemoryInMiB")]
    remaining_memory_in_mib: u32,
    container_count: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Health<'a> {
    overall_status: &'static str,
    details: Vec<Check<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Check<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_reason: Option<&'a str>,
    last_updated: f64,
    last_status_change: f64,
}

fn ports<'p>(ports: impl IntoIterator<Item = &'p u16>) -> Vec<Cow<'static, str>> {
    ports
        .into_iter()
        .map(|p| Cow::Owned(p.to_string()))
        .collect()
}

fn integer(name: &'static str, value: u32) -> Resource<'static> {
    Resource {
        name,
        kind: "INTEGER",
        integer_value: Some(value),
        string_set_value: None,
    }
}

impl<'a> InstanceOut<'a> {
    pub fn new(
        instance: &'a ContainerInstance,
        tags: Option<Value>,
        health: bool,
    ) -> InstanceOut<'a> {
        let registered_at = epoch_seconds(instance.registered_at);
        InstanceOut {
            container_instance_arn: &instance.arn,
            ec2_instance_id: &instance.ec2_instance_id,
            capacity_provider_name: instance.capacity_provider.as_deref(),
            version: instance.version,
            version_info: VersionInfo {
                agent_version: "1.107.0",
                agent_hash: "emulated",
                docker_version: "DockerVersion: 25.0.8",
            },
            status: &instance.room.status,
            agent_connected: instance.room.agent_connected,
            running_tasks_count: instance.running_tasks,
            pending_tasks_count: instance.pending_tasks,
            registered_at,
            attributes: attributes_of(instance),
            registered_resources: registered_resources(instance),
            remaining_resources: remaining_resources(instance),
            gpu_devices: instance.mps_capable.then(|| gpu_devices_of(instance)),
            health_status: health.then(|| health_of(instance, registered_at)),
            tags,
        }
    }
}

/// The attributes ECS reports: the agent's, the driver's and MPS capabilities, and the custom
/// ones the agent's ECS_INSTANCE_ATTRIBUTES sets.
fn attributes_of(instance: &ContainerInstance) -> Vec<Attribute<'_>> {
    let mut attributes = vec![
        Attribute {
            name: "ecs.instance-type",
            value: Some(&instance.instance_type),
        },
        Attribute {
            name: "ecs.availability-zone",
            value: Some(&instance.availability_zone),
        },
        Attribute {
            name: "ecs.os-type",
            value: Some("linux"),
        },
        Attribute {
            name: "ecs.cpu-architecture",
            value: Some("x86_64"),
        },
        Attribute {
            name: "com.amazonaws.ecs.capability.docker-remote-api.1.43",
            value: None,
        },
    ];
    if !instance.gpus.is_empty() {
        attributes.push(Attribute {
            name: "ecs.capability.nvidia-driver-version.570.172.08",
            value: None,
        });
    }
    if instance.mps_capable {
        attributes.push(Attribute {
            name: "ecs.capability.gpu-sharing-mps",
            value: None,
        });
    }
    for (name, value) in &instance.room.attributes {
        if !name.starts_with("ecs.") && name != crate::placement::resources::EC2_INSTANCE_ID {
            attributes.push(Attribute {
                name,
                value: Some(value),
            });
        }
    }
    attributes
}

fn string_set<'a>(name: &'static str, values: Vec<Cow<'a, str>>) -> Resource<'a> {
    Resource {
        name,
        kind: "STRINGSET",
        integer_value: None,
        string_set_value: Some(values),
    }
}

fn registered_resources(instance: &ContainerInstance) -> [Resource<'_>; 5] {
    let all_gpus = instance
        .gpu_ids
        .iter()
        .map(|id| Cow::Borrowed(id.as_str()))
        .collect();
    [
        integer("CPU", instance.cpu),
        integer("MEMORY", instance.memory_mib),
        string_set("PORTS", ports(&ContainerInstance::RESERVED_PORTS)),
        string_set("PORTS_UDP", Vec::new()),
        string_set("GPU", all_gpus),
    ]
}

/// As ECS reports them, the PORTS of the remaining resources are the host ports in use: the
/// reserved ones and those tasks hold.
fn remaining_resources(instance: &ContainerInstance) -> [Resource<'_>; 5] {
    let free_gpus = instance
        .gpu_ids
        .iter()
        .zip(&instance.gpus)
        .filter(|(_, slot)| slot.mode == SharingMode::Idle)
        .map(|(id, _)| Cow::Borrowed(id.as_str()))
        .collect();
    [
        integer("CPU", instance.room.cpu_remaining),
        integer("MEMORY", instance.room.memory_remaining_mib),
        string_set("PORTS", ports(&instance.room.tcp_ports_used)),
        string_set("PORTS_UDP", ports(&instance.room.udp_ports_used)),
        string_set("GPU", free_gpus),
    ]
}

fn gpu_devices_of(instance: &ContainerInstance) -> Vec<GpuDevice<'_>> {
    instance
        .gpu_ids
        .iter()
        .zip(&instance.gpus)
        .map(|(id, slot)| GpuDevice {
            gpu_id: id,
            sharing_mode: slot.mode.as_str(),
            total_memory_in_mib: slot.total_memory_mib,
            remaining_memory_in_mib: slot.remaining_memory_mib,
            container_count: slot.container_count,
        })
        .collect()
}

/// The health ECS reports when asked: the container runtime's check, and on GPU instances the
/// accelerated-compute check that MPS's daemon answers.
fn health_of(instance: &ContainerInstance, registered_at: f64) -> Health<'_> {
    let impaired = |yes| if yes { "IMPAIRED" } else { "OK" };
    let mut details = vec![Check {
        kind: "CONTAINER_RUNTIME",
        status: "OK",
        status_reason: None,
        last_updated: registered_at,
        last_status_change: registered_at,
    }];
    if !instance.gpus.is_empty() {
        details.push(Check {
            kind: "ACCELERATED_COMPUTE",
            status: impaired(instance.mps_impaired.is_some()),
            // The agent's check gives no reason text.
            status_reason: None,
            last_updated: registered_at,
            last_status_change: instance
                .mps_impaired
                .map_or(registered_at, |at| at.timestamp() as f64),
        });
    }
    Health {
        overall_status: impaired(instance.mps_impaired.is_some()),
        details,
    }
}
