//! The fleet's capacity providers looked up: by name or ARN, whether a cluster's tasks or
//! services use one, and which clusters list one.

use crate::{capacity::CapacityProvider, model::Fleet};

impl Fleet {
    /// A provider by its name or ARN, active or not.
    pub fn capacity_provider(&self, name_or_arn: &str) -> Option<&CapacityProvider> {
        let name = name_or_arn
            .rsplit_once(":capacity-provider/")
            .map_or(name_or_arn, |(_, name)| name);
        self.capacity_providers.get(name)
    }

    /// Whether a task or service of `cluster` uses the provider `name`.
    pub fn provider_in_use(&self, cluster: &str, name: &str) -> bool {
        let Some(cluster) = self.clusters.get(cluster) else {
            return false;
        };
        let on_instances = cluster
            .instances
            .iter()
            .filter(|i| i.capacity_provider.as_deref() == Some(name))
            .any(|i| i.running_tasks + i.pending_tasks > 0);
        let in_strategies = cluster.services.values().any(|s| {
            s.status() != "INACTIVE"
                && s.capacity_provider_strategy
                    .iter()
                    .any(|item| item.capacity_provider == name)
        });
        on_instances || in_strategies
    }

    /// The clusters whose list names the provider `name`.
    pub fn clusters_with_provider(&self, name: &str) -> Vec<String> {
        self.clusters
            .values()
            .filter(|c| c.capacity_providers.iter().any(|p| p == name))
            .map(|c| c.name.clone())
            .collect()
    }
}
