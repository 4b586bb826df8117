//! Capacity providers read from ECS: the clusters' lists and default strategies
//! (DescribeClusters, a hundred clusters a call), then the providers they name
//! (DescribeCapacityProviders, a hundred names a call).

use std::collections::BTreeSet;

use app::model::{
    capacity::{
        AutoScalingGroup, ClusterCapacity, ManagedInstances, ProviderType, ProviderView,
        StrategyItem,
    },
    ServiceError,
};
use aws_sdk_ecs::types::{CapacityProvider, ManagedDraining, ManagedScalingStatus};

use super::Ecs;
use crate::aws::errors;

/// Names per describe call.
const PER_CALL: usize = 100;

impl Ecs {
    pub async fn read_capacity(
        &self,
        clusters: &[String],
    ) -> Result<Vec<ClusterCapacity>, ServiceError> {
        let mut read = Vec::new();
        for chunk in clusters.chunks(PER_CALL) {
            self.paced("DescribeClusters").await?;
            let out = self
                .client
                .describe_clusters()
                .set_clusters(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| errors::ecs_read("DescribeClusters", &e))?;
            for cluster in out.clusters() {
                read.push((
                    cluster.cluster_name().unwrap_or_default().to_string(),
                    cluster.capacity_providers().to_vec(),
                    cluster
                        .default_capacity_provider_strategy()
                        .iter()
                        .map(|item| StrategyItem {
                            capacity_provider: item.capacity_provider().to_string(),
                            weight: u32::try_from(item.weight()).unwrap_or(0),
                            base: u32::try_from(item.base()).unwrap_or(0),
                        })
                        .collect::<Vec<_>>(),
                ));
            }
        }
        let names: BTreeSet<String> = read.iter().flat_map(|(_, p, _)| p.clone()).collect();
        let names: Vec<String> = names.into_iter().collect();
        let mut providers = Vec::new();
        for chunk in names.chunks(PER_CALL) {
            self.paced("DescribeCapacityProviders").await?;
            let out = self
                .client
                .describe_capacity_providers()
                .set_capacity_providers(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| errors::ecs_read("DescribeCapacityProviders", &e))?;
            providers.extend(out.capacity_providers().iter().map(provider_view));
        }
        let mut clusters: Vec<ClusterCapacity> = read
            .into_iter()
            .map(|(cluster, names, default_strategy)| ClusterCapacity {
                providers: names
                    .iter()
                    .filter_map(|name| providers.iter().find(|p| &p.name == name).cloned())
                    .collect(),
                cluster,
                default_strategy,
                notes: Vec::new(),
            })
            .collect();
        if let Some(sources) = &self.capacity_sources {
            sources.complete(&mut clusters).await;
        }
        Ok(clusters)
    }
}

/// A provider as the console shows it.
pub fn provider_view(provider: &CapacityProvider) -> ProviderView {
    let kind = ProviderType::from(provider.r#type().map(|t| t.as_str()).unwrap_or(
        if provider.auto_scaling_group_provider().is_some() {
            "EC2_AUTOSCALING"
        } else {
            "MANAGED_INSTANCES"
        },
    ));
    ProviderView {
        name: provider.name().unwrap_or_default().to_string(),
        can_share_gpus: kind.can_share_gpus(),
        kind,
        status: provider
            .status()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        managed_instances: provider.managed_instances_provider().map(managed_view),
        auto_scaling_group: provider.auto_scaling_group_provider().map(group_view),
        instances: 0,
        gpus: 0,
        may_launch: Vec::new(),
        tasks_not_running: 0,
        launching: 0,
        changes: Vec::new(),
    }
}

