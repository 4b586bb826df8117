//! Unit tests of the `scheduling` module.

use super::*;
use crate::engine::fixture;

fn place(fleet: &mut Fleet, td: &str) -> String {
    fleet
        .run_task("prod", td, "family:test".into(), None)
        .expect("placed")
}

#[test]
fn mps_tasks_go_best_fit_by_gpu_memory() {
    let mut fleet = fixture::fleet(2, 1);
    let big = fixture::mps_family(&mut fleet, "big", 16_000, None);
    let small = fixture::mps_family(&mut fleet, "small", 6_000, None);
    let first = place(&mut fleet, &big);
    let second = place(&mut fleet, &small);
    let third = place(&mut fleet, &big);
    let cluster = &fleet.clusters["prod"];
    let instance_of = |arn: &str| cluster.tasks[arn].instance_arn.clone();
    assert_eq!(
        instance_of(&first),
        instance_of(&second),
        "the small task fills the GPU with the least room that fits"
    );
    assert_ne!(instance_of(&third), instance_of(&first));
    match fleet.run_task("prod", &big, "family:test".into(), None) {
        Err((Unplaced::Gpu(NoFit::NotEnoughGpuMemory { .. }), Some(_))) => {}
        other => panic!("no room left: {other:?}"),
    }
}

#[test]
fn a_task_runs_after_its_start_up_and_a_stop_frees_its_gpu() {
    let mut fleet = fixture::fleet(1, 1);
    let td = fixture::mps_family(&mut fleet, "embed", 8_000, None);
    let arn = place(&mut fleet, &td);
    assert_eq!(
        fleet.clusters["prod"].tasks[&arn].last_status,
        TaskStatus::Pending,
        "a bridge-mode task skips PROVISIONING, which is for awsvpc"
    );
    fixture::run(&mut fleet, 20);
    let cluster = &fleet.clusters["prod"];
    assert_eq!(cluster.tasks[&arn].last_status, TaskStatus::Running);
    assert_eq!(
        cluster.instances[0].gpus[0].remaining_memory_mib,
        22_563 - 8_000
    );
    assert_eq!(cluster.instances[0].running_tasks, 1);
    assert!(fleet.stop_task("prod", &arn, "stopped by a test", "UserInitiated"));
    assert!(
        !fleet.stop_task("prod", &arn, "again", "UserInitiated"),
        "once"
    );
    fixture::run(&mut fleet, 3);
    let cluster = &fleet.clusters["prod"];
    let task = &cluster.tasks[&arn];
    assert_eq!(task.last_status, TaskStatus::Stopped);
    assert_eq!(task.containers[0].exit_code, Some(0));
    assert_eq!(cluster.instances[0].gpus[0].remaining_memory_mib, 22_563);
    assert_eq!(cluster.instances[0].running_tasks, 0);
}

#[test]
fn an_instance_version_counts_every_change_even_a_replacement_of_the_same_size() {
    let mut fleet = fixture::fleet(1, 1);
    let td = fixture::mps_family(&mut fleet, "embed", 8_000, None);
    let version = |fleet: &Fleet| fleet.clusters["prod"].instances[0].version;
    let start = version(&fleet);
    let first = place(&mut fleet, &td);
    fixture::run(&mut fleet, 20);
    let placed_and_started = version(&fleet);
    assert_eq!(placed_and_started, start + 2);
    // Stopped and replaced by a task of the same size: the resources and counts end as
    // they were, the version does not.
    assert!(fleet.stop_task("prod", &first, "replaced", "UserInitiated"));
    fixture::run(&mut fleet, 3);
    let _second = place(&mut fleet, &td);
    fixture::run(&mut fleet, 20);
    assert_eq!(version(&fleet), placed_and_started + 3);
}

#[test]
fn a_container_that_exits_at_once_fails_its_task_with_its_code() {
    let mut fleet = fixture::fleet(1, 1);
    let td = fixture::mps_family(&mut fleet, "broken", 4_000, Some(3));
    let arn = place(&mut fleet, &td);
    fixture::run(&mut fleet, 20);
    let task = &fleet.clusters["prod"].tasks[&arn];
    assert_eq!(task.last_status, TaskStatus::Stopped);
    assert_eq!(task.stop_code, Some("EssentialContainerExited"));
    assert_eq!(task.containers[0].exit_code, Some(3));
    assert_eq!(fleet.clusters["prod"].instances[0].pending_tasks, 0);
}

