//! Plain serde types shared by the server and the browser, and the pure functions over them:
//! placement checks, filters, diffs, colour scales. Nothing here does I/O.

pub mod activity;
pub mod approval;
pub mod arn;
pub mod audit;
pub mod budget;
pub mod capacity;
mod console;
pub mod cost;
mod csv;
pub mod deployment;
pub mod error;
pub mod fit;
mod fleet;
pub mod fleet_view;
pub mod heatmap;
pub mod identity;
pub mod new_provider;
pub mod new_service;
pub mod policy;
pub mod retire;
pub mod rollout;
#[cfg(feature = "ssr")]
pub mod sent;
pub mod task_definition;
mod theme;
pub mod words;

pub use console::{ClusterSummary, ConsoleStatus, FleetSource, StaleReads};
pub use error::ServiceError;
pub use fleet::{
    gpu_model_of, instance_unused, nominal_gpu_memory_mib, unused_fraction, ClusterView,
    FleetSnapshot, GpuContainer, GpuUsage, GpuView, HostReserved, HostUse, InstanceUnused,
    InstanceView, Reading, ServiceRef, SharingMode,
};
pub use theme::{Theme, THEME_COOKIE};
