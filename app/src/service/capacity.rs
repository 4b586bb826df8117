//! The fleet's capacity providers: each cluster's, read from ECS on demand, with the instances
//! and GPUs of the latest snapshot that each one launched.

pub(crate) mod growth;

use crate::{
    model::{
        capacity::{count_instances, CapacityQuery, ClusterCapacity},
        ServiceError,
    },
    service::{context::ServiceContext, lookup},
};

/// The capacity providers of every cluster of the fleet, or of the one `query` names.
pub async fn providers(
    context: &ServiceContext,
    query: CapacityQuery,
) -> Result<Vec<ClusterCapacity>, ServiceError> {
    let snapshot = lookup::snapshot(context)?;
    let clusters: Vec<String> = match query.cluster.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => vec![lookup::cluster(&snapshot, name)?.name.clone()],
        _ => snapshot.clusters.iter().map(|c| c.name.clone()).collect(),
    };
    if clusters.is_empty() {
        return Ok(Vec::new());
    }
    let mut read = context.ecs.capacity(clusters).await?;
    for cluster in &mut read {
        count_instances(&snapshot, &cluster.cluster, &mut cluster.providers);
    }
    Ok(read)
}
