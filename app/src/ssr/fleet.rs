//! The seam through which pages read the latest fleet snapshot: in memory, never waiting on AWS.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::model::FleetSnapshot;

/// The latest snapshot and how the refreshes are going.
#[derive(Clone, Debug, Default)]
pub struct FleetState {
    /// The last complete snapshot, if any.
    pub snapshot: Option<Arc<FleetSnapshot>>,
    /// When it was taken.
    pub taken_at: Option<DateTime<Utc>>,
    /// The last refresh's failure, cleared by the next success.
    pub last_error: Option<String>,
    /// When a refresh last ended, well or not.
    pub last_attempt: Option<DateTime<Utc>>,
    /// Counts stored snapshots: a page holding an older number is out of date.
    pub version: u64,
}

/// Hands out the latest fleet state.
pub trait FleetFeed: Send + Sync {
    /// The latest state (the snapshot is shared, not copied).
    fn state(&self) -> FleetState;
    /// Seconds between refreshes.
    fn refresh_interval_seconds(&self) -> u64;
}
