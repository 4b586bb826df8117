//! A fake of every port, for the unit tests of the use cases: a one-cluster fleet snapshot,
//! task definitions `embed:1` and `embed:2`, a service that runs `embed:1`, an audit store in
//! memory, and a record of every call, in order. Switches make the audit store or ECS fail.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex,
};

use serde_json::{json, Map, Value};
use tokio::sync::watch;

use crate::{
    model::{
        activity::{ClusterEvent, TaskInfo},
        audit::{AuditFilter, AuditIntent, AuditOutcome, AuditRecord, Outcome},
        deployment::{LiveDeployment, LiveService, WatchState},
        identity::{Actor, AuthMode, Role},
        policy::{Policy, RoleRule, TeamRule},
        task_definition::{
            ContainerSummary, FieldError, GpuSetting, RevisionDetail, SourceRevision,
        },
        ClusterView, FleetSnapshot, FleetSource, GpuView, InstanceView, ServiceError, ServiceRef,
        SharingMode,
    },
    service::{
        ports::{
            AuditStore, BoxFuture, EcsReads, EcsWrites, FleetFeed, FleetState, Registered,
            RolloutToWatch, RolloutWatches, ServiceUpdated, TaskDefinitionSchema, TaskQuery,
            ValidRequest,
        },
        ServiceContext,
    },
};

const ARN: &str = "arn:aws:ecs:us-east-1:123456789012:task-definition/";

/// Every port at once, in memory.
#[derive(Default)]
pub struct Fake {
    /// Each call made through a port, in order: `audit.begin`, `ecs.update_service`, …
    pub calls: Mutex<Vec<String>>,
    pub records: Mutex<Vec<AuditRecord>>,
    /// The revision the service runs in ECS now, and its desired count.
    pub running: Mutex<u32>,
    pub desired: Mutex<u32>,
    /// Revisions registered through the fake.
    pub registered: Mutex<u32>,
    pub watched: Mutex<Vec<WatchState>>,
    pub fail_begin: AtomicBool,
    pub fail_finish: AtomicBool,
    /// The locks held, by resource.
    pub locks: Mutex<std::collections::HashSet<String>>,
    pub refuse_writes: AtomicBool,
    /// Recorded minutes (Unix seconds of the minute) and what the fleet held in them, per hour.
    pub history: Mutex<Vec<(i64, crate::model::cost::Holdings)>>,
    /// What the spot market says.
    pub spot: Mutex<crate::model::cost::SpotQuote>,
    /// The policy's budgets, read when the context is made.
    pub budgets: Mutex<Vec<crate::model::budget::BudgetRule>>,
    /// Approval requests, in order of asking.
    pub approvals: Mutex<Vec<crate::model::approval::ApprovalRequest>>,
    /// How old the fleet snapshot is, in seconds (0 by default).
    pub snapshot_age: Mutex<i64>,
    /// People as their latest sign-in named them, by subject.
    pub people: Mutex<std::collections::HashMap<String, crate::service::ports::SeenPerson>>,
}

impl Fake {
    /// A fake whose service runs `embed:1`.
    pub fn new() -> Arc<Fake> {
        let fake = Fake::default();
        *fake.running.lock().unwrap_or_else(|p| p.into_inner()) = 1;
        *fake.desired.lock().unwrap_or_else(|p| p.into_inner()) = 1;
        *fake.registered.lock().unwrap_or_else(|p| p.into_inner()) = 2;
        Arc::new(fake)
    }

    /// The use cases' context over this fake.
    pub fn context(self: &Arc<Fake>) -> ServiceContext {
        ServiceContext {
            version: "test",
            started: std::time::Instant::now(),
            fleet_source: FleetSource::Aws {
                region: "us-east-1".into(),
            },
            fleet: self.clone(),
            ecs: self.clone(),
            ecs_writes: self.clone(),
            schema: self.clone(),
            watches: self.clone(),
            audit: self.clone(),
            policy: Arc::new(Policy {
                roles: vec![
                    RoleRule {
                        group: "platform".into(),
                        role: Role::Admin,
                    },
                    RoleRule {
                        group: "ml".into(),
                        role: Role::Deployer,
                    },
                ],
                teams: vec![TeamRule {
                    group: "search-eng".into(),
                    team: "search".into(),
                }],
                budgets: self
                    .budgets
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
                ..Policy::default()
            }),
            approvals: self.clone(),
            prices: Arc::new(crate::model::cost::PriceBook::builtin("us-east-1")),
            history: self.clone(),
            spot: self.clone(),
            team_tag: "team".into(),
            contention_threshold: crate::model::fleet_view::DEFAULT_CONTENTION_THRESHOLD,
            in_flight: Arc::default(),
            heavy: Arc::default(),
            people: self.clone(),
            budget_locks: Arc::default(),
        }
    }

