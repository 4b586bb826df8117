//! The whole HTTP surface through the router, by area.

mod access;
mod activity;
mod deployments;
mod edge;
mod fleet;
mod support;
mod task_definitions;