/// A Managed Instances provider's settings as the console shows them.
fn managed_view(managed: &aws_sdk_ecs::types::ManagedInstancesProvider) -> ManagedInstances {
    let template = managed.instance_launch_template();
    let requirements = template.and_then(|t| t.instance_requirements());
    let words = |list: Option<Vec<String>>| list.unwrap_or_default();
    ManagedInstances {
        capacity_option: template
            .and_then(|t| t.capacity_option_type())
            .map(|c| c.as_str().to_string()),
        auto_repair: managed
            .auto_repair_configuration()
            .and_then(|r| r.actions_status())
            .map(|s| s.as_str() == "ENABLED"),
        scale_in_after_seconds: managed
            .infrastructure_optimization()
            .and_then(|o| o.scale_in_after())
            .map(i64::from),
        accelerator_names: words(requirements.map(|r| {
            r.accelerator_names()
                .iter()
                .map(|n| n.as_str().to_string())
                .collect()
        })),
        accelerator_manufacturers: words(requirements.map(|r| {
            r.accelerator_manufacturers()
                .iter()
                .map(|n| n.as_str().to_string())
                .collect()
        })),
        allowed_instance_types: words(requirements.map(|r| r.allowed_instance_types().to_vec())),
        excluded_instance_types: words(requirements.map(|r| r.excluded_instance_types().to_vec())),
        requirements: requirements.map(requirements_of).unwrap_or_default(),
    }
}

/// An Auto Scaling group provider's settings as the console shows them (the group's size is
/// read from EC2 Auto Scaling after).
fn group_view(group: &aws_sdk_ecs::types::AutoScalingGroupProvider) -> AutoScalingGroup {
    let scaling = group.managed_scaling();
    let number = |n: Option<i32>| n.and_then(|n| u32::try_from(n).ok());
    AutoScalingGroup {
        arn: group.auto_scaling_group_arn().to_string(),
        managed_scaling: scaling
            .and_then(|s| s.status())
            .is_some_and(|s| *s == ManagedScalingStatus::Enabled),
        target_capacity_percent: number(scaling.and_then(|s| s.target_capacity())),
        minimum_scaling_step_size: number(scaling.and_then(|s| s.minimum_scaling_step_size())),
        maximum_scaling_step_size: number(scaling.and_then(|s| s.maximum_scaling_step_size())),
        instance_warmup_seconds: number(scaling.and_then(|s| s.instance_warmup_period())),
        managed_termination_protection: group
            .managed_termination_protection()
            .is_some_and(|p| p.as_str() == "ENABLED"),
        managed_draining: group
            .managed_draining()
            .map(|d| *d == ManagedDraining::Enabled),
        group: None,
    }
}

/// A Managed Instances provider's `instanceRequirements` as the growth rules read them.
fn requirements_of(
    r: &aws_sdk_ecs::types::InstanceRequirementsRequest,
) -> placement::growth::Requirements {
    let n = |v: Option<i32>| v.and_then(|v| u32::try_from(v).ok());
    let lower = |list: Vec<String>| list.into_iter().map(|t| t.to_ascii_lowercase()).collect();
    placement::growth::Requirements {
        vcpu: (
            r.v_cpu_count().map_or(0, |c| n(Some(c.min())).unwrap_or(0)),
            n(r.v_cpu_count().and_then(|c| c.max())),
        ),
        memory_mib: (
            r.memory_mib().map_or(0, |m| n(Some(m.min())).unwrap_or(0)),
            n(r.memory_mib().and_then(|m| m.max())),
        ),
        accelerator_types: lower(
            r.accelerator_types()
                .iter()
                .map(|t| t.as_str().to_string())
                .collect(),
        ),
        manufacturers: lower(
            r.accelerator_manufacturers()
                .iter()
                .map(|t| t.as_str().to_string())
                .collect(),
        ),
        names: lower(
            r.accelerator_names()
                .iter()
                .map(|t| t.as_str().to_string())
                .collect(),
        ),
        count: (
            n(r.accelerator_count().and_then(|c| c.min())),
            n(r.accelerator_count().and_then(|c| c.max())),
        ),
        total_memory_mib: (
            n(r.accelerator_total_memory_mib().and_then(|c| c.min())),
            n(r.accelerator_total_memory_mib().and_then(|c| c.max())),
        ),
        allowed: lower(r.allowed_instance_types().to_vec()),
        excluded: lower(r.excluded_instance_types().to_vec()),
    }
}