    /// A deployer of team `search`, which owns `embed`.
    pub fn deployer() -> Actor {
        Actor {
            subject: "ana".into(),
            email: Some("ana@example.com".into()),
            groups: vec!["ml".into(), "search-eng".into()],
            role: Role::Deployer,
            teams: vec!["search".into()],
            auth: AuthMode::Proxy,
            source: Some("10.0.0.7".into()),
            insecure: false,
        }
    }

    /// An approver of team `search`'s requests (group `search-leads`), not on the team.
    pub fn approver() -> Actor {
        Actor {
            subject: "cy".into(),
            email: Some("cy@example.com".into()),
            groups: vec!["search-leads".into()],
            role: Role::Viewer,
            teams: Vec::new(),
            ..Fake::deployer()
        }
    }

    /// A deployer of another team.
    pub fn outsider() -> Actor {
        Actor {
            subject: "bo".into(),
            groups: vec!["ml".into()],
            teams: vec!["vision".into()],
            ..Fake::deployer()
        }
    }

    fn call(&self, what: &str) {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(what.to_string());
    }

    /// The RegisterTaskDefinition JSON of `embed:revision`.
    pub fn revision_json(&self, number: u32) -> Value {
        Value::Object(revision(number).task)
    }

    /// The calls made so far.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The audit records so far.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn failing(switch: &AtomicBool) -> Result<(), ServiceError> {
        if switch.load(Ordering::SeqCst) {
            Err(ServiceError::unavailable(
                "the audit database failed: disk full",
            ))
        } else {
            Ok(())
        }
    }
}

/// Revision `revision` of `embed`: one MPS container asking `2048 × revision` MiB.
fn revision(revision: u32) -> SourceRevision {
    let memory = 2_048 * revision;
    SourceRevision {
        detail: RevisionDetail {
            family: "embed".into(),
            revision,
            arn: format!("{ARN}embed:{revision}"),
            active: true,
            registered_at: None,
            compatibilities: vec!["EC2".into()],
            network_mode: None,
            cpu: None,
            memory: None,
            containers: vec![ContainerSummary {
                name: "model".into(),
                image: "model:1".into(),
                cpu: 0,
                memory_mib: None,
                gpu: GpuSetting::Mps {
                    memory_mib: memory,
                    max_compute_percent: None,
                },
            }],
            team: Some("search".into()),
            change: None,
            audit_id: None,
        },
        task: task(memory),
    }
}

fn task(memory: u32) -> Map<String, Value> {
    json!({
        "family": "embed",
        "requiresCompatibilities": ["EC2"],
        "containerDefinitions": [{
            "name": "model", "image": "model:1",
            "resourceRequirements": [
                {"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": memory}}}
            ]
        }],
        "tags": [{"key": "team", "value": "search"}]
    })
    .as_object()
    .cloned()
    .unwrap_or_default()
}

