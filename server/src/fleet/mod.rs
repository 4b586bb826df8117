//! The fleet snapshot: every GPU joined to the containers, tasks, services and teams on it.

pub mod join;
pub mod reader;
pub mod store;
pub mod usage;
