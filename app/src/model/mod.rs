//! Plain serde types shared by the server and the browser.

pub mod activity;
pub mod audit;
mod console;
pub mod deployment;
pub mod fit;
mod fleet;
pub mod fleet_view;
pub mod heatmap;
pub mod rollout;
pub mod task_definition;
pub mod task_definition_json;
mod theme;

pub use console::{ClusterSummary, ConsoleStatus, FleetSource};
pub use fleet::{
    gpu_model_of, ClusterView, FleetSnapshot, GpuContainer, GpuMode, GpuUsage, GpuView,
    InstanceView, Reading, ServiceRef,
};
pub use theme::{Theme, THEME_COOKIE};
