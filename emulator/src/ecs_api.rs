//! The ECS operations over JSON: what each takes and answers, shaped as the ECS API reference
//! documents it (awsJson1_1 field names, epoch-second timestamps, `failures` lists).

use base64::{engine::general_purpose::STANDARD, Engine as _};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use crate::{
    engine::{NewService, ServiceUpdate},
    error::{invalid, EcsError},
    model::{
        Cluster, DeploymentConfig, DeploymentStatus, Fleet, Service, Tag, Task, TaskDefinition,
        TaskStatus,
    },
    task_definitions::parse_tags,
};

/// The ECS operations the emulator serves.
pub const OPERATIONS: [&str; 19] = [
    "ListClusters",
    "DescribeClusters",
    "CreateCluster",
    "ListContainerInstances",
    "DescribeContainerInstances",
    "ListServices",
    "DescribeServices",
    "CreateService",
    "UpdateService",
    "ListTasks",
    "DescribeTasks",
    "ListTaskDefinitionFamilies",
    "ListTaskDefinitions",
    "DescribeTaskDefinition",
    "RegisterTaskDefinition",
    "DeregisterTaskDefinition",
    "ListTagsForResource",
    "TagResource",
    "UntagResource",
];

/// Most ARNs one describe call takes (DescribeServices: 10).
const DESCRIBE_LIMIT: usize = 100;
const DESCRIBE_SERVICES_LIMIT: usize = 10;

/// Runs one ECS operation and answers with the JSON body.
pub fn handle(fleet: &mut Fleet, operation: &str, input: Value) -> Result<String, EcsError> {
    if operation == "DescribeContainerInstances" {
        let input = match input {
            Value::Object(map) => map,
            _ => {
                return Err(EcsError::Client(
                    "The request body must be a JSON object.".into(),
                ))
            }
        };
        return describe_container_instances(fleet, &input);
    }
    dispatch(fleet, operation, input).map(|value| value.to_string())
}

fn dispatch(fleet: &mut Fleet, operation: &str, input: Value) -> Result<Value, EcsError> {
    let input = match input {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        _ => {
            return Err(EcsError::Client(
                "The request body must be a JSON object.".into(),
            ))
        }
    };
    match operation {
        "ListClusters" => list_clusters(fleet, &input),
        "DescribeClusters" => describe_clusters(fleet, &input),
        "CreateCluster" => {
            let name = str_field(&input, "clusterName")?
                .unwrap_or("default")
                .to_string();
            let cluster = fleet.create_cluster(&name)?;
            Ok(json!({"cluster": cluster_json(cluster)}))
        }
        "ListContainerInstances" => list_container_instances(fleet, &input),
        "ListServices" => list_services(fleet, &input),
        "DescribeServices" => describe_services(fleet, &input),
        "CreateService" => create_service(fleet, input),
        "UpdateService" => update_service(fleet, &input),
        "ListTasks" => list_tasks(fleet, &input),
        "DescribeTasks" => describe_tasks(fleet, &input),
        "ListTaskDefinitionFamilies" => list_families(fleet, &input),
        "ListTaskDefinitions" => list_task_definitions(fleet, &input),
        "DescribeTaskDefinition" => describe_task_definition(fleet, &input),
        "RegisterTaskDefinition" => {
            let now = fleet.now;
            let td = fleet.register_task_definition(input, now)?.clone();
            let tags = fleet.tags.get(&td.arn).cloned().unwrap_or_default();
            Ok(json!({"taskDefinition": task_definition_json(&td), "tags": tags_json(&tags)}))
        }
        "DeregisterTaskDefinition" => {
            let reference = required_str(&input, "taskDefinition")?.to_string();
            let now = fleet.now;
            let td = fleet.deregister_task_definition(&reference, now)?;
            Ok(json!({"taskDefinition": task_definition_json(td)}))
        }
        "ListTagsForResource" => {
            let arn = required_str(&input, "resourceArn")?;
            ensure_resource(fleet, arn)?;
            Ok(json!({"tags": tags_json(fleet.tags.get(arn).map_or(&[][..], Vec::as_slice))}))
        }
        "TagResource" => {
            let arn = required_str(&input, "resourceArn")?.to_string();
            ensure_resource(fleet, &arn)?;
            let tags = parse_tags(input.get("tags").cloned())?;
            if tags.is_empty() {
                return Err(invalid("tags must list at least one tag."));
            }
            let existing = fleet.tags.entry(arn).or_default();
            for tag in tags {
                existing.retain(|t| t.key != tag.key);
                existing.push(tag);
            }
            Ok(json!({}))
        }
        "UntagResource" => {
            let arn = required_str(&input, "resourceArn")?.to_string();
            ensure_resource(fleet, &arn)?;
            let keys: Vec<String> = string_list(&input, "tagKeys")?;
            if let Some(existing) = fleet.tags.get_mut(&arn) {
                existing.retain(|t| !keys.contains(&t.key));
            }
            Ok(json!({}))
        }
        other => Err(EcsError::Client(format!(
            "The operation {other} is not supported by this emulator."
        ))),
    }
}

