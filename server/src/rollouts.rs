//! The rollouts this server follows: one task per rollout runs the service layer's
//! [`follow`](app::service::rollouts::follow) until the rollout ends, and publishes each state on
//! a channel that the watch page's event stream and the JSON API read.

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

/// Follows rollouts with the server's own ECS reads and audit store.
pub struct RolloutWatcher {
    ecs: Arc<dyn EcsReads>,
    audit: Arc<dyn AuditStore>,
    poll: Duration,
    watches: Mutex<HashMap<String, watch::Sender<WatchState>>>,
}

impl RolloutWatcher {
    /// A watcher that reads each rollout's service every `poll`.
    pub fn new(ecs: Arc<dyn EcsReads>, audit: Arc<dyn AuditStore>, poll: Duration) -> Self {
        RolloutWatcher {
            ecs,
            audit,
            poll,
            watches: Mutex::new(HashMap::new()),
        }
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
            .insert(id, sender.clone());
        let (ecs, audit, poll) = (self.ecs.clone(), self.audit.clone(), self.poll);
        tokio::spawn(async move {
            follow(ecs.as_ref(), audit.as_ref(), rollout, &sender, poll).await;
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
