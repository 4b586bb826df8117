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

use super::{reader::FleetReader, ReadError};

/// What the refresher has done, for `/metrics`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RefreshStats {
    /// Refreshes that ended well, and that failed.
    pub succeeded: u64,
    pub failed: u64,
    /// The last refresh: how long it took, of which waiting for the ECS API budget, and its
    /// ECS calls.
    pub last_seconds: f64,
    pub last_waited_seconds: f64,
    pub last_ecs_calls: u32,
    /// Whether the last refresh was a full read.
    pub last_full: bool,
}

/// The shared latest snapshot.
pub struct SnapshotStore {
    state: RwLock<FleetState>,
    stats: RwLock<RefreshStats>,
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
            stats: RwLock::default(),
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

    /// What the refresher has done so far.
    pub fn stats(&self) -> RefreshStats {
        self.stats.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Says why the refresher is holding back, or that it no longer is.
    pub fn set_behind(&self, behind: Option<String>) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        if state.behind == behind {
            return;
        }
        state.behind = behind;
        let version = state.version;
        drop(state);
        self.changed.send_replace(version);
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

    /// Refreshes once (a full read the first time, then incrementally) and keeps the result.
    /// Returns whether ECS throttled the refresh into failing.
    pub async fn refresh(&self, reader: &FleetReader) -> Result<(), ReadError> {
        let started = std::time::Instant::now();
        let result = reader.refresh().await;
        let seconds = started.elapsed().as_secs_f64();
        let mut stats = self.stats.write().unwrap_or_else(|p| p.into_inner());
        stats.last_seconds = seconds;
        match result {
            Ok(refresh) => {
                stats.succeeded += 1;
                stats.last_waited_seconds = refresh.waited.as_secs_f64();
                stats.last_ecs_calls = refresh.snapshot.api_calls;
                stats.last_full = refresh.full;
                drop(stats);
                self.store(refresh.snapshot, Utc::now());
                Ok(())
            }
            Err(error) => {
                stats.failed += 1;
                drop(stats);
                tracing::warn!(%error, "the fleet snapshot could not be refreshed; keeping the last one");
                self.fail(error.to_string(), Utc::now());
                Err(error)
            }
        }
    }
}

/// The wait before the next refresh after `failures` refreshes in a row failed because ECS
/// throttled them: the interval doubled per failure up to eight times, plus up to half again
/// at random, so that several consoles do not retry in step.
pub fn backoff(interval: Duration, failures: u32) -> Duration {
    if failures == 0 {
        return interval;
    }
    let factor = 2_u32.saturating_pow(failures.min(3));
    let base = interval.saturating_mul(factor);
    let jitter = rand::random::<f64>() * 0.5;
    base.mul_f64(1.0 + jitter)
}

/// Refreshes the store now and then at its interval, while the store is in use; backs off
/// when ECS throttles the refreshes; runs the full read that checks the incremental state in
/// the background when it is due.
pub fn spawn_refresher(store: &Arc<SnapshotStore>, reader: Arc<FleetReader>) {
    let interval = store.refresh_interval();
    let store = Arc::downgrade(store);
    let checking = Arc::new(std::sync::atomic::AtomicBool::new(false));
    tokio::spawn(async move {
        let mut throttled_in_a_row = 0;
        loop {
            let Some(strong) = store.upgrade() else { break };
            let started = tokio::time::Instant::now();
            let result = strong.refresh(&reader).await;
            if result.is_ok() {
                reader.snapshot_taken();
            }
            let stats = strong.stats();
            throttled_in_a_row = match &result {
                Err(error) if error.throttled => throttled_in_a_row + 1,
                _ => 0,
            };
            let wait = backoff(interval, throttled_in_a_row);
            strong.set_behind(behind(&stats, interval, throttled_in_a_row, wait));
            if reader.full_read_due().await
                && !checking.swap(true, std::sync::atomic::Ordering::SeqCst)
            {
                let (reader, checking) = (reader.clone(), checking.clone());
                tokio::spawn(async move {
                    if let Err(error) = reader.check_with_full_read().await {
                        tracing::warn!(%error, "the full read that checks the fleet state failed; it runs again at the next refresh");
                    }
                    checking.store(false, std::sync::atomic::Ordering::SeqCst);
                });
            }
            drop(strong);
            tokio::time::sleep_until(started + wait).await;
        }
    });
}

/// Why the data is older than the interval, when the refresher is holding back.
fn behind(
    stats: &RefreshStats,
    interval: Duration,
    throttled_in_a_row: u32,
    wait: Duration,
) -> Option<String> {
    if throttled_in_a_row > 0 {
        return Some(format!(
            "ECS API budget — ECS is throttling requests, so the next refresh waits {} s",
            wait.as_secs()
        ));
    }
    (stats.last_waited_seconds >= 1.0 && stats.last_seconds > interval.as_secs_f64() / 2.0).then(
        || {
            format!(
                "ECS API budget — the last refresh waited {:.0} s for its share of ECS's request rate",
                stats.last_waited_seconds
            )
        },
    )
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
