//! Unit tests of elastic capacity: launches for waiting tasks, auto repair, retirement.

use serde_json::json;

use super::*;
use crate::{
    elastic::AutoScalingGroup,
    engine::{fixture, NewService},
    model::DeploymentConfig,
};

/// Adds a provider of `kind` with `settings` to cluster `prod`.
pub(super) fn provider(fleet: &mut Fleet, name: &str, kind: ProviderKind, settings: Value) {
    let arn = fleet.arn(&format!("capacity-provider/{name}"));
    fleet.capacity_providers.insert(
        name.into(),
        CapacityProvider {
            name: name.into(),
            arn,
            kind,
            cluster: (kind == ProviderKind::ManagedInstances).then(|| "prod".into()),
            settings: settings.as_object().cloned().unwrap_or_default(),
            active: true,
            update_status: None,
        },
    );
    if let Some(cluster) = fleet.clusters.get_mut("prod") {
        cluster.capacity_providers.push(name.into());
    }
}

pub(super) fn managed(allowed: &[&str], repair: &str, scale_in_after: i64) -> Value {
    json!({
        "infrastructureRoleArn": "arn:aws:iam::123456789012:role/infra",
        "instanceLaunchTemplate": {
            "ec2InstanceProfileArn": "arn:aws:iam::123456789012:instance-profile/ecs",
            "networkConfiguration": {"subnets": ["subnet-1"]},
            "instanceRequirements": {
                "vCpuCount": {"min": 1}, "memoryMiB": {"min": 1},
                "acceleratorManufacturers": ["nvidia"],
                "allowedInstanceTypes": allowed
            }
        },
        "autoRepairConfiguration": {"actionsStatus": repair},
        "infrastructureOptimization": {"scaleInAfter": scale_in_after}
    })
}

pub(super) fn service_on(fleet: &mut Fleet, name: &str, td: &str, desired: u32, provider: &str) {
    fleet
        .create_service(
            "prod",
            NewService {
                name: name.into(),
                task_definition: td.into(),
                desired_count: desired,
                config: DeploymentConfig::default(),
                placement_constraints: Vec::new(),
                placement_strategy: Vec::new(),
                capacity_provider_strategy: vec![StrategyItem {
                    capacity_provider: provider.into(),
                    weight: 1,
                    base: 0,
                }],
            },
        )
        .expect("created");
}

pub(super) fn tasks_of(fleet: &Fleet, service: &str) -> Vec<crate::model::Task> {
    let cluster = &fleet.clusters["prod"];
    cluster.services[service]
        .tasks
        .iter()
        .filter_map(|arn| cluster.tasks.get(arn).cloned())
        .collect()
}

pub(super) fn provider_instances(fleet: &Fleet, provider: &str) -> Vec<(String, String)> {
    fleet.clusters["prod"]
        .instances
        .iter()
        .filter(|i| i.capacity_provider.as_deref() == Some(provider))
        .map(|i| (i.instance_type.clone(), i.room.status.clone()))
        .collect()
}

#[test]
fn tasks_wait_in_provisioning_until_managed_instances_launch_the_cheapest_type_that_fits() {
    let mut fleet = fixture::fleet(0, 0);
    provider(
        &mut fleet,
        "mi",
        ProviderKind::ManagedInstances,
        managed(&["g5.*", "g6.*"], "ENABLED", -1),
    );
    let td = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    service_on(&mut fleet, "embed", &td, 3, "mi");
    let waiting = tasks_of(&fleet, "embed");
    assert_eq!(waiting.len(), 3, "all three tasks exist at once");
    assert!(waiting
        .iter()
        .all(|t| t.last_status == TaskStatus::Provisioning
            && t.instance_arn.is_empty()
            && t.capacity_provider.as_deref() == Some("mi")));
    fixture::run(&mut fleet, 1);
    // Three tasks of 10,000 MiB: two g5.xlarge ($2.01 an hour) beat one g6.12xlarge ($4.60).
    let launches: Vec<&str> = fleet
        .elastic
        .launches
        .iter()
        .map(|l| l.instance_type.name)
        .collect();
    assert_eq!(launches, ["g5.xlarge", "g5.xlarge"]);
    // Nothing more is launched while those are on their way.
    fixture::run(&mut fleet, 60);
    assert_eq!(fleet.elastic.launches.len(), 2);
    assert!(tasks_of(&fleet, "embed")
        .iter()
        .all(|t| t.instance_arn.is_empty()));
    fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 30);
    assert_eq!(provider_instances(&fleet, "mi").len(), 2);
    let tasks = tasks_of(&fleet, "embed");
    assert!(
        tasks.iter().all(|t| t.last_status == TaskStatus::Running),
        "{tasks:?}"
    );
    assert!(tasks
        .iter()
        .all(|t| t.capacity_provider.as_deref() == Some("mi")));
    let svc = &fleet.clusters["prod"].services["embed"];
    assert_eq!(
        svc.deployments[0].rollout_state,
        crate::model::RolloutState::Completed
    );
    let kinds: Vec<ActivityKind> = fleet.elastic.activity["mi"]
        .iter()
        .map(|a| a.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            ActivityKind::Launched,
            ActivityKind::Launched,
            ActivityKind::Launching
        ]
    );
}

