//! The fleet's clusters.

use leptos::prelude::*;

use crate::model::ClusterSummary;

/// Every cluster of the fleet with its counts.
#[server(name = ListClusters, prefix = "/api", endpoint = "list_clusters")]
pub async fn list_clusters() -> Result<Vec<ClusterSummary>, ServerFnError> {
    use crate::ssr::console::ConsoleContext;

    let context = use_context::<ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))?;
    context
        .clusters
        .clusters()
        .await
        .map_err(ServerFnError::new)
}
