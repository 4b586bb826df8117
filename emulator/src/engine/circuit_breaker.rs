//! The deployment circuit breaker: when a deployment in progress has failed often enough, it
//! is marked FAILED (and, with rollback on, the last completed revision is deployed again).

use crate::model::DeploymentConfig;

/// Failures that trip the breaker for a service of `desired` tasks: half of them, at least 3
/// and at most 200 (ECS developer guide, "deployment circuit breaker").
pub fn threshold(desired: u32) -> u32 {
    desired.div_ceil(2).clamp(3, 200)
}

/// Why the breaker trips for a deployment in progress with these failures, or `None` when it
/// does not (or is off).
pub fn trips(
    config: &DeploymentConfig,
    desired: u32,
    failed_tasks: u32,
    failed_placements: u32,
) -> Option<&'static str> {
    if !config.circuit_breaker_enable || failed_tasks + failed_placements < threshold(desired) {
        return None;
    }
    Some(if failed_tasks > 0 {
        "tasks failed to start"
    } else {
        "tasks could not be placed"
    })
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
    fn it_trips_at_the_threshold_and_says_why() {
        assert_eq!(trips(&breaker(true), 4, 2, 0), None);
        assert_eq!(
            trips(&breaker(true), 4, 3, 0),
            Some("tasks failed to start")
        );
        assert_eq!(
            trips(&breaker(true), 4, 1, 5),
            Some("tasks failed to start")
        );
        assert_eq!(
            trips(&breaker(true), 4, 0, 3),
            Some("tasks could not be placed")
        );
        assert_eq!(trips(&breaker(false), 4, 9, 9), None, "off");
    }
}