#[test]
fn a_provider_task_goes_only_to_the_providers_instances() {
    // A hand-registered instance with room does not take the provider's task.
    let mut fleet = fixture::fleet(1, 4);
    provider(
        &mut fleet,
        "mi",
        ProviderKind::ManagedInstances,
        managed(&["g6.*"], "ENABLED", -1),
    );
    let td = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    service_on(&mut fleet, "embed", &td, 1, "mi");
    fixture::run(&mut fleet, 1);
    assert!(tasks_of(&fleet, "embed")[0].instance_arn.is_empty());
    assert_eq!(fleet.elastic.launches[0].instance_type.name, "g6.12xlarge");
}

#[test]
fn requirements_that_match_no_type_that_fits_launch_nothing_and_the_tasks_wait() {
    let mut fleet = fixture::fleet(0, 0);
    provider(
        &mut fleet,
        "mi",
        ProviderKind::ManagedInstances,
        managed(&["g5.xlarge"], "ENABLED", -1),
    );
    // 30,000 MiB is more than an A10G has.
    let td = fixture::mps_family(&mut fleet, "big", 30_000, None);
    service_on(&mut fleet, "big", &td, 1, "mi");
    fixture::run(&mut fleet, 400);
    assert!(fleet.elastic.launches.is_empty());
    assert!(provider_instances(&fleet, "mi").is_empty());
    assert_eq!(
        tasks_of(&fleet, "big")[0].last_status,
        TaskStatus::Provisioning
    );
}

pub(super) fn asg(fleet: &mut Fleet, max_size: u32, max_step: u32) {
    provider(
        fleet,
        "asg",
        ProviderKind::AutoScalingGroup,
        json!({
            "autoScalingGroupArn": "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:x:autoScalingGroupName/gpu",
            "managedScaling": {"status": "ENABLED", "targetCapacity": 100, "minimumScalingStepSize": 1,
                "maximumScalingStepSize": max_step, "instanceWarmupPeriod": 120}
        }),
    );
    fleet.elastic.groups.insert(
        "gpu".into(),
        AutoScalingGroup {
            name: "gpu".into(),
            arn: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:x:autoScalingGroupName/gpu".into(),
            cluster: "prod".into(),
            instance_types: vec!["g5.xlarge".into()],
            min_size: 0,
            max_size,
            desired_capacity: 0,
            last_scale_out: None,
            above_target_since: None,
        },
    );
}

#[test]
fn an_auto_scaling_group_grows_by_its_largest_step_after_each_warm_up() {
    let mut fleet = fixture::fleet(0, 0);
    asg(&mut fleet, 10, 2);
    let td = fixture::mps_family(&mut fleet, "sim", 20_000, None);
    // One task of 20,000 MiB to a g5.xlarge: five instances, two at a time.
    service_on(&mut fleet, "sim", &td, 5, "asg");
    fixture::run(&mut fleet, 1);
    assert_eq!(fleet.elastic.launches.len(), 2);
    assert_eq!(fleet.elastic.groups["gpu"].desired_capacity, 2);
    fixture::run(&mut fleet, 100);
    assert_eq!(
        provider_instances(&fleet, "asg").len(),
        2,
        "registered after the launch"
    );
    assert!(
        fleet.elastic.launches.is_empty(),
        "and no new step before the warm-up"
    );
    fixture::run(&mut fleet, 30);
    assert_eq!(
        fleet.elastic.launches.len(),
        2,
        "the second step, after 120 s"
    );
    fixture::run(&mut fleet, 400);
    assert_eq!(provider_instances(&fleet, "asg").len(), 5);
    assert!(tasks_of(&fleet, "sim")
        .iter()
        .all(|t| t.last_status == TaskStatus::Running));
}

#[test]
fn an_auto_scaling_group_at_its_max_size_leaves_tasks_in_provisioning() {
    let mut fleet = fixture::fleet(0, 0);
    asg(&mut fleet, 2, 10);
    let td = fixture::mps_family(&mut fleet, "sim", 20_000, None);
    service_on(&mut fleet, "sim", &td, 3, "asg");
    fixture::run(&mut fleet, 900);
    assert_eq!(
        provider_instances(&fleet, "asg").len(),
        2,
        "never past MaxSize"
    );
    assert_eq!(fleet.elastic.groups["gpu"].desired_capacity, 2);
    let statuses: Vec<TaskStatus> = tasks_of(&fleet, "sim")
        .iter()
        .map(|t| t.last_status)
        .collect();
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == TaskStatus::Running)
            .count(),
        2
    );
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == TaskStatus::Provisioning)
            .count(),
        1
    );
    let svc = &fleet.clusters["prod"].services["sim"];
    assert_eq!(
        svc.deployments[0].rollout_state,
        crate::model::RolloutState::InProgress
    );
}

