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

    /// Reads a list's pages, each after the budget allows it, as a stream.
    fn listing<'a>(
        &'a self,
        cluster: &'a str,
        listing: Listing,
        calls: &'a AtomicU32,
        lane: Lane,
    ) -> impl Stream<Item = Result<Vec<String>, ReadError>> + Send + 'a {
        stream::try_unfold(
            (Some(None::<String>), listing),
            move |(next, listing)| async move {
                let Some(token) = next else {
                    return Ok(None);
                };
                self.pace(listing.operation(), lane).await;
                calls.fetch_add(1, Ordering::Relaxed);
                let (items, token) = match &listing {
                    Listing::Instances => {
                        let out = self
                            .ecs
                            .list_container_instances()
                            .cluster(cluster)
                            .max_results(100)
                            .set_next_token(token)
                            .send()
                            .await
                            .map_err(failed("ListContainerInstances"))?;
                        (
                            out.container_instance_arns().to_vec(),
                            out.next_token().map(str::to_string),
                        )
                    }
                    Listing::Tasks(instance) => {
                        let out = self
                            .ecs
                            .list_tasks()
                            .cluster(cluster)
                            .set_container_instance(instance.clone())
                            .max_results(100)
                            .set_next_token(token)
                            .send()
                            .await
                            .map_err(failed("ListTasks"))?;
                        (
                            out.task_arns().to_vec(),
                            out.next_token().map(str::to_string),
                        )
                    }
                    Listing::Services => {
                        let out = self
                            .ecs
                            .list_services()
                            .cluster(cluster)
                            .max_results(100)
                            .set_next_token(token)
                            .send()
                            .await
                            .map_err(failed("ListServices"))?;
                        (
                            out.service_arns().to_vec(),
                            out.next_token().map(str::to_string),
                        )
                    }
                };
                Ok(Some((items, (token.map(Some), listing))))
            },
        )
    }

    /// Describes what a list's pages name as soon as each page arrives (in batches of
    /// `batch`, at most `concurrency` at once), so that describing overlaps listing.
    async fn pipelined<T, D, DF>(
        &self,
        calls: &AtomicU32,
        batch: usize,
        list: impl Stream<Item = Result<Vec<String>, ReadError>>,
        describe: D,
    ) -> Result<Vec<T>, ReadError>
    where
        D: Fn(Vec<String>) -> DF,
        DF: std::future::Future<Output = Result<Vec<T>, ReadError>> + Send + 'static,
        T: Send + 'static,
    {
        let limit = Arc::new(tokio::sync::Semaphore::new(self.concurrency));
        let mut handles = Vec::new();
        let mut list = std::pin::pin!(list);
        let listed = loop {
            let page = match list.next().await {
                None => break Ok(()),
                Some(Ok(page)) => page,
                Some(Err(error)) => break Err(error),
            };
            for chunk in page.chunks(batch) {
                let described = describe(chunk.to_vec());
                let limit = limit.clone();
                handles.push(tokio::spawn(async move {
                    let _permit = limit.acquire_owned().await;
                    described.await
                }));
            }
        };
        if let Err(error) = listed {
            handles.iter().for_each(tokio::task::JoinHandle::abort);
            return Err(error);
        }
        let mut items = Vec::new();
        for handle in handles {
            let described = handle.await.map_err(|e| ReadError {
                operation: "describe",
                message: format!("a describe call stopped before it answered: {e}"),
                throttled: false,
            })?;
            items.extend(described?);
            calls.fetch_add(1, Ordering::Relaxed);
        }
        Ok(items)
    }

    /// Describes `arns` in batches of `batch`, at most `concurrency` at once.
    async fn described<T, D, DF>(
        &self,
        calls: &AtomicU32,
        batch: usize,
        arns: Vec<String>,
        describe: D,
    ) -> Result<Vec<T>, ReadError>
    where
        D: Fn(Vec<String>) -> DF,
        DF: std::future::Future<Output = Result<Vec<T>, ReadError>> + Send + 'static,
        T: Send + 'static,
    {
        if arns.is_empty() {
            return Ok(Vec::new());
        }
        self.pipelined(calls, batch, stream::iter([Ok(arns)]), describe)
            .await
    }

    /// DescribeContainerInstances of one batch: each instance, or the ARN ECS did not find.
    fn describe_instances(
        &self,
        cluster: &str,
        lane: Lane,
    ) -> impl Fn(Vec<String>) -> Described<incremental::KnownInstance> {
        let (ecs, cluster, budget) = (self.ecs.clone(), cluster.to_string(), self.budget.clone());
        move |batch| {
            let (ecs, cluster, budget) = (ecs.clone(), cluster.clone(), budget.clone());
            Box::pin(async move {
                if let Some(budget) = &budget {
                    budget.take("DescribeContainerInstances", lane).await;
                }
                let out = ecs
                    .describe_container_instances()
                    .cluster(cluster)
                    .set_container_instances(Some(batch))
                    // Without it ECS leaves out healthStatus, and an impaired MPS daemon.
                    .include(aws_sdk_ecs::types::ContainerInstanceField::ContainerInstanceHealth)
                    .send()
                    .await
                    .map_err(failed("DescribeContainerInstances"))?;
                Ok(out
                    .container_instances()
                    .iter()
                    .map(|i| Ok(incremental::KnownInstance::of(i)))
                    .chain(
                        out.failures()
                            .iter()
                            .map(|f| Err(f.arn().unwrap_or_default().to_string())),
                    )
                    .collect())
            })
        }
    }

    /// DescribeTasks of one batch: each task, or the ARN ECS did not find. Each task's
    /// definition ARN also goes to `definitions`, when given.
    pub(super) fn describe_tasks(
        &self,
        cluster: &str,
        lane: Lane,
        definitions: Option<futures::channel::mpsc::UnboundedSender<String>>,
    ) -> impl Fn(Vec<String>) -> Described<RawTask> {
        let (ecs, cluster, budget) = (self.ecs.clone(), cluster.to_string(), self.budget.clone());
        move |batch| {
            let (ecs, cluster, budget, definitions) = (
                ecs.clone(),
                cluster.clone(),
                budget.clone(),
                definitions.clone(),
            );
            Box::pin(async move {
                if let Some(budget) = &budget {
                    budget.take("DescribeTasks", lane).await;
                }
                let out = ecs
                    .describe_tasks()
                    .cluster(cluster)
                    .set_tasks(Some(batch))
                    .send()
                    .await
                    .map_err(failed("DescribeTasks"))?;
                if let Some(definitions) = definitions {
                    for arn in out.tasks().iter().filter_map(|t| t.task_definition_arn()) {
                        // Closed only once the reading of definitions has failed, and then
                        // so has the read.
                        let _ = definitions.unbounded_send(arn.to_string());
                    }
                }
                Ok(out
                    .tasks()
                    .iter()
                    .map(|t| Ok(raw_task(t)))
                    .chain(
                        out.failures()
                            .iter()
                            .map(|f| Err(f.arn().unwrap_or_default().to_string())),
                    )
                    .collect())
            })
        }
    }

    /// DescribeServices of one batch (with tags): each service by ARN with its status, or the
    /// ARN ECS did not find.
    fn describe_services(
        &self,
        cluster: &str,
        lane: Lane,
    ) -> impl Fn(Vec<String>) -> Described<incremental::KnownService> {
        let (ecs, cluster, budget, team_tag) = (
            self.ecs.clone(),
            cluster.to_string(),
            self.budget.clone(),
            self.team_tag.clone(),
        );
        move |batch| {
            let (ecs, cluster, budget, team_tag) = (
                ecs.clone(),
                cluster.clone(),
                budget.clone(),
                team_tag.clone(),
            );
            Box::pin(async move {
                if let Some(budget) = &budget {
                    budget.take("DescribeServices", lane).await;
                }
                let out = ecs
                    .describe_services()
                    .cluster(cluster)
                    .set_services(Some(batch))
                    .include(aws_sdk_ecs::types::ServiceField::Tags)
                    .send()
                    .await
                    .map_err(failed("DescribeServices"))?;
                Ok(out
                    .services()
                    .iter()
                    .map(|s| {
                        Ok(incremental::KnownService {
                            arn: s.service_arn().unwrap_or_default().to_string(),
                            status: s.status().unwrap_or("ACTIVE").to_string(),
                            service: service_ref(s, &team_tag),
                        })
                    })
                    .chain(
                        out.failures()
                            .iter()
                            .map(|f| Err(f.arn().unwrap_or_default().to_string())),
                    )
                    .collect())
            })
        }
    }

    /// Every cluster ARN, each page within the budget.
    async fn list_cluster_arns(
        &self,
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<Vec<String>, ReadError> {
        let mut arns = Vec::new();
        let mut token = None;
        loop {
            self.pace("ListClusters", lane).await;
            calls.fetch_add(1, Ordering::Relaxed);
            let page = self
                .ecs
                .list_clusters()
                .set_next_token(token)
                .send()
                .await
                .map_err(failed("ListClusters"))?;
            arns.extend(page.cluster_arns().iter().cloned());
            token = page.next_token().map(str::to_string);
            if token.is_none() {
                return Ok(arns);
            }
        }
    }

    /// DescribeClusters' counts of each of `arns` that ECS still has as ACTIVE.
    async fn describe_clusters(
        &self,
        arns: &[String],
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<HashMap<String, incremental::ClusterCounts>, ReadError> {
        let mut counts = HashMap::new();
        for chunk in arns.chunks(100) {
            self.pace("DescribeClusters", lane).await;
            calls.fetch_add(1, Ordering::Relaxed);
            let out = self
                .ecs
                .describe_clusters()
                .set_clusters(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(failed("DescribeClusters"))?;
            for cluster in out.clusters() {
                if cluster.status().is_some_and(|s| s != "ACTIVE") {
                    continue;
                }
                counts.insert(
                    cluster.cluster_arn().unwrap_or_default().to_string(),
                    incremental::ClusterCounts {
                        instances: cluster.registered_container_instances_count(),
                        running: cluster.running_tasks_count(),
                        pending: cluster.pending_tasks_count(),
                        services: cluster.active_services_count(),
                    },
                );
            }
        }
        Ok(counts)
    }

    /// Describes the task definitions of `tasks` not yet cached.
    pub(super) async fn cache_definitions(
        &self,
        tasks: &[RawTask],
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<(), ReadError> {
        let arns: Vec<String> = tasks
            .iter()
            .map(|t| t.task_definition_arn.clone())
            .collect();
        self.cache_definitions_of(stream::iter(arns), calls, lane)
            .await
    }

    /// Describes each task definition `arns` names, as it comes, unless cached or already
    /// asked for; each goes into the cache as soon as it is read.
    async fn cache_definitions_of(
        &self,
        arns: impl Stream<Item = String> + Send,
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<(), ReadError> {
        let mut asked = std::collections::HashSet::new();
        let missing = arns.filter(move |arn| {
            let new = asked.insert(arn.clone())
                && !self
                    .definitions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains_key(arn);
            futures::future::ready(new)
        });
        let team_tag = self.team_tag.as_str();
        missing
            .map(|arn| async move {
                self.pace("DescribeTaskDefinition", lane).await;
                calls.fetch_add(1, Ordering::Relaxed);
                let out = self
                    .ecs
                    .describe_task_definition()
                    .task_definition(&arn)
                    .include(TaskDefinitionField::Tags)
                    .send()
                    .await
                    .map_err(failed("DescribeTaskDefinition"))?;
                let (cpu, memory_mib) = out.task_definition().map(host_needs).unwrap_or_default();
                let containers = out
                    .task_definition()
                    .map(|td| {
                        td.container_definitions()
                            .iter()
                            .map(|c| {
                                (
                                    c.name().unwrap_or_default().to_string(),
                                    gpu_ask(c.resource_requirements()),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let team = out
                    .tags()
                    .iter()
                    .find(|t| t.key() == Some(team_tag))
                    .and_then(|t| t.value())
                    .map(str::to_string);
                Ok::<_, ReadError>((
                    arn,
                    DefinitionGpu {
                        containers,
                        team,
                        cpu,
                        memory_mib,
                    },
                ))
            })
            // Small calls, many at once where ECS's burst allows.
            .buffer_unordered(self.concurrency.max(DEFINITION_CONCURRENCY))
            .try_for_each(|(arn, definition)| {
                self.definitions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(arn, definition);
                futures::future::ready(Ok(()))
            })
            .await
    }
}

/// One describe call's answer: each item found, or the ARN ECS did not find.
type Described<T> = futures::future::BoxFuture<'static, Result<Vec<Result<T, String>>, ReadError>>;

/// Which list a [`FleetReader::listing`] reads.
#[derive(Clone, Debug)]
enum Listing {
    Instances,
    /// A cluster's tasks, or one container instance's.
    Tasks(Option<String>),
    Services,
}

impl Listing {
    fn operation(&self) -> &'static str {
        match self {
            Listing::Instances => "ListContainerInstances",
            Listing::Tasks(_) => "ListTasks",
            Listing::Services => "ListServices",
        }
    }
}

/// A service as the console shows it, from DescribeServices.
fn service_ref(s: &aws_sdk_ecs::types::Service, team_tag: &str) -> ServiceRef {
    let team = s
        .tags()
        .iter()
        .find(|t| t.key() == Some(team_tag))
        .and_then(|t| t.value());
    let config = s.deployment_configuration();
    let breaker = config.and_then(|c| c.deployment_circuit_breaker());
    let count = |n: i32| n.max(0) as u32;
    ServiceRef {
        name: s.service_name().unwrap_or_default().to_string(),
        task_definition_arn: s.task_definition().unwrap_or_default().to_string(),
        team: team.map(str::to_string),
        desired: count(s.desired_count()),
        running: count(s.running_count()),
        pending: count(s.pending_count()),
        rollout_state: s
            .deployments()
            .iter()
            .find(|d| d.status() == Some("PRIMARY"))
            .and_then(|d| d.rollout_state())
            .map(|state| state.as_str().to_string()),
        deployments: s.deployments().len() as u32,
        maximum_percent: config.and_then(|c| c.maximum_percent()).map(count),
        minimum_healthy_percent: config.and_then(|c| c.minimum_healthy_percent()).map(count),
        circuit_breaker: breaker.is_some_and(|b| b.enable()),
        circuit_breaker_rollback: breaker.is_some_and(|b| b.rollback()),
        strategy: config
            .and_then(|c| c.strategy())
            .map(|s| s.as_str().to_string()),
        placement_constraints: s
            .placement_constraints()
            .iter()
            .map(constraint_json)
            .collect(),
        placement_strategy: s.placement_strategy().iter().map(strategy_text).collect(),
        read_at: Some(app::service::clock::now()),
    }
}

fn add_usage(snapshot: &mut FleetSnapshot, usage: &UsageMap, ec2: &HashMap<String, Ec2Instance>) {
    snapshot.cloudwatch_calls = usage.calls;
    for instance in snapshot
        .clusters
        .iter_mut()
        .flat_map(|c| c.instances.iter_mut())
    {
        let described = ec2.get(&instance.ec2_instance_id);
        if let Some(described) = described {
            instance.lifecycle = Some(described.lifecycle.clone());
            if instance.availability_zone.is_none() {
                instance.availability_zone = described.availability_zone.clone();
            }
        }
        let names = host_names(&instance.ec2_instance_id, described);
        let host = names
            .iter()
            .find(|name| usage.models.contains_key(*name))
            .or_else(|| {
                names
                    .iter()
                    .find(|name| usage.by_gpu.keys().any(|(host, _)| host == *name))
            })
            .cloned()
            .unwrap_or_else(|| instance.ec2_instance_id.clone());
        instance.gpu_model = usage
            .models
            .get(&host)
            .cloned()
            .or_else(|| gpu_model_of(&instance.instance_type).map(str::to_string));
        for gpu in &mut instance.gpus {
            gpu.usage = usage.by_gpu.get(&(host.clone(), gpu.index)).copied();
        }
    }
}

fn raw_task(task: &aws_sdk_ecs::types::Task) -> RawTask {
    RawTask {
        arn: task.task_arn().unwrap_or_default().to_string(),
        task_definition_arn: task.task_definition_arn().unwrap_or_default().to_string(),
        group: task.group().map(str::to_string),
        last_status: task.last_status().map(str::to_string),
        desired_status: task.desired_status().map(str::to_string),
        started_at: task.started_at().map(crate::aws::rfc3339),
        containers: task
            .containers()
            .iter()
            .map(|c| RawContainer {
                name: c.name().unwrap_or_default().to_string(),
                gpu_ids: c.gpu_ids().to_vec(),
            })
            .collect(),
        container_instance_arn: task.container_instance_arn().map(str::to_string),
        holds_eni: task.last_status() != Some("STOPPED")
            && task.attachments().iter().any(|a| {
                a.r#type() == Some("ElasticNetworkInterface")
                    && !matches!(a.status(), Some("DELETED" | "DETACHED" | "FAILED"))
            }),
    }
}

/// What one task of `definition` reserves of an instance's CPU units and memory (MiB), as ECS
/// places it: the task-level `cpu` and `memory` when set, else the sum of the containers' `cpu`
/// and of their `memoryReservation` (or `memory` without one).
fn host_needs(definition: &aws_sdk_ecs::types::TaskDefinition) -> (u32, u32) {
    let task_level = |value: Option<&str>| value.and_then(|v| v.trim().parse::<u32>().ok());
    let containers = definition.container_definitions();
    let cpu = task_level(definition.cpu()).unwrap_or_else(|| {
        containers
            .iter()
            .map(|c| c.cpu().max(0) as u32)
            .fold(0, u32::saturating_add)
    });
    let memory = task_level(definition.memory()).unwrap_or_else(|| {
        containers
            .iter()
            .map(|c| c.memory_reservation().or(c.memory()).unwrap_or(0).max(0) as u32)
            .fold(0, u32::saturating_add)
    });
    (cpu, memory)
}

/// A container's GPU ask from its resource requirements. An empty `value` beside a sharing
/// strategy is shared, never "0 GPUs".
pub fn gpu_ask(requirements: &[aws_sdk_ecs::types::ResourceRequirement]) -> GpuAsk {
    for requirement in requirements {
        if requirement.r#type().as_str() != "GPU" {
            continue;
        }
        if let Some(SharingStrategy::NvidiaMps(mps)) = requirement.sharing_strategy() {
            return GpuAsk::Mps {
                memory_mib: mps.memory().max(0) as u32,
                max_compute_percent: mps.max_compute_percent().map(|p| p.max(0) as u32),
            };
        }
        if let Ok(count) = requirement.value().parse::<u32>() {
            return GpuAsk::Whole(count);
        }
        if requirement.value() == "ALL" {
            return GpuAsk::Whole(u32::MAX);
        }
    }
    GpuAsk::None
}

/// A placement constraint as the ECS API spells it in JSON.
fn constraint_json(constraint: &aws_sdk_ecs::types::PlacementConstraint) -> serde_json::Value {
    let mut out = serde_json::json!({
        "type": constraint.r#type().map(|t| t.as_str()).unwrap_or_default(),
    });
    if let Some(expression) = constraint.expression() {
        out["expression"] = expression.into();
    }
    out
}

fn instance_view(instance: &aws_sdk_ecs::types::ContainerInstance) -> (InstanceView, Vec<RawGpu>) {
    let attribute = |name: &str| {
        instance
            .attributes()
            .iter()
            .find(|a| a.name() == name)
            .and_then(|a| a.value())
            .map(str::to_string)
    };
    let impaired = instance.health_status().and_then(|h| {
        h.details()
            .iter()
            .find(|d| {
                d.r#type() == Some(&InstanceHealthCheckType::AcceleratedCompute)
                    && d.status() == Some(&InstanceHealthCheckState::Impaired)
            })
            // The agent gives no reason text.
            .map(|d| {
                d.status_reason()
                    .unwrap_or("the agent's ACCELERATED_COMPUTE health check reports IMPAIRED")
                    .to_string()
            })
    });
    let instance_type = attribute("ecs.instance-type").unwrap_or_else(|| "unknown".into());
    let gpus = if instance.gpu_devices().is_empty() {
        gpus_from_resources(instance, &instance_type)
    } else {
        devices(instance)
    };
    let view = InstanceView {
        arn: instance
            .container_instance_arn()
            .unwrap_or_default()
            .to_string(),
        ec2_instance_id: instance.ec2_instance_id().unwrap_or_default().to_string(),
        instance_type,
        impaired,
        mps_capable: instance
            .attributes()
            .iter()
            .any(|a| a.name() == "ecs.capability.gpu-sharing-mps"),
        gpu_model: None,
        gpus: Vec::new(),
        availability_zone: attribute("ecs.availability-zone"),
        // From EC2, after the ECS read.
        lifecycle: None,
        not_placing: InstanceView::not_placing_reason(
            instance.status().unwrap_or("ACTIVE"),
            instance.agent_connected(),
        ),
        room: Some(room(instance)),
        // What the tasks reserve is added when the tasks are joined.
        host: Some(HostUse {
            cpu: registered(instance, "CPU"),
            memory_mib: registered(instance, "MEMORY"),
            reserved: Vec::new(),
        }),
    };
    (view, gpus)
}

/// An integer resource the instance registered (`CPU`, `MEMORY`); 0 when not there.
fn registered(instance: &aws_sdk_ecs::types::ContainerInstance, name: &str) -> u32 {
    instance
        .registered_resources()
        .iter()
        .find(|r| r.name() == Some(name))
        .map_or(0, |r| r.integer_value().max(0) as u32)
}

/// A placement strategy as ECS writes it: `spread(attribute:ecs.availability-zone)`.
fn strategy_text(strategy: &aws_sdk_ecs::types::PlacementStrategy) -> String {
    let kind = strategy.r#type().map_or("", |t| t.as_str());
    match strategy.field() {
        Some(field) => format!("{kind}({field})"),
        None => kind.to_string(),
    }
}

/// The attribute of a container instance with ENI trunking on: its limit is the trunk's, which
/// EC2 does not report.
const TRUNK_ATTRIBUTE: &str = "ecs.awsvpc-trunk-id";

/// Sets each instance's ENI attachment points left: its type's network interfaces, less the
/// primary one, less one per task holding an ENI. Left unknown for a type EC2 did not
/// describe and for an instance with ENI trunking.
fn count_enis(
    snapshot: &mut FleetSnapshot,
    interfaces: &HashMap<String, u32>,
    eni_tasks: &HashMap<String, u32>,
) {
    for instance in snapshot
        .clusters
        .iter_mut()
        .flat_map(|c| c.instances.iter_mut())
    {
        let held = eni_tasks.get(&instance.arn).copied().unwrap_or(0);
        let max = interfaces.get(&instance.instance_type).copied();
        if let Some(room) = &mut instance.room {
            room.enis_free = match max {
                Some(max) if !room.attributes.contains_key(TRUNK_ATTRIBUTE) => {
                    Some(max.saturating_sub(1).saturating_sub(held))
                }
                _ => None,
            };
        }
    }
}

/// What an instance has left besides GPUs, from its status, agent connection, remaining
/// resources (`PORTS` and `PORTS_UDP` there are the host ports in use) and attributes.
fn room(instance: &aws_sdk_ecs::types::ContainerInstance) -> Room {
    let remaining = instance.remaining_resources();
    let integer = |name: &str| {
        remaining
            .iter()
            .find(|r| r.name() == Some(name))
            .map_or(0, |r| r.integer_value().max(0) as u32)
    };
    let ports = |name: &str| -> std::collections::BTreeSet<u16> {
        remaining
            .iter()
            .find(|r| r.name() == Some(name))
            .map(|r| {
                r.string_set_value()
                    .iter()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    Room {
        status: instance.status().unwrap_or("ACTIVE").to_string(),
        agent_connected: instance.agent_connected(),
        cpu_remaining: integer("CPU"),
        memory_remaining_mib: integer("MEMORY"),
        tcp_ports_used: ports("PORTS"),
        udp_ports_used: ports("PORTS_UDP"),
        // From EC2 and the tasks' ENI attachments, after the ECS read.
        enis_free: None,
        // Attributes with a value: instance type, zone, custom ones (not the capabilities).
        attributes: instance
            .attributes()
            .iter()
            .filter_map(|a| Some((a.name().to_string(), a.value()?.to_string())))
            .chain(instance.ec2_instance_id().map(|id| {
                (
                    placement::resources::EC2_INSTANCE_ID.to_string(),
                    id.to_string(),
                )
            }))
            .collect(),
    }
}

/// The GPUs an instance reports with `gpuDevices` (instances that support GPU sharing).
fn devices(instance: &aws_sdk_ecs::types::ContainerInstance) -> Vec<RawGpu> {
    instance
        .gpu_devices()
        .iter()
        .map(|g| RawGpu {
            uuid: g.gpu_id().unwrap_or_default().to_string(),
            mode: match g.sharing_mode() {
                Some(GpuSharingMode::NvidiaMps) => SharingMode::NvidiaMps,
                Some(GpuSharingMode::Dedicated) => SharingMode::Dedicated,
                _ => SharingMode::Idle,
            },
            total_memory_mib: g.total_memory_in_mib().unwrap_or(0).max(0) as u32,
            remaining_memory_mib: g.remaining_memory_in_mib().unwrap_or(0).max(0) as u32,
            container_count: g.container_count().map(|n| n.max(0) as u32),
        })
        .collect()
}

/// The GPUs of an instance that reports no `gpuDevices` (an agent or AMI without GPU sharing):
/// the GPU IDs of its registered `GPU` resource, allocated unless in the remaining one, each a
/// whole GPU with the instance type's nominal memory (0 when the type is unknown).
fn gpus_from_resources(
    instance: &aws_sdk_ecs::types::ContainerInstance,
    instance_type: &str,
) -> Vec<RawGpu> {
    let ids = |resources: &[aws_sdk_ecs::types::Resource]| -> Vec<String> {
        resources
            .iter()
            .find(|r| r.name() == Some("GPU"))
            .map(|r| r.string_set_value().to_vec())
            .unwrap_or_default()
    };
    let free = ids(instance.remaining_resources());
    let total = nominal_gpu_memory_mib(instance_type).unwrap_or(0);
    ids(instance.registered_resources())
        .into_iter()
        .map(|uuid| {
            let idle = free.contains(&uuid);
            RawGpu {
                uuid,
                mode: if idle {
                    SharingMode::Idle
                } else {
                    SharingMode::Dedicated
                },
                total_memory_mib: total,
                remaining_memory_mib: if idle { total } else { 0 },
                container_count: None,
            }
        })
        .collect()
}

/// Shared handle, for the background refresher.
pub type SharedReader = Arc<FleetReader>;

#[cfg(test)]
mod tests {
    use super::*;
    use app::model::ClusterView;

    fn snapshot(attributes: &[(&str, &str)]) -> FleetSnapshot {
        let room = Room {
            status: "ACTIVE".into(),
            agent_connected: true,
            attributes: attributes
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Room::default()
        };
        FleetSnapshot {
            clusters: vec![ClusterView {
                name: "prod".into(),
                instances: vec![InstanceView {
                    host: None,
                    arn: "arn:ci/1".into(),
                    ec2_instance_id: "i-1".into(),
                    instance_type: "g5.xlarge".into(),
                    impaired: None,
                    mps_capable: true,
                    gpu_model: None,
                    gpus: Vec::new(),
                    not_placing: None,
                    availability_zone: None,
                    lifecycle: None,
                    room: Some(room),
                }],
                ..ClusterView::default()
            }],
            taken_at: "t".into(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            unknown_gpu_ids: 0,
        }
    }

    /// A task reserves the task-level CPU and memory when set, else its containers' sum, where
    /// a container's memoryReservation wins over its memory.
    #[test]
    fn a_task_reserves_task_level_values_else_its_containers_sum() {
        use aws_sdk_ecs::types::{ContainerDefinition, TaskDefinition};
        let container = |cpu: i32, memory: Option<i32>, reservation: Option<i32>| {
            ContainerDefinition::builder()
                .name("c")
                .cpu(cpu)
                .set_memory(memory)
                .set_memory_reservation(reservation)
                .build()
        };
        let containers = vec![
            container(512, Some(4096), Some(1024)),
            container(256, Some(2048), None),
            container(0, None, None),
        ];
        let sum = TaskDefinition::builder()
            .set_container_definitions(Some(containers.clone()))
            .build();
        assert_eq!(host_needs(&sum), (768, 3072));
        let task_level = TaskDefinition::builder()
            .cpu("2048")
            .memory(" 8192 ")
            .set_container_definitions(Some(containers))
            .build();
        assert_eq!(host_needs(&task_level), (2048, 8192));
    }

    #[test]
    fn enis_left_are_the_interfaces_less_the_primary_and_the_tasks_unless_trunked() {
        let interfaces: HashMap<String, u32> = [("g5.xlarge".to_string(), 4)].into();
        let tasks: HashMap<String, u32> = [("arn:ci/1".to_string(), 2)].into();
        let enis = |snapshot: &FleetSnapshot| {
            snapshot.clusters[0].instances[0]
                .room
                .as_ref()
                .and_then(|r| r.enis_free)
        };
        let mut plain = snapshot(&[]);
        count_enis(&mut plain, &interfaces, &tasks);
        assert_eq!(enis(&plain), Some(1));
        count_enis(&mut plain, &interfaces, &HashMap::new());
        assert_eq!(enis(&plain), Some(3));
        let mut trunked = snapshot(&[(TRUNK_ATTRIBUTE, "eni-0trunk")]);
        count_enis(&mut trunked, &interfaces, &tasks);
        assert_eq!(enis(&trunked), None, "the trunk's limit is not known");
        let mut undescribed = snapshot(&[]);
        count_enis(&mut undescribed, &HashMap::new(), &tasks);
        assert_eq!(enis(&undescribed), None);
    }
}