// --- input helpers ---------------------------------------------------------------------------

fn str_field<'a>(input: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, EcsError> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(format!("{key} must be a string."))),
    }
}

fn required_str<'a>(input: &'a Map<String, Value>, key: &str) -> Result<&'a str, EcsError> {
    str_field(input, key)?.ok_or_else(|| invalid(format!("{key} is required.")))
}

fn int_field(input: &Map<String, Value>, key: &str) -> Result<Option<i64>, EcsError> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| invalid(format!("{key} must be an integer."))),
    }
}

fn string_list(input: &Map<String, Value>, key: &str) -> Result<Vec<String>, EcsError> {
    match input.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| invalid(format!("{key} must be a list of strings.")))
            })
            .collect(),
        Some(_) => Err(invalid(format!("{key} must be a list of strings."))),
    }
}

fn cluster_of<'a>(fleet: &'a Fleet, input: &Map<String, Value>) -> Result<&'a Cluster, EcsError> {
    let name = str_field(input, "cluster")?.unwrap_or("default");
    let key = fleet.cluster_key(name).ok_or(EcsError::ClusterNotFound)?;
    Ok(&fleet.clusters[&key])
}

/// One page of `items` after `nextToken`, at most `maxResults` (default `default_max`).
fn page<T: Clone>(
    items: &[T],
    input: &Map<String, Value>,
    default_max: i64,
) -> Result<(Vec<T>, Option<String>), EcsError> {
    let max = int_field(input, "maxResults")?.unwrap_or(default_max);
    if !(1..=100).contains(&max) {
        return Err(invalid("maxResults must be between 1 and 100."));
    }
    let start = match str_field(input, "nextToken")? {
        None => 0,
        Some(token) => decode_token(token)
            .ok_or_else(|| invalid("The nextToken is not valid; start again without it."))?,
    };
    let end = (start + max as usize).min(items.len());
    let slice = items.get(start..end).unwrap_or_default().to_vec();
    let next = (end < items.len()).then(|| encode_token(end));
    Ok((slice, next))
}

fn encode_token(offset: usize) -> String {
    STANDARD.encode(format!("gpushare-emulator:{offset}"))
}

fn decode_token(token: &str) -> Option<usize> {
    let bytes = STANDARD.decode(token).ok()?;
    String::from_utf8(bytes)
        .ok()?
        .strip_prefix("gpushare-emulator:")?
        .parse()
        .ok()
}

fn with_token(mut body: Value, next: Option<String>) -> Value {
    if let (Some(token), Some(map)) = (next, body.as_object_mut()) {
        map.insert("nextToken".into(), Value::String(token));
    }
    body
}

fn epoch(at: DateTime<Utc>) -> Value {
    json!(epoch_seconds(at))
}

fn epoch_seconds(at: DateTime<Utc>) -> f64 {
    at.timestamp_millis() as f64 / 1000.0
}

