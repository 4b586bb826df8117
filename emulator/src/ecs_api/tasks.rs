//! ListTasks and DescribeTasks.

use serde::Serialize;
use serde_json::{json, Value};

use super::{
    clusters::cluster_of,
    input,
    output::{epoch_seconds, listed, missing, page, tags_of},
    DESCRIBE_LIMIT,
};
use crate::{
    error::{invalid, EcsError},
    model::{Fleet, Task, TaskStatus},
};

pub fn list(fleet: &Fleet, input: &input::ListTasks) -> Result<Value, EcsError> {
    let cluster = cluster_of(fleet, input.cluster.as_deref())?;
    let service = input
        .service_name
        .as_deref()
        .map(|s| format!("service:{}", s.rsplit('/').next().unwrap_or(s)));
    if let Some(group) = &service {
        if !cluster.services.contains_key(&group["service:".len()..]) {
            return Err(EcsError::ServiceNotFound);
        }
    }
    let instance = input.container_instance.as_deref();
    let family = input.family.as_deref();
    let started_by = input.started_by.as_deref();
    if started_by.is_some()
        && (service.is_some()
            || instance.is_some()
            || family.is_some()
            || input.desired_status.is_some())
    {
        return Err(invalid(
            "startedBy must be the only filter of ListTasks; leave out serviceName, containerInstance, family and desiredStatus.",
        ));
    }
    // A task's desired status: RUNNING (the default), PENDING (none stay there) or STOPPED.
    let wanted = match input.desired_status.as_deref() {
        None | Some("RUNNING") => TaskStatus::Running,
        Some("PENDING") => TaskStatus::Pending,
        Some("STOPPED") => TaskStatus::Stopped,
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
        .filter(|t| t.desired_status == wanted)
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
    let (items, next) = page(&arns, &input.paging, 100)?;
    Ok(listed("taskArns", items, next))
}

/// DescribeTasks, written straight to text: the largest answer a fleet read asks for.
pub fn describe(fleet: &Fleet, input: &input::DescribeTasks) -> Result<String, EcsError> {
    let cluster = cluster_of(fleet, input.cluster.as_deref())?;
    if input.tasks.is_empty() {
        return Err(invalid("tasks must list at least one task."));
    }
    if input.tasks.len() > DESCRIBE_LIMIT {
        return Err(invalid("tasks can have at most 100 items."));
    }
    let prefix = format!(
        "{}:task/{}/",
        cluster.arn.split(":cluster/").next().unwrap_or_default(),
        cluster.name
    );
    let mut tasks = Vec::with_capacity(input.tasks.len());
    let mut failures = Vec::new();
    for reference in &input.tasks {
        let arn = if reference.starts_with("arn:") {
            reference.clone()
        } else {
            format!("{prefix}{reference}")
        };
        match cluster.tasks.get(&arn) {
            Some(task) => {
                let zone = cluster
                    .instance(&task.instance_arn)
                    .map_or("", |i| i.availability_zone.as_str());
                let mut body = TaskOut::new(task, zone);
                if input.include.tags() {
                    body.tags = Some(tags_of(fleet, &task.arn));
                }
                tasks.push(body);
            }
            None => failures.push(missing(&arn)),
        }
    }
    serde_json::to_string(&DescribedTasks { tasks, failures })
        .map_err(|e| EcsError::Server(format!("could not write the answer: {e}")))
}

/// A task as DescribeTasks answers it (and as its state change events carry it).
pub fn task_json(task: &Task, zone: &str) -> Value {
    serde_json::to_value(TaskOut::new(task, zone)).unwrap_or_default()
}

#[derive(Serialize)]
struct DescribedTasks<'a> {
    tasks: Vec<TaskOut<'a>>,
    failures: Vec<Value>,
}

