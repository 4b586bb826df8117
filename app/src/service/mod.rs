//! The console's use cases, on the server only: each is one function that takes the
//! [`ServiceContext`](context::ServiceContext) and the request and returns a typed answer or a
//! [`ServiceError`](crate::model::ServiceError). Server functions and the JSON API's handlers
//! are thin adapters over these functions, so that what is checked before a read or a change
//! is checked in one place. What the use cases read and write outside themselves goes through
//! the narrow traits of [`ports`], implemented by the server.

pub mod activity;
pub mod approvals;
pub mod audit;
pub mod budget;
pub mod capacity;
pub mod clock;
pub mod context;
pub mod cost;
pub mod deployments;
pub mod detached;
#[cfg(test)]
mod fake;
pub mod fleet;
pub mod lookup;
pub mod new_provider;
pub mod new_service;
pub mod ports;
pub mod process;
pub mod requests;
pub mod rollouts;
pub mod task_definitions;
pub mod turns;

pub use context::ServiceContext;
