//! The pieces scenarios are built from: instances of a type with their GPUs, task definitions with
//! GPU sharing settings, and services on them with a deployment configuration.

use super::*;

pub(super) fn add_instances(
    fleet: &mut Fleet,
    cluster: &str,
    kind: &InstanceType,
    count: usize,
    at: DateTime<Utc>,
) {
    let zones = ["us-east-1a", "us-east-1b", "us-east-1c"];
    for n in 0..count {
        let registered_at = at - Duration::days(3) + Duration::minutes(n as i64 * 7);
        let instance = fleet.instance_of_type(cluster, kind, zones[n % zones.len()], registered_at);
        fleet.add_instance(cluster, instance);
    }
}

/// An Auto Scaling group for a provider: its name, minimum, maximum and desired size.
pub(super) type GroupSpec = (&'static str, u32, u32, u32);

/// Adds the capacity provider `name` of `kind` for `cluster` with `settings`, names it on the
/// cluster's instances of `types`, and for an Auto Scaling group provider adds its `group`
/// (launching the first of `types`); `default` makes it the cluster's default strategy.
pub(super) fn add_provider(
    fleet: &mut Fleet,
    (name, kind, cluster): (&str, ProviderKind, &str),
    settings: Value,
    types: &[&str],
    group: Option<GroupSpec>,
    default: bool,
) {
    let provider = CapacityProvider {
        name: name.to_string(),
        arn: fleet.arn(&format!("capacity-provider/{name}")),
        kind,
        cluster: (kind == ProviderKind::ManagedInstances).then(|| cluster.to_string()),
        settings: settings.as_object().cloned().unwrap_or_default(),
        active: true,
        update_status: None,
    };
    if let Some((group, min_size, max_size, desired_capacity)) = group {
        let arn = provider.settings["autoScalingGroupArn"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        fleet.elastic.groups.insert(
            group.into(),
            crate::elastic::AutoScalingGroup {
                name: group.into(),
                arn,
                cluster: cluster.to_string(),
                instance_types: types.iter().map(|t| t.to_string()).collect(),
                min_size,
                max_size,
                desired_capacity,
                last_scale_out: None,
                above_target_since: None,
            },
        );
    }
    fleet.capacity_providers.insert(name.to_string(), provider);
    if let Some(cluster) = fleet.clusters.get_mut(cluster) {
        cluster.capacity_providers.push(name.to_string());
        if default {
            cluster.default_strategy = vec![StrategyItem {
                capacity_provider: name.to_string(),
                weight: 1,
                base: 0,
            }];
        }
        for instance in cluster
            .instances
            .iter_mut()
            .filter(|i| types.contains(&i.instance_type.as_str()))
        {
            instance.capacity_provider = Some(name.to_string());
        }
    }
}

/// The GPU part of a container definition.
#[derive(Clone, Copy)]
pub(super) enum Gpu {
    Mps(u32, Option<u32>),
    Whole(u32),
}

pub(super) struct ServiceSpec {
    pub(super) cluster: &'static str,
    pub(super) name: &'static str,
    pub(super) team: &'static str,
    pub(super) image: &'static str,
    pub(super) gpus: Vec<Gpu>,
    pub(super) desired: u32,
    pub(super) cpu: u32,
    pub(super) memory_mib: u32,
}

pub(super) fn container(
    name: &str,
    image: &str,
    gpu: Option<&Gpu>,
    cpu: u32,
    memory_mib: u32,
) -> Value {
    let mut body = json!({
        "name": name,
        "image": image,
        "cpu": cpu,
        "memory": memory_mib,
        "essential": true,
        "portMappings": [{"containerPort": 8080, "protocol": "tcp"}],
        "environment": [{"name": "LOG_LEVEL", "value": "info"}],
        "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": format!("/ecs/{name}"), "awslogs-region": "us-east-1", "awslogs-stream-prefix": "ecs"}},
    });
    match gpu {
        Some(Gpu::Mps(memory, compute)) => {
            let mut mps = json!({"memory": memory});
            if let Some(compute) = compute {
                mps["maxComputePercent"] = json!(compute);
            }
            body["resourceRequirements"] =
                json!([{"type": "GPU", "sharingStrategy": {"nvidiaMps": mps}}]);
        }
        Some(Gpu::Whole(count)) => {
            body["resourceRequirements"] = json!([{"type": "GPU", "value": count.to_string()}]);
        }
        None => {}
    }
    body
}

