//! The emulated account's state: clusters, container instances and their GPUs, task
//! definitions, services with their deployments and events, tasks, tags.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::placement::{
    resources::{Needs, Room},
    GpuAssignment, GpuRequest, GpuSlot,
};

/// How many events a service keeps, newest first (ECS shows the latest 100).
pub const EVENTS_KEPT: usize = 100;

/// An EC2 instance registered to a cluster.
#[derive(Clone, Debug)]
pub struct ContainerInstance {
    pub arn: String,
    pub ec2_instance_id: String,
    pub instance_type: String,
    pub availability_zone: String,
    /// The GPUs' UUIDs (`GPU-xxxxxxxx-…`), in device index order.
    pub gpu_ids: Vec<String>,
    /// The GPUs' allocation state, in the same order.
    pub gpus: Vec<GpuSlot>,
    /// The GPU model, e.g. `NVIDIA A10G`.
    pub gpu_model: String,
    /// Registered CPU units and memory.
    pub cpu: u32,
    pub memory_mib: u32,
    /// What is left besides GPUs: status, agent, CPU, memory, host ports, attributes.
    pub room: Room,
    /// Carries `ecs.capability.gpu-sharing-mps`.
    pub mps_capable: bool,
    /// Since when the agent's `ACCELERATED_COMPUTE` check reports the MPS daemon `IMPAIRED`.
    pub mps_impaired: Option<DateTime<Utc>>,
    /// Runs the CloudWatch agent with its `nvidia_gpu` plugin; without it, no GPU metrics.
    pub cloudwatch_agent: bool,
    /// The agent's configuration appends the `InstanceId` dimension (`append_dimensions`);
    /// without it, its metrics name the instance only by hostname (`host`).
    pub agent_instance_id_dimension: bool,
    /// The EC2 side: private IPv4 address (set when the instance is added), spot or on-demand.
    pub private_ip: String,
    pub spot: bool,
    /// Runs in a Capacity Block for ML (EC2's `instanceLifecycle` `capacity-block`): reserved
    /// and paid for up front, never at the on-demand rate.
    pub capacity_block: bool,
    /// The capacity provider (its name) that launched the instance; `None` for one registered
    /// outside any provider.
    pub capacity_provider: Option<String>,
    pub registered_at: DateTime<Utc>,
    pub running_tasks: u32,
    pub pending_tasks: u32,
    /// ECS's `version`: counts the changes that make ECS emit a container instance state change
    /// event — resources taken or given back by a task, a task starting, the status, the agent,
    /// the health — so that a task replaced by another of the same size still shows.
    pub version: u64,
}

impl ContainerInstance {
    /// EC2's `instanceLifecycle`: `spot`, `capacity-block`, or none for on-demand.
    pub fn lifecycle(&self) -> Option<&'static str> {
        if self.spot {
            Some("spot")
        } else if self.capacity_block {
            Some("capacity-block")
        } else {
            None
        }
    }

    /// The instance ID part of the ARN.
    pub fn short_id(&self) -> &str {
        self.arn.rsplit('/').next().unwrap_or(&self.arn)
    }

    /// The private DNS name, which is also the hostname the CloudWatch agent publishes as `host`
    /// (`ip-10-1-2-3.ec2.internal` in us-east-1, `ip-….<region>.compute.internal` elsewhere).
    pub fn private_dns_name(&self, region: &str) -> String {
        let host = format!("ip-{}", self.private_ip.replace('.', "-"));
        if region == "us-east-1" {
            format!("{host}.ec2.internal")
        } else {
            format!("{host}.{region}.compute.internal")
        }
    }

    /// The host ports the agent reserves on every instance.
    pub const RESERVED_PORTS: [u16; 5] = [22, 2375, 2376, 51678, 51679];

    /// A new instance's room: ACTIVE, connected, everything free but the reserved ports; its
    /// type's network interfaces but the primary one free for `awsvpc` tasks (no limit for a
    /// type the emulator does not know).
    pub fn fresh_room(
        instance_type: &str,
        availability_zone: &str,
        cpu: u32,
        memory_mib: u32,
    ) -> Room {
        Room {
            status: "ACTIVE".into(),
            agent_connected: true,
            cpu_remaining: cpu,
            memory_remaining_mib: memory_mib,
            tcp_ports_used: Self::RESERVED_PORTS.into_iter().collect(),
            udp_ports_used: Default::default(),
            attributes: [
                ("ecs.instance-type".to_string(), instance_type.to_string()),
                (
                    "ecs.availability-zone".to_string(),
                    availability_zone.to_string(),
                ),
            ]
            .into_iter()
            .collect(),
            enis_free: crate::instance_types::find(instance_type).map(|t| t.task_enis()),
        }
    }
}

