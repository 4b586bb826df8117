//! Unit tests of the `rollout` module.

use super::*;
use crate::model::{ClusterView, FleetSnapshot, GpuContainer, GpuView, InstanceView, SharingMode};

fn gpu(index: u32, containers: Vec<GpuContainer>, total: u32) -> GpuView {
    let used: u32 = containers.iter().filter_map(|c| c.memory_mib).sum();
    let whole = containers.iter().any(|c| c.whole_gpu);
    GpuView {
        uuid: format!("GPU-{index}"),
        index,
        compute_allocated_percent: 0,
        usage: None,
        mode: if whole {
            SharingMode::Dedicated
        } else if containers.is_empty() {
            SharingMode::Idle
        } else {
            SharingMode::NvidiaMps
        },
        remaining_memory_mib: if whole { 0 } else { total - used },
        total_memory_mib: total,
        containers,
    }
}

fn mps(task: &str, memory: u32) -> GpuContainer {
    GpuContainer {
        task_arn: task.into(),
        container: "model".into(),
        service: Some("embed".into()),
        team: None,
        memory_mib: Some(memory),
        compute_percent: 100,
        whole_gpu: false,
        started_at: None,
    }
}

/// One cluster of `instances` single-GPU instances of 24 GiB, with the given containers.
fn cluster(gpus: Vec<Vec<GpuContainer>>) -> Cluster {
    let instances = gpus
        .into_iter()
        .enumerate()
        .map(|(n, containers)| {
            InstanceView::of(format!("i-{n}"), "g5.xlarge")
                .with_gpus(vec![gpu(0, containers, 24_000)])
        })
        .collect();
    let snapshot = FleetSnapshot {
        taken_at: "t".into(),
        api_calls: 0,
        cloudwatch_calls: 0,
        usage_error: None,
        clusters: vec![ClusterView {
            name: "ml".into(),
            instances,
            ..ClusterView::default()
        }],
        unknown_gpu_ids: 0,
    };
    Cluster::of(&snapshot, "ml", "embed").expect("cluster ml")
}

fn plan(desired: u32, max: u32, min: u32, new_memory: u32) -> RolloutPlan {
    RolloutPlan {
        cluster: "ml".into(),
        service: "embed".into(),
        desired,
        running: desired,
        maximum_percent: max,
        minimum_healthy_percent: min,
        old: GpuRequest::Mps(vec![8_000]),
        new: GpuRequest::Mps(vec![new_memory]),
        old_needs: Needs::default(),
        new_needs: Needs::default(),
        strategy: None,
        placement_strategy: Vec::new(),
        growth: None,
    }
}

#[test]
fn a_rollout_with_room_for_the_overlap_completes() {
    // Two old tasks of 8 GB on two 24 GB GPUs: 16 GB free on each, room for new ones.
    let cluster = cluster(vec![vec![mps("t1", 8_000)], vec![mps("t2", 8_000)]]);
    let check = pre_check(&cluster, &plan(2, 200, 100, 12_000));
    assert_eq!(check.verdict, Verdict::Completes, "{check:?}");
    assert_eq!(check.steps[0].started, 2);
    assert_eq!(check.steps[0].stopped, 2);
    assert!(check.suggestions.is_empty());
}

#[test]
fn a_rollout_that_needs_the_old_tasks_room_stalls_at_the_overlap() {
    // New tasks need 20 GB: none fits beside an old 8 GB task.
    let cluster = cluster(vec![vec![mps("t1", 8_000)], vec![mps("t2", 8_000)]]);
    let check = pre_check(&cluster, &plan(2, 200, 100, 20_000));
    let Verdict::Stalls { step, reason } = &check.verdict else {
        panic!("{check:?}");
    };
    assert_eq!(*step, 1);
    assert!(
        reason.contains("2 new tasks could not be placed"),
        "{reason}"
    );
    assert!(reason.contains("minimum healthy percent (100 %)"));
    // Stopping old tasks first lets it through, as do fewer or smaller tasks or one more
    // instance.
    assert!(
        check.suggestions[0].starts_with("Set minimumHealthyPercent to 75 %")
            || check.suggestions[0].starts_with("Set minimumHealthyPercent to 50 %"),
        "{:?}",
        check.suggestions
    );
    assert!(check
        .suggestions
        .iter()
        .any(|s| s.contains("MiB of GPU memory per task instead of 20000")));
    assert!(
        check
            .suggestions
            .iter()
            .any(|s| s == "Add 1 g5.xlarge instance to the cluster."),
        "{:?}",
        check.suggestions
    );
    // Each suggestion really completes.
    assert!(completes(&cluster, &plan(2, 200, 50, 20_000)));
    assert!(completes(&cluster, &plan(2, 200, 100, 16_000)));
    assert!(!completes(&cluster, &plan(2, 200, 100, 16_001)));
}

