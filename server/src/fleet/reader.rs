//! Reads the fleet through aws-sdk-ecs: clusters → container instances → tasks → task
//! definitions → services and their team tags, describes batched at the API limits, clusters
//! read concurrently, task definitions cached by ARN (they never change).
//!
//! The first read is a full read. After it, a refresh reads only what can have changed (see
//! [`incremental`]): the container instances every time, tasks only where an instance changed,
//! services in a changed cluster, those in a rollout and a rotating slice of the rest. A full
//! read still runs now and then in the background, paced behind the refreshes, and its result
//! is compared with the incremental state. Every ECS call waits for the budget: a share of
//! ECS's documented request rates ([`crate::aws::budget`]).

mod convert;
mod describe;
mod incremental;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use app::model::{
    arn::arn_tail, gpu_model_of, nominal_gpu_memory_mib, FleetSnapshot, HostUse, InstanceView,
    ServiceRef, SharingMode,
};
use aws_sdk_ecs::types::{
    GpuSharingMode, InstanceHealthCheckState, InstanceHealthCheckType, SharingStrategy,
    TaskDefinitionField,
};
use futures::{stream, Stream, StreamExt, TryStreamExt};
use placement::resources::Room;

pub use self::convert::gpu_ask;
use self::convert::{add_usage, count_enis, host_needs, instance_view, raw_task, service_ref};
use self::describe::Listing;
pub use self::incremental::Drift;
use self::incremental::{ClusterState, Known};
use super::{
    ec2::{host_names, Ec2Instance, Ec2Reader},
    ecs_failed as failed,
    events::EventFeed,
    join::{DefinitionGpu, GpuAsk, RawContainer, RawGpu, RawTask},
    usage::{UsageMap, UsageReader},
    ReadError,
};
use crate::aws::budget::{Budget, Lane};

/// DescribeTaskDefinition calls in flight at once on a first read.
const DEFINITION_CONCURRENCY: usize = 50;

/// How often a full read checks the incremental state, by default.
pub const FULL_READ_INTERVAL: Duration = Duration::from_secs(600);

/// Reads fleet snapshots; keeps the task definition cache and the incremental state between
/// reads.
pub struct FleetReader {
    ecs: aws_sdk_ecs::Client,
    team_tag: String,
    concurrency: usize,
    definitions: Mutex<HashMap<String, DefinitionGpu>>,
    usage: Option<UsageReader>,
    ec2: Option<Ec2Reader>,
    budget: Option<Arc<Budget>>,
    /// What the last read left: the base of the next incremental refresh.
    known: tokio::sync::Mutex<Option<Known>>,
    full_every: Duration,
    /// The last full read's comparison with the incremental state.
    checks: Mutex<Checks>,
    /// ECS's task state change events, when a queue brings them: which tasks changed.
    events: Option<Arc<EventFeed>>,
    /// The time usage is read up to: now, or the emulator's time while its past is replayed.
    clock: Arc<dyn Fn() -> chrono::DateTime<chrono::Utc> + Send + Sync>,
}

/// What the background full reads found, for `/metrics`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checks {
    /// Full reads compared with the incremental state.
    pub full_reads: u64,
    /// GPUs compared (on instances that did not change between the two reads).
    pub gpus_compared: u64,
    /// GPUs whose incremental view differed from the full read's.
    pub gpus_differing: u64,
}

/// What one refresh did.
#[derive(Clone, Debug)]
pub struct Refresh {
    pub snapshot: FleetSnapshot,
    /// Whether it read everything (the first read) or only what could have changed.
    pub full: bool,
    /// Time spent waiting for the ECS API budget.
    pub waited: Duration,
}

