//! Unit tests of the `rollout` module.

use super::*;
use crate::{
    engine::{fixture, NewService, ServiceUpdate},
    error::EcsError,
    model::DeploymentStatus,
};

fn service(fleet: &mut Fleet, td: &str, desired: u32, breaker: bool) {
    let config = DeploymentConfig {
        circuit_breaker_enable: breaker,
        circuit_breaker_rollback: breaker,
        ..DeploymentConfig::default()
    };
    fleet
        .create_service(
            "prod",
            NewService {
                name: "embed".into(),
                task_definition: td.into(),
                desired_count: desired,
                config,
                placement_constraints: Vec::new(),
                placement_strategy: Vec::new(),
                capacity_provider_strategy: Vec::new(),
            },
        )
        .expect("created");
}

fn events(fleet: &Fleet) -> Vec<String> {
    fleet.clusters["prod"].services["embed"]
        .events
        .iter()
        .map(|e| e.message.clone())
        .collect()
}

#[test]
fn the_bounds_of_a_rolling_update() {
    let config = DeploymentConfig {
        maximum_percent: 150,
        minimum_healthy_percent: 50,
        ..DeploymentConfig::default()
    };
    assert_eq!(bounds(4, &config), (6, 2));
    assert_eq!(bounds(3, &config), (4, 2), "minimum healthy rounds up");
    assert_eq!(bounds(0, &config), (1, 0));
}

#[test]
fn old_tasks_stop_only_while_enough_stay_healthy() {
    let old = vec![
        (false, "pending".to_string()),
        (true, "a".to_string()),
        (true, "b".to_string()),
    ];
    // 2 running of 2 desired, at least 2 healthy, the new ones not started: only the
    // pending old task goes.
    assert_eq!(old_tasks_to_stop(&old, 2, 2, 2, 0, 0), ["pending"]);
    // With a minimum of 1, one running task may go to make room.
    assert_eq!(old_tasks_to_stop(&old, 2, 1, 2, 1, 0), ["pending", "a"]);
    // Once the new deployment runs everything, the old ones go down to the minimum.
    assert_eq!(
        old_tasks_to_stop(&old, 4, 2, 2, 2, 2),
        ["pending", "a", "b"]
    );
}

/// Draining an instance (UpdateContainerInstancesState) moves the service's tasks off it:
/// replacements start elsewhere first (maximumPercent 200), the drained ones stop once they
/// run, and the running count never goes under minimumHealthyPercent (100).
#[test]
fn a_drained_instances_tasks_are_replaced_elsewhere_within_the_bounds() {
    let mut fleet = fixture::fleet(2, 1);
    let td = fixture::mps_family(&mut fleet, "embed", 4_096, None);
    service(&mut fleet, &td, 2, false);
    fixture::run(&mut fleet, 30);
    let on = |fleet: &Fleet, instance: &str| -> usize {
        let cluster = &fleet.clusters["prod"];
        cluster.services["embed"]
            .tasks
            .iter()
            .filter_map(|arn| cluster.tasks.get(arn))
            .filter(|t| t.instance_arn == instance && t.desired_status != TaskStatus::Stopped)
            .count()
    };
    // Best fit puts both on one GPU; drain that instance.
    let instances: Vec<String> = fleet.clusters["prod"]
        .instances
        .iter()
        .map(|i| i.arn.clone())
        .collect();
    let (busy, other) = if on(&fleet, &instances[0]) == 2 {
        (instances[0].clone(), instances[1].clone())
    } else {
        (instances[1].clone(), instances[0].clone())
    };
    assert_eq!(on(&fleet, &busy), 2);
    let answer = crate::ecs_api::handle(
        &mut fleet,
        "UpdateContainerInstancesState",
        serde_json::json!({"cluster": "prod", "containerInstances": [busy], "status": "DRAINING"}),
    )
    .expect("drained");
    assert!(answer.contains("\"status\":\"DRAINING\""), "{answer}");
    for _ in 0..60 {
        fixture::run(&mut fleet, 1);
        let running = fleet.clusters["prod"].services["embed"].deployments[0].running_count;
        assert!(
            running >= 2,
            "minimumHealthyPercent 100 keeps 2 running: {running}"
        );
    }
    assert_eq!(
        on(&fleet, &busy),
        0,
        "nothing of the service is left on the drained instance"
    );
    assert_eq!(on(&fleet, &other), 2);
    let svc = &fleet.clusters["prod"].services["embed"];
    assert_eq!(svc.deployments[0].running_count, 2);
    // Bad states and unknown instances say so.
    let error = crate::ecs_api::handle(
        &mut fleet,
        "UpdateContainerInstancesState",
        serde_json::json!({"cluster": "prod", "containerInstances": [other], "status": "REGISTERING"}),
    )
    .expect_err("refused");
    assert!(format!("{error:?}").contains("ACTIVE or DRAINING"));
    let missing = crate::ecs_api::handle(
        &mut fleet,
        "UpdateContainerInstancesState",
        serde_json::json!({"cluster": "prod", "containerInstances": ["nope"], "status": "ACTIVE"}),
    )
    .expect("answers");
    assert!(missing.contains("MISSING"), "{missing}");
}

