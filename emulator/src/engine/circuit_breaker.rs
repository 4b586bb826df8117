//! The deployment circuit breaker: when a deployment in progress has failed often enough, it
//! is marked FAILED (and, with rollback on, the last completed revision is deployed again).
//!
//! As ECS documents `failedTasks`: the count is of consecutive failures — a task the scheduler
//! cannot launch (no instance fits) or that does not reach RUNNING — and once the deployment has
//! a running task it resets to zero and is no longer evaluated (`resetOnHealthyTask`, true by
//! default). ECS's reason is always "tasks failed to start", whatever the failures were.

use crate::model::DeploymentConfig;

/// Failures that trip the breaker for a service of `desired` tasks: half of them, at least 3
/// and at most 200 (ECS developer guide, "deployment circuit breaker").
pub fn threshold(desired: u32) -> u32 {
    desired.div_ceil(2).clamp(3, 200)
}

/// Why the breaker trips for a deployment in progress with `failed` consecutive failures, or
/// `None` when it does not (or is off).
pub fn trips(config: &DeploymentConfig, desired: u32, failed: u32) -> Option<&'static str> {
    (config.circuit_breaker_enable && failed >= threshold(desired))
        .then_some("tasks failed to start")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(enable: bool) -> DeploymentConfig {
        DeploymentConfig {
            circuit_breaker_enable: enable,
            ..DeploymentConfig::default()
        }
    }

    #[test]
    fn the_threshold_is_half_the_tasks_between_3_and_200() {
        assert_eq!(threshold(1), 3);
        assert_eq!(threshold(7), 4);
        assert_eq!(threshold(10), 5);
        assert_eq!(threshold(1_000), 200);
    }

    #[test]
    fn it_trips_at_the_threshold_and_says_what_ecs_says() {
        assert_eq!(trips(&breaker(true), 4, 2), None);
        assert_eq!(trips(&breaker(true), 4, 3), Some("tasks failed to start"));
        assert_eq!(trips(&breaker(false), 4, 9), None, "off");
    }
}
