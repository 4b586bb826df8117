//! Capacity providers as the console shows them: each cluster's providers with their type, what a
//! Managed Instances provider may launch and how ECS looks after it (auto repair, scale-in
//! delay), an Auto Scaling group provider's managed scaling, and the instances and GPUs of the
//! fleet each one launched; with the cluster's default strategy.

use serde::{Deserialize, Serialize};

pub use crate::model::words::ProviderType;

/// Which clusters' providers to show: one, or all.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityQuery {
    pub cluster: Option<String>,
}

/// The query parameters of `GET /api/v1/capacity-providers`.
pub const CAPACITY_PARAMETERS: &str = "cluster";

/// One cluster's capacity providers and its default strategy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterCapacity {
    pub cluster: String,
    pub providers: Vec<ProviderView>,
    /// The cluster's `defaultCapacityProviderStrategy`; empty when it has none.
    pub default_strategy: Vec<StrategyItem>,
    /// What could not be read beside ECS (the GPU types EC2 offers, the Auto Scaling groups),
    /// and so is not shown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One entry of a capacity provider strategy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrategyItem {
    pub capacity_provider: String,
    pub weight: u32,
    pub base: u32,
}

/// A capacity provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderView {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ProviderType,
    /// `ACTIVE`, `INACTIVE`, … as ECS says.
    pub status: String,
    /// Whether its tasks can share GPUs (EC2 capacity, not Fargate).
    pub can_share_gpus: bool,
    /// A Managed Instances provider: what it may launch and how ECS looks after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_instances: Option<ManagedInstances>,
    /// An Auto Scaling group provider: its group and managed scaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_scaling_group: Option<AutoScalingGroup>,
    /// The fleet's instances (and their GPUs) that carry this provider's name.
    pub instances: u32,
    pub gpus: u32,
    /// The GPU instance types it may launch (Managed Instances: each type of the region's
    /// catalogue, matched against the requirements; an Auto Scaling group: its own types).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_launch: Vec<LaunchOption>,
}

/// What a Managed Instances provider may launch, and how ECS looks after its instances.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ManagedInstances {
    /// `ON_DEMAND`, `SPOT` or `RESERVED`; `None` when the provider does not say (ECS's default).
    pub capacity_option: Option<String>,
    /// Auto repair replaces instances whose health is IMPAIRED; `None` when not said.
    pub auto_repair: Option<bool>,
    /// Seconds before idle or under-used instances are retired: `None` for ECS's default, `-1`
    /// when ECS does not retire them.
    pub scale_in_after_seconds: Option<i64>,
    /// The instance requirements' accelerator names, manufacturers, allowed and excluded types.
    pub accelerator_names: Vec<String>,
    pub accelerator_manufacturers: Vec<String>,
    pub allowed_instance_types: Vec<String>,
    pub excluded_instance_types: Vec<String>,
    /// The requirements whole, as the growth rules read them.
    #[serde(default)]
    pub requirements: placement::growth::Requirements,
}

/// An Auto Scaling group provider's group and managed scaling.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AutoScalingGroup {
    pub arn: String,
    /// Managed scaling on, with its target capacity (percent), step sizes and warm-up.
    pub managed_scaling: bool,
    pub target_capacity_percent: Option<u32>,
    pub minimum_scaling_step_size: Option<u32>,
    pub maximum_scaling_step_size: Option<u32>,
    pub instance_warmup_seconds: Option<u32>,
    pub managed_termination_protection: bool,
    pub managed_draining: Option<bool>,
    /// The group itself, from EC2 Auto Scaling; `None` when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupSize>,
}

/// An Auto Scaling group's sizes and the instance types it launches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSize {
    pub name: String,
    pub min_size: u32,
    pub max_size: u32,
    pub desired_capacity: u32,
    /// The launch template's type and overrides; the group launches the first.
    pub instance_types: Vec<String>,
}

/// An instance type a provider may launch, or may not and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchOption {
    pub facts: placement::growth::TypeFacts,
    /// Why the provider's requirements do not take it; `None` when they do.
    pub not_matched: Option<String>,
    /// Whether ECS can share its GPUs with MPS (NVIDIA, whole GPUs).
    pub shares_gpus: bool,
}

/// Counts each provider's instances and GPUs in `snapshot`'s cluster `cluster`.
pub fn count_instances(
    snapshot: &crate::model::FleetSnapshot,
    cluster: &str,
    providers: &mut [ProviderView],
) {
    for instance in snapshot
        .clusters
        .iter()
        .filter(|c| c.name == cluster)
        .flat_map(|c| &c.instances)
    {
        let Some(name) = instance.capacity_provider.as_deref() else {
            continue;
        };
        if let Some(provider) = providers.iter_mut().find(|p| p.name == name) {
            provider.instances += 1;
            provider.gpus += instance.gpus.len() as u32;
        }
    }
}