#[test]
fn a_rollout_larger_than_any_gpu_never_fits() {
    let cluster = cluster(vec![vec![mps("t1", 8_000)]]);
    let check = pre_check(&cluster, &plan(1, 200, 100, 30_000));
    let Verdict::Never { reason } = &check.verdict else {
        panic!("{check:?}");
    };
    assert!(reason.contains("MPS 30000 MiB"), "{reason}");
    assert!(check.steps.is_empty());
}

#[test]
fn bounds_that_allow_no_step_stall_at_once() {
    let cluster = cluster(vec![vec![mps("t1", 8_000)]]);
    let check = pre_check(&cluster, &plan(1, 100, 100, 1_000));
    let Verdict::Stalls { reason, .. } = &check.verdict else {
        panic!("{check:?}");
    };
    assert!(reason.contains("allow no step"), "{reason}");
    assert!(check
        .suggestions
        .iter()
        .any(|s| s.starts_with("Set minimumHealthyPercent to 0 %")));
}

/// Two single-GPU instances with CPU, memory and ports as the reader fills them.
fn roomy_cluster(cpu: u32, not_placing: Option<&str>) -> Cluster {
    let room = Room {
        status: "ACTIVE".into(),
        agent_connected: true,
        cpu_remaining: cpu,
        memory_remaining_mib: 30_000,
        tcp_ports_used: [22].into_iter().collect(),
        udp_ports_used: Default::default(),
        attributes: Default::default(),
        enis_free: Some(3),
    };
    let instances = (0..2)
        .map(|n| InstanceView {
            not_placing: (n == 1).then(|| not_placing.map(str::to_string)).flatten(),
            ..InstanceView::of(format!("i-{n}"), "g5.xlarge")
                .with_room(Some(room.clone()))
                .with_gpus(vec![gpu(0, vec![mps(&format!("t{n}"), 4_000)], 24_000)])
        })
        .collect();
    let snapshot = FleetSnapshot {
        taken_at: "t".into(),
        api_calls: 0,
        cloudwatch_calls: 0,
        usage_error: None,
        clusters: vec![ClusterView {
            name: "ml".into(),
            instances,
            ..ClusterView::default()
        }],
        unknown_gpu_ids: 0,
    };
    Cluster::of(&snapshot, "ml", "embed").expect("cluster ml")
}

fn with_needs(mut plan: RolloutPlan, needs: Needs) -> RolloutPlan {
    plan.old = GpuRequest::Mps(vec![4_000]);
    plan.old_needs = needs.clone();
    plan.new_needs = needs;
    plan
}

#[test]
fn cpu_that_runs_out_stalls_a_rollout_the_gpus_would_let_through() {
    let needs = Needs {
        cpu: 1_024,
        memory_mib: 2_048,
        ..Needs::default()
    };
    // GPUs have room for the overlap; CPU has room for it with 1,024 units free on each
    // instance, not with 512.
    let plan = with_needs(plan(2, 200, 100, 4_000), needs);
    let check = pre_check(&roomy_cluster(1_024, None), &plan);
    assert_eq!(check.verdict, Verdict::Completes, "{check:?}");
    let check = pre_check(&roomy_cluster(512, None), &plan);
    match &check.verdict {
        Verdict::Stalls { reason, .. } => {
            assert!(
                reason.contains("Out of CPU (1024 units per task)"),
                "{reason}"
            );
            assert!(
                reason.contains("has insufficient CPU units available"),
                "{reason}"
            );
        }
        other => panic!("stalls on CPU: {other:?}"),
    }
    assert!(check
        .checked
        .iter()
        .any(|c| c.contains("CPU (1024 units per task)")));
}