/// A task as ECS describes it; fields it leaves out when they have no value are left out.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskOut<'a> {
    task_arn: &'a str,
    cluster_arn: &'a str,
    task_definition_arn: &'a str,
    /// None while the task waits for its capacity provider's capacity.
    #[serde(skip_serializing_if = "Option::is_none")]
    container_instance_arn: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity_provider_name: Option<&'a str>,
    last_status: &'static str,
    desired_status: &'static str,
    group: &'a str,
    cpu: String,
    memory: String,
    created_at: f64,
    launch_type: &'static str,
    availability_zone: &'a str,
    version: u64,
    containers: Vec<ContainerOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_by: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopping_at: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_at: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attachments: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tags: Option<Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ContainerOut<'a> {
    container_arn: &'a str,
    task_arn: &'a str,
    name: &'a str,
    last_status: &'static str,
    gpu_ids: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_sharing_strategy: Option<&'a Value>,
}

impl<'a> TaskOut<'a> {
    fn new(task: &'a Task, zone: &'a str) -> TaskOut<'a> {
        let status = task.last_status.as_str();
        TaskOut {
            task_arn: &task.arn,
            cluster_arn: &task.cluster_arn,
            task_definition_arn: &task.task_definition_arn,
            container_instance_arn: Some(task.instance_arn.as_str()).filter(|a| !a.is_empty()),
            capacity_provider_name: task.capacity_provider.as_deref(),
            last_status: status,
            desired_status: if task.desired_status == TaskStatus::Stopped {
                "STOPPED"
            } else {
                "RUNNING"
            },
            group: &task.group,
            cpu: task.needs.cpu.to_string(),
            memory: task.needs.memory_mib.to_string(),
            created_at: epoch_seconds(task.created_at),
            launch_type: "EC2",
            availability_zone: zone,
            version: task.version.max(1),
            containers: task
                .containers
                .iter()
                .map(|c| ContainerOut {
                    container_arn: &c.arn,
                    task_arn: &task.arn,
                    name: &c.name,
                    last_status: status,
                    gpu_ids: &c.gpu_ids,
                    exit_code: c.exit_code,
                    reason: c.reason.as_deref(),
                    gpu_sharing_strategy: c.gpu_sharing_strategy.as_ref(),
                })
                .collect(),
            started_by: task.started_by.as_deref(),
            started_at: task.started_at.map(epoch_seconds),
            stopping_at: task.stopping_at.map(epoch_seconds),
            stopped_at: task.stopped_at.map(epoch_seconds),
            stopped_reason: task.stopped_reason.as_deref(),
            stop_code: task.stop_code,
            attachments: task.needs.awsvpc.then(|| eni_attachment(task)),
            tags: None,
        }
    }
}

/// An `awsvpc` task's network interface, as ECS lists it in `attachments`: attaching while the
/// task provisions, attached while it runs, detaching and then deleted as it stops.
fn eni_attachment(task: &Task) -> Value {
    let status = match task.last_status {
        TaskStatus::Provisioning => "ATTACHING",
        TaskStatus::Pending | TaskStatus::Running => "ATTACHED",
        TaskStatus::Deprovisioning => "DETACHING",
        TaskStatus::Stopped => "DELETED",
    };
    // Addresses derived from the task's ID, stable for its life.
    let seed = crate::model::splitmix(
        task.arn
            .bytes()
            .fold(0_u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))),
    );
    let [a, b, c, d, e, ..] = seed.to_be_bytes();
    let ip = format!("10.0.{}.{}", a, b.max(4));
    json!([{
        "id": format!("{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", seed >> 32, seed & 0xffff, (seed >> 16) & 0xfff, (seed >> 28) & 0xfff, seed & 0xffff_ffff_ffff),
        "type": "ElasticNetworkInterface",
        "status": status,
        "details": [
            {"name": "subnetId", "value": "subnet-0emulator00000001"},
            {"name": "networkInterfaceId", "value": format!("eni-0{:016x}", seed)},
            {"name": "macAddress", "value": format!("0e:{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}")},
            {"name": "privateDnsName", "value": format!("ip-{}.ec2.internal", ip.replace('.', "-"))},
            {"name": "privateIPv4Address", "value": ip},
        ],
    }])
}
