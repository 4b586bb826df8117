//! Amazon ECS's documented limits, in one place below both the emulator (which enforces them)
//! and the console (which paces its reads by them).

pub mod throttling;
