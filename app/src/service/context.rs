//! What every use case is given: facts about the running server and the ports to the world.

use std::{sync::Arc, time::Instant};

use crate::{
    model::{cost::PriceBook, policy::Policy, FleetSource},
    service::{
        ports::{
            ApprovalStore, AuditStore, CostHistory, EcsReads, EcsWrites, FleetFeed, Markets,
            People, RolloutWatches, TaskDefinitionSchema,
        },
        process::{BudgetLocks, InFlight},
        turns::Turns,
    },
};

/// The server's facts and ports, provided to every render and server function and held by the
/// JSON API's handlers.
#[derive(Clone)]
pub struct ServiceContext {
    /// The server's version.
    pub version: &'static str,
    /// When the server started.
    pub started: Instant,
    /// Where the fleet comes from.
    pub fleet_source: FleetSource,
    /// The latest fleet snapshot.
    pub fleet: Arc<dyn FleetFeed>,
    /// ECS, read on demand.
    pub ecs: Arc<dyn EcsReads>,
    /// ECS, changed: registrations and deployments.
    pub ecs_writes: Arc<dyn EcsWrites>,
    /// How the AWS SDK reads a RegisterTaskDefinition request.
    pub schema: Arc<dyn TaskDefinitionSchema>,
    /// Rollouts being followed.
    pub watches: Arc<dyn RolloutWatches>,
    /// The audit log of registrations, deployments and rollbacks.
    pub audit: Arc<dyn AuditStore>,
    /// Who may do what.
    pub policy: Arc<Policy>,
    /// Changes past a team's budget waiting for approval.
    pub approvals: Arc<dyn ApprovalStore>,
    /// The prices cost reports use: the built-in table for the region and the price file.
    pub prices: Arc<PriceBook>,
    /// What AWS quotes: the Price List's on-demand prices (in place of the built-in table) and
    /// EC2's spot prices, for what the price file does not price.
    pub markets: Arc<dyn Markets>,
    /// The allocation history cost reports over past periods read.
    pub history: Arc<dyn CostHistory>,
    /// The tag key that names the team a service or task definition belongs to.
    pub team_tag: String,
    /// The utilisation over the window, in percent, at or above which a GPU whose compute
    /// limits pass 100 % is contended.
    pub contention_threshold: u32,
    /// The audit records whose change runs in this process now.
    pub in_flight: Arc<InFlight>,
    /// Turns at the work that holds a core for a while (checks, simulations, plans).
    pub heavy: Arc<Turns>,
    /// The people the sign-in named, as it last named them.
    pub people: Arc<dyn People>,
    /// The locks that make the changes of one team's budget on one cluster judged one by one.
    pub budget_locks: Arc<BudgetLocks>,
}
