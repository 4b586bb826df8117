//! The fleet snapshot's clusters and services looked up by name, with one wording for what is
//! missing and what exists instead.

use std::sync::Arc;

use crate::{
    model::{ClusterView, FleetSnapshot, ServiceError, ServiceRef},
    service::{context::ServiceContext, ports::FleetState},
};

/// The latest fleet snapshot, or why there is none yet.
pub fn snapshot(context: &ServiceContext) -> Result<Arc<FleetSnapshot>, ServiceError> {
    snapshot_of(&context.fleet.state())
}

/// The snapshot of `state`, or why there is none yet.
pub fn snapshot_of(state: &FleetState) -> Result<Arc<FleetSnapshot>, ServiceError> {
    state
        .snapshot
        .clone()
        .ok_or_else(|| match &state.last_error {
            Some(error) => ServiceError::unavailable(format!(
                "no fleet snapshot yet: {error}; check the AWS credentials and region"
            )),
            None => ServiceError::unavailable(
                "the first fleet snapshot is still being read; try again in a few seconds",
            ),
        })
}

/// The cluster `name` of the snapshot, or a not-found naming the clusters there are.
pub fn cluster<'a>(
    snapshot: &'a FleetSnapshot,
    name: &str,
) -> Result<&'a ClusterView, ServiceError> {
    snapshot
        .clusters
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| no_cluster(snapshot, name))
}

/// A not-found naming the clusters there are.
pub fn no_cluster(snapshot: &FleetSnapshot, name: &str) -> ServiceError {
    ServiceError::not_found(format!(
        "there is no cluster {name:?}; the clusters are: {}",
        snapshot
            .clusters
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Refuses a cluster filter that names no cluster; no filter passes.
pub fn known_cluster(snapshot: &FleetSnapshot, name: Option<&str>) -> Result<(), ServiceError> {
    match name {
        Some(name) => cluster(snapshot, name).map(|_| ()),
        None => Ok(()),
    }
}

/// The service `name` of a cluster, or a not-found naming the services it has.
pub fn service<'a>(view: &'a ClusterView, name: &str) -> Result<&'a ServiceRef, ServiceError> {
    view.service_list
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            ServiceError::not_found(format!(
                "cluster {} has no service {name:?}; it has {}",
                view.name,
                view.service_list
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet() -> FleetSnapshot {
        FleetSnapshot {
            taken_at: "t".into(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            unknown_gpu_ids: 0,
            clusters: vec![
                ClusterView {
                    name: "prod".into(),
                    service_list: vec![ServiceRef {
                        name: "embed".into(),
                        ..ServiceRef::default()
                    }],
                    ..ClusterView::default()
                },
                ClusterView {
                    name: "dev".into(),
                    ..ClusterView::default()
                },
            ],
        }
    }

    #[test]
    fn what_is_missing_is_named_with_what_exists() {
        let fleet = fleet();
        let missing = cluster(&fleet, "nope").expect_err("no such cluster");
        assert_eq!(missing.status(), 404);
        assert_eq!(
            missing.message(),
            "there is no cluster \"nope\"; the clusters are: prod, dev"
        );
        let prod = cluster(&fleet, "prod").expect("found");
        assert_eq!(service(prod, "embed").map(|s| s.name.as_str()), Ok("embed"));
        assert!(service(prod, "x")
            .expect_err("no such service")
            .message()
            .ends_with("it has embed"));
        assert!(known_cluster(&fleet, None).is_ok());
        assert!(known_cluster(&fleet, Some("dev")).is_ok());
        assert!(known_cluster(&fleet, Some("x")).is_err());
    }
}
