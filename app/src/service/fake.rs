//! A fake of every port, for the unit tests of the use cases: a one-cluster fleet snapshot,
//! task definitions `embed:1` and `embed:2`, a service that runs `embed:1`, an audit store in
//! memory, and a record of every call, in order. Switches make the audit store or ECS fail.

mod ecs;
mod stores;

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex,
};

use serde_json::{json, Map, Value};
use tokio::sync::watch;

use crate::{
    model::{
        activity::{ClusterEvent, TaskInfo},
        audit::{AuditFilter, AuditIntent, AuditOutcome, AuditRecord, Lock, Outcome},
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
    /// Writing an outcome fails (keeping what ECS had before a call, a `pending` write, does
    /// not: `fail_pending` fails that).
    pub fail_finish: AtomicBool,
    pub fail_pending: AtomicBool,
    /// The locks held, by resource.
    pub locks: Mutex<std::collections::HashSet<String>>,
    pub refuse_writes: AtomicBool,
    /// DescribeTaskDefinition of one revision is throttled.
    pub throttle_revision_reads: AtomicBool,
    /// DeleteService is refused (UpdateService is not).
    pub refuse_delete: AtomicBool,
    /// Whether DeleteService deleted the service.
    pub deleted: AtomicBool,
    /// CreateService requests sent, in order.
    pub created: Mutex<Vec<serde_json::Map<String, serde_json::Value>>>,
    /// Recorded minutes (Unix seconds of the minute) and what the fleet held in them, per hour.
    pub history: Mutex<Vec<(i64, crate::model::cost::Holdings)>>,
    /// The sealed months, every version.
    pub sealed: Mutex<Vec<crate::model::cost::SealedMonth>>,
    /// What the spot market says.
    pub spot: Mutex<crate::model::cost::SpotQuote>,
    /// The policy's budgets, read when the context is made.
    pub budgets: Mutex<Vec<crate::model::budget::BudgetRule>>,
    /// Approval requests, in order of asking.
    pub approvals: Mutex<Vec<crate::model::approval::ApprovalRequest>>,
    /// How old the fleet snapshot is, in seconds (0 by default).
    pub snapshot_age: Mutex<i64>,
    /// The service's events, as DescribeServices gives them.
    pub events: Mutex<Vec<crate::model::deployment::LiveEvent>>,
    /// The service's deployments, PRIMARY first, when a test sets them (else one completed
    /// PRIMARY deployment, `ecs-svc/1`, of the revision it runs).
    pub deployments: Mutex<Vec<crate::model::deployment::LiveDeployment>>,
    /// UpdateService takes effect (a new PRIMARY deployment, made at `ecs_clock`) and its
    /// answer is lost.
    pub lose_update_answers: AtomicBool,
    /// ECS's clock, RFC 3339, for the deployments UpdateService makes (it need not agree with
    /// the console's).
    pub ecs_clock: Mutex<String>,
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

    /// A fake where team `search` may hold `budget_mib` of GPU memory on `prod`, approved by
    /// group `search-leads` (`embed` holds 2 GiB: one task of `embed:1`).
    pub fn with_budget(budget_mib: u64) -> Arc<Fake> {
        let fake = Fake::new();
        *fake.budgets.lock().unwrap_or_else(|p| p.into_inner()) =
            vec![crate::model::budget::BudgetRule {
                team: "search".into(),
                cluster: "prod".into(),
                gpu_memory_mib: budget_mib,
                whole_gpus: None,
                monthly_cost_cents: None,
                approvers: vec!["search-leads".into()],
            }];
        fake
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
            markets: self.clone(),
            team_tag: "team".into(),
            contention_threshold: crate::model::fleet_view::DEFAULT_CONTENTION_THRESHOLD,
            in_flight: Arc::default(),
            heavy: Arc::default(),
            people: self.clone(),
            budget_locks: Arc::default(),
        }
    }

    /// An admin (group `platform`), otherwise as [`Fake::deployer`].
    pub fn admin() -> Actor {
        Actor {
            subject: "root".into(),
            email: Some("root@example.com".into()),
            groups: vec!["platform".into()],
            role: Role::Admin,
            ..Fake::deployer()
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
            instances: vec![InstanceView::of("i-0a", "g5.12xlarge")
                .with_arn("arn:aws:ecs:us-east-1:1:container-instance/prod/a")
                .with_gpus(gpus)],
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