/// Cluster `prod`: one instance of four idle A10G GPUs, and service `embed` running `embed:1`.
fn snapshot() -> FleetSnapshot {
    let gpus = (0..4)
        .map(|index| GpuView {
            uuid: format!("GPU-{index}"),
            index,
            mode: SharingMode::Idle,
            total_memory_mib: 22_563,
            remaining_memory_mib: 22_563,
            compute_allocated_percent: 0,
            containers: Vec::new(),
            usage: None,
        })
        .collect();
    FleetSnapshot {
        taken_at: "2026-11-30T12:00:00.000Z".into(),
        api_calls: 1,
        cloudwatch_calls: 0,
        usage_error: None,
        unknown_gpu_ids: 0,
        clusters: vec![ClusterView {
            name: "prod".into(),
            instances: vec![InstanceView {
                host: None,
                arn: "arn:aws:ecs:us-east-1:1:container-instance/prod/a".into(),
                ec2_instance_id: "i-0a".into(),
                instance_type: "g5.12xlarge".into(),
                impaired: None,
                mps_capable: true,
                gpu_model: None,
                not_placing: None,
                availability_zone: None,
                lifecycle: None,
                room: None,
                gpus,
            }],
            services: 1,
            service_list: vec![ServiceRef {
                name: "embed".into(),
                task_definition_arn: format!("{ARN}embed:1"),
                team: Some("search".into()),
                desired: 1,
                running: 1,
                maximum_percent: Some(200),
                minimum_healthy_percent: Some(100),
                ..ServiceRef::default()
            }],
            running_tasks: 1,
            pending_tasks: 0,
        }],
    }
}

impl crate::service::ports::CostHistory for Fake {
    fn recorded(
        &self,
        from: i64,
        to: i64,
    ) -> BoxFuture<'_, Result<crate::model::cost::Recorded, ServiceError>> {
        let history = self
            .history
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Box::pin(async move {
            let mut recorded = crate::model::cost::Recorded::default();
            for (minute, holdings) in history {
                recorded.first = Some(recorded.first.map_or(minute, |f: i64| f.min(minute)));
                if minute < from || minute >= to {
                    continue;
                }
                let day = minute.div_euclid(86_400) * 86_400;
                *recorded.minutes.entry(day).or_default() += 1;
                let per_minute: crate::model::cost::Holdings = holdings
                    .iter()
                    .map(|(k, a)| (k.clone(), a.scaled(1.0 / 60.0)))
                    .collect();
                crate::model::cost::holdings::merge(
                    recorded.days.entry(day).or_default(),
                    &per_minute,
                );
            }
            Ok(recorded)
        })
    }

    fn retention_days(&self) -> u32 {
        400
    }

    fn replaying(&self) -> Option<String> {
        None
    }
}

impl FleetFeed for Fake {
    fn state(&self) -> FleetState {
        FleetState {
            snapshot: Some(Arc::new(snapshot())),
            taken_at: Some(
                chrono::Utc::now()
                    - chrono::Duration::seconds(
                        *self.snapshot_age.lock().unwrap_or_else(|p| p.into_inner()),
                    ),
            ),
            version: 1,
            ..FleetState::default()
        }
    }

    fn refresh_interval_seconds(&self) -> u64 {
        15
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        watch::channel(1).1
    }
}

impl EcsReads for Fake {
    fn latest_revisions(&self) -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>> {
        Box::pin(async move { Ok(vec![revision(2).detail]) })
    }

    fn latest_active(
        &self,
        family: String,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, ServiceError>> {
        Box::pin(async move {
            let newest = *self.registered.lock().unwrap_or_else(|p| p.into_inner());
            Ok((family == "embed").then(|| revision(newest)))
        })
    }

    fn revisions(
        &self,
        family: String,
    ) -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>> {
        Box::pin(async move {
            let newest = *self.registered.lock().unwrap_or_else(|p| p.into_inner());
            Ok(if family == "embed" {
                (1..=newest).rev().map(|n| revision(n).detail).collect()
            } else {
                Vec::new()
            })
        })
    }

    fn revision(
        &self,
        family: String,
        number: u32,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, ServiceError>> {
        Box::pin(async move {
            let newest = *self.registered.lock().unwrap_or_else(|p| p.into_inner());
            Ok((family == "embed" && (1..=newest).contains(&number)).then(|| revision(number)))
        })
    }

    fn service(
        &self,
        _cluster: String,
        _service: String,
    ) -> BoxFuture<'_, Result<LiveService, ServiceError>> {
        Box::pin(async move {
            self.call("ecs.service");
            let running = *self.running.lock().unwrap_or_else(|p| p.into_inner());
            let task_definition = format!("{ARN}embed:{running}");
            let desired = *self.desired.lock().unwrap_or_else(|p| p.into_inner());
            Ok(LiveService {
                task_definition: task_definition.clone(),
                desired,
                running: 1,
                pending: 0,
                deployments: vec![LiveDeployment {
                    id: "ecs-svc/1".into(),
                    status: "PRIMARY".into(),
                    task_definition,
                    desired: 1,
                    running: 1,
                    rollout_state: Some("COMPLETED".into()),
                    ..LiveDeployment::default()
                }],
                events: Vec::new(),
            })
        })
    }

    fn events(
        &self,
        _cluster: String,
        _services: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<ClusterEvent>, ServiceError>> {
        Box::pin(async move { Ok(Vec::new()) })
    }

    fn tasks(
        &self,
        _cluster: String,
        _query: TaskQuery,
    ) -> BoxFuture<'_, Result<Vec<TaskInfo>, ServiceError>> {
        Box::pin(async move { Ok(Vec::new()) })
    }
}

impl EcsWrites for Fake {
    fn register(
        &self,
        _task: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Registered, ServiceError>> {
        Box::pin(async move {
            self.call("ecs.register");
            if self.refuse_writes.load(Ordering::SeqCst) {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused RegisterTaskDefinition: ClientException: no",
                ));
            }
            let mut newest = self.registered.lock().unwrap_or_else(|p| p.into_inner());
            *newest += 1;
            Ok(Registered {
                revision: revision(*newest).detail,
                request_id: Some("request-1".into()),
            })
        })
    }