/// A registered task definition revision.
#[derive(Clone, Debug)]
pub struct TaskDefinition {
    pub arn: String,
    pub family: String,
    pub revision: u32,
    pub active: bool,
    /// Every field as registered (without `tags`), returned exactly as given.
    pub body: Map<String, Value>,
    /// What one task asks of the GPUs.
    pub gpu: GpuRequest,
    /// The names of the containers behind `gpu`'s entries, in the same order.
    pub gpu_containers: Vec<String>,
    /// The names of all containers, in order.
    pub containers: Vec<String>,
    /// What one task needs of its instance besides GPUs: CPU, memory, host ports, constraints.
    pub needs: Needs,
    /// Exit code a container is told to fail with (environment `EMULATOR_EXIT_CODE`), to
    /// simulate a broken revision.
    pub fails_with: Option<i32>,
    pub registered_at: DateTime<Utc>,
    pub deregistered_at: Option<DateTime<Utc>>,
}

/// Task status, as ECS spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TaskStatus {
    Provisioning,
    Pending,
    Running,
    Deprovisioning,
    Stopped,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Provisioning => "PROVISIONING",
            TaskStatus::Pending => "PENDING",
            TaskStatus::Running => "RUNNING",
            TaskStatus::Deprovisioning => "DEPROVISIONING",
            TaskStatus::Stopped => "STOPPED",
        }
    }
}

/// One container of a running or stopped task.
#[derive(Clone, Debug)]
pub struct TaskContainer {
    pub name: String,
    pub arn: String,
    pub gpu_ids: Vec<String>,
    /// The `sharingStrategy` its task definition gives it, shown as `gpuSharingStrategy`.
    pub gpu_sharing_strategy: Option<Value>,
    pub exit_code: Option<i32>,
    pub reason: Option<String>,
}

/// A task placed on a container instance.
#[derive(Clone, Debug)]
pub struct Task {
    pub arn: String,
    pub cluster_arn: String,
    pub instance_arn: String,
    pub task_definition_arn: String,
    /// `service:<name>` for service tasks.
    pub group: String,
    /// The deployment that started it.
    pub started_by: Option<String>,
    /// The capacity provider it runs on or waits for; `None` for a launch type. A task that
    /// waits for its provider's capacity has no instance (`instance_arn` is empty).
    pub capacity_provider: Option<String>,
    pub last_status: TaskStatus,
    pub desired_status: TaskStatus,
    pub containers: Vec<TaskContainer>,
    pub gpu: GpuRequest,
    pub assignment: GpuAssignment,
    /// What it holds on its instance besides GPUs.
    pub needs: Needs,
    pub created_at: DateTime<Utc>,
    /// When it reaches `PENDING` and then `RUNNING`.
    pub pending_at: DateTime<Utc>,
    pub running_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    /// The exit code its essential container fails with as it starts, for a broken revision.
    pub fails_with: Option<i32>,
    pub stopping_at: Option<DateTime<Utc>>,
    pub stopped_at: Option<DateTime<Utc>>,
    pub stopped_reason: Option<String>,
    pub stop_code: Option<&'static str>,
    /// Whether it stopped before it ever ran, which counts against the circuit breaker.
    pub failed_to_start: bool,
    /// ECS's `version`: one more for every state change event of the task.
    pub version: u64,
}

