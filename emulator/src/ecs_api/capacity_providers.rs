//! CreateCapacityProvider, DescribeCapacityProviders, UpdateCapacityProvider,
//! DeleteCapacityProvider and PutClusterCapacityProviders, with the rules of
//! [`crate::capacity`].

use serde_json::{json, Map, Value};

use super::{
    input,
    output::{missing, page, tags_of},
};
use crate::{
    capacity::{
        check_asg_settings, check_managed_instances, check_name, CapacityProvider, ProviderKind,
        StrategyItem, FARGATE_PROVIDERS,
    },
    error::{invalid, EcsError},
    model::Fleet,
    task_definitions::parse_tags,
};

/// A provider as ECS answers it, with its tags when asked.
fn provider_json(fleet: &Fleet, provider: &CapacityProvider, tags: bool) -> Value {
    let mut out = json!({
        "capacityProviderArn": provider.arn,
        "name": provider.name,
        "status": if provider.active { "ACTIVE" } else { "INACTIVE" },
        "type": provider.kind.as_str(),
    });
    if let Some(object) = out.as_object_mut() {
        object.insert(
            provider.kind.field().into(),
            Value::Object(provider.settings.clone()),
        );
        if let Some(cluster) = &provider.cluster {
            object.insert("cluster".into(), json!(cluster));
        }
        if let Some(status) = provider.update_status {
            object.insert("updateStatus".into(), json!(status));
        }
        if tags {
            object.insert("tags".into(), tags_of(fleet, &provider.arn));
        }
    }
    out
}

/// `FARGATE` or `FARGATE_SPOT`, as every account has them.
fn fargate_json(fleet: &Fleet, name: &str) -> Value {
    json!({
        "capacityProviderArn": fleet.arn(&format!("capacity-provider/{name}")),
        "name": name,
        "status": "ACTIVE",
        "type": name,
        "tags": [],
    })
}

pub fn create(fleet: &mut Fleet, input: input::CreateCapacityProvider) -> Result<Value, EcsError> {
    let name = input::required(&input.name, "name")?.to_string();
    check_name(&name)?;
    if fleet.capacity_provider(&name).is_some_and(|p| p.active) {
        return Err(EcsError::Client(format!(
            "A capacity provider named {name} already exists. Pick another name, or delete it first."
        )));
    }
    let (kind, mut settings) = match (
        input.auto_scaling_group_provider,
        input.managed_instances_provider,
    ) {
        (Some(asg), None) => (ProviderKind::AutoScalingGroup, asg),
        (None, Some(managed)) => (ProviderKind::ManagedInstances, managed),
        _ => {
            return Err(invalid(
                "Give exactly one of autoScalingGroupProvider and managedInstancesProvider.",
            ))
        }
    };
    let cluster = match kind {
        ProviderKind::AutoScalingGroup => {
            check_auto_scaling_group(fleet, &mut settings)?;
            None
        }
        ProviderKind::ManagedInstances => {
            check_managed_instances(&settings, "managedInstancesProvider")?;
            let named = input.cluster.as_deref().ok_or_else(|| {
                invalid("cluster is required for a Managed Instances capacity provider: it belongs to that cluster.")
            })?;
            Some(fleet.cluster_key(named).ok_or(EcsError::ClusterNotFound)?)
        }
    };
    let tags = parse_tags(input.tags)?;
    let provider = CapacityProvider {
        arn: fleet.arn(&format!("capacity-provider/{name}")),
        name: name.clone(),
        kind,
        cluster: cluster.clone(),
        settings,
        active: true,
        update_status: None,
    };
    if let Some(cluster) = cluster.and_then(|key| fleet.clusters.get_mut(&key)) {
        cluster.capacity_providers.push(name.clone());
    }
    fleet.tags.remove(&provider.arn);
    if !tags.is_empty() {
        fleet.tags.insert(provider.arn.clone(), tags);
    }
    let answer = provider_json(fleet, &provider, true);
    fleet.capacity_providers.insert(name, provider);
    Ok(json!({ "capacityProvider": answer }))
}