#[test]
fn auto_repair_drains_an_impaired_instance_launches_a_replacement_and_moves_the_tasks() {
    let mut fleet = fixture::fleet(0, 0);
    provider(
        &mut fleet,
        "mi",
        ProviderKind::ManagedInstances,
        managed(&["g6.*"], "ENABLED", -1),
    );
    let td = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    service_on(&mut fleet, "embed", &td, 2, "mi");
    fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 30);
    let first = fleet.clusters["prod"].instances[0].arn.clone();
    fleet.impair_mps("prod", &first);
    fixture::run(&mut fleet, REPAIR_AFTER_SECONDS + HOUSEKEEPING_SECONDS);
    assert_eq!(
        fleet.clusters["prod"]
            .instance(&first)
            .map(|i| i.room.status.as_str()),
        Some("DRAINING")
    );
    assert!(matches!(fleet.elastic.launches[0].cause, Cause::Repair(_)));
    fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 60);
    assert!(
        fleet.clusters["prod"].instance(&first).is_none(),
        "drained and terminated"
    );
    let tasks = tasks_of(&fleet, "embed");
    assert_eq!(tasks.len(), 2);
    assert!(tasks
        .iter()
        .all(|t| t.last_status == TaskStatus::Running && t.instance_arn != first));
    let kinds: Vec<ActivityKind> = fleet.elastic.activity["mi"]
        .iter()
        .map(|a| a.kind)
        .take(3)
        .collect();
    assert_eq!(
        kinds,
        [
            ActivityKind::Retired,
            ActivityKind::Launched,
            ActivityKind::Repairing
        ]
    );
}

#[test]
fn without_auto_repair_an_impaired_instance_stays() {
    let mut fleet = fixture::fleet(0, 0);
    provider(
        &mut fleet,
        "mi",
        ProviderKind::ManagedInstances,
        managed(&["g6.*"], "DISABLED", -1),
    );
    let td = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    service_on(&mut fleet, "embed", &td, 1, "mi");
    fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 30);
    let first = fleet.clusters["prod"].instances[0].arn.clone();
    fleet.impair_mps("prod", &first);
    fixture::run(&mut fleet, 600);
    assert_eq!(
        fleet.clusters["prod"]
            .instance(&first)
            .map(|i| i.room.status.as_str()),
        Some("ACTIVE")
    );
    assert!(fleet.elastic.launches.is_empty());
}

#[test]
fn an_idle_managed_instance_retires_after_scale_in_after_and_a_busy_one_stays() {
    let mut fleet = fixture::fleet(0, 0);
    provider(
        &mut fleet,
        "mi",
        ProviderKind::ManagedInstances,
        managed(&["g5.xlarge"], "ENABLED", 120),
    );
    let td = fixture::mps_family(&mut fleet, "embed", 10_000, None);
    service_on(&mut fleet, "embed", &td, 3, "mi");
    fixture::run(&mut fleet, MANAGED_LAUNCH_SECONDS + 30);
    assert_eq!(provider_instances(&fleet, "mi").len(), 2);
    // One task left: one instance has nothing to do and retires; the other keeps its task.
    let update = crate::engine::ServiceUpdate {
        desired_count: Some(1),
        ..Default::default()
    };
    fleet
        .update_service("prod", "embed", update)
        .expect("updated");
    fixture::run(&mut fleet, 60);
    assert_eq!(
        provider_instances(&fleet, "mi").len(),
        2,
        "not before scaleInAfter"
    );
    fixture::run(&mut fleet, 120);
    assert_eq!(provider_instances(&fleet, "mi").len(), 1);
    assert_eq!(
        tasks_of(&fleet, "embed")[0].last_status,
        TaskStatus::Running
    );
    fixture::run(&mut fleet, 600);
    assert_eq!(
        provider_instances(&fleet, "mi").len(),
        1,
        "a busy instance stays"
    );
}

#[test]
fn a_strategy_places_the_base_first_then_by_weight() {
    let mut fleet = fixture::fleet(0, 0);
    provider(
        &mut fleet,
        "a",
        ProviderKind::ManagedInstances,
        managed(&["g6.*"], "ENABLED", -1),
    );
    provider(
        &mut fleet,
        "b",
        ProviderKind::ManagedInstances,
        managed(&["g6.*"], "ENABLED", -1),
    );
    let td = fixture::mps_family(&mut fleet, "embed", 1_000, None);
    fleet
        .create_service(
            "prod",
            NewService {
                name: "embed".into(),
                task_definition: td,
                desired_count: 6,
                config: DeploymentConfig::default(),
                placement_constraints: Vec::new(),
                placement_strategy: Vec::new(),
                capacity_provider_strategy: vec![
                    StrategyItem {
                        capacity_provider: "a".into(),
                        weight: 1,
                        base: 2,
                    },
                    StrategyItem {
                        capacity_provider: "b".into(),
                        weight: 3,
                        base: 0,
                    },
                ],
            },
        )
        .expect("created");
    let on = |p: &str| {
        tasks_of(&fleet, "embed")
            .iter()
            .filter(|t| t.capacity_provider.as_deref() == Some(p))
            .count()
    };
    // Base 2 on a, then the other four 1 : 3.
    assert_eq!((on("a"), on("b")), (3, 3));
}