impl Task {
    /// Still counts toward its service: not stopped and not told to stop.
    pub fn is_live(&self) -> bool {
        self.desired_status != TaskStatus::Stopped && self.last_status != TaskStatus::Stopped
    }
}

/// Deployment status within a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeploymentStatus {
    Primary,
    Active,
}

/// Rollout state of a deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RolloutState {
    InProgress,
    Completed,
    Failed,
}

impl RolloutState {
    pub fn as_str(self) -> &'static str {
        match self {
            RolloutState::InProgress => "IN_PROGRESS",
            RolloutState::Completed => "COMPLETED",
            RolloutState::Failed => "FAILED",
        }
    }
}

/// One deployment of a service.
#[derive(Clone, Debug)]
pub struct Deployment {
    pub id: String,
    pub status: DeploymentStatus,
    pub task_definition_arn: String,
    pub desired_count: u32,
    pub running_count: u32,
    pub pending_count: u32,
    /// Running tasks that have run long enough to count as running successfully.
    pub healthy_count: u32,
    /// Consecutive failures (tasks that did not start, or could not be placed) until the
    /// deployment first runs a task; then 0 and no longer counted.
    pub failed_tasks: u32,
    /// Whether a task of this deployment has run: the breaker no longer evaluates it.
    pub has_run_a_task: bool,
    /// Placement attempts that found no instance, counted at most once per interval.
    pub failed_placements: u32,
    pub last_placement_failure: Option<DateTime<Utc>>,
    pub rollout_state: RolloutState,
    pub rollout_state_reason: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The rolling-update settings of a service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeploymentConfig {
    pub maximum_percent: u32,
    pub minimum_healthy_percent: u32,
    pub circuit_breaker_enable: bool,
    pub circuit_breaker_rollback: bool,
    /// `resetOnHealthyTask`: a task that runs resets the failure count (default true).
    pub reset_on_healthy_task: bool,
    /// `thresholdConfiguration`: how many failures trip the breaker.
    pub threshold: Threshold,
    /// `ROLLING`, `BLUE_GREEN`, `LINEAR` or `CANARY`.
    pub strategy: String,
}

impl Default for DeploymentConfig {
    fn default() -> Self {
        DeploymentConfig {
            maximum_percent: 200,
            minimum_healthy_percent: 100,
            circuit_breaker_enable: false,
            circuit_breaker_rollback: false,
            reset_on_healthy_task: true,
            threshold: Threshold::BoundedPercent(50),
            strategy: "ROLLING".into(),
        }
    }
}

impl DeploymentConfig {
    /// Whether the strategy runs the whole new set beside the old one before stopping it
    /// (blue/green, linear, canary).
    pub fn whole_new_set(&self) -> bool {
        self.strategy != "ROLLING"
    }
}

/// The circuit breaker's `thresholdConfiguration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    /// `value` % of the desired count, at least 3 and at most 200 (the default, 50 %).
    BoundedPercent(u32),
    /// `value` % of the desired count, unbounded (at least 1).
    UnboundedPercent(u32),
    /// `value` failures.
    Count(u32),
}

impl Threshold {
    /// The ECS API's spelling of the type, and the value.
    pub fn as_api(self) -> (&'static str, u32) {
        match self {
            Threshold::BoundedPercent(v) => ("BOUNDED_PERCENT", v),
            Threshold::UnboundedPercent(v) => ("UNBOUNDED_PERCENT", v),
            Threshold::Count(v) => ("COUNT", v),
        }
    }
}

/// A message in a service's event list.
#[derive(Clone, Debug)]
pub struct ServiceEvent {
    pub id: String,
    pub created_at: DateTime<Utc>,
    pub message: String,
}

