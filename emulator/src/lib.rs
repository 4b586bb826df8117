//! An Amazon ECS and CloudWatch emulator for GPU sharing with NVIDIA MPS.
//!
//! It speaks the wire protocols of the AWS SDKs (ECS: `awsJson1_1`; CloudWatch: `rpc-v2-cbor`),
//! so the real `aws-sdk-ecs` and `aws-sdk-cloudwatch` clients talk to it with only an
//! `endpoint_url`. Its logic — state, placement, scheduling, the clock, metrics — is plain Rust
//! under [`model`], [`placement`], [`engine`] and [`cloudwatch`], testable without HTTP.

pub mod autoscaling;
pub mod billing;
pub mod capacity;
pub mod cbor;
pub mod clock;
pub mod cloudwatch;
pub mod ec2;
pub mod ecs_api;
pub mod elastic;
pub mod engine;
pub mod error;
pub mod events;
pub mod faults;
pub mod instance_types;
pub mod metric_store;
pub mod model;
pub mod placement;
pub mod pricing;
pub mod runtime;
pub mod scenario;
pub mod spot_market;
pub mod task_definitions;
pub mod throttle;

pub use faults::{Fault, Faults};
pub use runtime::{Emulator, Status, WriteRecord};
pub use scenario::Scenario;