#[test]
fn enis_that_run_out_stall_an_awsvpc_rollout_and_unknown_ones_are_said() {
    let needs = Needs {
        awsvpc: true,
        ..Needs::default()
    };
    // Each instance has 3 ENIs left besides its old task's: 6 new tasks fit beside the 2
    // old ones, 8 do not while minimum healthy 100 % keeps the old ones.
    let plan_of = |desired: u32| {
        let mut plan = with_needs(plan(desired, 400, 100, 1_000), needs.clone());
        plan.running = 2;
        plan
    };
    let cluster = roomy_cluster(8_192, None);
    let check = pre_check(&cluster, &plan_of(6));
    assert_eq!(check.verdict, Verdict::Completes, "{check:?}");
    assert!(
        check
            .checked
            .iter()
            .any(|c| c.contains("ENI attachment points") && c.contains("6 left")),
        "{:?}",
        check.checked
    );
    match pre_check(&cluster, &plan_of(8)).verdict {
        Verdict::Stalls { reason, .. } => {
            assert!(reason.contains("Out of ENI attachment points"), "{reason}");
            assert!(reason.contains("RESOURCE:ENI"), "{reason}");
        }
        other => panic!("stalls on ENIs: {other:?}"),
    }
    // An instance whose limit is not known (ENI trunking) counts none, and is named.
    let mut trunked = roomy_cluster(8_192, None);
    if let Some(room) = trunked.hosts[1].room.as_mut() {
        room.enis_free = None;
    }
    let check = pre_check(&trunked, &plan_of(8));
    assert_eq!(check.verdict, Verdict::Completes, "unknown is not zero");
    assert!(
        check
            .unknown
            .iter()
            .any(|u| u.contains("ENI attachment points") && u.contains("i-1")),
        "{:?}",
        check.unknown
    );
}

#[test]
fn a_draining_instance_takes_nothing_and_the_check_says_so() {
    let needs = Needs {
        cpu: 512,
        memory_mib: 512,
        ..Needs::default()
    };
    let plan = with_needs(plan(2, 200, 100, 4_000), needs);
    assert_eq!(
        pre_check(&roomy_cluster(8_192, None), &plan).verdict,
        Verdict::Completes
    );
    // The same, with the second instance DRAINING: only one instance for the overlap of
    // two new tasks beside two old ones... which its GPU still holds.
    let check = pre_check(&roomy_cluster(8_192, Some("DRAINING")), &plan);
    assert!(
        check
            .checked
            .iter()
            .any(|c| c.contains("left out") && c.contains("i-1 (DRAINING)")),
        "{:?}",
        check.checked
    );
    assert!(check.checked.iter().any(
        |c| c.contains("placement strategy spread(attribute:ecs.availability-zone) (ECS's default")
    ));
    assert!(check
        .unknown
        .iter()
        .any(|u| u.contains("which old tasks ECS stops first")));
    let binpack = RolloutPlan {
        placement_strategy: vec!["binpack(memory)".into()],
        ..plan
    };
    assert!(pre_check(&roomy_cluster(8_192, None), &binpack)
        .checked
        .iter()
        .any(|c| c.contains("placement strategy binpack(memory): it chooses")));
}

#[test]
fn distinct_instance_and_a_static_port_allow_one_task_per_instance() {
    // Two instances, two old tasks (one on each): a new task needs an instance without
    // one of the service's tasks, so with 100 % minimum healthy nothing can start.
    for needs in [
        Needs {
            distinct_instance: true,
            ..Needs::default()
        },
        Needs {
            tcp_ports: vec![8443],
            ..Needs::default()
        },
    ] {
        let mut cluster = roomy_cluster(8_192, None);
        if !needs.tcp_ports.is_empty() {
            for host in &mut cluster.hosts {
                if let Some(room) = host.room.as_mut() {
                    room.tcp_ports_used.insert(8443);
                }
            }
        }
        let stuck = with_needs(plan(2, 200, 100, 4_000), needs.clone());
        match pre_check(&cluster, &stuck).verdict {
            Verdict::Stalls { reason, .. } => assert!(
                reason.contains("distinctInstance") || reason.contains("host port 8443/tcp"),
                "{reason}"
            ),
            other => panic!("{needs:?} stalls: {other:?}"),
        }
        // Stopping old tasks first (minimum healthy 50 %) frees an instance at a time.
        let through = with_needs(plan(2, 100, 50, 4_000), needs.clone());
        assert_eq!(
            pre_check(&cluster, &through).verdict,
            Verdict::Completes,
            "{needs:?}"
        );
    }
}

