//! The service layer's ports: narrow traits over what the use cases read and write outside
//! themselves — the fleet snapshot, ECS reads, ECS writes, rollout watches and the audit store.
//! The server implements them over aws-sdk-ecs and SQL; tests of the use cases can fake them.
//! Each takes and gives domain types, and fails with a [`ServiceError`] whose message a person
//! can act on.

use std::{future::Future, pin::Pin, sync::Arc};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::model::{
    activity::{ClusterEvent, TaskInfo},
    audit::{AuditFilter, AuditIntent, AuditOutcome, AuditRecord, Lock},
    deployment::{LiveService, WatchState},
    identity::Actor,
    task_definition::{FieldError, RevisionDetail, SourceRevision},
    FleetSnapshot, ServiceError,
};

/// A boxed future, so that the ports can be trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The latest fleet snapshot and how the refreshes are going.
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
    /// Why the data is older than the refresh interval when the refresher is holding back
    /// (waiting for its share of ECS's request budget, or backing off after throttling).
    pub behind: Option<String>,
}

/// The fleet snapshot, kept in memory and refreshed in the background: reading it never waits
/// on AWS.
pub trait FleetFeed: Send + Sync {
    /// The latest state (the snapshot is shared, not copied).
    fn state(&self) -> FleetState;
    /// Seconds between refreshes.
    fn refresh_interval_seconds(&self) -> u64;
    /// Wakes with the state's version each time a snapshot is stored or a refresh fails.
    fn subscribe(&self) -> watch::Receiver<u64>;
}

/// Which tasks of a cluster to read. (ECS lists by `startedBy` only without other filters, so
/// a deployment's tasks are its service's, kept by [`TaskInfo::started_by`].)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskQuery {
    /// Stopped tasks (ECS keeps them about an hour) rather than those meant to run.
    pub stopped: bool,
    pub service: Option<String>,
}

