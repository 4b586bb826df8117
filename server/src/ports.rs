//! The service layer's ports implemented over AWS and SQL — ECS reads and writes through
//! aws-sdk-ecs, the SDK's task definition schema, rollouts followed on this server, the fleet
//! snapshot, the audit store, the cost history and spot prices — wired into the one context
//! every use case is given.

use std::{sync::Arc, time::Instant};

use app::{
    model::{cost::PriceBook, policy::Policy, FleetSource},
    service::{
        ports::{CostHistory, Markets},
        rollouts::POLL,
        ServiceContext,
    },
};

use crate::{
    audit::SqlAuditLog,
    aws::Clients,
    ecs::{task_definitions::SdkSchema, Ecs, ReadCache},
    fleet::store::SnapshotStore,
    people::SqlPeople,
    rollouts::RolloutWatcher,
};

/// What the use cases are told besides their ports: where the fleet comes from, the team tag,
/// the policy, the prices and the contention threshold.
pub struct Settings {
    pub source: FleetSource,
    pub team_tag: String,
    pub policy: Policy,
    pub prices: PriceBook,
    pub contention_threshold: u32,
}

impl Settings {
    /// What a console started with no flags is told for `source` in `region`: the default team
    /// tag, no policy file, the built-in prices of the region, the default contention threshold.
    pub fn defaults(source: FleetSource, region: &str) -> Settings {
        Settings {
            source,
            team_tag: "team".to_string(),
            policy: Policy::default(),
            prices: PriceBook::builtin(region),
            contention_threshold: app::model::fleet_view::DEFAULT_CONTENTION_THRESHOLD,
        }
    }
}

/// What AWS quotes, read in the background: EC2's spot prices and the Price List's.
pub struct AwsMarkets {
    pub spot: Arc<crate::spot_prices::SpotPrices>,
    pub list: Arc<crate::price_list::ListPrices>,
    pub cost_explorer: Arc<crate::cost_explorer::CostExplorer>,
}

impl Markets for AwsMarkets {
    fn spot(&self) -> app::model::cost::SpotQuote {
        self.spot.quote()
    }

    fn list(&self) -> app::model::cost::ListQuote {
        self.list.quote()
    }

    fn asked(&self) -> bool {
        self.spot.asked() && self.list.asked()
    }

    fn cost_explorer_off(&self) -> Option<String> {
        self.cost_explorer.off()
    }
}

/// The stores the use cases read and write besides ECS: the fleet snapshot, the audit log (which
/// also keeps the approval requests and the people), the allocation history and spot prices.
pub struct Stores {
    pub fleet: Arc<SnapshotStore>,
    pub audit: Arc<SqlAuditLog>,
    pub history: Arc<dyn CostHistory>,
    pub markets: Arc<dyn Markets>,
    /// What pages read from ECS on demand, kept for a while.
    pub reads: Arc<ReadCache>,
}

/// The use cases' context over AWS through `clients`: ECS reads and writes over one client,
/// the task definition schema of the SDK, rollouts followed on this server, and `stores`, told
/// `settings`. Built once, by [`crate::startup`] for a server.
pub fn service_context(clients: &Clients, settings: Settings, stores: Stores) -> ServiceContext {
    let Stores {
        fleet,
        audit,
        history,
        markets,
        reads,
    } = stores;
    let ecs = Arc::new(
        Ecs::new(clients.ecs.clone(), &settings.team_tag, fleet.clone())
            .with_capacity_sources(clients.ec2.clone(), clients.autoscaling.clone())
            .with_budget(clients.budget.clone())
            .with_cache(reads),
    );
    ServiceContext {
        version: env!("CARGO_PKG_VERSION"),
        started: Instant::now(),
        fleet_source: settings.source,
        fleet,
        ecs: ecs.clone(),
        ecs_writes: ecs.clone(),
        schema: Arc::new(SdkSchema::default()),
        watches: Arc::new(RolloutWatcher::new(ecs, audit.clone(), POLL)),
        approvals: audit.clone(),
        people: Arc::new(SqlPeople::new((*audit).clone())),
        audit,
        policy: Arc::new(settings.policy),
        prices: Arc::new(settings.prices),
        history,
        markets,
        team_tag: settings.team_tag,
        contention_threshold: settings.contention_threshold,
        in_flight: Arc::default(),
        heavy: Arc::default(),
        budget_locks: Arc::default(),
    }
}
