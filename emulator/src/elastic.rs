//! Elastic capacity's state: the Auto Scaling groups behind `EC2_AUTOSCALING` providers, the
//! instances capacity providers are launching, how long each provider instance has been idle,
//! and what the providers did (launches, repairs, retirements), newest first.
//!
//! Inferences, where ECS's documents are silent (the cautious reading each time, and the
//! console says which it assumed):
//! - a Managed Instances launch takes [`MANAGED_LAUNCH_SECONDS`] from the decision to an
//!   ACTIVE container instance; an Auto Scaling group's instance takes [`ASG_LAUNCH_SECONDS`],
//!   and the group's next scale-out waits for the last one's `instanceWarmupPeriod`;
//! - a provider launches again only for tasks the instances on their way cannot take;
//! - auto repair acts [`REPAIR_AFTER_SECONDS`] after the MPS daemon is reported IMPAIRED: the
//!   instance is set DRAINING, a replacement of the same type is launched, the service
//!   scheduler moves the tasks, and the drained instance is deregistered and terminated;
//! - with `scaleInAfter` unset ("the default optimization behavior"), an idle instance is
//!   retired after [`DEFAULT_SCALE_IN_AFTER_SECONDS`]; `-1` never retires one; an idle instance
//!   is one with no task at all (set DEREGISTERING, then terminated);
//! - an under-used instance is one with less than half its GPU memory allocated whose tasks
//!   all fit, now, on the provider's other instances (placed by the rules a new task is):
//!   after `scaleInAfter` so, it is set DRAINING, the service scheduler moves its tasks, and it
//!   is terminated; one such instance per provider at a time, the least allocated first, so
//!   that consolidation never moves tasks back and forth; an instance running a task that no
//!   service owns is never consolidated;
//! - a Managed Instances provider whose `capacityOptionType` is `SPOT` launches Spot
//!   instances; EC2 reclaims one with its documented two minutes' notice
//!   ([`SPOT_NOTICE_SECONDS`]); on the notice ECS sets the instance DRAINING and the service
//!   scheduler moves its tasks; tasks still there when EC2 terminates it stop with
//!   `SpotInterruption` and "Host EC2 (instance …) terminated.", and the instance leaves the
//!   cluster; what waits for capacity then launches again;
//! - tasks of a service on a provider that cannot be placed wait in PROVISIONING with no
//!   instance, as the developer guide describes, for as long as it takes: the emulator stops
//!   none of them for waiting;
//! - an Auto Scaling group launches the first type of its launch template overrides;
//! - an Auto Scaling group with managed scaling scales in when it has had more instances than
//!   its target needs (⌈busy × 100 / target⌉, at least `MinSize`) for
//!   [`SCALE_IN_AFTER_SECONDS`] (the 15 one-minute data points of target tracking's scale-in
//!   alarm), by at most `maximumScalingStepSize` at a time, and terminates only instances
//!   with no task (as managed termination protection does; without it the emulator takes the
//!   same care).

use std::collections::{BTreeMap, HashMap, VecDeque};

use chrono::{DateTime, Utc};

use crate::instance_types::InstanceType;

/// From a Managed Instances provider's decision to launch to an ACTIVE container instance.
pub const MANAGED_LAUNCH_SECONDS: i64 = 180;
/// From an Auto Scaling group's scale-out to an ACTIVE container instance.
pub const ASG_LAUNCH_SECONDS: i64 = 90;
/// From an IMPAIRED MPS daemon to the repair's start, with auto repair on.
pub const REPAIR_AFTER_SECONDS: i64 = 60;
/// An idle instance's wait for retirement when `scaleInAfter` is not set.
pub const DEFAULT_SCALE_IN_AFTER_SECONDS: i64 = 3600;
/// How long an Auto Scaling group has more instances than it needs before it scales in.
pub const SCALE_IN_AFTER_SECONDS: i64 = 900;
/// EC2's notice before it reclaims a Spot instance.
pub const SPOT_NOTICE_SECONDS: i64 = 120;
/// An instance with less than this share of its GPU memory allocated may be consolidated.
pub const UNDER_USED_PERCENT: u64 = 50;
/// How many activities each provider keeps.
pub const ACTIVITY_KEPT: usize = 50;