#[test]
fn an_impaired_mps_daemon_stops_nothing_and_new_mps_tasks_there_fail_at_start() {
    let mut fleet = fixture::fleet(1, 1);
    let td = fixture::mps_family(&mut fleet, "embed", 4_000, None);
    let running = place(&mut fleet, &td);
    fixture::run(&mut fleet, 20);
    let instance = fleet.clusters["prod"].instances[0].arn.clone();
    fleet.impair_mps("prod", &instance);
    fixture::run(&mut fleet, 20);
    assert_eq!(
        fleet.clusters["prod"].tasks[&running].last_status,
        TaskStatus::Running,
        "the agent stops nothing"
    );
    // The scheduler still places there (the emulator's cautious reading); the task fails
    // at start and gives its GPU memory back.
    let doomed = place(&mut fleet, &td);
    fixture::run(&mut fleet, 20);
    let cluster = &fleet.clusters["prod"];
    let task = &cluster.tasks[&doomed];
    assert_eq!(task.last_status, TaskStatus::Stopped);
    assert_eq!(task.stop_code, Some("TaskFailedToStart"));
    assert_eq!(task.stopped_reason.as_deref(), Some(MPS_NOT_RESPONDING));
    assert_eq!(task.containers[0].exit_code, None, "never ran");
    assert!(task.started_at.is_none());
    assert_eq!(
        cluster.instances[0].gpus[0].remaining_memory_mib,
        22_563 - 4_000
    );
    assert_eq!(
        reason_text(&NoFit::NoMpsCapability),
        "is missing an attribute required by your task: ecs.capability.gpu-sharing-mps"
    );
}

fn register(fleet: &mut Fleet, body: serde_json::Value) -> String {
    let now = fleet.now;
    fleet
        .register_task_definition(body.as_object().cloned().unwrap_or_default(), now)
        .expect("valid")
        .arn
        .clone()
}

fn blocked(fleet: &mut Fleet, td: &str, group: &str) -> Unplaced {
    fleet
        .run_task("prod", td, group.into(), None)
        .expect_err("no room")
        .0
}

#[test]
fn cpu_memory_host_ports_and_instance_status_limit_placement_as_in_ecs() {
    let mut fleet = fixture::fleet(1, 4);
    // A static host port: the second task finds it taken.
    let web = register(
        &mut fleet,
        serde_json::json!({"family": "web", "containerDefinitions": [{"name": "w", "image": "w", "memory": 512,
            "portMappings": [{"containerPort": 80, "hostPort": 8443}]}]}),
    );
    place(&mut fleet, &web);
    let why = blocked(&mut fleet, &web, "family:web");
    assert_eq!(
        why,
        Unplaced::Room(Blocked::Port {
            port: 8443,
            udp: false
        })
    );
    assert_eq!(
        why.reason_text(),
        "is already using a port required by your task"
    );
    // CPU: the instance has 48 vCPUs.
    let hungry = register(
        &mut fleet,
        serde_json::json!({"family": "hungry", "cpu": "40960", "memory": "1024", "containerDefinitions": [{"name": "h", "image": "h"}]}),
    );
    place(&mut fleet, &hungry);
    assert_eq!(
        blocked(&mut fleet, &hungry, "family:hungry").reason_text(),
        "has insufficient CPU units available"
    );
    // Memory: memoryReservation counts when set.
    let big = register(
        &mut fleet,
        serde_json::json!({"family": "big", "containerDefinitions": [{"name": "b", "image": "b", "memory": 500_000, "memoryReservation": 150_000}]}),
    );
    place(&mut fleet, &big);
    assert_eq!(
        blocked(&mut fleet, &big, "family:big").reason_text(),
        "has insufficient memory available"
    );
    // A DRAINING instance and a disconnected agent take nothing.
    let small = fixture::mps_family(&mut fleet, "small", 1_000, None);
    fleet.clusters.get_mut("prod").expect("prod").instances[0]
        .room
        .status = "DRAINING".into();
    assert!(matches!(
        blocked(&mut fleet, &small, "family:small"),
        Unplaced::Room(Blocked::NotActive { .. })
    ));
    let instance = &mut fleet.clusters.get_mut("prod").expect("prod").instances[0];
    instance.room.status = "ACTIVE".into();
    instance.room.agent_connected = false;
    assert_eq!(
        blocked(&mut fleet, &small, "family:small").reason_text(),
        "encountered error \"AGENT\""
    );
}

