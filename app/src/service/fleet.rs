//! Reading the fleet: the page's overview and heatmap, one GPU, the clusters, the console's
//! own status, and the snapshot narrowed to the JSON API's filters. Everything here reads the
//! snapshot in memory and never waits on AWS.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::{
    model::{
        fleet_view::{
            filter, gpu_detail as find_gpu, unknown_values, without_unknown, zoom_into,
            FleetOptions, FleetOverview, FleetQuery, FleetSummary, GpuDetail,
        },
        heatmap::{render, render_overview},
        identity::Actor,
        ClusterSummary, ConsoleStatus, FleetSnapshot, ServiceError, SharingMode,
    },
    service::{clock, context::ServiceContext, lookup, ports::FleetState},
};

/// The overview of the fleet page for `query`: freshness, summary, filter menus and notes.
pub fn overview(context: &ServiceContext, query: &FleetQuery) -> FleetOverview {
    let state = context.fleet.state();
    let interval = context.fleet.refresh_interval_seconds();
    let age = state
        .taken_at
        .map(|at| (chrono::Utc::now() - at).num_seconds().max(0));
    let mut overview = FleetOverview {
        version: state.version,
        taken_at: state.snapshot.as_ref().map(|s| s.taken_at.clone()),
        age_seconds: age,
        refresh_interval_seconds: interval,
        stale: state.last_error.is_some()
            || age.is_some_and(|age| age > 3 * interval.max(1) as i64),
        last_error: state.last_error.clone(),
        behind: state.behind.clone(),
        applied: query.clone(),
        ..FleetOverview::default()
    };
    let Some(snapshot) = state.snapshot else {
        return overview;
    };
    let options = options_of(&snapshot);
    let (applied, notes) = applied(&snapshot, query, &options);
    overview.applied = applied;
    overview.notes = notes;
    // The summary is of the part shown: zooming into a group or an instance narrows it.
    let filtered = narrowed(&snapshot, &overview.applied);
    let shown = match &overview.applied.zoom {
        Some(zoom) => Cow::Owned(zoom_into(&filtered, zoom)),
        None => filtered,
    };
    overview.summary = Some(FleetSummary::of(&shown, context.contention_threshold));
    overview.options = FleetOptions::clone(&options);
    overview.usage_error = snapshot.usage_error.clone();
    overview.unknown_gpu_ids = snapshot.unknown_gpu_ids;
    overview
}

/// The filter menus of `snapshot`, built once per snapshot: they walk every container (some
/// 20,000 on a large fleet), and every fleet page and heatmap asks for them.
fn options_of(snapshot: &std::sync::Arc<FleetSnapshot>) -> std::sync::Arc<FleetOptions> {
    use std::sync::{Arc, Mutex, Weak};
    // The latest snapshot's: a weak reference cannot keep it alive, and keeps its address from
    // being reused by another while it is held.
    static LATEST: Mutex<Option<(Weak<FleetSnapshot>, Arc<FleetOptions>)>> = Mutex::new(None);
    let mut latest = LATEST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((of, options)) = latest.as_ref() {
        if std::ptr::eq(of.as_ptr(), Arc::as_ptr(snapshot)) {
            return options.clone();
        }
    }
    let options = Arc::new(FleetOptions::of(snapshot));
    *latest = Some((Arc::downgrade(snapshot), options.clone()));
    options
}

/// `query` without the filter values and the zoom that name nothing, and notes saying so.
fn applied(
    snapshot: &FleetSnapshot,
    query: &FleetQuery,
    options: &FleetOptions,
) -> (FleetQuery, Vec<String>) {
    let unknown = unknown_values(query, options);
    let mut applied = without_unknown(query, &unknown);
    let mut notes: Vec<String> = unknown.iter().map(|u| u.message()).collect();
    if let Some(zoom) = &applied.zoom {
        if zoom_into(&narrowed(snapshot, &applied), zoom).gpu_count() == 0 {
            notes.push(format!(
                "There are no GPUs of {} here now; showing the whole overview.",
                zoom.label()
            ));
            applied.zoom = None;
        }
    }
    (applied, notes)
}

/// The heatmap SVG for `query`, or empty before the first snapshot: the overview of the
/// (filtered) fleet, or the detail of the part `query.zoom` names.
pub fn heatmap(context: &ServiceContext, query: &FleetQuery) -> String {
    let Some(snapshot) = context.fleet.state().snapshot else {
        return String::new();
    };
    let (applied, _) = applied(&snapshot, query, &options_of(&snapshot));
    let filtered = narrowed(&snapshot, &applied);
    let threshold = context.contention_threshold;
    match &applied.zoom {
        Some(zoom) => render(
            &zoom_into(&filtered, zoom),
            applied.colour,
            applied.gpu.as_deref(),
            threshold,
        ),
        None => render_overview(&filtered, &applied, threshold),
    }
}

