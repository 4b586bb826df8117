//! The whole HTTP surface through the router, by area.

mod access;
mod activity;
mod alb;
mod approvals;
mod capacity;
mod cost;
mod demo;
mod deployments;
mod edge;
mod fleet;
mod handover;
mod hardening;
mod new_provider;
mod new_service;
mod oidc;
mod plan;
mod reconciliation;
mod sealed;
mod support;
mod task_definition_lists;
mod task_definitions;
mod team_rules;
mod writes;