/// What the use cases read from ECS on demand.
pub trait EcsReads: Send + Sync {
    /// The latest revision of every active family.
    fn latest_revisions(&self) -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>>;
    /// A family's revisions, active and inactive, newest first (at most
    /// [`REVISIONS_SHOWN`](crate::service::task_definitions::REVISIONS_SHOWN)); empty when
    /// there is no such family.
    fn revisions(&self, family: String)
        -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>>;
    /// One revision with its RegisterTaskDefinition JSON; `None` when there is no such revision.
    fn revision(
        &self,
        family: String,
        revision: u32,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, ServiceError>>;
    /// The family's newest active revision with its JSON (what DescribeTaskDefinition names by
    /// the family alone), read again after a few seconds at most; `None` when none is active.
    fn latest_active(
        &self,
        family: String,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, ServiceError>>;
    /// A service now: its deployments, counts and latest events (DescribeServices).
    fn service(
        &self,
        cluster: String,
        service: String,
    ) -> BoxFuture<'_, Result<LiveService, ServiceError>>;
    /// The events ECS keeps for each of `services` of `cluster` (up to 100 each), in any order.
    fn events(
        &self,
        cluster: String,
        services: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<ClusterEvent>, ServiceError>>;
    /// The tasks of `cluster` the query names, described, with their instances and GPUs named
    /// as the fleet snapshot knows them.
    fn tasks(
        &self,
        cluster: String,
        query: TaskQuery,
    ) -> BoxFuture<'_, Result<Vec<TaskInfo>, ServiceError>>;
    /// Each of `clusters`' capacity providers and default strategy, as ECS describes them
    /// (the instances each one launched are counted by the caller, from the snapshot).
    fn capacity(
        &self,
        clusters: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<crate::model::capacity::ClusterCapacity>, ServiceError>>;
    /// A CreateCapacityProvider request's JSON text read as the AWS SDK reads it, and the
    /// provider it would make as the capacity page shows it, with what it may launch (the
    /// region's GPU types matched against its requirements, or its Auto Scaling group's types);
    /// or each field that is wrong.
    fn draft_provider(&self, text: String)
        -> BoxFuture<'_, Result<DraftProvider, Vec<FieldError>>>;
    /// Whether the reads above lately answered from an older answer because ECS was slow or
    /// failing (none by default: a source that never does so).
    fn stale_reads(&self) -> Option<crate::model::StaleReads> {
        None
    }
}

/// A CreateCapacityProvider request as ECS's JSON, and the provider it would make.
pub type DraftProvider = (Map<String, Value>, crate::model::capacity::ProviderView);

/// A revision ECS registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registered {
    pub revision: RevisionDetail,
    pub request_id: Option<String>,
}

/// What UpdateService answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceUpdated {
    /// ECS's id of the new PRIMARY deployment.
    pub deployment_id: Option<String>,
    pub request_id: Option<String>,
}

/// What the use cases change in ECS. Every call is made after the audit intent is written.
pub trait EcsWrites: Send + Sync {
    /// Registers a RegisterTaskDefinition request as a new revision.
    fn register(&self, task: Map<String, Value>)
        -> BoxFuture<'_, Result<Registered, ServiceError>>;
    /// Rolls `task_definition` (`family:revision`) out to `cluster/service`; with `force_new`,
    /// as a new deployment even when it is the revision running (`forceNewDeployment`).
    fn update_service(
        &self,
        cluster: String,
        service: String,
        task_definition: String,
        force_new: bool,
    ) -> BoxFuture<'_, Result<ServiceUpdated, ServiceError>>;
    /// Sets `cluster/service`'s desired count.
    fn scale_service(
        &self,
        cluster: String,
        service: String,
        desired: u32,
    ) -> BoxFuture<'_, Result<ServiceUpdated, ServiceError>>;
    /// Creates a service from a CreateService request (ECS's JSON, checked by
    /// [`TaskDefinitionSchema::create_service`]).
    fn create_service(
        &self,
        body: Map<String, Value>,
    ) -> BoxFuture<'_, Result<ServiceCreated, ServiceError>>;
    /// Creates a capacity provider from a CreateCapacityProvider request (ECS's JSON, checked by
    /// [`EcsReads::draft_provider`]); ECS's request id.
    fn create_provider(
        &self,
        body: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Option<String>, ServiceError>>;
    /// Sets `cluster`'s whole list of capacity providers and its default strategy
    /// (PutClusterCapacityProviders).
    fn put_cluster_providers(
        &self,
        cluster: String,
        providers: Vec<String>,
        default_strategy: Vec<crate::model::capacity::StrategyItem>,
    ) -> BoxFuture<'_, Result<(), ServiceError>>;
    /// Deletes `cluster/service` (DeleteService, not forced: ECS refuses while it is scaled above
    /// 0); its status after, `DRAINING` or `INACTIVE`.
    fn delete_service(
        &self,
        cluster: String,
        service: String,
    ) -> BoxFuture<'_, Result<ServiceDeleted, ServiceError>>;
}

/// What CreateService answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceCreated {
    pub arn: String,
    /// ECS's id of the service's first deployment.
    pub deployment_id: Option<String>,
    pub request_id: Option<String>,
}

/// What DeleteService answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceDeleted {
    /// The service's status now: `DRAINING` while its tasks stop, then `INACTIVE`.
    pub status: String,
    pub request_id: Option<String>,
}

/// Reads a RegisterTaskDefinition request's JSON the way the AWS SDK does.
pub trait TaskDefinitionSchema: Send + Sync {
    /// Every check made before a registration, on the request's JSON text: the request as
    /// JSON and its GPU request, or each error with its field and place (at most
    /// [`MAX_ERRORS`](crate::model::task_definition::limits::MAX_ERRORS) of them and a count of
    /// the rest). A text past ECS's limits is refused before any other check; the checks may
    /// wait for a turn, so that a few large texts cannot take every worker.
    fn validate(&self, text: String) -> BoxFuture<'_, Result<ValidRequest, Vec<FieldError>>>;
    /// A CreateService request's JSON text read as the AWS SDK reads it: the request as ECS's
    /// JSON, or each field that is wrong (by its path, or its line and column).
    fn create_service(
        &self,
        text: String,
    ) -> BoxFuture<'_, Result<Map<String, Value>, Vec<FieldError>>>;
    /// A RegisterTaskDefinition request, checked already, as it will go to ECS: with what the
    /// SDK writes of its own (a container's `cpu` of 0 when none is given), so that what a page
    /// previews is what is sent.
    fn registration_as_sent(&self, task: Map<String, Value>) -> Map<String, Value> {
        task
    }
}

/// A RegisterTaskDefinition request that passed every check.
pub type ValidRequest = (Map<String, Value>, placement::GpuRequest);

/// A rollout to follow until it ends.
#[derive(Clone, Debug)]
pub struct RolloutToWatch {
    /// What the watch page shows at first; the audit record's id names the watch.
    pub initial: WatchState,
    /// The task definition ARN the service ran before, to tell a rollback.
    pub from_task_definition: String,
    /// Service events that were there before the deploy, left out of the watch.
    pub known_events: Vec<String>,
}

/// Follows rollouts on the server, whether or not a browser is open, until each succeeds,
/// fails or is rolled back, and writes the result to the audit log.
pub trait RolloutWatches: Send + Sync {
    /// Starts following a rollout; the state as it is now.
    fn start(&self, rollout: RolloutToWatch) -> WatchState;
    /// The state of the rollout of audit record `id`, when this server follows it.
    fn current(&self, id: &str) -> Option<WatchState>;
    /// Wakes on every change of the rollout of audit record `id`, when this server follows it.
    fn subscribe(&self, id: &str) -> Option<watch::Receiver<WatchState>>;
}

/// The audit log's store, and the deploy locks beside it.
pub trait AuditStore: Send + Sync {
    /// Writes an intent before its AWS call; the record's id.
    fn begin(&self, intent: AuditIntent) -> BoxFuture<'_, Result<String, ServiceError>>;
    /// Writes the outcome of the record `id`; fields left `None` keep their value.
    fn finish(&self, id: String, outcome: AuditOutcome) -> BoxFuture<'_, Result<(), ServiceError>>;
    /// The records that match `filter`, newest first.
    fn list(&self, filter: AuditFilter) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>>;
    /// One record.
    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<AuditRecord>, ServiceError>>;
    /// Takes the deploy lock of `resource` for the record `id`: `false` when another holds it.
    /// A lock carries its record and the replica that took it.
    fn lock(&self, lock: Lock, id: String) -> BoxFuture<'_, Result<bool, ServiceError>>;
    /// Gives back the deploy lock of `resource` that the record `id` holds; a lock another record
    /// holds stays.
    fn unlock(&self, lock: Lock, id: String) -> BoxFuture<'_, Result<(), ServiceError>>;
    /// Says this replica is alive, so that others leave its records and locks alone.
    fn heartbeat(&self) -> BoxFuture<'_, Result<(), ServiceError>>;
    /// The records not settled yet (`pending`, `unknown`, `in_progress`) that this replica may
    /// settle: its own, and those of replicas no longer alive. Oldest first.
    fn unsettled(&self) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>>;
    /// The deploys, rollbacks and scales of services of `cluster` whose intent was written at
    /// or after `since`, whatever their outcome, oldest first: what was sent that a fleet
    /// snapshot may not show yet.
    fn changes_since(
        &self,
        cluster: String,
        since: DateTime<Utc>,
    ) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>>;
}

/// A person as their latest sign-in named them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeenPerson {
    pub subject: String,
    pub email: Option<String>,
    pub groups: Vec<String>,
    /// When, RFC 3339.
    pub seen_at: String,
}

