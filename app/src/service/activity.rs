//! What happens in a cluster: every service's events merged newest first and filtered, and
//! the tasks that stopped recently with why.

use crate::{
    model::{
        activity::{EventFeed, EventFilter, StoppedFilter, StoppedTasks},
        ServiceError,
    },
    service::{clock, context::ServiceContext, lookup, ports::TaskQuery},
};

/// The cluster's services, checking that the cluster and the filter's service exist.
fn services_of(
    context: &ServiceContext,
    cluster: &str,
    service: Option<&str>,
) -> Result<Vec<String>, ServiceError> {
    let snapshot = lookup::snapshot(context)?;
    let view = lookup::cluster(&snapshot, cluster)?;
    if let Some(name) = service {
        lookup::service(view, name)?;
    }
    let mut names: Vec<String> = view.service_list.iter().map(|s| s.name.clone()).collect();
    names.sort();
    Ok(names)
}

/// Every service's events in `cluster`, merged newest first and filtered.
pub async fn event_feed(
    context: &ServiceContext,
    cluster: &str,
    filter: EventFilter,
) -> Result<EventFeed, ServiceError> {
    let filter = filter.tidy();
    if let Some(problem) = filter.problem() {
        return Err(ServiceError::invalid(problem));
    }
    let services = services_of(context, cluster, filter.service.as_deref())?;
    let wanted = match &filter.service {
        Some(one) => vec![one.clone()],
        None => services.clone(),
    };
    let at = chrono::Utc::now();
    let events = context.ecs.events(cluster.to_string(), wanted).await?;
    let total = events.len();
    Ok(EventFeed {
        cluster: cluster.to_string(),
        services,
        events: filter.apply(events, at),
        total,
        read_at: clock::rfc3339(at),
    })
}

/// The tasks of `cluster` that stopped recently, with why, filtered.
pub async fn stopped_tasks(
    context: &ServiceContext,
    cluster: &str,
    filter: StoppedFilter,
) -> Result<StoppedTasks, ServiceError> {
    let filter = filter.tidy();
    if let Some(problem) = filter.problem() {
        return Err(ServiceError::invalid(problem));
    }
    let services = services_of(context, cluster, filter.service.as_deref())?;
    let at = chrono::Utc::now();
    let query = TaskQuery {
        stopped: true,
        service: filter.service.clone(),
    };
    let tasks = context.ecs.tasks(cluster.to_string(), query).await?;
    let total = tasks.len();
    Ok(StoppedTasks {
        cluster: cluster.to_string(),
        services,
        tasks: filter.apply(tasks),
        total,
        read_at: clock::rfc3339(at),
    })
}