pub(super) fn task_definition(
    spec: &ServiceSpec,
    extra_env: Option<(&str, &str)>,
) -> serde_json::Map<String, Value> {
    let per = spec.gpus.len().max(1) as u32;
    let mut containers: Vec<Value> = spec
        .gpus
        .iter()
        .enumerate()
        .map(|(i, gpu)| {
            let name = if spec.gpus.len() == 1 {
                spec.name.to_string()
            } else {
                format!("{}-{}", spec.name, i + 1)
            };
            container(
                &name,
                spec.image,
                Some(gpu),
                spec.cpu / per,
                spec.memory_mib / per,
            )
        })
        .collect();
    if let Some((key, value)) = extra_env {
        if let Some(env) = containers[0]["environment"].as_array_mut() {
            env.push(json!({"name": key, "value": value}));
        }
    }
    // vision-detect binds a static host port: one task per instance at most, whatever its GPUs.
    if let Some(port) = static_host_port(spec.name) {
        containers[0]["portMappings"] =
            json!([{"containerPort": 8080, "hostPort": port, "protocol": "tcp"}]);
    }
    json!({
        "family": spec.name,
        "networkMode": network_mode(spec.name),
        "requiresCompatibilities": ["EC2"],
        "containerDefinitions": containers,
        "tags": [{"key": "team", "value": spec.team}],
    })
    .as_object()
    .cloned()
    .unwrap_or_default()
}

/// The demo services' network modes: speech-align runs in `awsvpc` mode, an ENI per task, so
/// on ml-dev's g5.xlarge (4 network interfaces) three of its tasks fill an instance whose GPU
/// has room for five.
pub(super) fn network_mode(service: &str) -> &'static str {
    if service == "speech-align" {
        "awsvpc"
    } else {
        "bridge"
    }
}

/// The demo services that bind a static host port.
pub(super) fn static_host_port(service: &str) -> Option<u16> {
    (service == "vision-detect").then_some(8443)
}

/// The demo services' placement constraints: vision-detect spreads one task per instance; tts
/// runs only on inference-prod's g5.xlarge, whose 15 GiB of memory hold one of its 8 GiB
/// tasks while the GPU has room for four.
pub(super) fn constraints(service: &str) -> Vec<Value> {
    match service {
        "vision-detect" => vec![json!({"type": "distinctInstance"})],
        "tts" => vec![
            json!({"type": "memberOf", "expression": "attribute:ecs.instance-type == g5.xlarge"}),
        ],
        _ => Vec::new(),
    }
}

pub(super) fn add_service(fleet: &mut Fleet, spec: &ServiceSpec, config: DeploymentConfig) {
    let now = fleet.now;
    let Ok(td) = fleet.register_task_definition(task_definition(spec, None), now) else {
        return;
    };
    let td = td.arn.clone();
    let new = NewService {
        name: spec.name.to_string(),
        task_definition: td,
        desired_count: spec.desired,
        config,
        placement_constraints: constraints(spec.name),
        placement_strategy: Vec::new(),
        capacity_provider_strategy: Vec::new(),
    };
    if let Ok(service) = fleet.create_service(spec.cluster, new) {
        let arn = service.arn.clone();
        fleet.tags.insert(
            arn,
            vec![Tag {
                key: "team".into(),
                value: spec.team.into(),
            }],
        );
    }
}

pub(super) fn breaker() -> DeploymentConfig {
    DeploymentConfig {
        circuit_breaker_enable: true,
        circuit_breaker_rollback: true,
        ..DeploymentConfig::default()
    }
}
