//! The server's integration tests, in one test binary (one link of the server instead of one
//! per file): the audit store, the crash-reconcile path, the fleet snapshot, the task
//! definition corpus, and the whole HTTP surface by area.

mod audit_store;
mod consolidation;
mod cost_explorer;
mod cost_history;
mod deploy_reconcile;
mod events_queue;
mod fleet_snapshot;
mod generated_input;
mod house;
mod http;
mod incremental_property;
mod precheck_elastic;
mod precheck_property;
mod support;
mod task_definition_edit;
mod writes_once;
