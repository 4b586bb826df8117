//! Unit tests of growth in the pre-check.

use placement::growth::{AsgScaling, TypeFacts};

use crate::model::{
    rollout::{launch_for_one, pre_check, Cluster, Growth, GrowthSource, RolloutPlan, Verdict},
    ClusterView, FleetSnapshot, GpuContainer, GpuView, InstanceView, SharingMode,
};
use placement::{resources::Needs, GpuRequest};

fn kind(name: &str, gpus: usize, gpu_memory_mib: u32, vcpus: u32, usd: f64) -> TypeFacts {
    TypeFacts {
        name: name.into(),
        gpus,
        gpu_memory_mib,
        total_gpu_memory_mib: gpu_memory_mib * gpus as u32,
        accelerator_name: "l4".into(),
        manufacturer: "nvidia".into(),
        vcpus,
        memory_mib: vcpus * 4096,
        task_enis: Some(7),
        usd_per_hour: Some(usd),
    }
}

/// A cluster of one full single-GPU instance (24 GB, all taken by another service).
fn full_cluster() -> Cluster {
    let taken = GpuContainer {
        task_arn: "other".into(),
        container: "model".into(),
        service: Some("other".into()),
        team: None,
        memory_mib: Some(24_000),
        compute_percent: 100,
        whole_gpu: false,
        started_at: None,
    };
    let gpu = GpuView {
        uuid: "GPU-0".into(),
        index: 0,
        compute_allocated_percent: 100,
        usage: None,
        mode: SharingMode::NvidiaMps,
        remaining_memory_mib: 0,
        total_memory_mib: 24_000,
        containers: vec![taken],
    };
    let snapshot = FleetSnapshot {
        taken_at: "t".into(),
        api_calls: 0,
        cloudwatch_calls: 0,
        usage_error: None,
        clusters: vec![ClusterView {
            name: "ml".into(),
            instances: vec![InstanceView::of("i-0".to_string(), "g5.xlarge").with_gpus(vec![gpu])],
            ..ClusterView::default()
        }],
        unknown_gpu_ids: 0,
    };
    Cluster::of(&snapshot, "ml", "embed").expect("cluster ml")
}

/// A new service of `desired` tasks of `memory` MiB each on `source`.
fn plan(desired: u32, memory: u32, source: GrowthSource) -> RolloutPlan {
    RolloutPlan {
        cluster: "ml".into(),
        service: "embed".into(),
        desired,
        running: 0,
        maximum_percent: 200,
        minimum_healthy_percent: 100,
        old: GpuRequest::None,
        new: GpuRequest::Mps(vec![memory]),
        old_needs: Needs::default(),
        new_needs: Needs {
            cpu: 1024,
            memory_mib: 4096,
            ..Needs::default()
        },
        strategy: None,
        placement_strategy: Vec::new(),
        growth: Some(Growth {
            provider: "gpu".into(),
            source,
        }),
    }
}

fn managed(candidates: Vec<TypeFacts>) -> GrowthSource {
    GrowthSource::ManagedInstances {
        candidates,
        excluded: vec!["g6f.large: a fractional GPU cannot be shared".into()],
        fee_note: None,
    }
}

fn asg(max_size: u32, max_step: u32, size: u32) -> GrowthSource {
    GrowthSource::AutoScaling {
        kind: kind("g6.12xlarge", 4, 22_000, 48, 4.602),
        scaling: AsgScaling {
            target: 100,
            min_step: 1,
            max_step,
            max_size,
        },
        size,
        warmup_seconds: 300,
    }
}

#[test]
fn a_full_fleet_on_managed_instances_completes_with_the_cheapest_launch_and_its_price() {
    let small = kind("g6.xlarge", 1, 22_000, 4, 0.805);
    let large = kind("g6.12xlarge", 4, 22_000, 48, 4.602);
    let check = pre_check(
        &full_cluster(),
        &plan(3, 10_000, managed(vec![large, small])),
    );
    assert_eq!(check.verdict, Verdict::Completes, "{:?}", check.steps);
    let growth = check.growth.expect("a launch");
    // Three tasks of 10,000 MiB, two to a GPU: two g6.xlarge ($1.61) beat a g6.12xlarge.
    assert_eq!(growth.launches, [("g6.xlarge".to_string(), 2)]);
    assert_eq!(growth.cents_per_hour, Some(161));
    assert_eq!(growth.seconds, 180);
    assert!(growth.assumed[0].contains("assumption"));
}

#[test]
fn without_a_provider_the_same_rollout_stalls_as_on_a_fixed_fleet() {
    let mut fixed = plan(3, 10_000, managed(Vec::new()));
    fixed.growth = None;
    let check = pre_check(&full_cluster(), &fixed);
    assert!(matches!(check.verdict, Verdict::Stalls { .. }));
    assert!(check.growth.is_none());
}

#[test]
fn a_task_no_instance_could_ever_host_is_launched_for_when_a_type_fits() {
    // 40,000 MiB fits no 24 GB GPU; an L40S type of the provider takes it.
    let l40s = kind("g6e.12xlarge", 4, 45_000, 48, 10.493);
    let check = pre_check(&full_cluster(), &plan(1, 40_000, managed(vec![l40s])));
    assert_eq!(check.verdict, Verdict::Completes);
    let never = pre_check(
        &full_cluster(),
        &plan(
            1,
            60_000,
            managed(vec![kind("g6e.12xlarge", 4, 45_000, 48, 10.493)]),
        ),
    );
    match never.verdict {
        Verdict::Never { reason } => {
            assert!(reason.contains("cannot help"), "{reason}");
            assert!(reason.contains("g6f.large"), "{reason}");
        }
        other => panic!("expected never, got {other:?}"),
    }
}