impl FleetReader {
    pub fn new(ecs: aws_sdk_ecs::Client, team_tag: &str, concurrency: usize) -> FleetReader {
        FleetReader {
            ecs,
            team_tag: team_tag.to_string(),
            concurrency: concurrency.max(1),
            definitions: Mutex::new(HashMap::new()),
            usage: None,
            ec2: None,
            budget: None,
            known: tokio::sync::Mutex::new(None),
            full_every: FULL_READ_INTERVAL,
            checks: Mutex::new(Checks::default()),
            events: None,
            clock: Arc::new(chrono::Utc::now),
        }
    }

    /// Reads usage up to the time `clock` gives instead of now.
    pub fn with_clock(
        self,
        clock: Arc<dyn Fn() -> chrono::DateTime<chrono::Utc> + Send + Sync>,
    ) -> FleetReader {
        FleetReader { clock, ..self }
    }

    /// Also reads the instances' EC2 side: hostnames (to join usage), zones and lifecycles.
    pub fn with_ec2(self, ec2: Ec2Reader) -> FleetReader {
        FleetReader {
            ec2: Some(ec2),
            ..self
        }
    }

    /// Also reads GPU usage from CloudWatch, alongside ECS.
    pub fn with_usage(self, usage: UsageReader) -> FleetReader {
        FleetReader {
            usage: Some(usage),
            ..self
        }
    }

    /// Paces every ECS call to `budget`.
    /// Follows ECS's task state change events through `feed`, so that a refresh describes the
    /// tasks they name instead of listing the tasks of every instance that changed.
    pub fn with_events(self, feed: Arc<EventFeed>) -> FleetReader {
        FleetReader {
            events: Some(feed),
            ..self
        }
    }

    /// The events feed, when the reader follows one.
    pub fn events(&self) -> Option<&Arc<EventFeed>> {
        self.events.as_ref()
    }

    pub fn with_budget(self, budget: Arc<Budget>) -> FleetReader {
        FleetReader {
            budget: Some(budget),
            ..self
        }
    }

    /// A snapshot from this reader has landed: the pages' reads may now use the budget's share
    /// the refresher leaves.
    pub fn snapshot_taken(&self) {
        if let Some(budget) = &self.budget {
            budget.snapshot_taken();
        }
    }

    /// Checks the incremental state with a full read this often.
    pub fn with_full_read_every(self, every: Duration) -> FleetReader {
        FleetReader {
            full_every: every,
            ..self
        }
    }