/// An Auto Scaling group provider's settings: the group's ARN, which no other provider uses,
/// and its managed scaling, termination protection and draining.
fn check_auto_scaling_group(
    fleet: &Fleet,
    settings: &mut Map<String, Value>,
) -> Result<(), EcsError> {
    let arn = settings
        .get("autoScalingGroupArn")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("autoScalingGroupProvider.autoScalingGroupArn is required."))?;
    if !arn.starts_with("arn:aws:autoscaling:") || !arn.contains(":autoScalingGroupName/") {
        return Err(invalid(format!(
            "autoScalingGroupProvider.autoScalingGroupArn '{arn}' is not an Auto Scaling group ARN (arn:aws:autoscaling:<region>:<account>:autoScalingGroup:<id>:autoScalingGroupName/<name>)."
        )));
    }
    let taken = fleet.capacity_providers.values().find(|p| {
        p.active
            && p.settings
                .get("autoScalingGroupArn")
                .and_then(Value::as_str)
                == Some(arn)
    });
    if let Some(other) = taken {
        return Err(EcsError::Client(format!(
            "The Auto Scaling group {arn} is already used by the capacity provider {}.",
            other.name
        )));
    }
    check_asg_settings(settings, "autoScalingGroupProvider")
}

pub fn describe(
    fleet: &Fleet,
    input: &input::DescribeCapacityProviders,
) -> Result<Value, EcsError> {
    if input.capacity_providers.len() > 100 {
        return Err(invalid("capacityProviders can have at most 100 items."));
    }
    let tags = input.include.tags();
    let only_cluster = match input.cluster.as_deref() {
        Some(named) => Some(fleet.cluster_key(named).ok_or(EcsError::ClusterNotFound)?),
        None => None,
    };
    let in_scope = |name: &str| match &only_cluster {
        Some(key) => fleet.clusters[key]
            .capacity_providers
            .iter()
            .any(|p| p == name),
        None => true,
    };
    if !input.capacity_providers.is_empty() {
        let mut found = Vec::new();
        let mut failures = Vec::new();
        for reference in &input.capacity_providers {
            let name = reference
                .rsplit_once(":capacity-provider/")
                .map_or(reference.as_str(), |(_, name)| name);
            match fleet.capacity_provider(reference) {
                Some(provider) if in_scope(name) => {
                    found.push(provider_json(fleet, provider, tags))
                }
                None if FARGATE_PROVIDERS.contains(&name) && in_scope(name) => {
                    found.push(fargate_json(fleet, name))
                }
                _ => failures.push(missing(reference)),
            }
        }
        return Ok(json!({"capacityProviders": found, "failures": failures}));
    }
    // Every provider, ten to a page unless fewer are asked for.
    let mut names: Vec<&str> = FARGATE_PROVIDERS.to_vec();
    names.extend(fleet.capacity_providers.keys().map(String::as_str));
    names.retain(|name| in_scope(name));
    if input
        .paging
        .max_results
        .is_some_and(|n| !(1..=10).contains(&n))
    {
        return Err(invalid("maxResults must be between 1 and 10."));
    }
    let (names, next) = page(&names, &input.paging, 10)?;
    let found: Vec<Value> = names
        .iter()
        .map(|name| match fleet.capacity_providers.get(*name) {
            Some(provider) => provider_json(fleet, provider, tags),
            None => fargate_json(fleet, name),
        })
        .collect();
    let mut answer = json!({"capacityProviders": found, "failures": []});
    if let (Some(next), Some(object)) = (next, answer.as_object_mut()) {
        object.insert("nextToken".into(), json!(next));
    }
    Ok(answer)
}

/// The provider a request names (by name or ARN), active, and in `cluster` when it is a
/// Managed Instances provider, which is updated and deleted only within its cluster.
fn provider_named<'a>(
    fleet: &'a Fleet,
    reference: &str,
    cluster: Option<&str>,
) -> Result<&'a CapacityProvider, EcsError> {
    let provider = fleet
        .capacity_provider(reference)
        .filter(|p| p.active)
        .ok_or_else(|| {
            invalid(format!(
                "The specified capacity provider {reference} does not exist."
            ))
        })?;
    if let Some(own) = &provider.cluster {
        let asked = cluster.and_then(|c| fleet.cluster_key(c));
        if asked.as_deref() != Some(own.as_str()) {
            return Err(invalid(format!(
                "The capacity provider {} is a Managed Instances provider of the cluster {own}: name that cluster in the request.",
                provider.name
            )));
        }
    }
    Ok(provider)
}

