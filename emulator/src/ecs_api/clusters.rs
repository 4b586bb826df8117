//! ListClusters, DescribeClusters and CreateCluster.

use serde_json::{json, Value};

use super::{
    input,
    output::{listed, missing, page},
    DESCRIBE_LIMIT,
};
use crate::{
    error::{invalid, EcsError},
    model::{Cluster, Fleet},
};

/// The cluster a request names (`default` when it names none).
pub fn cluster_of<'a>(fleet: &'a Fleet, name: Option<&str>) -> Result<&'a Cluster, EcsError> {
    let key = fleet
        .cluster_key(name.unwrap_or("default"))
        .ok_or(EcsError::ClusterNotFound)?;
    Ok(&fleet.clusters[&key])
}

/// A cluster as DescribeClusters answers it, its capacity providers and default strategy too.
pub(super) fn cluster_json(cluster: &Cluster) -> Value {
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
        "activeServicesCount": cluster.services.values().filter(|s| s.is_active()).count(),
        "capacityProviders": cluster.capacity_providers,
        "defaultCapacityProviderStrategy": cluster
            .default_strategy
            .iter()
            .map(crate::capacity::StrategyItem::to_json)
            .collect::<Vec<_>>(),
    })
}

pub fn list(fleet: &Fleet, input: &input::ListClusters) -> Result<Value, EcsError> {
    let arns: Vec<String> = fleet.clusters.values().map(|c| c.arn.clone()).collect();
    let (items, next) = page(&arns, &input.paging, 100)?;
    Ok(listed("clusterArns", items, next))
}

pub fn describe(fleet: &Fleet, input: input::DescribeClusters) -> Result<Value, EcsError> {
    let mut names = input.clusters;
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
            // ECS names the failure by the full ARN, whatever the request said.
            None => failures.push(missing(&if name.starts_with("arn:") {
                name.clone()
            } else {
                fleet.arn(&format!("cluster/{name}"))
            })),
        }
    }
    Ok(json!({"clusters": clusters, "failures": failures}))
}

pub fn create(fleet: &mut Fleet, input: input::CreateCluster) -> Result<Value, EcsError> {
    let name = input.cluster_name.unwrap_or_else(|| "default".into());
    let cluster = fleet.create_cluster(&name)?;
    Ok(json!({"cluster": cluster_json(cluster)}))
}