#[test]
fn a_new_revision_rolls_out_and_the_service_reaches_a_steady_state() {
    let mut fleet = fixture::fleet(2, 4);
    let first = fixture::mps_family(&mut fleet, "embed", 4_096, None);
    let second = fixture::mps_family(&mut fleet, "embed", 6_144, None);
    service(&mut fleet, &first, 3, true);
    fixture::run(&mut fleet, 30);
    let svc = &fleet.clusters["prod"].services["embed"];
    assert_eq!(svc.deployments[0].rollout_state, RolloutState::Completed);
    assert!(svc.steady);
    let update = ServiceUpdate {
        task_definition: Some(second.clone()),
        ..ServiceUpdate::default()
    };
    fleet
        .update_service("prod", "embed", update)
        .expect("updated");
    fixture::run(&mut fleet, 60);
    let svc = &fleet.clusters["prod"].services["embed"];
    assert_eq!(svc.deployments.len(), 1, "the old deployment is gone");
    let primary = &svc.deployments[0];
    assert_eq!(primary.task_definition_arn, second);
    assert_eq!(primary.status, DeploymentStatus::Primary);
    assert_eq!(primary.rollout_state, RolloutState::Completed);
    assert_eq!(primary.running_count, 3);
    let said = events(&fleet);
    assert!(
        said.iter().any(|e| e.ends_with("deployment completed.")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|e| e.contains("has reached a steady state")),
        "{said:?}"
    );
}

#[test]
fn a_revision_that_cannot_start_trips_the_breaker_and_rolls_back() {
    let mut fleet = fixture::fleet(2, 4);
    let good = fixture::mps_family(&mut fleet, "embed", 4_096, None);
    let broken = fixture::mps_family(&mut fleet, "embed", 4_096, Some(1));
    service(&mut fleet, &good, 2, true);
    fixture::run(&mut fleet, 30);
    let update = ServiceUpdate {
        task_definition: Some(broken),
        ..ServiceUpdate::default()
    };
    fleet
        .update_service("prod", "embed", update)
        .expect("updated");
    fixture::run(&mut fleet, 120);
    let svc = &fleet.clusters["prod"].services["embed"];
    assert_eq!(svc.task_definition_arn, good, "the good revision is back");
    assert_eq!(svc.deployments[0].task_definition_arn, good);
    let said = events(&fleet);
    assert!(
        said.iter()
            .any(|e| e.contains("deployment failed: tasks failed to start")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|e| e.contains("rolling back to deployment")),
        "{said:?}"
    );
}

