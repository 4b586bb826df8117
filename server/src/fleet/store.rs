//! The latest fleet snapshot, refreshed in the background. Requests read it and never wait on
//! AWS; when a refresh fails, the last good snapshot stays, with its age and what failed.

use std::{
    sync::{Arc, RwLock},
    time::Duration,
};

use app::model::FleetSnapshot;
use chrono::{DateTime, Utc};

use super::reader::FleetReader;

/// What the store holds.
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
}

/// The shared latest snapshot.
#[derive(Default)]
pub struct SnapshotStore {
    state: RwLock<FleetState>,
}

impl SnapshotStore {
    /// A copy of the state (the snapshot itself is shared, not copied).
    pub fn state(&self) -> FleetState {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Keeps a new complete snapshot.
    pub fn store(&self, snapshot: FleetSnapshot, at: DateTime<Utc>) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.snapshot = Some(Arc::new(snapshot));
        state.taken_at = Some(at);
        state.last_error = None;
        state.last_attempt = Some(at);
    }

    /// Records a failed refresh; the last good snapshot stays.
    pub fn fail(&self, error: String, at: DateTime<Utc>) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.last_error = Some(error);
        state.last_attempt = Some(at);
    }

    /// Reads once and keeps the result.
    pub async fn refresh(&self, reader: &FleetReader) {
        match reader.read().await {
            Ok(snapshot) => self.store(snapshot, Utc::now()),
            Err(error) => {
                tracing::warn!(%error, "the fleet snapshot could not be refreshed; keeping the last one");
                self.fail(error.to_string(), Utc::now());
            }
        }
    }
}

/// Refreshes the store now and then every `interval`, while the store is in use.
pub fn spawn_refresher(store: &Arc<SnapshotStore>, reader: Arc<FleetReader>, interval: Duration) {
    let store = Arc::downgrade(store);
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let Some(store) = store.upgrade() else { break };
            store.refresh(&reader).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(calls: u32) -> FleetSnapshot {
        FleetSnapshot {
            taken_at: "t".into(),
            api_calls: calls,
            clusters: Vec::new(),
            unknown_gpu_ids: 0,
        }
    }

    #[test]
    fn a_failure_keeps_the_last_good_snapshot() {
        let store = SnapshotStore::default();
        assert!(store.state().snapshot.is_none());
        let first = Utc::now();
        store.store(snapshot(7), first);
        store.fail(
            "DescribeTasks failed: throttled".into(),
            first + chrono::Duration::seconds(15),
        );
        let state = store.state();
        assert_eq!(state.snapshot.map(|s| s.api_calls), Some(7));
        assert_eq!(state.taken_at, Some(first));
        assert_eq!(
            state.last_error.as_deref(),
            Some("DescribeTasks failed: throttled")
        );
        store.store(snapshot(8), first + chrono::Duration::seconds(30));
        assert!(store.state().last_error.is_none());
    }
}
