//! A cluster's events feed and recently stopped tasks for the pages.

use leptos::prelude::*;

use crate::model::activity::{EventFeed, EventFilter, Problem, StoppedFilter, StoppedTasks};

#[cfg(feature = "ssr")]
fn context() -> Result<crate::ssr::console::ConsoleContext, ServerFnError> {
    use_context::<crate::ssr::console::ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))
}

/// Every service's events in `cluster`, merged newest first and filtered; or why not.
#[server(name = ClusterEvents, prefix = "/api", endpoint = "cluster_events")]
pub async fn cluster_events(
    cluster: String,
    #[server(default)] filter: EventFilter,
) -> Result<Result<EventFeed, Problem>, ServerFnError> {
    Ok(
        crate::ssr::activity::event_feed(&context()?, &cluster, filter)
            .await
            .map_err(Problem::from),
    )
}

/// The tasks of `cluster` that stopped recently, with why, filtered; or why not.
#[server(name = ClusterStoppedTasks, prefix = "/api", endpoint = "cluster_stopped_tasks")]
pub async fn cluster_stopped_tasks(
    cluster: String,
    #[server(default)] filter: StoppedFilter,
) -> Result<Result<StoppedTasks, Problem>, ServerFnError> {
    Ok(
        crate::ssr::activity::stopped_tasks(&context()?, &cluster, filter)
            .await
            .map_err(Problem::from),
    )
}