/// The people the sign-in named, as it last named them. A person's groups can change between a
/// request and its approval (their role or team taken away at the provider), and the console
/// learns it only from their next sign-in, so the latest one is kept.
pub trait People: Send + Sync {
    /// Notes the person of a request as the sign-in names them now.
    fn seen(&self, actor: &Actor) -> BoxFuture<'_, Result<(), ServiceError>>;
    /// `subject` as their latest sign-in named them, if they were ever seen.
    fn latest(&self, subject: String) -> BoxFuture<'_, Result<Option<SeenPerson>, ServiceError>>;
}

/// A decision about a pending request: where it goes, who decided and their note.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    pub to: crate::model::approval::ApprovalState,
    pub by: String,
    pub by_email: Option<String>,
    pub note: Option<String>,
}

/// Which requests to read, newest first: by state, team and cluster, and at most `limit` from
/// `offset` on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApprovalQuery {
    pub state: Option<crate::model::approval::ApprovalState>,
    pub team: Option<String>,
    pub cluster: Option<String>,
    pub limit: u32,
    pub offset: u32,
}

/// What the requests waiting for a decision add up to, for a team on a cluster, by whether a
/// given person asked for them: never capped, whatever their number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PendingCount {
    pub team: String,
    pub cluster: String,
    /// Whether the person counted for asked for them.
    pub own: bool,
    pub count: u64,
    /// The GPU memory and whole GPUs they would add (each request's positive part).
    pub memory_mib: u64,
    pub whole_gpus: u64,
}

/// A request kept, or the one that already waited for the same change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    pub id: String,
    /// The same change of the same service was already waiting: its request is `id`.
    pub existing: bool,
}