pub fn update(fleet: &mut Fleet, input: input::UpdateCapacityProvider) -> Result<Value, EcsError> {
    let reference = input::required(&input.name, "name")?;
    let provider = provider_named(fleet, reference, input.cluster.as_deref())?;
    let (name, kind) = (provider.name.clone(), provider.kind);
    let mut settings = provider.settings.clone();
    match (
        kind,
        input.auto_scaling_group_provider,
        input.managed_instances_provider,
    ) {
        (ProviderKind::AutoScalingGroup, Some(update), None) => {
            for (key, value) in update {
                settings.insert(key, value);
            }
            check_asg_settings(&mut settings, "autoScalingGroupProvider")?;
        }
        (ProviderKind::ManagedInstances, None, Some(update)) => {
            check_managed_instances(&update, "managedInstancesProvider")?;
            for (key, value) in update {
                settings.insert(key, value);
            }
        }
        _ => {
            return Err(invalid(format!(
                "{name} is a {} capacity provider: update it with {} only.",
                kind.as_str(),
                kind.field()
            )))
        }
    }
    let Some(provider) = fleet.capacity_providers.get_mut(&name) else {
        return Err(EcsError::Server("the capacity provider was lost".into()));
    };
    provider.settings = settings;
    provider.update_status = Some("UPDATE_IN_PROGRESS");
    let answer = provider_json(fleet, &fleet.capacity_providers[&name], false);
    if let Some(provider) = fleet.capacity_providers.get_mut(&name) {
        provider.update_status = Some("UPDATE_COMPLETE");
    }
    Ok(json!({ "capacityProvider": answer }))
}

pub fn delete(fleet: &mut Fleet, input: input::DeleteCapacityProvider) -> Result<Value, EcsError> {
    let reference = input::required(&input.capacity_provider, "capacityProvider")?;
    if FARGATE_PROVIDERS.contains(&reference) {
        return Err(invalid(format!(
            "{reference} is reserved and cannot be deleted; remove it from a cluster with PutClusterCapacityProviders."
        )));
    }
    let provider = provider_named(fleet, reference, input.cluster.as_deref())?;
    let name = provider.name.clone();
    let in_lists = fleet.clusters_with_provider(&name);
    match &provider.cluster {
        Some(own) if fleet.provider_in_use(own, &name) => {
            return Err(EcsError::Client(format!(
                "The capacity provider {name} is in use by tasks or services of {own}: move them off it first."
            )))
        }
        None if !in_lists.is_empty() => {
            return Err(EcsError::Client(format!(
                "The capacity provider {name} is associated with the cluster {}: remove it with PutClusterCapacityProviders first.",
                in_lists.join(", ")
            )))
        }
        _ => {}
    }
    for key in in_lists {
        if let Some(cluster) = fleet.clusters.get_mut(&key) {
            cluster.capacity_providers.retain(|p| *p != name);
        }
    }
    let Some(provider) = fleet.capacity_providers.get_mut(&name) else {
        return Err(EcsError::Server("the capacity provider was lost".into()));
    };
    provider.active = false;
    provider.update_status = Some("DELETE_IN_PROGRESS");
    let answer = provider_json(fleet, &fleet.capacity_providers[&name], false);
    if let Some(provider) = fleet.capacity_providers.get_mut(&name) {
        provider.update_status = Some("DELETE_COMPLETE");
    }
    Ok(json!({ "capacityProvider": answer }))
}

