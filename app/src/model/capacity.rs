//! Capacity providers as the console shows them: each cluster's providers with their type, what a
//! Managed Instances provider may launch and how ECS looks after it (auto repair, scale-in
//! delay), an Auto Scaling group provider's managed scaling, and the instances and GPUs of the
//! fleet each one launched; with the cluster's default strategy.

use serde::{Deserialize, Serialize};

pub use crate::model::{fleet::StrategyItem, words::ProviderType};

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
    /// Tasks of the services on it that do not run yet (PROVISIONING, waiting for capacity, or
    /// PENDING), as ECS counts them.
    #[serde(default)]
    pub tasks_not_running: u32,
    /// Its instances that arrived lately or are leaving, as the fleet shows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<InstanceChange>,
    /// An Auto Scaling group's instances on their way: its desired capacity less the
    /// instances registered (EC2 Auto Scaling counts them before ECS sees them).
    #[serde(default)]
    pub launching: u32,
}

/// How long after its registration an instance counts as just launched, in minutes.
pub const NEW_INSTANCE_MINUTES: i64 = 30;

/// A provider's instance that arrived lately or is leaving.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceChange {
    pub ec2_instance_id: String,
    pub instance_type: String,
    pub change: ChangeKind,
    /// What it is, in words ("registered 4 min ago", "draining: MPS daemon IMPAIRED").
    pub text: String,
}

/// What is happening to a provider's instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Registered lately: launched for tasks, or as a replacement.
    Launched,
    /// DRAINING with its MPS daemon IMPAIRED, on a provider with auto repair: being replaced.
    Repairing,
    /// DRAINING or DEREGISTERING otherwise: being retired or drained by someone.
    Leaving,
}

impl ChangeKind {
    /// The badge an instance's block shows.
    pub fn label(self) -> &'static str {
        match self {
            ChangeKind::Launched => "new",
            ChangeKind::Repairing => "being repaired",
            ChangeKind::Leaving => "being retired",
        }
    }
}

/// What is happening to `instance` of a provider, at `now` (RFC 3339); `auto_repair` when its
/// provider replaces impaired instances.
#[cfg(feature = "ssr")]
pub fn instance_change(
    instance: &crate::model::InstanceView,
    now: &str,
    auto_repair: bool,
) -> Option<InstanceChange> {
    let change = |change: ChangeKind, text: String| InstanceChange {
        ec2_instance_id: instance.ec2_instance_id.clone(),
        instance_type: instance.instance_type.clone(),
        change,
        text,
    };
    if let Some(status) = instance
        .not_placing
        .as_deref()
        .filter(|s| *s != "agent disconnected")
    {
        if auto_repair && instance.impaired.is_some() {
            return Some(change(
                ChangeKind::Repairing,
                format!("{status}: its MPS daemon is IMPAIRED, and auto repair replaces it"),
            ));
        }
        if instance.lifecycle == Some(crate::model::cost::Lifecycle::Spot) {
            // EC2's interruption notice goes to EventBridge, not to ECS's API: the console
            // cannot tell a reclaim from a drain, and says both.
            return Some(change(
                ChangeKind::Leaving,
                format!("{status}: a Spot instance, which EC2 may be reclaiming (two minutes' notice) or someone is draining; its tasks move elsewhere"),
            ));
        }
        return Some(change(
            ChangeKind::Leaving,
            format!("{status}: its tasks move elsewhere before it goes"),
        ));
    }
    let minutes = minutes_between(instance.registered_at.as_deref()?, now)?;
    (0..NEW_INSTANCE_MINUTES).contains(&minutes).then(|| {
        change(
            ChangeKind::Launched,
            format!("registered {minutes} min ago"),
        )
    })
}

