//! The fleet's capacity providers: each cluster's, read from ECS on demand, with the instances
//! and GPUs of the latest snapshot that each one launched, and the price of each type they may
//! launch.

pub(crate) mod growth;

use crate::{
    model::{
        capacity::{count_instances, CapacityQuery, ClusterCapacity, LaunchOption, ProviderType},
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
        for provider in &mut cluster.providers {
            let options = std::mem::take(&mut provider.may_launch);
            provider.may_launch = with_prices(context, &provider.kind, options);
        }
    }
    Ok(read)
}

/// Each type a provider may launch with its on-demand price an hour from the console's price
/// book (none where the book has none: EC2 gives no price), with the Managed Instances charge
/// added for such a provider when the price file gives it.
pub(crate) fn with_prices(
    context: &ServiceContext,
    kind: &ProviderType,
    options: Vec<LaunchOption>,
) -> Vec<LaunchOption> {
    use self::growth::{managed_fee, priced};
    options
        .into_iter()
        .map(|option| {
            let mut facts = priced(context, option.facts);
            if *kind == ProviderType::ManagedInstances {
                facts.usd_per_hour = facts
                    .usd_per_hour
                    .map(|ec2| ec2 + managed_fee(context, &facts.name).unwrap_or(0.0));
            }
            LaunchOption { facts, ..option }
        })
        .collect()
}
