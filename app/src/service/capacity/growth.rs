//! The capacity a provider can add, for the pre-check and the fit check: a service's strategy
//! names the provider, the cluster's providers say how it grows, the fleet's own instances correct
//! what EC2 says of a type's usable GPU memory, and the price book prices the launches.

use placement::growth::{AsgScaling, Shape, TypeFacts};

use crate::{
    model::{
        capacity::{ClusterCapacity, LaunchOption, ProviderView, StrategyItem},
        cost::Lifecycle,
        rollout::{launch_for_one, Growth, GrowthSource, OneLaunch},
        FleetSnapshot, ServiceError, ServiceRef,
    },
    service::context::ServiceContext,
};

/// The excluded types named at most, so that the reason stays readable.
const EXCLUDED_SHOWN: usize = 8;

/// The provider the service's next tasks go to: the one with a `base`, else the heaviest
/// weight (the first of equals); `None` for the EC2 launch type.
pub(crate) fn provider_of(strategy: &[StrategyItem]) -> Option<&str> {
    strategy
        .iter()
        .find(|item| item.base > 0)
        .or_else(|| {
            strategy
                .iter()
                .filter(|i| i.weight > 0)
                .max_by_key(|i| i.weight)
        })
        .or_else(|| strategy.first())
        .map(|item| item.capacity_provider.as_str())
}

/// How the service's provider grows, read from ECS (and EC2, EC2 Auto Scaling); `None` for a
/// service on the EC2 launch type.
pub(crate) async fn growth_of(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    cluster: &str,
    found: &ServiceRef,
) -> Result<Option<Growth>, ServiceError> {
    let Some(provider) = provider_of(&found.capacity_provider_strategy) else {
        return Ok(None);
    };
    let read = context.ecs.capacity(vec![cluster.to_string()]).await?;
    let source = match read.iter().find(|c| c.cluster == cluster) {
        Some(capacity) => source_of(context, snapshot, capacity, provider),
        None => GrowthSource::Fixed {
            why: format!("ECS did not describe the cluster {cluster}'s capacity providers"),
        },
    };
    Ok(Some(Growth {
        provider: provider.to_string(),
        source,
    }))
}

/// What each capacity provider of `clusters` that runs on EC2 would launch for one task
/// `shape` that no instance has room for, or why it would not; empty where the clusters have
/// no providers.
pub(crate) async fn launches_for_one(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    clusters: Vec<String>,
    shape: &Shape,
) -> Result<Vec<OneLaunch>, ServiceError> {
    if clusters.is_empty() {
        return Ok(Vec::new());
    }
    let read = context.ecs.capacity(clusters).await?;
    let mut launches = Vec::new();
    for capacity in &read {
        for view in capacity
            .providers
            .iter()
            .filter(|p| p.managed_instances.is_some() || p.auto_scaling_group.is_some())
        {
            let growth = Growth {
                provider: view.name.clone(),
                source: source_of(context, snapshot, capacity, &view.name),
            };
            launches.push(launch_for_one(&capacity.cluster, &growth, shape));
        }
    }
    Ok(launches)
}

fn source_of(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    capacity: &ClusterCapacity,
    provider: &str,
) -> GrowthSource {
    let Some(view) = capacity.providers.iter().find(|p| p.name == provider) else {
        return GrowthSource::Fixed {
            why: format!("{provider} is not among the cluster's capacity providers"),
        };
    };
    // Why something could not be read: the cluster's notes, or `otherwise` when it has none.
    let unread = |otherwise: String| {
        if capacity.notes.is_empty() {
            otherwise
        } else {
            capacity.notes.join("; ")
        }
    };
    if view.managed_instances.is_some() {
        if view.may_launch.is_empty() {
            return GrowthSource::Fixed {
                why: format!(
                    "what {provider} may launch could not be read: {}",
                    unread("EC2 listed no GPU instance types".into())
                ),
            };
        }
        return managed(context, snapshot, view);
    }
    if let Some(group) = &view.auto_scaling_group {
        if !group.managed_scaling {
            return GrowthSource::Fixed {
                why: "managed scaling is off: ECS does not grow the Auto Scaling group for waiting tasks".into(),
            };
        }
        let Some(size) = &group.group else {
            return GrowthSource::Fixed {
                why: format!(
                    "the Auto Scaling group behind {provider} could not be read: {}",
                    unread(format!("EC2 Auto Scaling has no group {}", group.arn))
                ),
            };
        };
        let Some(option) = view.may_launch.first() else {
            return GrowthSource::Fixed {
                why: format!(
                    "what the Auto Scaling group behind {provider} launches could not be read: {}",
                    unread(match size.instance_types.first() {
                        Some(kind) =>
                            format!("EC2 does not list its type {kind} among the GPU types"),
                        None => "the group names no instance type and has no instances".into(),
                    })
                ),
            };
        };
        return GrowthSource::AutoScaling {
            kind: priced(context, observed(snapshot, &option.facts)),
            scaling: AsgScaling {
                target: group.target_capacity_percent.unwrap_or(100),
                min_step: group.minimum_scaling_step_size.unwrap_or(1),
                max_step: group.maximum_scaling_step_size.unwrap_or(10_000),
                max_size: size.max_size,
            },
            size: size.desired_capacity,
            warmup_seconds: group.instance_warmup_seconds.unwrap_or(300),
        };
    }
    GrowthSource::Fixed {
        why: format!("{provider} is a Fargate provider, on which GPU sharing does not run"),
    }
}