    /// What the full reads have found so far.
    pub fn checks(&self) -> Checks {
        self.checks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits for the budget to allow one call of `operation`.
    async fn pace(&self, operation: &str, lane: Lane) {
        if let Some(budget) = &self.budget {
            budget.take(operation, lane).await;
        }
    }

    /// Reads the whole fleet, and its usage when a usage reader is set, concurrently. Never
    /// partial: any failed ECS call fails the read. When CloudWatch fails, the snapshot says so
    /// in `usage_error` and every GPU's usage is "no data". Resets the incremental state.
    pub async fn read(&self) -> Result<FleetSnapshot, ReadError> {
        let mut known = self.known.lock().await;
        let calls = AtomicU32::new(0);
        let (states, usage) =
            tokio::join!(self.read_full(&calls, Lane::Foreground), self.read_usage());
        let states = states?;
        let snapshot = self
            .finish(&states, calls.load(Ordering::Relaxed), usage)
            .await;
        *known = Some(Known::new(states));
        // Names only the state just replaced held go.
        super::names::NAMES.prune();
        Ok(snapshot)
    }

    /// Brings the snapshot up to date: a full read the first time, then incrementally.
    pub async fn refresh(&self) -> Result<Refresh, ReadError> {
        let waited_before = self.budget.as_ref().map_or(0, |b| b.waited_ms());
        let mut guard = self.known.lock().await;
        let Some(known) = guard.as_mut() else {
            drop(guard);
            let snapshot = self.read().await?;
            return Ok(Refresh {
                snapshot,
                full: true,
                waited: self.waited_since(waited_before),
            });
        };
        let calls = AtomicU32::new(0);
        let (updated, usage) = tokio::join!(self.read_changes(known, &calls), self.read_usage());
        updated?;
        let snapshot = self
            .finish(&known.clusters, calls.load(Ordering::Relaxed), usage)
            .await;
        super::names::NAMES.prune();
        Ok(Refresh {
            snapshot,
            full: false,
            waited: self.waited_since(waited_before),
        })
    }

    fn waited_since(&self, before: u64) -> Duration {
        let now = self.budget.as_ref().map_or(0, |b| b.waited_ms());
        Duration::from_millis(now.saturating_sub(before))
    }

    /// Whether a background full read is due.
    pub async fn full_read_due(&self) -> bool {
        self.known
            .lock()
            .await
            .as_ref()
            .is_some_and(|k| k.full_at.elapsed() >= self.full_every)
    }

    /// Reads everything in the background lane (behind the refreshes), compares it with the
    /// incremental state of the same moment, logs and counts any difference, and makes it the
    /// base of the next refresh.
    pub async fn check_with_full_read(&self) -> Result<Drift, ReadError> {
        let calls = AtomicU32::new(0);
        let full = self.read_full(&calls, Lane::Background).await?;
        let mut guard = self.known.lock().await;
        let Some(known) = guard.as_mut() else {
            *guard = Some(Known::new(full));
            return Ok(Drift::default());
        };
        // Bring the incremental state to now, so that both describe the same moment as nearly
        // as can be; instances that changed between the two reads are not compared.
        let calls = AtomicU32::new(0);
        self.read_changes(known, &calls).await?;
        let definitions = self
            .definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let drift = incremental::compare(&known.clusters, &full, &definitions);
        {
            let mut checks = self.checks.lock().unwrap_or_else(|p| p.into_inner());
            checks.full_reads += 1;
            checks.gpus_compared += drift.compared;
            checks.gpus_differing += drift.differing.len() as u64;
        }
        if !drift.differing.is_empty() {
            tracing::warn!(
                gpus = drift.differing.len(),
                examples = %drift.differing.iter().take(5).cloned().collect::<Vec<_>>().join("; "),
                "the incremental fleet state differed from a full read; the full read replaces it"
            );
        }
        *known = Known::new(full);
        Ok(drift)
    }

    async fn read_usage(&self) -> Option<Result<UsageMap, ReadError>> {
        match &self.usage {
            Some(reader) => Some(reader.read((self.clock)()).await),
            None => None,
        }
    }

    /// The snapshot of `states`, with what EC2 and CloudWatch add.
    async fn finish(
        &self,
        states: &[ClusterState],
        calls: u32,
        usage: Option<Result<UsageMap, ReadError>>,
    ) -> FleetSnapshot {
        let definitions = self
            .definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let (mut snapshot, eni_tasks) = incremental::assemble(states, &definitions);
        snapshot.api_calls = calls;
        // EC2 needs the instance IDs that ECS gave; it describes only instances it has not seen.
        let mut ec2_error = None;
        let ec2 = match &self.ec2 {
            Some(reader) => {
                let ids: Vec<String> = snapshot
                    .clusters
                    .iter()
                    .flat_map(|c| c.instances.iter())
                    .map(|i| i.ec2_instance_id.clone())
                    .collect();
                match reader.describe(&ids).await {
                    Ok(found) => found,
                    Err(error) => {
                        ec2_error = Some(error.to_string());
                        HashMap::new()
                    }
                }
            }
            None => HashMap::new(),
        };
        match usage {
            Some(Ok(usage)) => add_usage(&mut snapshot, &usage, &ec2),
            Some(Err(error)) => {
                add_usage(&mut snapshot, &UsageMap::default(), &ec2);
                snapshot.usage_error = Some(error.to_string());
            }
            None => add_usage(&mut snapshot, &UsageMap::default(), &ec2),
        }
        if let Some(error) = ec2_error {
            snapshot.usage_error.get_or_insert(error);
        }
        if let Some(reader) = &self.ec2 {
            // Types as ECS names them; one EC2 does not know would fail the whole call.
            let mut types: Vec<String> = snapshot
                .clusters
                .iter()
                .flat_map(|c| c.instances.iter())
                .map(|i| i.instance_type.clone())
                .filter(|t| t.contains('.'))
                .collect();
            types.sort();
            types.dedup();
            match reader.network_interfaces(&types).await {
                Ok(interfaces) => count_enis(&mut snapshot, &interfaces, &eni_tasks),
                Err(error) => tracing::warn!("{error}"),
            }
        }
        snapshot
    }

    /// Reads every cluster in full.
    async fn read_full(
        &self,
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<Vec<ClusterState>, ReadError> {
        let clusters = self.list_cluster_arns(calls, lane).await?;
        // The counts beside the clusters' reads, not before them: a task that starts or stops
        // while they run can be in the one and not the other either way, and the first refresh
        // after a full read lists the instances whose counts disagree with the tasks known.
        let (counts, states) = tokio::join!(
            self.describe_clusters(&clusters, calls, lane),
            futures::future::try_join_all(
                clusters
                    .iter()
                    .map(|arn| self.read_cluster(arn, calls, lane)),
            )
        );
        let (counts, mut states) = (counts?, states?);
        for state in &mut states {
            state.counts = counts.get(&state.arn).copied();
        }
        states.sort_by(|a, b| arn_tail(&a.arn).cmp(arn_tail(&b.arn)));
        Ok(states)
    }

    /// One cluster's instances, tasks (with their task definitions) and services, read at
    /// once; its counts are left for the caller.
    async fn read_cluster(
        &self,
        cluster: &str,
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<ClusterState, ReadError> {
        let (instances, tasks, services) = tokio::try_join!(
            async {
                let instances = self
                    .pipelined(
                        calls,
                        100,
                        self.listing(cluster, Listing::Instances, calls, lane),
                        self.describe_instances(cluster, lane),
                    )
                    .await?;
                self.read_ec2_early(&instances).await;
                Ok(instances)
            },
            async {
                // The task definitions a described batch names are read as soon as it comes
                // back, not after the cluster's last batch: that one's new definitions, if it
                // has any, are all that is left to wait for.
                let (named, names) = futures::channel::mpsc::unbounded();
                let (described, ()) = tokio::try_join!(
                    self.pipelined(
                        calls,
                        100,
                        self.listing(cluster, Listing::Tasks(None), calls, lane),
                        self.describe_tasks(cluster, lane, Some(named)),
                    ),
                    self.cache_definitions_of(names, calls, lane),
                )?;
                Ok(described
                    .into_iter()
                    .filter_map(Result::ok)
                    .collect::<Vec<RawTask>>())
            },
            self.pipelined(
                calls,
                10,
                self.listing(cluster, Listing::Services, calls, lane),
                self.describe_services(cluster, lane),
            ),
        )?;
        Ok(ClusterState::from_reads(
            cluster, None, instances, tasks, services,
        ))
    }

    /// Has EC2 describe `instances` and their types while the cluster's tasks are still being
    /// read, so that the snapshot need not wait for it after ECS. What fails here is tried
    /// again, and said, when the snapshot is finished.
    async fn read_ec2_early(&self, instances: &[Result<incremental::KnownInstance, String>]) {
        let Some(ec2) = &self.ec2 else {
            return;
        };
        let ids: Vec<String> = instances
            .iter()
            .flatten()
            .map(|i| i.view.ec2_instance_id.clone())
            .collect();
        let mut types: Vec<String> = instances
            .iter()
            .flatten()
            .map(|i| i.view.instance_type.clone())
            .filter(|t| t.contains('.'))
            .collect();
        types.sort();
        types.dedup();
        let _ = tokio::join!(ec2.describe(&ids), ec2.network_interfaces(&types));
    }
}

/// Shared handle, for the background refresher.
pub type SharedReader = Arc<FleetReader>;

#[cfg(test)]
mod tests;
