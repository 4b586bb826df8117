//! The latest fleet snapshot, refreshed in the background. Requests read it and never wait on
//! AWS; when a refresh fails, the last good snapshot stays, with its age and what failed.

use std::{
    sync::{Arc, RwLock},
    time::Duration,
};

use app::model::FleetSnapshot;
use app::service::ports::FleetFeed;
pub use app::service::ports::FleetState;
use chrono::{DateTime, Utc};
use tokio::sync::watch;

use super::reader::FleetReader;

/// The shared latest snapshot.
pub struct SnapshotStore {
    state: RwLock<FleetState>,
    refresh_interval: Duration,
    /// Tells listeners (the live page updates) that the state changed: a new snapshot or a
    /// failed refresh.
    changed: watch::Sender<u64>,
}

impl Default for SnapshotStore {
    fn default() -> Self {
        SnapshotStore::new(Duration::from_secs(15))
    }
}

impl FleetFeed for SnapshotStore {
    fn state(&self) -> FleetState {
        SnapshotStore::state(self)
    }

    fn refresh_interval_seconds(&self) -> u64 {
        self.refresh_interval.as_secs()
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        SnapshotStore::subscribe(self)
    }
}

impl SnapshotStore {
    /// An empty store, refreshed every `refresh_interval`.
    pub fn new(refresh_interval: Duration) -> SnapshotStore {
        SnapshotStore {
            state: RwLock::default(),
            refresh_interval,
            changed: watch::channel(0).0,
        }
    }

    /// Seconds between refreshes.
    pub fn refresh_interval(&self) -> Duration {
        self.refresh_interval
    }

    /// Wakes when the state changes (a new snapshot or a failed refresh).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

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
        state.version += 1;
        let version = state.version;
        drop(state);
        self.changed.send_replace(version);
    }

    /// Records a failed refresh; the last good snapshot stays.
    pub fn fail(&self, error: String, at: DateTime<Utc>) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.last_error = Some(error);
        state.last_attempt = Some(at);
        let version = state.version;
        drop(state);
        self.changed.send_replace(version);
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

/// Refreshes the store now and then at its interval, while the store is in use.
pub fn spawn_refresher(store: &Arc<SnapshotStore>, reader: Arc<FleetReader>) {
    let interval = store.refresh_interval();
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
            cloudwatch_calls: 0,
            usage_error: None,
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
        assert_eq!(state.version, 1, "a failure is no new snapshot");
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
