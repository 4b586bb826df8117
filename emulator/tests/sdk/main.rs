//! Conformance: the real aws-sdk-ecs, aws-sdk-cloudwatch and aws-sdk-ec2 clients against the
//! emulator over HTTP, for every operation it serves, with errors, pagination, batch limits and
//! faults; one binary, a module per area.

mod capacity_providers;
mod cloudwatch;
mod ec2;
mod elastic;
mod errors;
mod faults;
mod fleet_reads;
mod harness;
mod services;
mod task_definitions;