#[test]
fn a_blue_green_rollout_needs_room_for_the_whole_new_set() {
    // Two old 8 GB tasks on two 24 GB GPUs; new tasks of 12 GB: a rolling update with
    // minimum healthy 50 % gets through, blue/green needs 2 × 12 GB beside the old tasks
    // on each GPU and does not.
    let cluster = cluster(vec![vec![mps("t1", 8_000)], vec![mps("t2", 8_000)]]);
    let mut rolling = plan(2, 100, 50, 12_000);
    assert_eq!(pre_check(&cluster, &rolling).verdict, Verdict::Completes);
    rolling.new = GpuRequest::Mps(vec![16_001]);
    assert_eq!(pre_check(&cluster, &rolling).verdict, Verdict::Completes);
    let blue_green = RolloutPlan {
        strategy: Some("BLUE_GREEN".into()),
        ..rolling
    };
    let check = pre_check(&cluster, &blue_green);
    assert!(matches!(check.verdict, Verdict::Stalls { .. }), "{check:?}");
    assert!(check.checked.iter().any(|c| c.contains("BLUE_GREEN")));
}

/// Two instances with one old 8 GB task each, and a third whose MPS daemon is impaired, holding
/// `on_impaired`.
fn with_impaired(on_impaired: Vec<GpuContainer>) -> Cluster {
    let mut snapshot_cluster = cluster(vec![
        vec![mps("t1", 8_000)],
        vec![mps("t2", 8_000)],
        on_impaired,
    ]);
    snapshot_cluster.hosts[2].impaired = true;
    snapshot_cluster
}

#[test]
fn an_instance_with_an_impaired_mps_daemon_that_could_take_a_new_task_stalls_the_rollout() {
    // ECS does not document avoiding an impaired instance: a new MPS task may go there and fail
    // at start, so the check does not promise the rollout, and draining it is the way through.
    let check = pre_check(&with_impaired(Vec::new()), &plan(2, 200, 100, 12_000));
    let Verdict::Stalls { step, reason } = &check.verdict else {
        panic!("{check:?}");
    };
    assert_eq!(*step, 1);
    assert!(
        reason.contains("may be placed on i-2, whose MPS daemon is impaired"),
        "{reason}"
    );
    assert!(reason.contains("MPS control daemon is not responding on this instance"));
    assert!(
        check
            .suggestions
            .iter()
            .any(|s| s.starts_with("Drain i-2 (set it DRAINING)")),
        "{:?}",
        check.suggestions
    );
    assert!(
        check.unknown.iter().any(
            |u| u.contains("whether ECS avoids an instance whose MPS daemon is impaired (i-2)")
        ),
        "{:?}",
        check.unknown
    );
    // Old tasks are not stopped for new ones that do not start: with a lower minimum the check
    // shows the service shrinking, and still stalls.
    let check = pre_check(&with_impaired(Vec::new()), &plan(2, 200, 50, 12_000));
    assert!(matches!(check.verdict, Verdict::Stalls { .. }), "{check:?}");
    let last = check.steps.last().expect("steps");
    assert_eq!((last.old_running, last.new_running), (1, 0), "{check:?}");
}

#[test]
fn an_impaired_instance_without_room_or_a_whole_gpu_task_does_not_stall_the_rollout() {
    // The impaired instance's GPU is too full for a new task: ECS cannot place one there.
    let full = with_impaired(vec![GpuContainer {
        service: Some("other".into()),
        ..mps("o1", 20_000)
    }]);
    let check = pre_check(&full, &plan(2, 200, 100, 12_000));
    assert_eq!(check.verdict, Verdict::Completes, "{check:?}");
    // A whole-GPU task passes no MPS gate at start: the impaired instance takes it.
    let mut whole = plan(1, 200, 0, 0);
    whole.old = GpuRequest::Whole(vec![1]);
    whole.new = GpuRequest::Whole(vec![1]);
    whole.running = 0;
    let check = pre_check(&with_impaired(Vec::new()), &whole);
    assert_eq!(check.verdict, Verdict::Completes, "{check:?}");
}
