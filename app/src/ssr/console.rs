//! What the server tells the pages about itself.

use std::{sync::Arc, time::Instant};

use crate::{
    model::FleetSource,
    ssr::{fleet::FleetFeed, task_definitions::TaskDefinitionSource},
};

/// Facts about the running server, provided as context to every render and server function.
#[derive(Clone)]
pub struct ConsoleContext {
    /// The server's version.
    pub version: &'static str,
    /// When the server started.
    pub started: Instant,
    /// Where the fleet comes from.
    pub fleet_source: FleetSource,
    /// The latest fleet snapshot.
    pub fleet: Arc<dyn FleetFeed>,
    /// Task definitions, read from ECS.
    pub task_definitions: Arc<dyn TaskDefinitionSource>,
    /// The audit log of registrations, deployments and rollbacks.
    pub audit: Arc<dyn crate::ssr::audit::AuditLog>,
    /// Sends deployments and watches them.
    pub deployer: Arc<dyn crate::ssr::deployments::Deployer>,
    /// Clusters' events and stopped tasks, read from ECS.
    pub activity: Arc<dyn crate::ssr::activity::ClusterActivity>,
}
