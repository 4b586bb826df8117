//! Unit tests of instances leaving a provider: Spot reclaims, consolidation of under-used
//! Managed Instances, an Auto Scaling group's scale-in.

use serde_json::json;

use super::super::tests::{asg, managed, provider, provider_instances, service_on, tasks_of};
use super::*;
use crate::{
    engine::{fixture, NewService},
    model::{DeploymentConfig, TaskStatus},
};

/// How often repairs and retirements are looked for, as the engine does.
const HOUSEKEEPING: i64 = 10;

fn spot(allowed: &[&str]) -> Value {
    let mut settings = managed(allowed, "ENABLED", -1);
    settings["instanceLaunchTemplate"]["capacityOptionType"] = json!("SPOT");
    settings
}

#[test]
fn ec2_reclaims_a_spot_instance_after_its_notice_and_the_tasks_move_to_a_new_one() {
    let mut fleet = fixture::fleet(0, 0);
    provider(
        &mut fleet,
        "spot",
        ProviderKind::ManagedInstances,
        spot(&["g5.xlarge"]),
    );
    let td = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    service_on(&mut fleet, "embed", &td, 2, "spot");
    fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 30);
    let first = fleet.clusters["prod"].instances[0].clone();
    assert!(first.spot, "a SPOT provider launches Spot instances");
    assert!(!fleet.interrupt_spot("prod", "no-such-instance"));
    assert!(fleet.interrupt_spot("prod", &first.arn));
    assert!(!fleet.interrupt_spot("prod", &first.arn), "one notice");
    fixture::run(&mut fleet, 1);
    assert_eq!(
        fleet.clusters["prod"]
            .instance(&first.arn)
            .map(|i| i.room.status.as_str()),
        Some("DRAINING")
    );
    // The replacements wait for a new instance, which takes longer than the notice: EC2
    // terminates the old one first and the tasks still there stop.
    fixture::run(&mut fleet, SPOT_NOTICE_SECONDS + HOUSEKEEPING);
    assert!(fleet.clusters["prod"].instance(&first.arn).is_none());
    let stopped: Vec<&crate::model::Task> = fleet.clusters["prod"]
        .tasks
        .values()
        .filter(|t| t.instance_arn == first.arn)
        .collect();
    assert_eq!(stopped.len(), 2, "both tasks ran there");
    for task in stopped {
        assert_eq!(task.desired_status, TaskStatus::Stopped);
        assert_eq!(task.stop_code, Some("SpotInterruption"));
        assert_eq!(
            task.stopped_reason.as_deref(),
            Some(format!("Host EC2 (instance {}) terminated.", first.ec2_instance_id).as_str())
        );
    }
    fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 60);
    let tasks = tasks_of(&fleet, "embed");
    assert_eq!(tasks.len(), 2, "the service is whole again");
    assert!(tasks.iter().all(|t| t.last_status == TaskStatus::Running));
    assert!(fleet.clusters["prod"].instances.iter().all(|i| i.spot));
    let kinds: Vec<ActivityKind> = fleet.elastic.activity["spot"]
        .iter()
        .map(|a| a.kind)
        .collect();
    assert!(kinds.contains(&ActivityKind::Interrupted), "{kinds:?}");
}

#[test]
fn an_on_demand_instance_is_not_reclaimed() {
    let mut fleet = fixture::fleet(0, 0);
    provider(
        &mut fleet,
        "mi",
        ProviderKind::ManagedInstances,
        managed(&["g5.xlarge"], "ENABLED", -1),
    );
    let td = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    service_on(&mut fleet, "embed", &td, 1, "mi");
    fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 30);
    let first = fleet.clusters["prod"].instances[0].clone();
    assert!(!first.spot);
    assert!(!fleet.interrupt_spot("prod", &first.arn));
    fixture::run(&mut fleet, 300);
    assert!(fleet.clusters["prod"].instance(&first.arn).is_some());
}