    fn update_service(
        &self,
        _cluster: String,
        _service: String,
        task_definition: String,
    ) -> BoxFuture<'_, Result<ServiceUpdated, ServiceError>> {
        Box::pin(async move {
            self.call(&format!("ecs.update_service {task_definition}"));
            if self.refuse_writes.load(Ordering::SeqCst) {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused UpdateService: AccessDeniedException: no",
                ));
            }
            Ok(ServiceUpdated {
                deployment_id: Some("ecs-svc/2".into()),
                request_id: Some("request-2".into()),
            })
        })
    }

    fn scale_service(
        &self,
        _cluster: String,
        _service: String,
        desired: u32,
    ) -> BoxFuture<'_, Result<ServiceUpdated, ServiceError>> {
        Box::pin(async move {
            self.call(&format!("ecs.scale_service {desired}"));
            if self.refuse_writes.load(Ordering::SeqCst) {
                return Err(ServiceError::refused_by_aws(
                    "ECS refused UpdateService: AccessDeniedException: no",
                ));
            }
            *self.desired.lock().unwrap_or_else(|p| p.into_inner()) = desired;
            Ok(ServiceUpdated {
                deployment_id: Some("ecs-svc/1".into()),
                request_id: Some("request-3".into()),
            })
        })
    }
}

impl TaskDefinitionSchema for Fake {
    fn validate(&self, text: String) -> BoxFuture<'_, Result<ValidRequest, Vec<FieldError>>> {
        Box::pin(async move { self.check(&text) })
    }
}

impl Fake {
    fn check(&self, text: &str) -> Result<ValidRequest, Vec<FieldError>> {
        let task: Map<String, Value> = serde_json::from_str(text).map_err(|e| {
            vec![FieldError {
                message: e.to_string(),
                ..FieldError::default()
            }]
        })?;
        let request = placement::rules::check_task(&task).map_err(|errors| {
            errors
                .into_iter()
                .map(|e| FieldError {
                    field: e.path,
                    message: e.message,
                    ..FieldError::default()
                })
                .collect::<Vec<_>>()
        })?;
        Ok((task, request))
    }
}

impl RolloutWatches for Fake {
    fn start(&self, rollout: RolloutToWatch) -> WatchState {
        self.call("watches.start");
        self.watched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(rollout.initial.clone());
        rollout.initial
    }

    fn current(&self, _id: &str) -> Option<WatchState> {
        None
    }

    fn subscribe(&self, _id: &str) -> Option<watch::Receiver<WatchState>> {
        None
    }
}

