//! Server functions, grouped by domain: called from the browser, run on the server.

pub mod activity;
pub mod audit;
pub mod clusters;
pub mod console;
pub mod deployments;
pub mod fleet;
pub mod task_definitions;