/// Two g5.xlarge instances of provider `mi` (scaleInAfter 120 s), each running one task of
/// 10,000 MiB — of services `a` and `b`, or of `a` twice when `distinct`.
fn two_half_empty_instances(distinct: bool) -> Fleet {
    let mut fleet = fixture::fleet(0, 0);
    provider(
        &mut fleet,
        "mi",
        ProviderKind::ManagedInstances,
        managed(&["g5.xlarge"], "ENABLED", 120),
    );
    let td = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    if distinct {
        fleet
            .create_service(
                "prod",
                NewService {
                    name: "a".into(),
                    task_definition: td,
                    desired_count: 2,
                    config: DeploymentConfig::default(),
                    placement_constraints: vec![json!({"type": "distinctInstance"})],
                    placement_strategy: Vec::new(),
                    capacity_provider_strategy: vec![StrategyItem {
                        capacity_provider: "mi".into(),
                        weight: 1,
                        base: 0,
                    }],
                },
            )
            .expect("created");
        fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 30);
    } else {
        // Two tasks share one GPU; a task of b then needs a second instance; a scales in to one.
        service_on(&mut fleet, "a", &td, 2, "mi");
        fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 30);
        service_on(&mut fleet, "b", &td, 1, "mi");
        fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 30);
        let update = crate::engine::ServiceUpdate {
            desired_count: Some(1),
            ..Default::default()
        };
        fleet.update_service("prod", "a", update).expect("updated");
        fixture::run(&mut fleet, 30);
    }
    let busy: Vec<u32> = fleet.clusters["prod"]
        .instances
        .iter()
        .map(|i| i.running_tasks)
        .collect();
    assert_eq!(busy, [1, 1], "one task on each of two instances");
    fleet
}

#[test]
fn an_under_used_managed_instance_is_consolidated_onto_another_after_scale_in_after() {
    let mut fleet = two_half_empty_instances(false);
    fixture::run(&mut fleet, 60);
    assert_eq!(
        provider_instances(&fleet, "mi").len(),
        2,
        "not before scaleInAfter"
    );
    fixture::run(&mut fleet, 120 + MANAGED_LAUNCH_SECONDS);
    let left = provider_instances(&fleet, "mi");
    assert_eq!(left, [("g5.xlarge".to_string(), "ACTIVE".to_string())]);
    for service in ["a", "b"] {
        let tasks = tasks_of(&fleet, service);
        assert_eq!(tasks.len(), 1, "{service}");
        assert_eq!(tasks[0].last_status, TaskStatus::Running, "{service}");
    }
    let kinds: Vec<ActivityKind> = fleet.elastic.activity["mi"]
        .iter()
        .map(|a| a.kind)
        .collect();
    assert!(kinds.contains(&ActivityKind::Consolidating), "{kinds:?}");
    // Nearly full now: nothing more to consolidate, and nothing moves back.
    fixture::run(&mut fleet, 900);
    assert_eq!(provider_instances(&fleet, "mi").len(), 1);
}

#[test]
fn an_instance_whose_tasks_cannot_move_is_not_consolidated() {
    // distinctInstance keeps a's two tasks apart: neither instance can take the other's.
    let mut fleet = two_half_empty_instances(true);
    fixture::run(&mut fleet, 900);
    assert_eq!(provider_instances(&fleet, "mi").len(), 2);
    assert!(!fleet.elastic.activity["mi"]
        .iter()
        .any(|a| a.kind == ActivityKind::Consolidating));
}

#[test]
fn an_auto_scaling_group_scales_in_its_idle_instances_after_fifteen_minutes_above_target() {
    let mut fleet = fixture::fleet(0, 0);
    asg(&mut fleet, 10, 2);
    let td = fixture::mps_family(&mut fleet, "sim", 20_000, None);
    // One task of 20,000 MiB to a g5.xlarge: five instances.
    service_on(&mut fleet, "sim", &td, 5, "asg");
    fixture::run(&mut fleet, 900);
    assert_eq!(provider_instances(&fleet, "asg").len(), 5);
    // Two tasks left: three instances idle; the group scales in by at most two at a time,
    // after fifteen minutes, and only idle instances go.
    let update = crate::engine::ServiceUpdate {
        desired_count: Some(2),
        ..Default::default()
    };
    fleet
        .update_service("prod", "sim", update)
        .expect("updated");
    fixture::run(&mut fleet, 600);
    assert_eq!(
        provider_instances(&fleet, "asg").len(),
        5,
        "not before fifteen minutes"
    );
    fixture::run(&mut fleet, 400);
    assert_eq!(
        fleet.elastic.groups["gpu"].desired_capacity, 3,
        "one step of two"
    );
    fixture::run(&mut fleet, 60);
    assert_eq!(provider_instances(&fleet, "asg").len(), 3);
    fixture::run(&mut fleet, 1_000);
    assert_eq!(fleet.elastic.groups["gpu"].desired_capacity, 2);
    assert_eq!(provider_instances(&fleet, "asg").len(), 2);
    assert!(tasks_of(&fleet, "sim")
        .iter()
        .all(|t| t.last_status == TaskStatus::Running));
    // Busy instances are never taken, whatever the target says.
    fixture::run(&mut fleet, 3_600);
    assert_eq!(provider_instances(&fleet, "asg").len(), 2);
}