/// Whole minutes from `from` to `to`, both RFC 3339.
#[cfg(feature = "ssr")]
fn minutes_between(from: &str, to: &str) -> Option<i64> {
    let from = chrono::DateTime::parse_from_rfc3339(from).ok()?;
    let to = chrono::DateTime::parse_from_rfc3339(to).ok()?;
    Some((to - from).num_minutes())
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

/// Counts each provider's instances and GPUs in `snapshot`'s cluster `cluster`, the tasks of the
/// services on it that do not run yet, and its instances that arrived lately or are leaving.
#[cfg(feature = "ssr")]
pub fn count_instances(
    snapshot: &crate::model::FleetSnapshot,
    cluster: &str,
    providers: &mut [ProviderView],
) {
    let Some(view) = snapshot.clusters.iter().find(|c| c.name == cluster) else {
        return;
    };
    for instance in &view.instances {
        let Some(name) = instance.capacity_provider.as_deref() else {
            continue;
        };
        if let Some(provider) = providers.iter_mut().find(|p| p.name == name) {
            provider.instances += 1;
            provider.gpus += instance.gpus.len() as u32;
            let auto_repair = provider
                .managed_instances
                .as_ref()
                .is_some_and(|m| m.auto_repair == Some(true));
            provider
                .changes
                .extend(instance_change(instance, &snapshot.taken_at, auto_repair));
        }
    }
    for provider in providers.iter_mut() {
        if let Some(size) = provider
            .auto_scaling_group
            .as_ref()
            .and_then(|g| g.group.as_ref())
        {
            provider.launching = size.desired_capacity.saturating_sub(provider.instances);
        }
    }
    for service in &view.service_list {
        for item in &service.capacity_provider_strategy {
            if let Some(provider) = providers
                .iter_mut()
                .find(|p| p.name == item.capacity_provider)
            {
                provider.tasks_not_running += service.pending;
            }
        }
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use crate::model::InstanceView;

    #[test]
    fn minutes_are_whole_and_bad_times_are_none() {
        assert_eq!(
            minutes_between("2026-12-04T09:00:00Z", "2026-12-04T09:04:59.900Z"),
            Some(4)
        );
        assert_eq!(
            minutes_between("2026-12-04T09:00:00Z", "2026-12-04T10:00:00+01:00"),
            Some(0)
        );
        assert_eq!(minutes_between("yesterday", "2026-12-04T09:00:00Z"), None);
    }

    #[test]
    fn an_auto_scaling_groups_instances_not_yet_registered_are_launching() {
        use crate::model::{ClusterView, FleetSnapshot};
        let snapshot = FleetSnapshot {
            taken_at: "2026-12-04T10:00:00Z".into(),
            clusters: vec![ClusterView {
                name: "sim".into(),
                instances: (0..3)
                    .map(|n| {
                        let mut i = InstanceView::of(format!("i-{n}"), "g5.xlarge");
                        i.capacity_provider = Some("asg".into());
                        i
                    })
                    .collect(),
                ..ClusterView::default()
            }],
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            unknown_gpu_ids: 0,
        };
        let group = |desired: u32| ProviderView {
            name: "asg".into(),
            auto_scaling_group: Some(AutoScalingGroup {
                group: Some(GroupSize {
                    desired_capacity: desired,
                    max_size: 10,
                    ..GroupSize::default()
                }),
                ..AutoScalingGroup::default()
            }),
            ..ProviderView::default()
        };
        let mut providers = [group(5), group(2)];
        count_instances(&snapshot, "sim", &mut providers[..1]);
        count_instances(&snapshot, "sim", &mut providers[1..]);
        assert_eq!((providers[0].instances, providers[0].launching), (3, 2));
        // More registered than desired: scaling in, nothing launching.
        assert_eq!(providers[1].launching, 0);
    }

    #[test]
    fn a_providers_instances_say_when_they_arrived_or_are_leaving() {
        let now = "2026-12-04T10:00:00.000Z";
        let mut instance = InstanceView::of("i-1", "g6.12xlarge");
        instance.registered_at = Some("2026-12-04T09:55:00.000Z".into());
        let change = instance_change(&instance, now, true).expect("new");
        assert_eq!(
            (change.change, change.text.as_str()),
            (ChangeKind::Launched, "registered 5 min ago")
        );
        instance.registered_at = Some("2026-12-03T09:55:00.000Z".into());
        assert_eq!(instance_change(&instance, now, true), None, "a day old");
        instance.not_placing = Some("DRAINING".into());
        instance.impaired = Some("MPS daemon IMPAIRED".into());
        assert_eq!(
            instance_change(&instance, now, true).map(|c| c.change),
            Some(ChangeKind::Repairing)
        );
        assert_eq!(
            instance_change(&instance, now, false).map(|c| c.change),
            Some(ChangeKind::Leaving)
        );
        instance.impaired = None;
        instance.lifecycle = Some(crate::model::cost::Lifecycle::Spot);
        let spot = instance_change(&instance, now, true).expect("leaving");
        assert_eq!(spot.change, ChangeKind::Leaving);
        assert!(spot.text.contains("EC2 may be reclaiming"), "{}", spot.text);
        instance.not_placing = Some("agent disconnected".into());
        assert_eq!(instance_change(&instance, now, true), None);
    }
}