#[test]
fn a_task_that_fits_nowhere_is_reported_once_in_six_hours_and_retried_with_back_off() {
    let mut fleet = fixture::fleet(1, 1);
    let huge = fixture::mps_family(&mut fleet, "embed", 22_000, None);
    service(&mut fleet, &huge, 2, false);
    fixture::run(&mut fleet, 90);
    let unable = |fleet: &Fleet| {
        events(fleet)
            .iter()
            .filter(|e| e.contains("was unable to place a task"))
            .count()
    };
    assert_eq!(
        unable(&fleet),
        1,
        "the same message is omitted while its cause lasts"
    );
    let primary = &fleet.clusters["prod"].services["embed"].deployments[0];
    assert_eq!(
        primary.rollout_state,
        RolloutState::InProgress,
        "no breaker"
    );
    // Attempts at 0, 10, 30 and 70 s: each wait twice the last.
    assert_eq!(primary.failed_placements, 4);
    fixture::run(&mut fleet, 7 * 3600);
    assert_eq!(unable(&fleet), 2, "said again after six hours");
    assert_eq!(placement_backoff(1), Duration::seconds(10));
    assert_eq!(placement_backoff(2), Duration::seconds(20));
    assert_eq!(placement_backoff(7), Duration::seconds(640));
    assert_eq!(
        placement_backoff(8),
        Duration::seconds(900),
        "15 minutes at most"
    );
    assert_eq!(placement_backoff(500), Duration::seconds(900));
}

#[test]
fn a_rollback_reactivates_the_last_completed_deployment_under_its_own_id() {
    let mut fleet = fixture::fleet(2, 4);
    let good = fixture::mps_family(&mut fleet, "embed", 4_096, None);
    let broken = fixture::mps_family(&mut fleet, "embed", 4_096, Some(1));
    service(&mut fleet, &good, 2, true);
    fixture::run(&mut fleet, 60);
    let svc = &fleet.clusters["prod"].services["embed"];
    let completed = svc.deployments[0].id.clone();
    assert_eq!(
        svc.deployments[0].rollout_state_reason,
        format!("ECS deployment {completed} completed.")
    );
    fleet
        .update_service(
            "prod",
            "embed",
            ServiceUpdate {
                task_definition: Some(broken),
                ..ServiceUpdate::default()
            },
        )
        .expect("updated");
    let failing = fleet.clusters["prod"].services["embed"].deployments[0]
        .id
        .clone();
    assert_eq!(
        fleet.clusters["prod"].services["embed"].deployments[0].rollout_state_reason,
        format!("ECS deployment {failing} in progress.")
    );
    for _ in 0..120 {
        fixture::run(&mut fleet, 1);
        if fleet.clusters["prod"].services["embed"].deployments[0].id != failing {
            break;
        }
    }
    let svc = &fleet.clusters["prod"].services["embed"];
    assert_eq!(
        svc.deployments[0].id, completed,
        "the same deployment, again PRIMARY"
    );
    assert_eq!(
        svc.deployments[0].rollout_state_reason,
        format!("ECS deployment circuit breaker: rolling back to deploymentId {completed}.")
    );
    let failed = svc
        .deployments
        .iter()
        .find(|d| d.id == failing)
        .map(|d| (d.rollout_state, d.rollout_state_reason.clone()));
    if let Some((state, reason)) = failed {
        assert_eq!(state, RolloutState::Failed);
        assert_eq!(
            reason,
            "ECS deployment circuit breaker: tasks failed to start."
        );
    }
    assert!(events(&fleet)
        .iter()
        .any(|e| e.contains(&format!("rolling back to deployment {completed}."))));
}

#[test]
fn a_container_that_exits_at_once_reaches_running_and_counts_as_a_failure() {
    let mut fleet = fixture::fleet(1, 4);
    let broken = fixture::mps_family(&mut fleet, "embed", 4_096, Some(2));
    service(&mut fleet, &broken, 1, true);
    fixture::run(&mut fleet, 120);
    let cluster = &fleet.clusters["prod"];
    let stopped: Vec<_> = cluster
        .tasks
        .values()
        .filter(|t| t.stop_code == Some("EssentialContainerExited"))
        .collect();
    assert!(!stopped.is_empty());
    assert!(
        stopped
            .iter()
            .all(|t| t.started_at.is_some() && t.containers[0].exit_code == Some(2)),
        "each reached RUNNING first, then exited with its code"
    );
    assert_eq!(
        cluster.services["embed"].deployments[0].rollout_state,
        RolloutState::Failed,
        "the breaker trips all the same"
    );
}

