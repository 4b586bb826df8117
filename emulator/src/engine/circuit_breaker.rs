//! The deployment circuit breaker: when a deployment in progress has failed often enough, it
//! is marked FAILED (and, with rollback on, the last completed revision is deployed again).
//!
//! As ECS documents `failedTasks`: the count is of consecutive failures — a task the scheduler
//! cannot launch (no instance fits) or that does not reach RUNNING — and once the deployment has
//! a running task it resets to zero and is no longer evaluated (`resetOnHealthyTask`, true by
//! default). ECS's reason is always "tasks failed to start", whatever the failures were.

use crate::model::{DeploymentConfig, Threshold};

/// Failures that trip the breaker for a service of `desired` tasks (`thresholdConfiguration`,
/// by default `BOUNDED_PERCENT` 50: half of them, at least 3 and at most 200).
pub fn threshold(desired: u32, threshold: Threshold) -> u32 {
    let percent = |value: u32| (u64::from(desired) * u64::from(value)).div_ceil(100) as u32;
    match threshold {
        Threshold::BoundedPercent(value) => percent(value).clamp(3, 200),
        Threshold::UnboundedPercent(value) => percent(value).max(1),
        Threshold::Count(value) => value.max(1),
    }
}

/// Why the breaker trips for a deployment in progress with `failed` consecutive failures, or
/// `None` when it does not (or is off).
pub fn trips(config: &DeploymentConfig, desired: u32, failed: u32) -> Option<&'static str> {
    (config.circuit_breaker_enable && failed >= threshold(desired, config.threshold))
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
    fn the_threshold_is_half_the_tasks_between_3_and_200_unless_configured() {
        let default = Threshold::BoundedPercent(50);
        assert_eq!(threshold(1, default), 3);
        assert_eq!(threshold(7, default), 4);
        assert_eq!(threshold(10, default), 5);
        assert_eq!(threshold(1_000, default), 200);
        assert_eq!(threshold(1_000, Threshold::UnboundedPercent(50)), 500);
        assert_eq!(threshold(1, Threshold::UnboundedPercent(10)), 1);
        assert_eq!(threshold(40, Threshold::Count(2)), 2);
    }

    #[test]
    fn it_trips_at_the_threshold_and_says_what_ecs_says() {
        assert_eq!(trips(&breaker(true), 4, 2), None);
        assert_eq!(trips(&breaker(true), 4, 3), Some("tasks failed to start"));
        assert_eq!(trips(&breaker(false), 4, 9), None, "off");
    }
}