/// A replica service.
#[derive(Clone, Debug)]
pub struct Service {
    pub name: String,
    pub arn: String,
    pub cluster_arn: String,
    pub task_definition_arn: String,
    pub desired_count: u32,
    /// PRIMARY first.
    pub deployments: Vec<Deployment>,
    pub config: DeploymentConfig,
    /// Newest first, at most [`EVENTS_KEPT`].
    pub events: VecDeque<ServiceEvent>,
    pub created_at: DateTime<Utc>,
    /// The last placement failure event and when it was written: the same message is not
    /// written again for six hours, unless a task was placed in between.
    pub last_placement_event: Option<(DateTime<Utc>, String)>,
    /// When "has reached a steady state" was last written: repeated every six hours.
    pub last_steady_event: Option<DateTime<Utc>>,
    /// Whether the service was steady at the last step, to say so once when it becomes so.
    pub steady: bool,
    /// The last deployment that completed (its ID and task definition), to roll back to.
    pub last_completed: Option<(String, String)>,
    /// Live tasks of this service.
    pub tasks: BTreeSet<String>,
    /// The service's `placementConstraints`, as given.
    pub placement_constraints: Vec<Value>,
    /// The service's `placementStrategy`, as given (validated); empty for ECS's default,
    /// spread across Availability Zones.
    pub placement_strategy: Vec<Value>,
    /// The service's `capacityProviderStrategy`; empty for a launch type.
    pub capacity_provider_strategy: Vec<crate::capacity::StrategyItem>,
    /// When DeleteService deleted it: it is DRAINING while tasks remain, then INACTIVE, and no
    /// longer listed.
    pub deleted_at: Option<DateTime<Utc>>,
}

impl Service {
    /// `ACTIVE`; once deleted, `DRAINING` while tasks remain, then `INACTIVE`.
    pub fn status(&self) -> &'static str {
        match self.deleted_at {
            None => "ACTIVE",
            Some(_) if !self.tasks.is_empty() => "DRAINING",
            Some(_) => "INACTIVE",
        }
    }

    /// Whether the service is ACTIVE (not deleted).
    pub fn is_active(&self) -> bool {
        self.deleted_at.is_none()
    }

    /// The strategies its tasks are placed by.
    pub fn strategies(&self) -> Vec<crate::placement::strategy::Strategy> {
        use crate::placement::strategy::Strategy;
        if self.placement_strategy.is_empty() {
            return Strategy::service_default();
        }
        Strategy::parse_list(&Value::Array(self.placement_strategy.clone()))
            .unwrap_or_else(|_| Strategy::service_default())
    }
}

impl Service {
    /// The PRIMARY deployment.
    pub fn primary(&self) -> Option<&Deployment> {
        self.deployments.first()
    }

    /// Adds an event, keeping the newest [`EVENTS_KEPT`].
    pub fn push_event(&mut self, id: String, at: DateTime<Utc>, message: String) {
        self.events.push_front(ServiceEvent {
            id,
            created_at: at,
            message,
        });
        self.events.truncate(EVENTS_KEPT);
    }
}

/// A cluster and everything in it.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub name: String,
    pub arn: String,
    /// In registration order.
    pub instances: Vec<ContainerInstance>,
    pub instance_index: HashMap<String, usize>,
    pub services: BTreeMap<String, Service>,
    /// Every task still kept, by ARN (stopped ones for an hour).
    pub tasks: BTreeMap<String, Task>,
    /// Tasks with a transition still to come (starting, failing or stopping).
    pub moving: BTreeSet<String>,
    /// Tasks whose status changed since the emulator last emitted events, in order of change.
    pub changed: Vec<String>,
    /// The names of its capacity providers: those PutClusterCapacityProviders gave it, and its
    /// Managed Instances providers.
    pub capacity_providers: Vec<String>,
    pub default_strategy: Vec<crate::capacity::StrategyItem>,
}

impl Cluster {
    pub fn instance(&self, arn: &str) -> Option<&ContainerInstance> {
        self.instance_index
            .get(arn)
            .map(|index| &self.instances[*index])
    }

    pub fn instance_mut(&mut self, arn: &str) -> Option<&mut ContainerInstance> {
        let index = *self.instance_index.get(arn)?;
        self.instances.get_mut(index)
    }
}

/// A resource tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tag {
    pub key: String,
    pub value: String,
}