#[test]
fn the_threshold_configuration_and_reset_on_healthy_task_are_honoured() {
    // Two of four tasks fit; with resetOnHealthyTask false the two that never fit keep
    // counting, and a COUNT threshold of 2 trips.
    let mut fleet = fixture::fleet(1, 1);
    let half = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    let config = DeploymentConfig {
        circuit_breaker_enable: true,
        reset_on_healthy_task: false,
        threshold: crate::model::Threshold::Count(2),
        ..DeploymentConfig::default()
    };
    fleet
        .create_service(
            "prod",
            NewService {
                name: "embed".into(),
                task_definition: half,
                desired_count: 4,
                config,
                placement_constraints: Vec::new(),
                placement_strategy: Vec::new(),
                capacity_provider_strategy: Vec::new(),
            },
        )
        .expect("created");
    fixture::run(&mut fleet, 600);
    let primary = &fleet.clusters["prod"].services["embed"].deployments[0];
    assert_eq!(primary.running_count, 2);
    assert_eq!(primary.rollout_state, RolloutState::Failed);
}

#[test]
fn a_blue_green_service_runs_the_whole_new_set_beside_the_old_one() {
    let mut fleet = fixture::fleet(1, 4);
    let old = fixture::mps_family(&mut fleet, "embed", 4_096, None);
    let config = DeploymentConfig {
        strategy: "BLUE_GREEN".into(),
        minimum_healthy_percent: 0,
        maximum_percent: 100,
        ..DeploymentConfig::default()
    };
    fleet
        .create_service(
            "prod",
            NewService {
                name: "embed".into(),
                task_definition: old,
                desired_count: 4,
                config,
                placement_constraints: Vec::new(),
                placement_strategy: Vec::new(),
                capacity_provider_strategy: Vec::new(),
            },
        )
        .expect("created");
    fixture::run(&mut fleet, 60);
    let new = fixture::mps_family(&mut fleet, "embed", 4_096, None);
    fleet
        .update_service(
            "prod",
            "embed",
            ServiceUpdate {
                task_definition: Some(new),
                ..ServiceUpdate::default()
            },
        )
        .expect("updated");
    let mut most = 0;
    for _ in 0..60 {
        fixture::run(&mut fleet, 1);
        let live = fleet.clusters["prod"]
            .tasks
            .values()
            .filter(|t| t.is_live())
            .count();
        most = most.max(live);
    }
    assert_eq!(
        most, 8,
        "four old and four new at once, whatever maximumPercent says"
    );
    let svc = &fleet.clusters["prod"].services["embed"];
    assert_eq!(svc.deployments.len(), 1);
    assert_eq!(svc.deployments[0].running_count, 4);
}

#[test]
fn once_a_deployment_runs_a_task_its_failures_stop_counting() {
    // One GPU takes two of the four tasks; the other two fit nowhere, for ever.
    let mut fleet = fixture::fleet(1, 1);
    let half = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    service(&mut fleet, &half, 4, true);
    fixture::run(&mut fleet, 600);
    let primary = &fleet.clusters["prod"].services["embed"].deployments[0];
    assert_eq!(primary.running_count, 2);
    assert!(primary.failed_placements >= 3, "it keeps trying");
    assert_eq!(primary.failed_tasks, 0, "reset by the running tasks");
    assert_eq!(
        primary.rollout_state,
        RolloutState::InProgress,
        "a stall, not a breaker trip"
    );
}

#[test]
fn a_deployment_that_can_place_nothing_fails_to_start_as_ecs_says() {
    let mut fleet = fixture::fleet(1, 1);
    let huge = fixture::mps_family(&mut fleet, "embed", 100_000, None);
    service(&mut fleet, &huge, 2, true);
    fixture::run(&mut fleet, 600);
    let said = events(&fleet);
    assert!(
        said.iter()
            .any(|e| e.contains("deployment failed: tasks failed to start")),
        "{said:?}"
    );
    assert!(
        !said.iter().any(|e| e.contains("could not be placed")),
        "a reason ECS never gives: {said:?}"
    );
}