fn tags_json(tags: &[Tag]) -> Value {
    Value::Array(
        tags.iter()
            .map(|t| json!({"key": t.key, "value": t.value}))
            .collect(),
    )
}

fn wants_tags(input: &Map<String, Value>) -> bool {
    input
        .get("include")
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().any(|v| v.as_str() == Some("TAGS")))
}

fn ensure_resource(fleet: &Fleet, arn: &str) -> Result<(), EcsError> {
    let known = fleet.clusters.values().any(|c| {
        c.arn == arn
            || c.services.values().any(|s| s.arn == arn)
            || c.tasks.contains_key(arn)
            || c.instance_index.contains_key(arn)
    }) || fleet.task_definition(arn).is_some_and(|td| td.arn == arn);
    if known {
        Ok(())
    } else {
        Err(invalid(format!(
            "The specified resource is not valid: {arn}."
        )))
    }
}

// --- clusters ---------------------------------------------------------------------------------

fn cluster_json(cluster: &Cluster) -> Value {
    let running = cluster
        .instances
        .iter()
        .map(|i| i.running_tasks)
        .sum::<u32>();
    let pending = cluster
        .instances
        .iter()
        .map(|i| i.pending_tasks)
        .sum::<u32>();
    json!({
        "clusterArn": cluster.arn,
        "clusterName": cluster.name,
        "status": "ACTIVE",
        "registeredContainerInstancesCount": cluster.instances.len(),
        "runningTasksCount": running,
        "pendingTasksCount": pending,
        "activeServicesCount": cluster.services.len(),
    })
}

fn list_clusters(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let arns: Vec<String> = fleet.clusters.values().map(|c| c.arn.clone()).collect();
    let (items, next) = page(&arns, input, 100)?;
    Ok(with_token(json!({"clusterArns": items}), next))
}

fn describe_clusters(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let mut names = string_list(input, "clusters")?;
    if names.is_empty() {
        names.push("default".into());
    }
    if names.len() > DESCRIBE_LIMIT {
        return Err(invalid("clusters can have at most 100 items."));
    }
    let mut clusters = Vec::new();
    let mut failures = Vec::new();
    for name in names {
        match fleet.cluster_key(&name) {
            Some(key) => clusters.push(cluster_json(&fleet.clusters[&key])),
            None => failures.push(json!({"arn": name, "reason": "MISSING"})),
        }
    }
    Ok(json!({"clusters": clusters, "failures": failures}))
}

// --- container instances ----------------------------------------------------------------------

fn list_container_instances(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let cluster = cluster_of(fleet, input)?;
    if let Some(status) = str_field(input, "status")? {
        if ![
            "ACTIVE",
            "DRAINING",
            "REGISTERING",
            "DEREGISTERING",
            "REGISTRATION_FAILED",
        ]
        .contains(&status)
        {
            return Err(invalid(format!("status '{status}' is not valid.")));
        }
        if status != "ACTIVE" {
            return Ok(json!({"containerInstanceArns": []}));
        }
    }
    let arns: Vec<String> = cluster.instances.iter().map(|i| i.arn.clone()).collect();
    let (items, next) = page(&arns, input, 100)?;
    Ok(with_token(json!({"containerInstanceArns": items}), next))
}

fn describe_container_instances(
    fleet: &Fleet,
    input: &Map<String, Value>,
) -> Result<String, EcsError> {
    let cluster = cluster_of(fleet, input)?;
    let wanted = string_list(input, "containerInstances")?;
    if wanted.is_empty() {
        return Err(invalid(
            "containerInstances must list at least one container instance.",
        ));
    }
    if wanted.len() > DESCRIBE_LIMIT {
        return Err(invalid("containerInstances can have at most 100 items."));
    }
    let tags = wants_tags(input);
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
                let tags = tags.then(|| {
                    tags_json(fleet.tags.get(&instance.arn).map_or(&[][..], Vec::as_slice))
                });
                found.push(InstanceOut::new(instance, tags));
            }
            None => failures.push(json!({"arn": reference, "reason": "MISSING"})),
        }
    }
    serde_json::to_string(&json_out::Described {
        container_instances: found,
        failures,
    })
    .map_err(|e| EcsError::Server(format!("could not write the answer: {e}")))
}