/// The whole emulated account in one region.
#[derive(Clone, Debug)]
pub struct Fleet {
    pub account: String,
    pub region: String,
    pub clusters: BTreeMap<String, Cluster>,
    /// By family, revisions in order (revision N at index N-1).
    pub task_definitions: BTreeMap<String, Vec<TaskDefinition>>,
    /// Resource ARN → tags.
    pub tags: HashMap<String, Vec<Tag>>,
    /// The account's capacity providers by name (INACTIVE ones too), Fargate's aside.
    pub capacity_providers: BTreeMap<String, crate::capacity::CapacityProvider>,
    /// Seed of the identifiers this fleet makes.
    pub seed: u64,
    /// The next identifier to make.
    pub next_id: u64,
    /// The simulated time of the last step.
    pub now: DateTime<Utc>,
    /// Data points stored through PutMetricData.
    pub metrics: crate::metric_store::MetricStore,
    /// Changes the scenario's story makes at set times (scale-ups, weekend dips), soonest first.
    pub schedule: std::collections::VecDeque<Scheduled>,
    /// Services (`cluster/service`) whose GPUs sit idle from a time on: their work moved
    /// elsewhere and they were left running.
    pub idle_services: BTreeMap<String, DateTime<Utc>>,
    /// Auto Scaling groups, instances on their way, and what the providers did.
    pub elastic: crate::elastic::Elastic,
    /// Every EC2 instance the account ran and how it is bought: Cost Explorer's source.
    pub billing: crate::billing::Ledger,
    /// Whether the account opted in to Cost Explorer's resource-level data.
    pub resource_level_data: bool,
}

/// A change the scenario's story makes at a set time: a service's desired count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scheduled {
    pub at: DateTime<Utc>,
    pub cluster: String,
    pub service: String,
    pub desired: u32,
}

impl Fleet {
    /// An empty account.
    pub fn new(seed: u64, now: DateTime<Utc>) -> Fleet {
        Fleet {
            account: "123456789012".to_string(),
            region: "us-east-1".to_string(),
            clusters: BTreeMap::new(),
            task_definitions: BTreeMap::new(),
            tags: HashMap::new(),
            capacity_providers: BTreeMap::new(),
            seed,
            next_id: 1,
            now,
            metrics: Default::default(),
            schedule: Default::default(),
            idle_services: BTreeMap::new(),
            elastic: Default::default(),
            billing: Default::default(),
            resource_level_data: true,
        }
    }

    /// A fresh 128-bit identifier as 32 hex digits, deterministic from the seed.
    pub fn new_hex_id(&mut self) -> String {
        let id = self.next_id;
        self.next_id += 1;
        let high = splitmix(self.seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let low = splitmix(high ^ id);
        format!("{high:016x}{low:016x}")
    }

    /// The ARN of a resource of this account.
    pub fn arn(&self, resource: &str) -> String {
        format!("arn:aws:ecs:{}:{}:{resource}", self.region, self.account)
    }

    /// Finds a cluster by name or ARN.
    pub fn cluster_key(&self, name_or_arn: &str) -> Option<String> {
        let name = name_or_arn
            .rsplit_once(":cluster/")
            .map_or(name_or_arn, |(_, name)| name);
        self.clusters.contains_key(name).then(|| name.to_string())
    }

    /// Finds a task definition by ARN, `family:revision`, or `family` (its latest active revision).
    pub fn task_definition(&self, reference: &str) -> Option<&TaskDefinition> {
        let reference = reference
            .rsplit_once(":task-definition/")
            .map_or(reference, |(_, rest)| rest);
        match reference.rsplit_once(':') {
            Some((family, revision)) => {
                let revision: usize = revision.parse().ok()?;
                self.task_definitions
                    .get(family)?
                    .get(revision.checked_sub(1)?)
            }
            None => self
                .task_definitions
                .get(reference)?
                .iter()
                .rev()
                .find(|td| td.active),
        }
    }
}

/// A 64-bit mixing function (SplitMix64's finaliser): cheap, deterministic, well spread.
pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