#[test]
fn a_steady_service_says_so_again_every_six_hours() {
    let mut fleet = fixture::fleet(1, 1);
    let td = fixture::mps_family(&mut fleet, "embed", 4_096, None);
    service(&mut fleet, &td, 1, false);
    fixture::run(&mut fleet, 120);
    let steady = |fleet: &Fleet| {
        events(fleet)
            .iter()
            .filter(|e| e.contains("has reached a steady state"))
            .count()
    };
    assert_eq!(steady(&fleet), 1);
    fixture::run(&mut fleet, 6 * 3600 + 60);
    assert_eq!(steady(&fleet), 2);
}

/// DeleteService: refused while the service is scaled above 0 (unless forced); then no longer
/// ACTIVE — neither updated nor deleted again — and, once its tasks are gone, INACTIVE, its name
/// free for a new service.
#[test]
fn a_deleted_service_goes_inactive_and_frees_its_name() {
    let mut fleet = fixture::fleet(2, 1);
    let td = fixture::mps_family(&mut fleet, "embed", 4_096, None);
    service(&mut fleet, &td, 2, false);
    fixture::run(&mut fleet, 60);
    assert_eq!(fleet.clusters["prod"].services["embed"].tasks.len(), 2);
    let refused = fleet
        .delete_service("prod", "embed", false)
        .expect_err("scaled above 0");
    assert!(refused.to_string().contains("scaled above 0"), "{refused}");
    assert!(fleet.clusters["prod"].services["embed"].is_active());
    fleet
        .update_service(
            "prod",
            "embed",
            ServiceUpdate {
                desired_count: Some(0),
                ..ServiceUpdate::default()
            },
        )
        .expect("scaled to 0");
    let deleted = fleet
        .delete_service("prod", "embed", false)
        .expect("deleted");
    assert!(!deleted.is_active());
    assert_eq!(
        fleet
            .update_service("prod", "embed", ServiceUpdate::default())
            .expect_err("deleted"),
        EcsError::ServiceNotActive
    );
    assert_eq!(
        fleet
            .delete_service("prod", "embed", true)
            .expect_err("deleted"),
        EcsError::ServiceNotActive
    );
    fixture::run(&mut fleet, 60);
    let svc = &fleet.clusters["prod"].services["embed"];
    assert_eq!(svc.status(), "INACTIVE", "its tasks stopped");
    let live = fleet.clusters["prod"]
        .tasks
        .values()
        .filter(|t| t.is_live())
        .count();
    assert_eq!(live, 0);
    // An INACTIVE service's name can be used again: a new ACTIVE service.
    let again = NewService {
        name: "embed".into(),
        task_definition: td.clone(),
        desired_count: 1,
        config: DeploymentConfig::default(),
        placement_constraints: Vec::new(),
        placement_strategy: Vec::new(),
        capacity_provider_strategy: Vec::new(),
    };
    let created = fleet.create_service("prod", again).expect("created again");
    assert_eq!(created.status(), "ACTIVE");
}

/// With `force`, a service scaled above 0 is scaled to 0 and deleted at once.
#[test]
fn a_forced_delete_scales_to_zero_and_deletes() {
    let mut fleet = fixture::fleet(1, 1);
    let td = fixture::mps_family(&mut fleet, "embed", 4_096, None);
    service(&mut fleet, &td, 1, false);
    fixture::run(&mut fleet, 60);
    let deleted = fleet
        .delete_service("prod", "embed", true)
        .expect("deleted");
    assert_eq!(deleted.desired_count, 0);
    assert!(!deleted.is_active());
    fixture::run(&mut fleet, 60);
    assert_eq!(
        fleet.clusters["prod"].services["embed"].status(),
        "INACTIVE"
    );
}