#[test]
fn an_auto_scaling_group_grows_in_steps_after_each_warm_up() {
    // 20 tasks of 10,000 MiB: eight to a g6.12xlarge, three instances, two at a time.
    let check = pre_check(&full_cluster(), &plan(20, 10_000, asg(10, 2, 1)));
    assert_eq!(check.verdict, Verdict::Completes, "{:?}", check.steps);
    let growth = check.growth.expect("launches");
    assert_eq!(growth.instances(), 3);
    assert_eq!(growth.seconds, 90 + 300);
    assert!(growth.limit.is_none());
}

#[test]
fn an_auto_scaling_group_at_its_max_size_stalls_and_says_so() {
    let check = pre_check(&full_cluster(), &plan(20, 10_000, asg(2, 10, 1)));
    match &check.verdict {
        Verdict::Stalls { reason, .. } => assert!(reason.contains("MaxSize of 2"), "{reason}"),
        other => panic!("expected a stall, got {other:?}"),
    }
    let growth = check.growth.expect("one launch, then the limit");
    assert_eq!(growth.instances(), 1);
    assert!(growth.limit.is_some_and(|l| l.contains("PROVISIONING")));
}

#[test]
fn a_provider_that_does_not_grow_says_why_the_tasks_wait() {
    let source = GrowthSource::Fixed {
        why: "managed scaling is off: the group does not grow for waiting tasks".into(),
    };
    let check = pre_check(&full_cluster(), &plan(2, 10_000, source));
    match &check.verdict {
        Verdict::Stalls { reason, .. } => {
            assert!(reason.contains("managed scaling is off"), "{reason}")
        }
        other => panic!("expected a stall, got {other:?}"),
    }
}

fn one_task(memory: u32) -> placement::growth::Shape {
    placement::growth::Shape {
        gpu: GpuRequest::Mps(vec![memory]),
        needs: Needs {
            cpu: 1024,
            memory_mib: 4096,
            ..Needs::default()
        },
        group: "fit-check".into(),
    }
}

fn growth_of(source: GrowthSource) -> Growth {
    Growth {
        provider: "gpu".into(),
        source,
    }
}

#[test]
fn the_fit_check_names_the_cheapest_type_a_managed_provider_launches_for_one_task() {
    let small = kind("g6.xlarge", 1, 22_000, 4, 0.805);
    let l40s = kind("g6e.xlarge", 1, 45_000, 4, 1.861);
    let source = managed(vec![l40s.clone(), small.clone()]);
    let launch = launch_for_one("ml", &growth_of(source.clone()), &one_task(10_000));
    assert_eq!(launch.instance_type.as_deref(), Some("g6.xlarge"));
    assert_eq!((launch.gpus, launch.gpu_memory_mib), (1, 22_000));
    assert_eq!((launch.seconds, launch.cents_per_hour), (180, Some(81)));
    assert!(launch.limit.is_none());
    // Too large for the L4: the L40S type, at its own price.
    let large = launch_for_one("ml", &growth_of(source), &one_task(30_000));
    assert_eq!(large.instance_type.as_deref(), Some("g6e.xlarge"));
    assert_eq!(large.cents_per_hour, Some(186));
    // Larger than any type: nothing, and why, with the types not launched.
    let never = launch_for_one(
        "ml",
        &growth_of(managed(vec![small, l40s])),
        &one_task(60_000),
    );
    assert_eq!(never.instance_type, None);
    let limit = never.limit.expect("why not");
    assert!(
        limit.contains("g6.xlarge, g6e.xlarge") || limit.contains("g6e.xlarge, g6.xlarge"),
        "{limit}"
    );
    assert!(limit.contains("g6f.large"), "{limit}");
}

#[test]
fn the_fit_check_says_an_auto_scaling_group_at_its_max_size_launches_nothing() {
    let room = launch_for_one("ml", &growth_of(asg(4, 1, 3)), &one_task(10_000));
    assert_eq!(room.instance_type.as_deref(), Some("g6.12xlarge"));
    assert_eq!(room.seconds, 90);
    let full = launch_for_one("ml", &growth_of(asg(4, 1, 4)), &one_task(10_000));
    assert_eq!(full.instance_type, None);
    assert!(full.limit.is_some_and(|l| l.contains("MaxSize of 4")));
    let too_large = launch_for_one("ml", &growth_of(asg(10, 1, 1)), &one_task(30_000));
    assert!(too_large
        .limit
        .is_some_and(|l| l.contains("does not fit an empty g6.12xlarge")));
    let fixed = GrowthSource::Fixed {
        why: "managed scaling is off".into(),
    };
    let off = launch_for_one("ml", &growth_of(fixed), &one_task(1_000));
    assert_eq!(off.limit.as_deref(), Some("managed scaling is off"));
}

#[test]
fn a_task_the_fleet_never_hosts_is_not_never_when_a_provider_launches_for_it() {
    use crate::model::fit::FitReport;
    let never = FitReport {
        never: Some("larger than any GPU".into()),
        ..FitReport::default()
    };
    let l40s = kind("g6e.xlarge", 1, 45_000, 4, 1.861);
    let launches = launch_for_one("ml", &growth_of(managed(vec![l40s])), &one_task(30_000));
    let grown = never.clone().with_growth(vec![launches]);
    assert!(grown.never.is_none());
    assert_eq!(grown.growth.len(), 1);
    // A provider that launches nothing leaves "never" as it was.
    let stuck = launch_for_one("ml", &growth_of(asg(4, 1, 4)), &one_task(10_000));
    assert!(never.with_growth(vec![stuck]).never.is_some());
}
