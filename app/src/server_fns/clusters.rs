//! The fleet's clusters.

use leptos::prelude::*;

use crate::model::ClusterSummary;

/// Every cluster of the fleet with its counts, from the latest snapshot.
#[server(name = ListClusters, prefix = "/api", endpoint = "list_clusters")]
pub async fn list_clusters() -> Result<Vec<ClusterSummary>, ServerFnError> {
    use crate::ssr::console::ConsoleContext;

    let context = use_context::<ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))?;
    let state = context.fleet.state();
    let Some(snapshot) = state.snapshot else {
        return Err(ServerFnError::new(match state.last_error {
            Some(error) => format!(
                "the fleet could not be read ({error}); check the AWS credentials and region"
            ),
            None => "the fleet is still being read; this fills in by itself".to_string(),
        }));
    };
    Ok(snapshot
        .clusters
        .iter()
        .map(|c| ClusterSummary {
            name: c.name.clone(),
            container_instances: c.instances.len() as u32,
            running_tasks: c.running_tasks,
            pending_tasks: c.pending_tasks,
            services: c.services,
        })
        .collect())
}
