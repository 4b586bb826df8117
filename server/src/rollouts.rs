//! The rollouts this server follows: one task per rollout runs the service layer's
//! [`follow`](app::service::rollouts::follow) until the rollout ends, and publishes each state on
//! a channel that the watch page's event stream and the JSON API read. A finished rollout's
//! channel is kept a while for late readers, then dropped: its audit record tells the rest.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use app::{
    model::deployment::WatchState,
    service::{
        ports::{AuditStore, EcsReads, RolloutToWatch, RolloutWatches},
        rollouts::follow,
    },
};
use tokio::sync::watch;

/// How long a finished rollout's channel is kept for pages still open on it.
pub const KEEP_FINISHED: Duration = Duration::from_secs(10 * 60);

type Channels = Arc<Mutex<HashMap<String, watch::Sender<WatchState>>>>;

/// Follows rollouts with the server's own ECS reads and audit store.
pub struct RolloutWatcher {
    ecs: Arc<dyn EcsReads>,
    audit: Arc<dyn AuditStore>,
    poll: Duration,
    keep_finished: Duration,
    watches: Channels,
}

impl RolloutWatcher {
    /// A watcher that reads each rollout's service every `poll`.
    pub fn new(ecs: Arc<dyn EcsReads>, audit: Arc<dyn AuditStore>, poll: Duration) -> Self {
        RolloutWatcher {
            ecs,
            audit,
            poll,
            keep_finished: KEEP_FINISHED,
            watches: Arc::default(),
        }
    }

    /// The same watcher keeping finished rollouts' channels for `keep` instead.
    pub fn keeping_finished(mut self, keep: Duration) -> Self {
        self.keep_finished = keep;
        self
    }

    /// Rollouts whose channel is held: followed now, or finished within the keep time.
    pub fn channels(&self) -> usize {
        self.watches.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn sender(&self, id: &str) -> Option<watch::Sender<WatchState>> {
        self.watches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }
}

impl RolloutWatches for RolloutWatcher {
    fn start(&self, rollout: RolloutToWatch) -> WatchState {
        let id = rollout.initial.audit_id.clone();
        if let Some(running) = self.sender(&id) {
            return running.borrow().clone();
        }
        let initial = rollout.initial.clone();
        let (sender, _) = watch::channel(initial.clone());
        self.watches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), sender.clone());
        let (ecs, audit, poll) = (self.ecs.clone(), self.audit.clone(), self.poll);
        let (watches, keep) = (self.watches.clone(), self.keep_finished);
        tokio::spawn(async move {
            follow(ecs.as_ref(), audit.as_ref(), rollout, &sender, poll).await;
            tokio::time::sleep(keep).await;
            let mut watches = watches.lock().unwrap_or_else(|p| p.into_inner());
            if watches
                .get(&id)
                .is_some_and(|held| held.same_channel(&sender))
            {
                watches.remove(&id);
            }
        });
        initial
    }

    fn current(&self, id: &str) -> Option<WatchState> {
        self.sender(id).map(|sender| sender.borrow().clone())
    }

    fn subscribe(&self, id: &str) -> Option<watch::Receiver<WatchState>> {
        self.sender(id).map(|sender| sender.subscribe())
    }
}
