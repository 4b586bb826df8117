//! Everything on the fleet page but the heatmap itself: freshness, the summary, the filter
//! menus and the notes about filter values that name nothing.

use serde::{Deserialize, Serialize};

use super::{FleetOptions, FleetQuery, FleetSummary};

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
    /// Why the refresher is holding back (the ECS API budget, or backing off after
    /// throttling), when it is.
    #[serde(default)]
    pub behind: Option<String>,
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