/// A Managed Instances provider: the types its requirements match that can share GPUs, and
/// why the others are not launched.
fn managed(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    view: &ProviderView,
) -> GrowthSource {
    let (matched, excluded): (Vec<&LaunchOption>, Vec<&LaunchOption>) = view
        .may_launch
        .iter()
        .partition(|o| o.not_matched.is_none() && o.shares_gpus);
    let mut reasons: Vec<String> = excluded
        .iter()
        .filter(|o| o.facts.manufacturer == "nvidia")
        .map(|o| {
            format!(
                "{}: {}",
                o.facts.name,
                o.not_matched
                    .clone()
                    .unwrap_or_else(|| "ECS cannot share its GPUs".into())
            )
        })
        .collect();
    let more = reasons.len().saturating_sub(EXCLUDED_SHOWN);
    reasons.truncate(EXCLUDED_SHOWN);
    if more > 0 {
        reasons.push(format!("and {more} more"));
    }
    let candidates: Vec<TypeFacts> = matched
        .into_iter()
        .map(|o| priced(context, observed(snapshot, &o.facts)))
        .collect();
    // The Managed Instances charge on top of EC2's price, where the price file gives it.
    let (charged, uncharged): (Vec<TypeFacts>, Vec<TypeFacts>) = candidates
        .into_iter()
        .partition(|c| managed_fee(context, &c.name).is_some());
    let mut priced_with_fee: Vec<TypeFacts> = charged
        .into_iter()
        .map(|c| TypeFacts {
            usd_per_hour: c
                .usd_per_hour
                .zip(managed_fee(context, &c.name))
                .map(|(ec2, fee)| ec2 + fee),
            ..c
        })
        .collect();
    let fee_note = (!uncharged.is_empty()).then(|| {
        "prices without the Managed Instances charge, which the price file does not give (managed_instances_usd_per_hour)".to_string()
    });
    priced_with_fee.extend(uncharged);
    GrowthSource::ManagedInstances {
        candidates: priced_with_fee,
        excluded: reasons,
        fee_note,
    }
}

/// What ECS Managed Instances charges an hour for an instance of `instance_type`, when the
/// price file says.
pub(crate) fn managed_fee(context: &ServiceContext, instance_type: &str) -> Option<f64> {
    context
        .prices
        .price(instance_type, Lifecycle::OnDemand)
        .and_then(|p| p.managed_instances_usd_per_hour)
}

/// `facts` with the GPU memory ECS registers for the type, when an instance of it in the fleet
/// says (EC2 gives the GPU's whole memory; ECS registers a little less as usable).
fn observed(snapshot: &FleetSnapshot, facts: &TypeFacts) -> TypeFacts {
    let seen = snapshot
        .clusters
        .iter()
        .flat_map(|c| &c.instances)
        .filter(|i| i.instance_type == facts.name)
        .flat_map(|i| i.gpus.iter().map(|g| g.total_memory_mib))
        .max();
    TypeFacts {
        gpu_memory_mib: seen.unwrap_or(facts.gpu_memory_mib),
        ..facts.clone()
    }
}

/// `facts` with its on-demand price from the console's price book.
pub(crate) fn priced(context: &ServiceContext, facts: TypeFacts) -> TypeFacts {
    TypeFacts {
        usd_per_hour: context
            .prices
            .price(&facts.name, Lifecycle::OnDemand)
            .map(|p| p.usd_per_hour),
        ..facts
    }
}