/// An EC2 Auto Scaling group, as DescribeAutoScalingGroups answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoScalingGroup {
    pub name: String,
    pub arn: String,
    /// The cluster its instances register in.
    pub cluster: String,
    /// The instance types of its launch template and overrides; it launches the first.
    pub instance_types: Vec<String>,
    pub min_size: u32,
    pub max_size: u32,
    pub desired_capacity: u32,
    /// When its last scale-out was, for the warm-up before the next.
    pub last_scale_out: Option<DateTime<Utc>>,
    /// Since when it has had more instances than its target needs.
    pub above_target_since: Option<DateTime<Utc>>,
}

/// Why a provider launched an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Tasks waited for capacity.
    Demand,
    /// It replaces the instance (EC2 ID) whose MPS daemon was impaired.
    Repair(String),
}

/// An instance on its way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub provider: String,
    pub cluster: String,
    pub instance_type: &'static InstanceType,
    pub ready_at: DateTime<Utc>,
    pub cause: Cause,
}

/// What a provider did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActivityKind {
    Launching,
    Launched,
    Repairing,
    Retiring,
    Consolidating,
    Interrupted,
    Retired,
}

impl ActivityKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ActivityKind::Launching => "LAUNCHING",
            ActivityKind::Launched => "LAUNCHED",
            ActivityKind::Repairing => "REPAIRING",
            ActivityKind::Retiring => "RETIRING",
            ActivityKind::Consolidating => "CONSOLIDATING",
            ActivityKind::Interrupted => "INTERRUPTED",
            ActivityKind::Retired => "RETIRED",
        }
    }
}

/// One thing a provider did, for the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    pub at: DateTime<Utc>,
    pub kind: ActivityKind,
    pub cluster: String,
    pub instance_type: String,
    /// The EC2 instance it concerns, once it has one.
    pub ec2_instance_id: Option<String>,
    pub description: String,
}

/// Elastic capacity's state in the fleet.
#[derive(Clone, Debug, Default)]
pub struct Elastic {
    /// Auto Scaling groups by name.
    pub groups: BTreeMap<String, AutoScalingGroup>,
    pub launches: Vec<Launch>,
    /// Container instance ARN → since when it has had no task.
    pub idle_since: HashMap<String, DateTime<Utc>>,
    /// Container instance ARNs being retired or replaced, and since when.
    pub retiring: HashMap<String, DateTime<Utc>>,
    /// Container instance ARN → since when its tasks would all fit elsewhere.
    pub under_used_since: HashMap<String, DateTime<Utc>>,
    /// Spot instances EC2 is reclaiming: container instance ARN → when EC2 terminates it.
    pub reclaimed: HashMap<String, DateTime<Utc>>,
    /// Per provider, newest first.
    pub activity: BTreeMap<String, VecDeque<Activity>>,
}

impl Elastic {
    /// Records what `provider` did.
    pub fn record(&mut self, provider: &str, activity: Activity) {
        let list = self.activity.entry(provider.to_string()).or_default();
        list.push_front(activity);
        list.truncate(ACTIVITY_KEPT);
    }

    /// The group behind an `autoScalingGroupArn` (or name).
    pub fn group_of(&self, arn_or_name: &str) -> Option<&AutoScalingGroup> {
        let name = arn_or_name
            .rsplit_once("autoScalingGroupName/")
            .map_or(arn_or_name, |(_, name)| name);
        self.groups.get(name)
    }
}

/// The growth rules' view of an emulated instance type.
pub fn facts(kind: &InstanceType) -> crate::placement::growth::TypeFacts {
    crate::placement::growth::TypeFacts {
        name: kind.name.to_string(),
        gpus: kind.gpus,
        gpu_memory_mib: kind.gpu_memory_mib,
        total_gpu_memory_mib: kind.ec2_gpu_memory_mib * kind.gpus as u32,
        accelerator_name: kind.ec2_gpu_name.to_ascii_lowercase(),
        manufacturer: "nvidia".into(),
        vcpus: kind.vcpus,
        memory_mib: kind.memory_gib * 1024,
        task_enis: Some(kind.task_enis()),
        usd_per_hour: crate::instance_types::on_demand_price(kind.name),
    }
}
