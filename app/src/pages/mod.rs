//! One file per route.

pub mod activity;
pub mod approvals;
pub mod audit;
pub mod capacity;
pub mod cost;
pub mod cost_plan;
pub mod deployments;
pub mod fleet;
pub mod not_found;
pub mod task_definitions;