#[test]
fn awsvpc_tasks_take_an_eni_each_until_the_instance_type_has_none_left() {
    // One g5.12xlarge: 15 network interfaces, the primary one the instance's own.
    let mut fleet = fixture::fleet(1, 4);
    let vpc = register(
        &mut fleet,
        serde_json::json!({"family": "vpc", "networkMode": "awsvpc", "containerDefinitions": [{"name": "v", "image": "v", "cpu": 256, "memory": 512,
            "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1_000}}}]}]}),
    );
    let placed: Vec<String> = (0..14).map(|_| place(&mut fleet, &vpc)).collect();
    let why = blocked(&mut fleet, &vpc, "family:vpc");
    assert_eq!(why, Unplaced::Room(Blocked::Eni));
    assert_eq!(why.reason_text(), "encountered error \"RESOURCE:ENI\"");
    // The GPUs had room: 14 GiB of 88 taken.
    let free: u32 = fleet.clusters["prod"].instances[0]
        .gpus
        .iter()
        .map(|g| g.remaining_memory_mib)
        .sum();
    assert_eq!(free, 4 * 22_563 - 14 * 1_000);
    // A bridge task needs no ENI.
    let bridge = fixture::mps_family(&mut fleet, "bridge", 1_000, None);
    place(&mut fleet, &bridge);
    // A stopped task gives its ENI back.
    fleet.stop_task("prod", &placed[0], "scaled in", "UserInitiated");
    fixture::run(&mut fleet, 5);
    assert_eq!(fleet.clusters["prod"].instances[0].room.enis_free, Some(1));
    place(&mut fleet, &vpc);
}

#[test]
fn distinct_instance_and_member_of_hold_for_a_service() {
    let mut fleet = fixture::fleet(2, 4);
    let td = fixture::mps_family(&mut fleet, "embed", 1_000, None);
    let new = crate::engine::services::NewService {
        name: "spread".into(),
        task_definition: td.clone(),
        desired_count: 0,
        config: Default::default(),
        placement_constraints: vec![serde_json::json!({"type": "distinctInstance"})],
        placement_strategy: Vec::new(),
        capacity_provider_strategy: Vec::new(),
    };
    fleet.create_service("prod", new).expect("created");
    let first = fleet
        .run_task("prod", &td, "service:spread".into(), None)
        .expect("placed");
    let second = fleet
        .run_task("prod", &td, "service:spread".into(), None)
        .expect("placed");
    let cluster = &fleet.clusters["prod"];
    assert_ne!(
        cluster.tasks[&first].instance_arn,
        cluster.tasks[&second].instance_arn
    );
    assert_eq!(
        blocked(&mut fleet, &td, "service:spread"),
        Unplaced::Room(Blocked::DistinctInstance)
    );
    // memberOf in the task definition: no instance is a p5.
    let picky = register(
        &mut fleet,
        serde_json::json!({"family": "picky", "containerDefinitions": [{"name": "p", "image": "p", "memory": 512}],
            "placementConstraints": [{"type": "memberOf", "expression": "attribute:ecs.instance-type == p5.*"}]}),
    );
    assert_eq!(
        blocked(&mut fleet, &picky, "family:picky").reason_text(),
        "is missing an attribute required by your task"
    );
}

#[test]
fn a_service_spreads_across_zones_by_default_and_binpacks_when_asked() {
    let mut fleet = fixture::fleet(3, 1);
    for (instance, zone) in fleet
        .clusters
        .get_mut("prod")
        .expect("prod")
        .instances
        .iter_mut()
        .zip(["us-east-1a", "us-east-1b", "us-east-1c"])
    {
        instance.availability_zone = zone.into();
        instance
            .room
            .attributes
            .insert("ecs.availability-zone".into(), zone.into());
    }
    let td = fixture::mps_family(&mut fleet, "embed", 1_000, None);
    let service =
        |name: &str, strategy: Vec<serde_json::Value>| crate::engine::services::NewService {
            name: name.into(),
            task_definition: td.clone(),
            desired_count: 3,
            config: Default::default(),
            placement_constraints: Vec::new(),
            placement_strategy: strategy,
            capacity_provider_strategy: Vec::new(),
        };
    let hosts = |fleet: &Fleet, group: &str| -> std::collections::BTreeSet<String> {
        fleet.clusters["prod"]
            .tasks
            .values()
            .filter(|t| t.is_live() && t.group == group)
            .map(|t| t.instance_arn.clone())
            .collect()
    };
    // ECS's default for services: one task in each zone, where best fit alone would have
    // put all three on one GPU.
    fleet
        .create_service("prod", service("spread", Vec::new()))
        .expect("created");
    fixture::run(&mut fleet, 30);
    assert_eq!(hosts(&fleet, "service:spread").len(), 3);
    // binpack on memory: the instance with the least memory left, again and again.
    fleet
        .create_service(
            "prod",
            service(
                "packed",
                vec![serde_json::json!({"type": "binpack", "field": "memory"})],
            ),
        )
        .expect("created");
    fixture::run(&mut fleet, 30);
    assert_eq!(hosts(&fleet, "service:packed").len(), 1);
    assert_eq!(
        fleet.clusters["prod"].services["packed"].strategies(),
        [placement::strategy::Strategy::BinpackMemory]
    );
}
