//! A cluster's events feed and recently stopped tasks for the pages.

use leptos::prelude::*;

use crate::model::{
    activity::{EventFeed, EventFilter, StoppedFilter, StoppedTasks},
    ServiceError,
};

/// Every service's events in `cluster`, merged newest first and filtered.
#[server(name = ClusterEvents, prefix = "/api", endpoint = "cluster_events")]
pub async fn cluster_events(
    cluster: String,
    #[server(default)] filter: EventFilter,
) -> Result<EventFeed, ServiceError> {
    crate::service::activity::event_feed(&super::context()?, &cluster, filter).await
}

/// The tasks of `cluster` that stopped recently, with why, filtered.
#[server(name = ClusterStoppedTasks, prefix = "/api", endpoint = "cluster_stopped_tasks")]
pub async fn cluster_stopped_tasks(
    cluster: String,
    #[server(default)] filter: StoppedFilter,
) -> Result<StoppedTasks, ServiceError> {
    crate::service::activity::stopped_tasks(&super::context()?, &cluster, filter).await
}