impl AuditStore for Fake {
    fn begin(&self, intent: AuditIntent) -> BoxFuture<'_, Result<String, ServiceError>> {
        Box::pin(async move {
            self.call("audit.begin");
            Fake::failing(&self.fail_begin)?;
            let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
            let id = format!("record-{}", records.len() + 1);
            records.push(AuditRecord {
                id: id.clone(),
                at: crate::service::clock::rfc3339_micros(chrono::Utc::now()),
                updated_at: String::new(),
                actor: intent.actor,
                actor_email: intent.actor_email,
                actor_role: intent.actor_role,
                auth_mode: intent.auth_mode,
                source: intent.source,
                action: intent.action,
                resource: intent.resource,
                from_revision: intent.from_revision,
                to_revision: intent.to_revision,
                diff: intent.diff,
                pre_check: intent.pre_check,
                description: intent.description,
                outcome: Outcome::Pending,
                request_id: None,
                deployment_id: None,
                detail: None,
                approved_by: intent.approved_by,
                approval_id: intent.approval_id,
            });
            Ok(id)
        })
    }

    fn finish(&self, id: String, outcome: AuditOutcome) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            self.call(&format!("audit.finish {}", outcome.outcome));
            Fake::failing(&self.fail_finish)?;
            let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(record) = records.iter_mut().find(|r| r.id == id) {
                record.outcome = outcome.outcome;
                record.detail = outcome.detail.or(record.detail.take());
                record.deployment_id = outcome.deployment_id.or(record.deployment_id.take());
                record.to_revision = outcome.to_revision.or(record.to_revision.take());
            }
            Ok(())
        })
    }

    fn list(&self, filter: AuditFilter) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>> {
        Box::pin(async move {
            Ok(self
                .records()
                .into_iter()
                .filter(|r| {
                    filter
                        .outcome
                        .as_deref()
                        .is_none_or(|o| r.outcome.as_str() == o)
                })
                .collect())
        })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<AuditRecord>, ServiceError>> {
        Box::pin(async move { Ok(self.records().into_iter().find(|r| r.id == id)) })
    }

    fn lock(&self, resource: String, _id: String) -> BoxFuture<'_, Result<bool, ServiceError>> {
        Box::pin(async move {
            self.call(if resource.starts_with("budget:") {
                "audit.lock budget"
            } else {
                "audit.lock"
            });
            Ok(self
                .locks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(resource))
        })
    }

    fn unlock(&self, resource: String, _id: String) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            self.call(if resource.starts_with("budget:") {
                "audit.unlock budget"
            } else {
                "audit.unlock"
            });
            self.locks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&resource);
            Ok(())
        })
    }

    fn heartbeat(&self) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move { Ok(()) })
    }

    fn unsettled(&self) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>> {
        Box::pin(async move {
            let mut records: Vec<AuditRecord> = self
                .records()
                .into_iter()
                .filter(|r| !r.outcome.is_final())
                .collect();
            records.sort_by(|a, b| a.at.cmp(&b.at));
            Ok(records)
        })
    }

    fn changes_since(
        &self,
        cluster: String,
        since: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>> {
        Box::pin(async move {
            let since = crate::service::clock::rfc3339_micros(since);
            Ok(self
                .records()
                .into_iter()
                .filter(|r| r.resource.starts_with(&format!("{cluster}/")) && r.at >= since)
                .collect())
        })
    }
}

impl crate::service::ports::People for Fake {
    fn seen(&self, actor: &Actor) -> BoxFuture<'_, Result<(), ServiceError>> {
        let person = crate::service::ports::SeenPerson {
            subject: actor.subject.clone(),
            email: actor.email.clone(),
            groups: actor.groups.clone(),
            seen_at: crate::service::clock::now(),
        };
        Box::pin(async move {
            self.people
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(person.subject.clone(), person);
            Ok(())
        })
    }

    fn latest(
        &self,
        subject: String,
    ) -> BoxFuture<'_, Result<Option<crate::service::ports::SeenPerson>, ServiceError>> {
        Box::pin(async move {
            Ok(self
                .people
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&subject)
                .cloned())
        })
    }
}