/// The requests waiting for approval and what became of them, in the audit log's database.
pub trait ApprovalStore: Send + Sync {
    /// Keeps a new request, giving it its id and times, unless a request for the same change
    /// (its [`change_key`](crate::model::approval::ApprovalRequest::change_key)) of the same
    /// service already waits: then that one's id. Decided once across replicas.
    fn create(
        &self,
        request: crate::model::approval::ApprovalRequest,
    ) -> BoxFuture<'_, Result<Created, ServiceError>>;
    /// The requests the query names, newest first, and how many match it in all.
    fn list(
        &self,
        query: ApprovalQuery,
    ) -> BoxFuture<'_, Result<(Vec<crate::model::approval::ApprovalRequest>, u64), ServiceError>>;
    /// The requests waiting, counted and summed by team, cluster and whether `subject` asked
    /// for them; `except` leaves out those of one `cluster/service`.
    fn pending_counts(
        &self,
        subject: String,
        except: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<PendingCount>, ServiceError>>;
    /// One request.
    fn get(
        &self,
        id: String,
    ) -> BoxFuture<'_, Result<Option<crate::model::approval::ApprovalRequest>, ServiceError>>;
    /// Moves a request that is still `pending` to `decision.to`, atomically across replicas:
    /// `false` when it was no longer pending (someone else decided first).
    fn decide(&self, id: String, decision: Decision) -> BoxFuture<'_, Result<bool, ServiceError>>;
    /// Settles a request being sent: `sent` with the change's audit record, or `refused` with
    /// why. Only a request in `sending` moves.
    fn settle(
        &self,
        id: String,
        state: crate::model::approval::ApprovalState,
        detail: String,
        audit_id: Option<String>,
    ) -> BoxFuture<'_, Result<(), ServiceError>>;
}

/// What AWS quotes: EC2's latest spot prices for the spot instance types the fleet runs, and the
/// Price List's on-demand prices for its types.
pub trait Markets: Send + Sync {
    /// The spot prices read last, and why there are none when they could not be read.
    fn spot(&self) -> crate::model::cost::SpotQuote;
    /// The Price List's prices read last, and why some are missing.
    fn list(&self) -> crate::model::cost::ListQuote;
    /// Whether both markets have been asked once since the start (answered or not): until then
    /// the prices are the offline fallback's only because the console has just started.
    fn asked(&self) -> bool {
        true
    }
    /// Why Cost Explorer's figures are not read (resource-level data off, not allowed, turned
    /// off with a flag); `None` when it is read.
    fn cost_explorer_off(&self) -> Option<String> {
        Some("Cost Explorer is not read by this console.".to_string())
    }
}

/// No market: instances are priced by the built-in table and the price file only.
pub struct NoMarkets;

impl Markets for NoMarkets {
    fn spot(&self) -> crate::model::cost::SpotQuote {
        crate::model::cost::SpotQuote::default()
    }

    fn list(&self) -> crate::model::cost::ListQuote {
        crate::model::cost::ListQuote::default()
    }
}

/// The allocation history the recorder keeps: hourly sums of what the fleet held.
pub trait CostHistory: Send + Sync {
    /// What was recorded over `[from, to)` (Unix seconds): holdings and minutes per UTC day.
    fn recorded(
        &self,
        from: i64,
        to: i64,
    ) -> BoxFuture<'_, Result<crate::model::cost::Recorded, ServiceError>>;
    /// How many days of history are kept.
    fn retention_days(&self) -> u32;
    /// While the emulator's past is being replayed into the history: how far it has got.
    fn replaying(&self) -> Option<String>;
    /// The sealed months, every version of each.
    fn sealed(&self) -> BoxFuture<'_, Result<Vec<crate::model::cost::SealedMonth>, ServiceError>>;
    /// Stores a month's seal; `false` when that month already has that version (another
    /// replica, or another admin, stored it first).
    fn seal(
        &self,
        month: crate::model::cost::SealedMonth,
    ) -> BoxFuture<'_, Result<bool, ServiceError>>;
    /// The days of `[from, to)` Cost Explorer was read for, with what it billed for the instances
    /// the console saw on them summed per type and lifecycle (`Bill::sums`; no detail), none
    /// where the history keeps no bill.
    fn bill(
        &self,
        _from: i64,
        _to: i64,
    ) -> BoxFuture<'_, Result<crate::model::cost::billed::Bill, ServiceError>> {
        Box::pin(async { Ok(crate::model::cost::billed::Bill::default()) })
    }
    /// What the console saw of each instance on every day of `[from, to)`.
    fn seen(
        &self,
        _from: i64,
        _to: i64,
    ) -> BoxFuture<'_, Result<Vec<crate::model::cost::billed::SeenDay>, ServiceError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    /// Cost Explorer's lines for the days of `[from, to)`.
    fn billed_lines(
        &self,
        _from: i64,
        _to: i64,
    ) -> BoxFuture<'_, Result<Vec<crate::model::cost::billed::BilledLine>, ServiceError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}
