//! From aws-sdk-ecs's shapes to the console's: services, tasks, container instances, their GPUs and
//! the room left on them.

use super::*;
use app::model::words::{
    DeploymentStatus, DeploymentStrategy, InstanceStatus, RolloutState, TaskStatus,
};

/// A service as the console shows it, from DescribeServices.
pub(super) fn service_ref(s: &aws_sdk_ecs::types::Service, team_tag: &str) -> ServiceRef {
    let team = s
        .tags()
        .iter()
        .find(|t| t.key() == Some(team_tag))
        .and_then(|t| t.value());
    let config = s.deployment_configuration();
    let breaker = config.and_then(|c| c.deployment_circuit_breaker());
    let count = |n: i32| n.max(0) as u32;
    ServiceRef {
        name: s.service_name().unwrap_or_default().to_string(),
        task_definition_arn: s.task_definition().unwrap_or_default().to_string(),
        team: team.map(str::to_string),
        desired: count(s.desired_count()),
        running: count(s.running_count()),
        pending: count(s.pending_count()),
        rollout_state: s
            .deployments()
            .iter()
            .find(|d| d.status().map(DeploymentStatus::from) == Some(DeploymentStatus::Primary))
            .and_then(|d| d.rollout_state())
            .map(|state| RolloutState::from(state.as_str())),
        deployments: s.deployments().len() as u32,
        maximum_percent: config.and_then(|c| c.maximum_percent()).map(count),
        minimum_healthy_percent: config.and_then(|c| c.minimum_healthy_percent()).map(count),
        circuit_breaker: breaker.is_some_and(|b| b.enable()),
        circuit_breaker_rollback: breaker.is_some_and(|b| b.rollback()),
        strategy: config
            .and_then(|c| c.strategy())
            .map(|s| DeploymentStrategy::from(s.as_str())),
        placement_constraints: s
            .placement_constraints()
            .iter()
            .map(constraint_json)
            .collect(),
        placement_strategy: s.placement_strategy().iter().map(strategy_text).collect(),
        capacity_provider_strategy: s
            .capacity_provider_strategy()
            .iter()
            .map(|item| app::model::capacity::StrategyItem {
                capacity_provider: item.capacity_provider().to_string(),
                weight: count(item.weight()),
                base: count(item.base()),
            })
            .collect(),
        read_at: Some(app::service::clock::now()),
    }
}

pub(super) fn add_usage(
    snapshot: &mut FleetSnapshot,
    usage: &UsageMap,
    ec2: &HashMap<String, Ec2Instance>,
) {
    snapshot.cloudwatch_calls = usage.calls;
    for instance in snapshot
        .clusters
        .iter_mut()
        .flat_map(|c| c.instances.iter_mut())
    {
        let described = ec2.get(&instance.ec2_instance_id);
        if let Some(described) = described {
            instance.lifecycle = Some(described.lifecycle);
            instance.managed_instance = described.managed_by_ecs;
            if instance.availability_zone.is_none() {
                instance.availability_zone = described.availability_zone.clone();
            }
        }
        let names = host_names(&instance.ec2_instance_id, described);
        let host = names
            .iter()
            .find(|name| usage.models.contains_key(*name))
            .or_else(|| {
                names
                    .iter()
                    .find(|name| usage.by_gpu.keys().any(|(host, _)| host == *name))
            })
            .cloned()
            .unwrap_or_else(|| instance.ec2_instance_id.clone());
        instance.gpu_model = usage
            .models
            .get(&host)
            .cloned()
            .or_else(|| gpu_model_of(&instance.instance_type).map(str::to_string));
        for gpu in &mut instance.gpus {
            gpu.usage = usage.by_gpu.get(&(host.clone(), gpu.index)).copied();
        }
    }
}

pub(super) fn raw_task(task: &aws_sdk_ecs::types::Task) -> RawTask {
    // Names many tasks repeat are kept once (`fleet::names`); the task's own ARN is its own.
    let name = |n: &str| crate::fleet::names::NAMES.get(n);
    RawTask {
        arn: Arc::from(task.task_arn().unwrap_or_default()),
        task_definition_arn: name(task.task_definition_arn().unwrap_or_default()),
        group: task.group().map(name),
        last_status: task.last_status().map(TaskStatus::from),
        desired_status: task.desired_status().map(TaskStatus::from),
        started_at: task.started_at().map(crate::aws::rfc3339),
        containers: task
            .containers()
            .iter()
            .map(|c| RawContainer {
                name: name(c.name().unwrap_or_default()),
                gpu_ids: c.gpu_ids().iter().map(|id| name(id)).collect(),
            })
            .collect(),
        container_instance_arn: task.container_instance_arn().map(name),
        holds_eni: task.last_status().map(TaskStatus::from) != Some(TaskStatus::Stopped)
            && task.attachments().iter().any(|a| {
                a.r#type() == Some("ElasticNetworkInterface")
                    && !matches!(a.status(), Some("DELETED" | "DETACHED" | "FAILED"))
            }),
    }
}

