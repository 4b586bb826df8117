//! Server-only parts of the app: what the server hands to the pages it renders.

pub mod activity;
pub mod audit;
pub mod console;
pub mod csp;
pub mod deployments;
pub mod fleet;
pub mod task_definitions;
pub mod theme;