use json_out::InstanceOut;

/// Typed answers for the largest responses: written straight to text, without building a
/// `serde_json::Value` tree first (a hundred GPU instances are about 300 KB of JSON).
mod json_out {
    use serde::Serialize;
    use serde_json::Value;

    use super::epoch_seconds;
    use crate::{model::ContainerInstance, placement::SharingMode};

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
        version: u32,
        version_info: VersionInfo,
        status: &'static str,
        agent_connected: bool,
        running_tasks_count: u32,
        pending_tasks_count: u32,
        registered_at: f64,
        attributes: Vec<Attribute<'a>>,
        registered_resources: [Resource<'a>; 4],
        remaining_resources: [Resource<'a>; 4],
        gpu_devices: Vec<GpuDevice<'a>>,
        health_status: Health<'a>,
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
        string_set_value: Option<Vec<&'a str>>,
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

    const PORTS: [&str; 5] = ["22", "2375", "2376", "51678", "51679"];

    fn integer(name: &'static str, value: u32) -> Resource<'static> {
        Resource {
            name,
            kind: "INTEGER",
            integer_value: Some(value),
            string_set_value: None,
        }
    }

    impl<'a> InstanceOut<'a> {
        pub fn new(instance: &'a ContainerInstance, tags: Option<Value>) -> InstanceOut<'a> {
            let registered_at = epoch_seconds(instance.registered_at);
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
            let all_gpus: Vec<&str> = instance.gpu_ids.iter().map(String::as_str).collect();
            let free_gpus: Vec<&str> = instance
                .gpu_ids
                .iter()
                .zip(&instance.gpus)
                .filter(|(_, slot)| slot.mode == SharingMode::Idle)
                .map(|(id, _)| id.as_str())
                .collect();
            let set = |name, values| Resource {
                name,
                kind: "STRINGSET",
                integer_value: None,
                string_set_value: Some(values),
            };
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
                    status: if instance.mps_impaired.is_some() {
                        "IMPAIRED"
                    } else {
                        "OK"
                    },
                    status_reason: instance.mps_impaired.as_deref(),
                    last_updated: registered_at,
                    last_status_change: registered_at,
                });
            }
            InstanceOut {
                container_instance_arn: &instance.arn,
                ec2_instance_id: &instance.ec2_instance_id,
                version: 1,
                version_info: VersionInfo {
                    agent_version: "1.107.0",
                    agent_hash: "emulated",
                    docker_version: "DockerVersion: 25.0.8",
                },
                status: "ACTIVE",
                agent_connected: instance.agent_connected,
                running_tasks_count: instance.running_tasks,
                pending_tasks_count: instance.pending_tasks,
                registered_at,
                attributes,
                registered_resources: [
                    integer("CPU", instance.cpu),
                    integer("MEMORY", instance.memory_mib),
                    set("PORTS", PORTS.to_vec()),
                    set("GPU", all_gpus),
                ],
                remaining_resources: [
                    integer("CPU", instance.cpu_remaining),
                    integer("MEMORY", instance.memory_remaining_mib),
                    set("PORTS", PORTS.to_vec()),
                    set("GPU", free_gpus),
                ],
                gpu_devices: instance
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
                    .collect(),
                health_status: Health {
                    overall_status: if instance.mps_impaired.is_some() {
                        "IMPAIRED"
                    } else {
                        "OK"
                    },
                    details,
                },
                tags,
            }
        }
    }
}

// --- services ---------------------------------------------------------------------------------

fn list_services(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let cluster = cluster_of(fleet, input)?;
    let arns: Vec<String> = cluster.services.values().map(|s| s.arn.clone()).collect();
    let (items, next) = page(&arns, input, 10)?;
    Ok(with_token(json!({"serviceArns": items}), next))
}

fn describe_services(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let cluster = cluster_of(fleet, input)?;
    let wanted = string_list(input, "services")?;
    if wanted.is_empty() {
        return Err(invalid("services must list at least one service."));
    }
    if wanted.len() > DESCRIBE_SERVICES_LIMIT {
        return Err(invalid("services can have at most 10 items."));
    }
    let tags = wants_tags(input);
    let mut services = Vec::new();
    let mut failures = Vec::new();
    for reference in wanted {
        let name = reference.rsplit('/').next().unwrap_or(&reference);
        match cluster.services.get(name) {
            Some(service) => {
                let mut body = service_json(service);
                if tags {
                    body["tags"] =
                        tags_json(fleet.tags.get(&service.arn).map_or(&[][..], Vec::as_slice));
                }
                services.push(body);
            }
            None => failures.push(json!({"arn": reference, "reason": "MISSING"})),
        }
    }
    Ok(json!({"services": services, "failures": failures}))
}

fn service_json(service: &Service) -> Value {
    let running: u32 = service.deployments.iter().map(|d| d.running_count).sum();
    let pending: u32 = service.deployments.iter().map(|d| d.pending_count).sum();
    json!({
        "serviceArn": service.arn,
        "serviceName": service.name,
        "clusterArn": service.cluster_arn,
        "status": "ACTIVE",
        "desiredCount": service.desired_count,
        "runningCount": running,
        "pendingCount": pending,
        "launchType": "EC2",
        "taskDefinition": service.task_definition_arn,
        "schedulingStrategy": "REPLICA",
        "deploymentController": {"type": "ECS"},
        "createdAt": epoch(service.created_at),
        "deploymentConfiguration": {
            "deploymentCircuitBreaker": {"enable": service.config.circuit_breaker_enable, "rollback": service.config.circuit_breaker_rollback},
            "maximumPercent": service.config.maximum_percent,
            "minimumHealthyPercent": service.config.minimum_healthy_percent,
        },
        "deployments": service.deployments.iter().map(|d| json!({
            "id": d.id,
            "status": match d.status { DeploymentStatus::Primary => "PRIMARY", DeploymentStatus::Active => "ACTIVE" },
            "taskDefinition": d.task_definition_arn,
            "desiredCount": d.desired_count,
            "pendingCount": d.pending_count,
            "runningCount": d.running_count,
            "failedTasks": d.failed_tasks,
            "createdAt": epoch(d.created_at),
            "updatedAt": epoch(d.updated_at),
            "launchType": "EC2",
            "rolloutState": d.rollout_state.as_str(),
            "rolloutStateReason": d.rollout_state_reason,
        })).collect::<Vec<_>>(),
        "events": service.events.iter().map(|e| json!({"id": e.id, "createdAt": epoch(e.created_at), "message": e.message})).collect::<Vec<_>>(),
    })
}

fn deployment_config(
    input: &Map<String, Value>,
    base: DeploymentConfig,
) -> Result<DeploymentConfig, EcsError> {
    let Some(config) = input
        .get("deploymentConfiguration")
        .filter(|v| !v.is_null())
    else {
        return Ok(base);
    };
    let config = config
        .as_object()
        .ok_or_else(|| invalid("deploymentConfiguration must be an object."))?;
    let mut out = base;
    if let Some(max) = int_field(config, "maximumPercent")? {
        out.maximum_percent =
            u32::try_from(max).map_err(|_| invalid("maximumPercent must be positive."))?;
    }
    if let Some(min) = int_field(config, "minimumHealthyPercent")? {
        out.minimum_healthy_percent = u32::try_from(min)
            .map_err(|_| invalid("minimumHealthyPercent must not be negative."))?;
    }
    if let Some(breaker) = config
        .get("deploymentCircuitBreaker")
        .and_then(Value::as_object)
    {
        out.circuit_breaker_enable = breaker
            .get("enable")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        out.circuit_breaker_rollback = breaker
            .get("rollback")
            .and_then(Value::as_bool)
            .unwrap_or(false);
    }
    Ok(out)
}

fn desired_count(input: &Map<String, Value>) -> Result<Option<u32>, EcsError> {
    int_field(input, "desiredCount")?
        .map(|n| u32::try_from(n).map_err(|_| invalid("desiredCount must not be negative.")))
        .transpose()
}

fn create_service(fleet: &mut Fleet, input: Map<String, Value>) -> Result<Value, EcsError> {
    let cluster = str_field(&input, "cluster")?
        .unwrap_or("default")
        .to_string();
    let new = NewService {
        name: required_str(&input, "serviceName")?.to_string(),
        task_definition: required_str(&input, "taskDefinition")?.to_string(),
        desired_count: desired_count(&input)?.unwrap_or(0),
        config: deployment_config(&input, DeploymentConfig::default())?,
    };
    let tags = parse_tags(input.get("tags").cloned())?;
    let arn = fleet.create_service(&cluster, new)?.arn.clone();
    if !tags.is_empty() {
        fleet.tags.insert(arn.clone(), tags);
    }
    let service = fleet
        .clusters
        .values()
        .find_map(|c| c.services.values().find(|s| s.arn == arn));
    Ok(json!({"service": service.map(service_json)}))
}

fn update_service(fleet: &mut Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let cluster = str_field(input, "cluster")?
        .unwrap_or("default")
        .to_string();
    let name = required_str(input, "service")?.to_string();
    let key = fleet
        .cluster_key(&cluster)
        .ok_or(EcsError::ClusterNotFound)?;
    let base = fleet.clusters[&key]
        .services
        .get(name.rsplit('/').next().unwrap_or(&name))
        .map(|s| s.config.clone())
        .ok_or(EcsError::ServiceNotFound)?;
    let update = ServiceUpdate {
        task_definition: str_field(input, "taskDefinition")?.map(str::to_string),
        desired_count: desired_count(input)?,
        config: input
            .contains_key("deploymentConfiguration")
            .then(|| deployment_config(input, base))
            .transpose()?,
        force_new_deployment: input
            .get("forceNewDeployment")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    let service = fleet.update_service(&cluster, &name, update)?;
    Ok(json!({"service": service_json(service)}))
}

// --- tasks ------------------------------------------------------------------------------------

fn list_tasks(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let cluster = cluster_of(fleet, input)?;
    let service = str_field(input, "serviceName")?
        .map(|s| format!("service:{}", s.rsplit('/').next().unwrap_or(s)));
    if let Some(group) = &service {
        if !cluster.services.contains_key(&group["service:".len()..]) {
            return Err(EcsError::ServiceNotFound);
        }
    }
    let instance = str_field(input, "containerInstance")?;
    let family = str_field(input, "family")?;
    let started_by = str_field(input, "startedBy")?;
    let stopped = match str_field(input, "desiredStatus")? {
        None | Some("RUNNING") | Some("PENDING") => false,
        Some("STOPPED") => true,
        Some(other) => {
            return Err(invalid(format!(
                "desiredStatus '{other}' is not valid; use RUNNING, PENDING or STOPPED."
            )))
        }
    };
    let instance_suffix = instance.map(|i| format!("/{i}"));
    // References, not copies: a page copies only its own 100 ARNs.
    let arns: Vec<&String> = cluster
        .tasks
        .values()
        .filter(|t| (t.desired_status == TaskStatus::Stopped) == stopped)
        .filter(|t| service.as_ref().is_none_or(|g| &t.group == g))
        .filter(|t| {
            instance.is_none_or(|i| {
                t.instance_arn == i
                    || instance_suffix
                        .as_deref()
                        .is_some_and(|suffix| t.instance_arn.ends_with(suffix))
            })
        })
        .filter(|t| {
            family.is_none_or(|f| {
                t.task_definition_arn
                    .contains(&format!(":task-definition/{f}:"))
            })
        })
        .filter(|t| started_by.is_none_or(|s| t.started_by.as_deref() == Some(s)))
        .map(|t| &t.arn)
        .collect();
    let (items, next) = page(&arns, input, 100)?;
    Ok(with_token(json!({ "taskArns": items }), next))
}

fn describe_tasks(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let cluster = cluster_of(fleet, input)?;
    let wanted = string_list(input, "tasks")?;
    if wanted.is_empty() {
        return Err(invalid("tasks must list at least one task."));
    }
    if wanted.len() > DESCRIBE_LIMIT {
        return Err(invalid("tasks can have at most 100 items."));
    }
    let tags = wants_tags(input);
    let prefix = format!(
        "{}:task/{}/",
        cluster.arn.split(":cluster/").next().unwrap_or_default(),
        cluster.name
    );
    let mut tasks = Vec::new();
    let mut failures = Vec::new();
    for reference in wanted {
        let arn = if reference.starts_with("arn:") {
            reference.clone()
        } else {
            format!("{prefix}{reference}")
        };
        match cluster.tasks.get(&arn) {
            Some(task) => {
                let zone = cluster
                    .instance(&task.instance_arn)
                    .map(|i| i.availability_zone.clone())
                    .unwrap_or_default();
                let mut body = task_json(task, &zone);
                if tags {
                    body["tags"] =
                        tags_json(fleet.tags.get(&task.arn).map_or(&[][..], Vec::as_slice));
                }
                tasks.push(body);
            }
            None => failures.push(json!({"arn": reference, "reason": "MISSING"})),
        }
    }
    Ok(json!({"tasks": tasks, "failures": failures}))
}

fn task_json(task: &Task, zone: &str) -> Value {
    let mut body = json!({
        "taskArn": task.arn,
        "clusterArn": task.cluster_arn,
        "taskDefinitionArn": task.task_definition_arn,
        "containerInstanceArn": task.instance_arn,
        "lastStatus": task.last_status.as_str(),
        "desiredStatus": if task.desired_status == TaskStatus::Stopped { "STOPPED" } else { "RUNNING" },
        "group": task.group,
        "cpu": task.cpu.to_string(),
        "memory": task.memory_mib.to_string(),
        "createdAt": epoch(task.created_at),
        "launchType": "EC2",
        "availabilityZone": zone,
        "version": 1,
        "containers": task.containers.iter().map(|c| {
            let mut container = json!({
                "containerArn": c.arn,
                "taskArn": task.arn,
                "name": c.name,
                "lastStatus": task.last_status.as_str(),
                "gpuIds": c.gpu_ids,
            });
            if let Some(code) = c.exit_code { container["exitCode"] = json!(code); }
            if let Some(reason) = &c.reason { container["reason"] = json!(reason); }
            container
        }).collect::<Vec<_>>(),
    });
    let map = body.as_object_mut().expect("an object literal");
    if let Some(by) = &task.started_by {
        map.insert("startedBy".into(), json!(by));
    }
    if let Some(at) = task.started_at {
        map.insert("startedAt".into(), epoch(at));
    }
    if let Some(at) = task.stopping_at {
        map.insert("stoppingAt".into(), epoch(at));
    }
    if let Some(at) = task.stopped_at {
        map.insert("stoppedAt".into(), epoch(at));
    }
    if let Some(reason) = &task.stopped_reason {
        map.insert("stoppedReason".into(), json!(reason));
    }
    if let Some(code) = task.stop_code {
        map.insert("stopCode".into(), json!(code));
    }
    body
}

// --- task definitions -------------------------------------------------------------------------

fn status_filter(input: &Map<String, Value>) -> Result<Option<bool>, EcsError> {
    match str_field(input, "status")? {
        None | Some("ACTIVE") => Ok(Some(true)),
        Some("INACTIVE") => Ok(Some(false)),
        Some("ALL") => Ok(None),
        Some("DELETE_IN_PROGRESS") => Ok(Some(false)),
        Some(other) => Err(invalid(format!(
            "status '{other}' is not valid; use ACTIVE, INACTIVE or ALL."
        ))),
    }
}

fn list_families(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let prefix = str_field(input, "familyPrefix")?.unwrap_or_default();
    let status = status_filter(input)?;
    let families: Vec<String> = fleet
        .task_definitions
        .iter()
        .filter(|(family, _)| family.starts_with(prefix))
        .filter(|(_, revisions)| match status {
            Some(true) => revisions.iter().any(|td| td.active),
            Some(false) => revisions.iter().all(|td| !td.active),
            None => true,
        })
        .map(|(family, _)| family.clone())
        .collect();
    let (items, next) = page(&families, input, 100)?;
    Ok(with_token(json!({"families": items}), next))
}

fn list_task_definitions(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let family = str_field(input, "familyPrefix")?;
    let status = status_filter(input)?;
    let descending = match str_field(input, "sort")? {
        None | Some("ASC") => false,
        Some("DESC") => true,
        Some(other) => {
            return Err(invalid(format!(
                "sort '{other}' is not valid; use ASC or DESC."
            )))
        }
    };
    let mut arns: Vec<String> = fleet
        .task_definitions
        .iter()
        .filter(|(name, _)| family.is_none_or(|f| *name == f))
        .flat_map(|(_, revisions)| revisions.iter())
        .filter(|td| status.is_none_or(|active| td.active == active))
        .map(|td| td.arn.clone())
        .collect();
    if descending {
        arns.reverse();
    }
    let (items, next) = page(&arns, input, 100)?;
    Ok(with_token(json!({"taskDefinitionArns": items}), next))
}

fn describe_task_definition(fleet: &Fleet, input: &Map<String, Value>) -> Result<Value, EcsError> {
    let reference = required_str(input, "taskDefinition")?;
    let td = fleet.task_definition(reference).ok_or_else(|| {
        EcsError::Client(format!(
            "Unable to describe task definition {reference}: it does not exist."
        ))
    })?;
    let mut body = json!({"taskDefinition": task_definition_json(td)});
    if wants_tags(input) {
        body["tags"] = tags_json(fleet.tags.get(&td.arn).map_or(&[][..], Vec::as_slice));
    }
    Ok(body)
}

/// The stored fields exactly as registered, plus what ECS adds.
pub fn task_definition_json(td: &TaskDefinition) -> Value {
    let mut body = td.body.clone();
    body.insert("taskDefinitionArn".into(), json!(td.arn));
    body.insert("revision".into(), json!(td.revision));
    body.insert(
        "status".into(),
        json!(if td.active { "ACTIVE" } else { "INACTIVE" }),
    );
    body.insert("registeredAt".into(), epoch(td.registered_at));
    body.insert(
        "registeredBy".into(),
        json!("arn:aws:iam::123456789012:role/emulator"),
    );
    if let Some(at) = td.deregistered_at {
        body.insert("deregisteredAt".into(), epoch(at));
    }
    if !body.contains_key("compatibilities") {
        let mut compatibilities = vec![json!("EC2")];
        if matches!(td.gpu, crate::placement::GpuRequest::None) {
            compatibilities.push(json!("EXTERNAL"));
        }
        body.insert("compatibilities".into(), Value::Array(compatibilities));
    }
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_garbage_is_refused() {
        assert_eq!(decode_token(&encode_token(42)), Some(42));
        assert_eq!(decode_token("not base64!"), None);
        let items: Vec<u32> = (0..250).collect();
        let mut input = Map::new();
        let (first, next) = page(&items, &input, 100).expect("page");
        assert_eq!(first.len(), 100);
        input.insert("nextToken".into(), json!(next.expect("more")));
        input.insert("maxResults".into(), json!(100));
        let (second, next) = page(&items, &input, 100).expect("page");
        assert_eq!(second[0], 100);
        input.insert("nextToken".into(), json!(next.expect("more")));
        let (third, next) = page(&items, &input, 100).expect("page");
        assert_eq!(third.len(), 50);
        assert!(next.is_none());
        input.insert("maxResults".into(), json!(101));
        assert!(page(&items, &input, 100).is_err());
    }
}