/// What one task of `definition` reserves of an instance's CPU units and memory (MiB), as ECS
/// places it: the task-level `cpu` and `memory` when set, else the sum of the containers' `cpu`
/// and of their `memoryReservation` (or `memory` without one).
pub(super) fn host_needs(definition: &aws_sdk_ecs::types::TaskDefinition) -> (u32, u32) {
    let task_level = |value: Option<&str>| value.and_then(|v| v.trim().parse::<u32>().ok());
    let containers = definition.container_definitions();
    let cpu = task_level(definition.cpu()).unwrap_or_else(|| {
        containers
            .iter()
            .map(|c| c.cpu().max(0) as u32)
            .fold(0, u32::saturating_add)
    });
    let memory = task_level(definition.memory()).unwrap_or_else(|| {
        containers
            .iter()
            .map(|c| c.memory_reservation().or(c.memory()).unwrap_or(0).max(0) as u32)
            .fold(0, u32::saturating_add)
    });
    (cpu, memory)
}

/// A container's GPU ask from its resource requirements. An empty `value` beside a sharing
/// strategy is shared, never "0 GPUs".
pub fn gpu_ask(requirements: &[aws_sdk_ecs::types::ResourceRequirement]) -> GpuAsk {
    for requirement in requirements {
        if requirement.r#type().as_str() != "GPU" {
            continue;
        }
        if let Some(SharingStrategy::NvidiaMps(mps)) = requirement.sharing_strategy() {
            return GpuAsk::Mps {
                memory_mib: mps.memory().max(0) as u32,
                max_compute_percent: mps.max_compute_percent().map(|p| p.max(0) as u32),
            };
        }
        if let Ok(count) = requirement.value().parse::<u32>() {
            return GpuAsk::Whole(count);
        }
        if requirement.value() == "ALL" {
            return GpuAsk::Whole(u32::MAX);
        }
    }
    GpuAsk::None
}

/// A placement constraint as the ECS API spells it in JSON.
pub(super) fn constraint_json(
    constraint: &aws_sdk_ecs::types::PlacementConstraint,
) -> serde_json::Value {
    let mut out = serde_json::json!({
        "type": constraint.r#type().map(|t| t.as_str()).unwrap_or_default(),
    });
    if let Some(expression) = constraint.expression() {
        out["expression"] = expression.into();
    }
    out
}

pub(super) fn instance_view(
    instance: &aws_sdk_ecs::types::ContainerInstance,
) -> (InstanceView, Vec<RawGpu>) {
    let attribute = |name: &str| {
        instance
            .attributes()
            .iter()
            .find(|a| a.name() == name)
            .and_then(|a| a.value())
            .map(str::to_string)
    };
    let impaired = instance.health_status().and_then(|h| {
        h.details()
            .iter()
            .find(|d| {
                d.r#type() == Some(&InstanceHealthCheckType::AcceleratedCompute)
                    && d.status() == Some(&InstanceHealthCheckState::Impaired)
            })
            // The agent gives no reason text.
            .map(|d| {
                d.status_reason()
                    .unwrap_or("the agent's ACCELERATED_COMPUTE health check reports IMPAIRED")
                    .to_string()
            })
    });
    let instance_type = attribute("ecs.instance-type").unwrap_or_else(|| "unknown".into());
    let gpus = if instance.gpu_devices().is_empty() {
        gpus_from_resources(instance, &instance_type)
    } else {
        devices(instance)
    };
    let view = InstanceView {
        arn: instance
            .container_instance_arn()
            .unwrap_or_default()
            .to_string(),
        ec2_instance_id: instance.ec2_instance_id().unwrap_or_default().to_string(),
        instance_type,
        impaired,
        mps_capable: instance
            .attributes()
            .iter()
            .any(|a| a.name() == "ecs.capability.gpu-sharing-mps"),
        gpu_model: None,
        gpus: Vec::new(),
        availability_zone: attribute("ecs.availability-zone"),
        // From EC2, after the ECS read.
        lifecycle: None,
        not_placing: InstanceView::not_placing_reason(
            &InstanceStatus::from(instance.status().unwrap_or("ACTIVE")),
            instance.agent_connected(),
        ),
        room: Some(room(instance)),
        // What the tasks reserve is added when the tasks are joined.
        host: Some(HostUse {
            cpu: registered(instance, "CPU"),
            memory_mib: registered(instance, "MEMORY"),
            reserved: Vec::new(),
        }),
        capacity_provider: instance.capacity_provider_name().map(str::to_string),
        registered_at: instance.registered_at().map(crate::aws::rfc3339),
        // From EC2, after the ECS read.
        managed_instance: false,
    };
    (view, gpus)
}

/// An integer resource the instance registered (`CPU`, `MEMORY`); 0 when not there.
pub(super) fn registered(instance: &aws_sdk_ecs::types::ContainerInstance, name: &str) -> u32 {
    instance
        .registered_resources()
        .iter()
        .find(|r| r.name() == Some(name))
        .map_or(0, |r| r.integer_value().max(0) as u32)
}

