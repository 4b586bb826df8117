//! The fleet's clusters.

use leptos::prelude::*;

use crate::model::{ClusterSummary, ServiceError};

/// Every cluster of the fleet with its counts, from the latest snapshot.
#[server(name = ListClusters, prefix = "/api", endpoint = "list_clusters")]
pub async fn list_clusters() -> Result<Vec<ClusterSummary>, ServiceError> {
    crate::service::fleet::clusters(&super::context()?)
}