/// The longest GPU key the console reads.
const MAX_GPU_KEY: usize = 200;

/// One GPU, by `<EC2 instance ID>:<index>` or UUID; `None` when the fleet has no such GPU.
pub fn gpu(context: &ServiceContext, key: &str) -> Result<Option<GpuDetail>, ServiceError> {
    if key.len() > MAX_GPU_KEY {
        return Err(ServiceError::invalid(
            "a GPU key is `<EC2 instance ID>:<index>` or a GPU UUID",
        ));
    }
    Ok(context
        .fleet
        .state()
        .snapshot
        .and_then(|snapshot| find_gpu(&snapshot, key)))
}

/// Every cluster of the fleet with its counts.
pub fn clusters(context: &ServiceContext) -> Result<Vec<ClusterSummary>, ServiceError> {
    let snapshot = lookup::snapshot(context)?;
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

/// The server's version, uptime, clock and fleet source, and who is asking.
pub fn console_status(context: &ServiceContext, actor: Option<Actor>) -> ConsoleStatus {
    ConsoleStatus {
        version: context.version.to_string(),
        fleet_source: context.fleet_source.clone(),
        uptime_seconds: context.started.elapsed().as_secs(),
        server_time: clock::now(),
        actor,
        stale_reads: context.ecs.stale_reads(),
    }
}

/// The JSON API's filters of the fleet; every one optional.
#[derive(Debug, Default, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetFilter {
    pub cluster: Option<String>,
    pub team: Option<String>,
    pub service: Option<String>,
    pub instance_type: Option<String>,
    /// `IDLE`, `NVIDIA_MPS` or `DEDICATED`.
    pub mode: Option<String>,
}

/// The JSON API's parameters, for error messages.
pub const FILTER_PARAMETERS: &str = "cluster, team, service, instance_type and mode";

/// The latest state with its snapshot, or why there is none yet.
pub fn latest(
    context: &ServiceContext,
) -> Result<(FleetState, std::sync::Arc<FleetSnapshot>), ServiceError> {
    let state = context.fleet.state();
    let snapshot = lookup::snapshot_of(&state)?;
    Ok((state, snapshot))
}

/// The clusters, instances and GPUs of `snapshot` that match every filter given. An unknown
/// cluster is an error that lists the clusters; an unknown team, service or type matches
/// nothing.
pub fn narrow(
    snapshot: &FleetSnapshot,
    filters: &FleetFilter,
) -> Result<FleetSnapshot, ServiceError> {
    let mode = match filters.mode.as_deref() {
        None => None,
        Some(value) => Some(SharingMode::parse(value).ok_or_else(|| {
            ServiceError::invalid(format!(
                "mode {value:?} is not a sharing mode; use IDLE, NVIDIA_MPS or DEDICATED"
            ))
        })?),
    };
    let query = FleetQuery {
        cluster: filters.cluster.clone(),
        team: filters.team.clone(),
        service: filters.service.clone(),
        instance_type: filters.instance_type.clone(),
        mode,
        ..FleetQuery::default()
    };
    lookup::known_cluster(snapshot, query.cluster.as_deref())?;
    Ok(filter(snapshot, &query))
}

/// The snapshot narrowed to `query`; without filters, the snapshot itself, not a copy.
fn narrowed<'a>(snapshot: &'a FleetSnapshot, query: &FleetQuery) -> Cow<'a, FleetSnapshot> {
    if query.filters() {
        Cow::Owned(filter(snapshot, query))
    } else {
        Cow::Borrowed(snapshot)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::ClusterView;

    fn of(clusters: &[&str]) -> Arc<FleetSnapshot> {
        Arc::new(FleetSnapshot {
            taken_at: "2026-12-06T00:00:00Z".into(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            unknown_gpu_ids: 0,
            clusters: clusters
                .iter()
                .map(|name| ClusterView {
                    name: name.to_string(),
                    ..ClusterView::default()
                })
                .collect(),
        })
    }

    #[test]
    fn the_filter_menus_are_built_once_per_snapshot_and_follow_a_new_one() {
        let first = of(&["prod"]);
        let a = options_of(&first);
        assert!(Arc::ptr_eq(&a, &options_of(&first)), "built once");
        assert_eq!(a.clusters, ["prod"]);
        let second = of(&["prod", "batch"]);
        assert_eq!(options_of(&second).clusters, ["prod", "batch"]);
        // An older snapshot still held is not given the newer one's menus.
        assert_eq!(options_of(&first).clusters, ["prod"]);
        // Nor one that takes the place of a snapshot let go.
        drop((first, a));
        let third = of(&["dev"]);
        assert_eq!(options_of(&third).clusters, ["dev"]);
    }
}
