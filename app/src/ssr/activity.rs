//! A cluster's events feed and its recently stopped tasks, for the pages and the JSON API.

use crate::{
    model::activity::{
        ClusterEvent, EventFeed, EventFilter, StoppedFilter, StoppedTasks, TaskInfo,
    },
    ssr::{
        console::ConsoleContext,
        deployments::{cluster_view, service_of, snapshot},
        task_definitions::{BoxFuture, EditFailure},
    },
};

/// Reads what happens in a cluster; implemented by the server over ECS.
pub trait ClusterActivity: Send + Sync {
    /// The events ECS keeps for each of `services` of `cluster` (up to 100 each), in any order.
    fn events(
        &self,
        cluster: String,
        services: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<ClusterEvent>, String>>;
    /// The stopped tasks ECS still keeps in `cluster` (about an hour's), of one service when
    /// given, in any order.
    fn stopped_tasks(
        &self,
        cluster: String,
        service: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<TaskInfo>, String>>;
}

impl From<EditFailure> for crate::model::activity::Problem {
    fn from(failure: EditFailure) -> Self {
        let status = match &failure {
            EditFailure::BadRequest(_) => 400,
            EditFailure::NotFound(_) => 404,
            EditFailure::Unavailable(_) => 503,
        };
        crate::model::activity::Problem {
            status,
            message: failure.to_string(),
        }
    }
}

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

fn read_at(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The cluster's services, checking the cluster and the filter's service exist.
fn services_of(
    context: &ConsoleContext,
    cluster: &str,
    service: Option<&str>,
) -> Result<Vec<String>, EditFailure> {
    let snapshot = snapshot(context)?;
    let view = cluster_view(&snapshot, cluster)?;
    if let Some(name) = service {
        service_of(view, name)?;
    }
    let mut names: Vec<String> = view.service_list.iter().map(|s| s.name.clone()).collect();
    names.sort();
    Ok(names)
}

/// Every service's events in `cluster`, merged newest first and filtered.
pub async fn event_feed(
    context: &ConsoleContext,
    cluster: &str,
    filter: EventFilter,
) -> Result<EventFeed, EditFailure> {
    let filter = filter.tidy();
    if let Some(problem) = filter.problem() {
        return Err(EditFailure::BadRequest(problem));
    }
    let services = services_of(context, cluster, filter.service.as_deref())?;
    let wanted = match &filter.service {
        Some(one) => vec![one.clone()],
        None => services.clone(),
    };
    let at = now();
    let events = context
        .activity
        .events(cluster.to_string(), wanted)
        .await
        .map_err(EditFailure::Unavailable)?;
    let total = events.len();
    Ok(EventFeed {
        cluster: cluster.to_string(),
        services,
        events: filter.apply(events, at),
        total,
        read_at: read_at(at),
    })
}

/// The tasks of `cluster` that stopped recently, with why, filtered.
pub async fn stopped_tasks(
    context: &ConsoleContext,
    cluster: &str,
    filter: StoppedFilter,
) -> Result<StoppedTasks, EditFailure> {
    let filter = filter.tidy();
    if let Some(problem) = filter.problem() {
        return Err(EditFailure::BadRequest(problem));
    }
    let services = services_of(context, cluster, filter.service.as_deref())?;
    let at = now();
    let tasks = context
        .activity
        .stopped_tasks(cluster.to_string(), filter.service.clone())
        .await
        .map_err(EditFailure::Unavailable)?;
    let total = tasks.len();
    Ok(StoppedTasks {
        cluster: cluster.to_string(),
        services,
        tasks: filter.apply(tasks),
        total,
        read_at: read_at(at),
    })
}