/// A placement strategy as ECS writes it: `spread(attribute:ecs.availability-zone)`.
pub(super) fn strategy_text(strategy: &aws_sdk_ecs::types::PlacementStrategy) -> String {
    let kind = strategy.r#type().map_or("", |t| t.as_str());
    match strategy.field() {
        Some(field) => format!("{kind}({field})"),
        None => kind.to_string(),
    }
}

/// The attribute of a container instance with ENI trunking on: its limit is the trunk's, which
/// EC2 does not report.
pub(super) const TRUNK_ATTRIBUTE: &str = "ecs.awsvpc-trunk-id";

/// Sets each instance's ENI attachment points left: its type's network interfaces, less the
/// primary one, less one per task holding an ENI. Left unknown for a type EC2 did not
/// describe and for an instance with ENI trunking.
pub(super) fn count_enis(
    snapshot: &mut FleetSnapshot,
    interfaces: &HashMap<String, u32>,
    eni_tasks: &HashMap<String, u32>,
) {
    for instance in snapshot
        .clusters
        .iter_mut()
        .flat_map(|c| c.instances.iter_mut())
    {
        let held = eni_tasks.get(&instance.arn).copied().unwrap_or(0);
        let max = interfaces.get(&instance.instance_type).copied();
        if let Some(room) = &mut instance.room {
            room.enis_free = match max {
                Some(max) if !room.attributes.contains_key(TRUNK_ATTRIBUTE) => {
                    Some(max.saturating_sub(1).saturating_sub(held))
                }
                _ => None,
            };
        }
    }
}

/// What an instance has left besides GPUs, from its status, agent connection, remaining
/// resources (`PORTS` and `PORTS_UDP` there are the host ports in use) and attributes.
pub(super) fn room(instance: &aws_sdk_ecs::types::ContainerInstance) -> Room {
    let remaining = instance.remaining_resources();
    let integer = |name: &str| {
        remaining
            .iter()
            .find(|r| r.name() == Some(name))
            .map_or(0, |r| r.integer_value().max(0) as u32)
    };
    let ports = |name: &str| -> std::collections::BTreeSet<u16> {
        remaining
            .iter()
            .find(|r| r.name() == Some(name))
            .map(|r| {
                r.string_set_value()
                    .iter()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    Room {
        status: instance.status().unwrap_or("ACTIVE").to_string(),
        agent_connected: instance.agent_connected(),
        cpu_remaining: integer("CPU"),
        memory_remaining_mib: integer("MEMORY"),
        tcp_ports_used: ports("PORTS"),
        udp_ports_used: ports("PORTS_UDP"),
        // From EC2 and the tasks' ENI attachments, after the ECS read.
        enis_free: None,
        // Attributes with a value: instance type, zone, custom ones (not the capabilities).
        attributes: instance
            .attributes()
            .iter()
            .filter_map(|a| Some((a.name().to_string(), a.value()?.to_string())))
            .chain(instance.ec2_instance_id().map(|id| {
                (
                    placement::resources::EC2_INSTANCE_ID.to_string(),
                    id.to_string(),
                )
            }))
            .collect(),
    }
}

/// The GPUs an instance reports with `gpuDevices` (instances that support GPU sharing).
pub(super) fn devices(instance: &aws_sdk_ecs::types::ContainerInstance) -> Vec<RawGpu> {
    instance
        .gpu_devices()
        .iter()
        .map(|g| RawGpu {
            uuid: g.gpu_id().unwrap_or_default().to_string(),
            mode: match g.sharing_mode() {
                Some(GpuSharingMode::NvidiaMps) => SharingMode::NvidiaMps,
                Some(GpuSharingMode::Dedicated) => SharingMode::Dedicated,
                _ => SharingMode::Idle,
            },
            total_memory_mib: g.total_memory_in_mib().unwrap_or(0).max(0) as u32,
            remaining_memory_mib: g.remaining_memory_in_mib().unwrap_or(0).max(0) as u32,
            container_count: g.container_count().map(|n| n.max(0) as u32),
        })
        .collect()
}

/// The GPUs of an instance that reports no `gpuDevices` (an agent or AMI without GPU sharing):
/// the GPU IDs of its registered `GPU` resource, allocated unless in the remaining one, each a
/// whole GPU with the instance type's nominal memory (0 when the type is unknown).
pub(super) fn gpus_from_resources(
    instance: &aws_sdk_ecs::types::ContainerInstance,
    instance_type: &str,
) -> Vec<RawGpu> {
    let ids = |resources: &[aws_sdk_ecs::types::Resource]| -> Vec<String> {
        resources
            .iter()
            .find(|r| r.name() == Some("GPU"))
            .map(|r| r.string_set_value().to_vec())
            .unwrap_or_default()
    };
    let free = ids(instance.remaining_resources());
    let total = nominal_gpu_memory_mib(instance_type).unwrap_or(0);
    ids(instance.registered_resources())
        .into_iter()
        .map(|uuid| {
            let idle = free.contains(&uuid);
            RawGpu {
                uuid,
                mode: if idle {
                    SharingMode::Idle
                } else {
                    SharingMode::Dedicated
                },
                total_memory_mib: total,
                remaining_memory_mib: if idle { total } else { 0 },
                container_count: None,
            }
        })
        .collect()
}
