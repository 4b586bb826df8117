//! The fleet page's data, from the latest in-memory snapshot: never waits on AWS.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::fleet_view::{FleetOptions, FleetQuery, FleetSummary, GpuDetail};

/// Everything on the fleet page but the heatmap itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetOverview {
    /// The snapshot's number; the live updates compare it with the newest.
    pub version: u64,
    pub taken_at: Option<String>,
    pub age_seconds: Option<i64>,
    pub refresh_interval_seconds: u64,
    /// The last refresh failed: the snapshot is the last good one.
    pub last_error: Option<String>,
    pub usage_error: Option<String>,
    /// Older than three refresh intervals, or the last refresh failed.
    pub stale: bool,
    /// Filter values that name nothing, and what exists instead.
    pub notes: Vec<String>,
    pub options: FleetOptions,
    /// `None` until the first snapshot is read.
    pub summary: Option<FleetSummary>,
    /// The filters applied: the query without the values that name nothing.
    pub applied: FleetQuery,
    pub unknown_gpu_ids: u32,
}

#[cfg(feature = "ssr")]
fn context() -> Result<crate::ssr::console::ConsoleContext, ServerFnError> {
    use_context::<crate::ssr::console::ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))
}

/// The overview for `query`, from the state the server holds.
#[cfg(feature = "ssr")]
pub fn overview_of(feed: &dyn crate::ssr::fleet::FleetFeed, query: &FleetQuery) -> FleetOverview {
    use crate::model::fleet_view::{unknown_values, without_unknown};

    let state = feed.state();
    let interval = feed.refresh_interval_seconds();
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
        applied: query.clone(),
        ..FleetOverview::default()
    };
    let Some(snapshot) = state.snapshot else {
        return overview;
    };
    let options = FleetOptions::of(&snapshot);
    let unknown = unknown_values(query, &options);
    overview.applied = without_unknown(query, &unknown);
    overview.notes = unknown.iter().map(|u| u.message()).collect();
    overview.summary = Some(FleetSummary::of(&filtered(&snapshot, &overview.applied)));
    overview.options = options;
    overview.usage_error = snapshot.usage_error.clone();
    overview.unknown_gpu_ids = snapshot.unknown_gpu_ids;
    overview
}

/// The heatmap SVG for `query`, or empty before the first snapshot.
#[cfg(feature = "ssr")]
pub fn heatmap_of(feed: &dyn crate::ssr::fleet::FleetFeed, query: &FleetQuery) -> String {
    use crate::model::{
        fleet_view::{unknown_values, without_unknown},
        heatmap::render,
    };

    let Some(snapshot) = feed.state().snapshot else {
        return String::new();
    };
    let unknown = unknown_values(query, &FleetOptions::of(&snapshot));
    let applied = without_unknown(query, &unknown);
    render(
        &filtered(&snapshot, &applied),
        applied.colour,
        applied.gpu.as_deref(),
    )
}

/// The snapshot narrowed to `query`; without filters, the snapshot itself, not a copy.
#[cfg(feature = "ssr")]
fn filtered<'a>(
    snapshot: &'a crate::model::FleetSnapshot,
    query: &FleetQuery,
) -> std::borrow::Cow<'a, crate::model::FleetSnapshot> {
    if query.filters() {
        std::borrow::Cow::Owned(crate::model::fleet_view::filter(snapshot, query))
    } else {
        std::borrow::Cow::Borrowed(snapshot)
    }
}

/// The summary, filter menus, freshness and notes for a view of the fleet.
#[server(name = GetFleetOverview, prefix = "/api", endpoint = "fleet_overview")]
pub async fn fleet_overview(query: FleetQuery) -> Result<FleetOverview, ServerFnError> {
    Ok(overview_of(context()?.fleet.as_ref(), &query))
}

/// The heatmap of a view of the fleet, as SVG markup.
#[server(name = GetFleetHeatmap, prefix = "/api", endpoint = "fleet_heatmap")]
pub async fn fleet_heatmap(query: FleetQuery) -> Result<String, ServerFnError> {
    Ok(heatmap_of(context()?.fleet.as_ref(), &query))
}

/// One GPU, by `<EC2 instance ID>:<index>` or UUID; `None` when the fleet has no such GPU.
#[server(name = GetGpuDetail, prefix = "/api", endpoint = "gpu_detail")]
pub async fn gpu_detail(key: String) -> Result<Option<GpuDetail>, ServerFnError> {
    if key.len() > 200 {
        return Err(ServerFnError::new(
            "a GPU key is `<EC2 instance ID>:<index>` or a GPU UUID",
        ));
    }
    let snapshot = context()?.fleet.state().snapshot;
    Ok(snapshot.and_then(|s| crate::model::fleet_view::gpu_detail(&s, &key)))
}