impl crate::service::ports::SpotMarket for Fake {
    fn quote(&self) -> crate::model::cost::SpotQuote {
        self.spot.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl crate::service::ports::ApprovalStore for Fake {
    fn create(
        &self,
        request: crate::model::approval::ApprovalRequest,
    ) -> BoxFuture<'_, Result<crate::service::ports::Created, ServiceError>> {
        Box::pin(async move {
            self.call("approvals.create");
            let mut approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            let key = request.change_key();
            if let Some(waiting) = approvals.iter().find(|r| {
                r.state == crate::model::approval::ApprovalState::Pending
                    && r.cluster == request.cluster
                    && r.service == request.service
                    && r.change_key() == key
            }) {
                return Ok(crate::service::ports::Created {
                    id: waiting.id.clone(),
                    existing: true,
                });
            }
            let id = format!("request-{}", approvals.len() + 1);
            approvals.push(crate::model::approval::ApprovalRequest {
                id: id.clone(),
                state: crate::model::approval::ApprovalState::Pending,
                ..request
            });
            Ok(crate::service::ports::Created {
                id,
                existing: false,
            })
        })
    }

    fn list(
        &self,
        query: crate::service::ports::ApprovalQuery,
    ) -> BoxFuture<'_, Result<(Vec<crate::model::approval::ApprovalRequest>, u64), ServiceError>>
    {
        Box::pin(async move {
            let approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            let matching: Vec<_> = approvals
                .iter()
                .rev()
                .filter(|r| query.state.is_none_or(|s| r.state == s))
                .filter(|r| query.team.as_ref().is_none_or(|t| &r.team == t))
                .filter(|r| query.cluster.as_ref().is_none_or(|c| &r.cluster == c))
                .cloned()
                .collect();
            let total = matching.len() as u64;
            Ok((
                matching
                    .into_iter()
                    .skip(query.offset as usize)
                    .take(query.limit as usize)
                    .collect(),
                total,
            ))
        })
    }

    fn pending_counts(
        &self,
        subject: String,
        except: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<crate::service::ports::PendingCount>, ServiceError>> {
        Box::pin(async move {
            let approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            let mut counts: Vec<crate::service::ports::PendingCount> = Vec::new();
            for request in approvals.iter().filter(|r| {
                r.state == crate::model::approval::ApprovalState::Pending
                    && except.as_deref() != Some(r.resource().as_str())
            }) {
                let own = request.requester.subject == subject;
                let at = counts
                    .iter()
                    .position(|c| {
                        c.team == request.team && c.cluster == request.cluster && c.own == own
                    })
                    .unwrap_or_else(|| {
                        counts.push(crate::service::ports::PendingCount {
                            team: request.team.clone(),
                            cluster: request.cluster.clone(),
                            own,
                            ..Default::default()
                        });
                        counts.len() - 1
                    });
                counts[at].count += 1;
                counts[at].memory_mib += request.delta.memory_mib.max(0) as u64;
                counts[at].whole_gpus += request.delta.whole_gpus.max(0) as u64;
            }
            Ok(counts)
        })
    }

    fn get(
        &self,
        id: String,
    ) -> BoxFuture<'_, Result<Option<crate::model::approval::ApprovalRequest>, ServiceError>> {
        Box::pin(async move {
            let approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            Ok(approvals.iter().find(|r| r.id == id).cloned())
        })
    }

    fn decide(
        &self,
        id: String,
        decision: crate::service::ports::Decision,
    ) -> BoxFuture<'_, Result<bool, ServiceError>> {
        Box::pin(async move {
            self.call(&format!("approvals.decide {}", decision.to));
            let mut approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            let Some(request) = approvals
                .iter_mut()
                .find(|r| r.id == id && r.state == crate::model::approval::ApprovalState::Pending)
            else {
                return Ok(false);
            };
            request.state = decision.to;
            request.decided_by = Some(decision.by);
            request.decided_by_email = decision.by_email;
            request.decision_note = decision.note;
            request.decided_at = Some("2026-11-30T12:05:00Z".into());
            Ok(true)
        })
    }

    fn settle(
        &self,
        id: String,
        state: crate::model::approval::ApprovalState,
        detail: String,
        audit_id: Option<String>,
    ) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            self.call(&format!("approvals.settle {state}"));
            let mut approvals = self.approvals.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(request) = approvals
                .iter_mut()
                .find(|r| r.id == id && r.state == crate::model::approval::ApprovalState::Sending)
            {
                request.state = state;
                request.detail = Some(detail);
                request.audit_id = audit_id;
            }
            Ok(())
        })
    }
}
