//! The service layer's ports implemented over AWS and SQL — ECS reads and writes through
//! aws-sdk-ecs, the SDK's task definition schema, rollouts followed on this server, the fleet
//! snapshot and the audit store — wired into the one context every use case is given.

use std::{sync::Arc, time::Instant};

use app::{
    model::{cost::PriceBook, policy::Policy, FleetSource},
    service::{rollouts::POLL, ServiceContext},
};

use crate::{
    aws::Clients,
    ecs::{task_definitions::SdkSchema, Ecs},
    fleet::store::SnapshotStore,
    rollouts::RolloutWatcher,
};

/// The use cases' context over AWS through `clients`: ECS reads and writes over one client,
/// the task definition schema of the SDK, rollouts followed on this server, the fleet snapshot
/// of `fleet`, and the audit store `audit`.
pub fn service_context(
    clients: &Clients,
    team_tag: &str,
    fleet: Arc<SnapshotStore>,
    audit: Arc<crate::audit::SqlAuditLog>,
    source: FleetSource,
) -> ServiceContext {
    let ecs = Arc::new(Ecs::new(clients.ecs.clone(), team_tag, fleet.clone()));
    let audit_for_people = audit.clone();
    ServiceContext {
        version: env!("CARGO_PKG_VERSION"),
        started: Instant::now(),
        fleet_source: source,
        fleet,
        ecs: ecs.clone(),
        ecs_writes: ecs.clone(),
        schema: Arc::new(SdkSchema::default()),
        watches: Arc::new(RolloutWatcher::new(ecs, audit.clone(), POLL)),
        approvals: audit.clone(),
        audit,
        policy: Arc::new(Policy::default()),
        prices: Arc::new(PriceBook::builtin(&clients.region)),
        history: Arc::new(NoHistory),
        spot: Arc::new(app::service::ports::NoSpotMarket),
        team_tag: team_tag.to_string(),
        contention_threshold: app::model::fleet_view::DEFAULT_CONTENTION_THRESHOLD,
        in_flight: Arc::default(),
        heavy: Arc::default(),
        people: Arc::new(crate::people::SqlPeople::new((*audit_for_people).clone())),
        budget_locks: Arc::default(),
    }
}

/// A history with nothing recorded, until the server gives the context its own.
struct NoHistory;

impl app::service::ports::CostHistory for NoHistory {
    fn recorded(
        &self,
        _from: i64,
        _to: i64,
    ) -> app::service::ports::BoxFuture<
        '_,
        Result<app::model::cost::Recorded, app::model::ServiceError>,
    > {
        Box::pin(async { Ok(app::model::cost::Recorded::default()) })
    }

    fn retention_days(&self) -> u32 {
        crate::cost_history::RETENTION_DAYS
    }

    fn replaying(&self) -> Option<String> {
        None
    }
}
