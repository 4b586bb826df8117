//! What the emulator holds and has received: its status at `GET /_emulator/status`, and the
//! counts of calls and injected faults behind it.

use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Emulator;
use crate::{events::QueueStatus, throttle::GroupStatus};

/// The emulator's own status, at `GET /_emulator/status`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Status {
    pub scenario: String,
    pub clock_speed: f64,
    pub simulated_time: DateTime<Utc>,
    pub clusters: usize,
    pub container_instances: usize,
    pub gpus: usize,
    pub services: usize,
    pub tasks: usize,
    pub requests: u64,
    /// Every call received, by `service:Operation`, whatever became of it.
    #[serde(default)]
    pub received: std::collections::BTreeMap<String, u64>,
    /// Faults injected so far, by kind (`throttled`, `server error`, `dropped before running`,
    /// `ran, answer lost`), and `rate limited`: calls ECS's request throttling refused.
    #[serde(default)]
    pub injected: std::collections::BTreeMap<String, u64>,
    /// Whether ECS's request throttling is enforced.
    pub rate_limits: bool,
    /// ECS calls per group of actions (the groups ECS throttles by).
    pub api_groups: Vec<GroupStatus>,
    /// The SQS queue that receives ECS's task state change events, when there is one.
    #[serde(default)]
    pub events_queue: Option<QueueStatus>,
}

impl Emulator {
    /// Counts of what the emulator holds.
    pub fn status(&self) -> Status {
        let (clusters, container_instances, gpus, services, tasks, simulated_time) = self
            .with_fleet(|fleet| {
                let instances = fleet.clusters.values().map(|c| c.instances.len()).sum();
                let gpus = fleet
                    .clusters
                    .values()
                    .flat_map(|c| c.instances.iter())
                    .map(|i| i.gpus.len())
                    .sum();
                let services = fleet.clusters.values().map(|c| c.services.len()).sum();
                let tasks = fleet
                    .clusters
                    .values()
                    .map(|c| c.tasks.values().filter(|t| t.is_live()).count())
                    .sum();
                (
                    fleet.clusters.len(),
                    instances,
                    gpus,
                    services,
                    tasks,
                    fleet.now,
                )
            });
        Status {
            scenario: self.inner.scenario.clone(),
            clock_speed: self.inner.clock.speed(),
            simulated_time,
            clusters,
            container_instances,
            gpus,
            services,
            tasks,
            requests: self.inner.requests.load(Ordering::Relaxed),
            received: self.received(),
            injected: self
                .inner
                .injected
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|(kind, n)| (kind.to_string(), *n))
                .collect(),
            rate_limits: self.rate_limits(),
            api_groups: self
                .inner
                .buckets
                .status(self.rate_limits(), std::time::Instant::now()),
            events_queue: self.events_queue().map(|q| q.status()),
        }
    }

    /// Every call received so far, by `service:Operation`.
    pub fn received(&self) -> std::collections::BTreeMap<String, u64> {
        self.inner
            .received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Counts a fault of `kind` injected, instead of the one `instead_of` counted before.
    pub(super) fn count_injected(&self, kind: &'static str, instead_of: Option<&'static str>) {
        let mut injected = self
            .inner
            .injected
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *injected.entry(kind).or_default() += 1;
        if let Some(n) = instead_of.and_then(|before| injected.get_mut(before)) {
            *n = n.saturating_sub(1);
        }
    }

    /// Counts a call of `service`'s `operation`.
    pub(super) fn receive(&self, service: &str, operation: &str) {
        *self
            .inner
            .received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(format!("{service}:{operation}"))
            .or_default() += 1;
    }
}