pub fn put_cluster(
    fleet: &mut Fleet,
    input: input::PutClusterCapacityProviders,
) -> Result<Value, EcsError> {
    let named = input::required(&input.cluster, "cluster")?;
    let key = fleet.cluster_key(named).ok_or(EcsError::ClusterNotFound)?;
    let asked = input
        .capacity_providers
        .ok_or_else(|| invalid("capacityProviders is required: give [] for none."))?;
    let strategy = input
        .default_capacity_provider_strategy
        .ok_or_else(|| invalid("defaultCapacityProviderStrategy is required: give [] for none."))?;
    let mut list = Vec::new();
    for name in &asked {
        check_association(fleet, &key, name)?;
        if !list.contains(name) {
            list.push(name.clone());
        }
    }
    // The cluster's own Managed Instances providers stay whatever the request lists.
    let own: Vec<String> = fleet.clusters[&key]
        .capacity_providers
        .iter()
        .filter(|p| {
            fleet
                .capacity_providers
                .get(*p)
                .is_some_and(|p| p.cluster.is_some())
        })
        .cloned()
        .collect();
    for name in own {
        if !list.contains(&name) {
            list.push(name);
        }
    }
    for removed in fleet.clusters[&key].capacity_providers.iter() {
        if !list.contains(removed) && fleet.provider_in_use(&key, removed) {
            return Err(EcsError::ResourceInUse(format!(
                "The specified capacity provider {removed} is in use and cannot be removed."
            )));
        }
    }
    let strategy = strategy_of(&strategy, &list)?;
    let Some(cluster) = fleet.clusters.get_mut(&key) else {
        return Err(EcsError::ClusterNotFound);
    };
    cluster.capacity_providers = list;
    cluster.default_strategy = strategy;
    Ok(json!({ "cluster": super::clusters::cluster_json(&fleet.clusters[&key]) }))
}

/// Whether the provider `name` may be in the list of the cluster `key`: Fargate's, an active
/// Auto Scaling group provider in no other cluster's list, or the cluster's own Managed
/// Instances provider.
fn check_association(fleet: &Fleet, key: &str, name: &str) -> Result<(), EcsError> {
    if FARGATE_PROVIDERS.contains(&name) {
        return Ok(());
    }
    let provider = fleet
        .capacity_providers
        .get(name)
        .filter(|p| p.active)
        .ok_or_else(|| {
            invalid(format!(
                "The specified capacity provider {name} does not exist or is not ACTIVE."
            ))
        })?;
    match &provider.cluster {
        Some(own) if own == key => Ok(()),
        Some(own) => Err(invalid(format!(
            "The capacity provider {name} is a Managed Instances provider of the cluster {own}; it cannot be used in {key}."
        ))),
        None => match fleet
            .clusters_with_provider(name)
            .into_iter()
            .find(|other| other != key)
        {
            Some(other) => Err(invalid(format!(
                "The capacity provider {name} is already associated with the cluster {other}."
            ))),
            None => Ok(()),
        },
    }
}

/// A capacity provider strategy checked against the providers it may name: weights 0 to 1,000,
/// bases 0 to 100,000, a base on one provider at most, each provider once.
pub fn strategy_of(
    items: &[input::StrategyItem],
    providers: &[String],
) -> Result<Vec<StrategyItem>, EcsError> {
    if items.len() > 20 {
        return Err(invalid(
            "A capacity provider strategy can have at most 20 items.",
        ));
    }
    let mut strategy: Vec<StrategyItem> = Vec::new();
    for item in items {
        let name = input::required(
            &item.capacity_provider,
            "capacityProviderStrategy.capacityProvider",
        )?;
        if !providers.iter().any(|p| p == name) {
            return Err(invalid(format!(
                "The capacity provider {name} is not associated with the cluster; add it to the cluster's capacity providers first."
            )));
        }
        if strategy.iter().any(|s| s.capacity_provider == name) {
            return Err(invalid(format!(
                "The capacity provider {name} appears twice in the strategy."
            )));
        }
        let weight = item.weight.unwrap_or(0);
        let base = item.base.unwrap_or(0);
        if !(0..=1000).contains(&weight) {
            return Err(invalid(format!(
                "The weight of {name} must be from 0 to 1000."
            )));
        }
        if !(0..=100_000).contains(&base) {
            return Err(invalid(format!(
                "The base of {name} must be from 0 to 100000."
            )));
        }
        strategy.push(StrategyItem {
            capacity_provider: name.to_string(),
            weight: weight as u32,
            base: base as u32,
        });
    }
    if strategy.iter().filter(|s| s.base > 0).count() > 1 {
        return Err(invalid(
            "Only one capacity provider in a strategy can have a base.",
        ));
    }
    Ok(strategy)
}
