//! Unit tests of the `consolidate` module.

use rand::{rngs::StdRng, Rng, SeedableRng};

use super::*;
use crate::model::{
    cost::{Commitment, Price},
    ClusterView, GpuContainer, GpuView, InstanceView, SharingMode,
};

const GPU_MIB: u32 = 24_000;

/// An MPS task: `(service, task number, memory)`.
type Held<'a> = (&'a str, u32, u32);

fn gpu(index: u32, tasks: &[Held]) -> GpuView {
    let used: u32 = tasks.iter().map(|(_, _, m)| m).sum();
    GpuView {
        uuid: format!("GPU-{index}"),
        index,
        mode: if tasks.is_empty() {
            SharingMode::Idle
        } else {
            SharingMode::NvidiaMps
        },
        total_memory_mib: GPU_MIB,
        remaining_memory_mib: GPU_MIB - used,
        compute_allocated_percent: 0,
        containers: tasks
            .iter()
            .map(|(service, n, memory)| GpuContainer {
                task_arn: format!("arn:aws:ecs:us-east-1:1:task/prod/{service}-{n}"),
                container: "main".into(),
                service: Some(service.to_string()),
                team: Some(format!("team-{service}")),
                memory_mib: Some(*memory),
                compute_percent: 100,
                whole_gpu: false,
                started_at: None,
            })
            .collect(),
        usage: None,
    }
}

fn instance(id: &str, instance_type: &str, gpus: Vec<GpuView>, room: Option<Room>) -> InstanceView {
    InstanceView::of(id, instance_type)
        .with_arn(format!(
            "arn:aws:ecs:us-east-1:1:container-instance/prod/{id}"
        ))
        .with_gpus(gpus)
        .with_room(room)
}

fn room(cpu: u32) -> Room {
    Room {
        status: "ACTIVE".into(),
        agent_connected: true,
        cpu_remaining: cpu,
        memory_remaining_mib: 60_000,
        ..Room::default()
    }
}

fn fleet(instances: Vec<InstanceView>, services: Vec<ServiceRef>) -> FleetSnapshot {
    FleetSnapshot {
        taken_at: "2026-12-02T00:00:00Z".into(),
        api_calls: 0,
        cloudwatch_calls: 0,
        usage_error: None,
        clusters: vec![ClusterView {
            name: "prod".into(),
            instances,
            service_list: services,
            ..ClusterView::default()
        }],
        unknown_gpu_ids: 0,
    }
}

fn service(name: &str, desired: u32, maximum_percent: u32) -> ServiceRef {
    ServiceRef {
        name: name.into(),
        desired,
        maximum_percent: Some(maximum_percent),
        ..ServiceRef::default()
    }
}

fn prices() -> PriceBook {
    PriceBook::builtin("us-east-1")
}

/// Three g5.xlarge ($1.006 an hour) a third full each: one instance holds all three tasks
/// after the plan, so two are drained, saving 2 × $1.006 × 730 a month, and the tasks say
/// where they go.
#[test]
fn thin_instances_are_drained_onto_one_and_the_saving_is_their_price() {
    let snapshot = fleet(
        vec![
            instance(
                "i-a",
                "g5.xlarge",
                vec![gpu(0, &[("embed", 1, 7_000)])],
                None,
            ),
            instance(
                "i-b",
                "g5.xlarge",
                vec![gpu(0, &[("embed", 2, 7_000)])],
                None,
            ),
            instance(
                "i-c",
                "g5.xlarge",
                vec![gpu(0, &[("rerank", 1, 8_000)])],
                None,
            ),
        ],
        Vec::new(),
    );
    let query = PlanQuery {
        spare_percent: 0,
        ..PlanQuery::default()
    };
    let plan = plan(&snapshot, &prices(), &HashMap::new(), &query).unwrap();
    assert_eq!(plan.drains.len(), 2, "{plan:#?}");
    assert_eq!(plan.saving_cents_per_month, 2 * 73_438, "2 × 1.006 × 730");
    assert_eq!(plan.clusters[0].instances_after, 1);
    assert_eq!(plan.tasks_moved, 2);
    let kept = ["i-a", "i-b", "i-c"]
        .into_iter()
        .find(|id| plan.drains.iter().all(|d| d.ec2_instance_id != *id))
        .unwrap();
    for drain in &plan.drains {
        assert_eq!(drain.moves.len(), 1);
        assert_eq!(drain.moves[0].to, [kept]);
        assert_eq!(drain.monthly_cents, Some(73_438));
    }
    // Three services' worth of tasks now share one GPU: the blast radius grows.
    assert_eq!(plan.before.most_services_per_gpu, 1);
    assert_eq!(plan.after.most_services_per_gpu, 2);
    assert_eq!(plan.after.gpus_in_use, 1);
}

/// A Capacity Block keeps billing after its instance goes, and so does a commitment: the net
/// saving leaves them out, and each drain says who retires the instance.
#[test]
fn what_keeps_billing_is_not_in_the_net_saving() {
    let mut block = instance(
        "i-a",
        "g5.xlarge",
        vec![gpu(0, &[("embed", 1, 7_000)])],
        None,
    )
    .with_lifecycle(Some(Lifecycle::CapacityBlock));
    block.capacity_provider = Some("gpu-mi".into());
    block.managed_instance = true;
    let spot = instance(
        "i-b",
        "g5.xlarge",
        vec![gpu(0, &[("embed", 2, 7_000)])],
        None,
    )
    .with_lifecycle(Some(Lifecycle::Spot));
    let mut committed = instance(
        "i-c",
        "g5.xlarge",
        vec![gpu(0, &[("rerank", 1, 8_000)])],
        None,
    );
    committed.capacity_provider = Some("gpu-asg".into());
    let snapshot = fleet(vec![block, spot, committed], Vec::new());
    let mut book = prices();
    book.prices.retain(|p| p.instance_type != "g5.xlarge");
    for (lifecycle, usd, commitment) in [
        (Lifecycle::CapacityBlock, 0.8, None),
        (Lifecycle::Spot, 0.4, None),
        (Lifecycle::OnDemand, 0.7, Some(Commitment::SavingsPlan)),
    ] {
        book.prices.push(Price {
            instance_type: "g5.xlarge".into(),
            lifecycle,
            usd_per_hour: usd,
            commitment,
            ..Price::default()
        });
    }
    let query = PlanQuery {
        spare_percent: 0,
        ..PlanQuery::default()
    };
    let plan = plan(&snapshot, &book, &HashMap::new(), &query).unwrap();
    let drained: BTreeSet<&str> = plan
        .drains
        .iter()
        .map(|d| d.ec2_instance_id.as_str())
        .collect();
    assert_eq!(drained, BTreeSet::from(["i-a", "i-b"]), "{plan:#?}");
    assert_eq!(
        plan.saving_cents_per_month,
        58_400 + 29_200,
        "(0.8 + 0.4) × 730"
    );
    assert_eq!(
        plan.still_billed_cents_per_month, 58_400,
        "the block keeps billing"
    );
    assert_eq!(plan.net_saving_cents_per_month, 29_200);
    let of = |id: &str| {
        plan.drains
            .iter()
            .find(|d| d.ec2_instance_id == id)
            .unwrap()
    };
    assert_eq!(of("i-a").keeps_billing.as_deref(), Some("a Capacity Block"));
    assert_eq!(of("i-b").keeps_billing, None);
    assert_eq!(of("i-a").who_acts, "the capacity provider gpu-mi");
    assert!(of("i-b").who_acts.starts_with("you:"));
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("$584.00") && w.contains("a Capacity Block")),
        "{:?}",
        plan.warnings
    );
    let csv = to_csv(&plan);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with("keeps_billing,service,team,tasks,to,who_acts"));
    assert!(
        csv.contains("\nstill billed,commitments and Capacity Blocks,,,584.00,"),
        "{csv}"
    );
    assert!(csv.contains("\nnet saving,,,,292.00,"), "{csv}");
    // Draining the committed instance instead would save nothing net.
    let mut only_committed = snapshot.clone();
    only_committed.clusters[0]
        .instances
        .retain(|i| i.ec2_instance_id == "i-c");
    only_committed.clusters[0].instances.push(instance(
        "i-d",
        "g5.xlarge",
        vec![gpu(0, &[("embed", 3, 1_000)])],
        None,
    ));
    let plan = super::plan(&only_committed, &book, &HashMap::new(), &query).unwrap();
    assert_eq!(plan.drains.len(), 1, "{plan:#?}");
    assert_eq!(plan.net_saving_cents_per_month, 0);
    assert_eq!(
        plan.drains[0].keeps_billing.as_deref(),
        Some("a Savings Plan")
    );
}
/// An instance that takes no tasks is left out of the plan, and the plan says what it costs a
/// month, so its "before" can be set beside the cost review's.
#[test]
fn instances_taking_no_tasks_are_left_out_and_their_cost_said() {
    let mut draining = instance("i-d", "g5.xlarge", vec![gpu(0, &[])], None);
    draining.not_placing = Some("DRAINING".into());
    let snapshot = fleet(
        vec![
            instance(
                "i-a",
                "g5.xlarge",
                vec![gpu(0, &[("embed", 1, 7_000)])],
                None,
            ),
            draining,
        ],
        Vec::new(),
    );
    let plan = plan(&snapshot, &prices(), &HashMap::new(), &PlanQuery::default()).unwrap();
    assert_eq!(
        plan.monthly_before_cents, 73_438,
        "only the instance taking tasks"
    );
    assert!(
        plan.unknown
            .iter()
            .any(|u| u.starts_with("1 instance(s) take no tasks") && u.contains("$734.38 a month")),
        "{:?}",
        plan.unknown
    );
}

/// The spare share and the largest rollout's overlap keep instances that would otherwise go.
#[test]
fn the_spare_and_the_rollout_overlap_keep_room() {
    let instances = vec![
        instance(
            "i-a",
            "g5.xlarge",
            vec![gpu(0, &[("embed", 1, 7_000)])],
            None,
        ),
        instance(
            "i-b",
            "g5.xlarge",
            vec![gpu(0, &[("embed", 2, 7_000)])],
            None,
        ),
    ];
    let lean = PlanQuery {
        spare_percent: 0,
        ..PlanQuery::default()
    };
    let none = plan(
        &fleet(instances.clone(), Vec::new()),
        &prices(),
        &HashMap::new(),
        &lean,
    )
    .unwrap();
    assert_eq!(none.drains.len(), 1);
    // embed at maximumPercent 200 starts 2 more tasks of 7,000 MiB beside its 2: 28,000 MiB
    // is more than one GPU has, so both instances stay.
    let rolling = fleet(instances.clone(), vec![service("embed", 2, 200)]);
    let kept = plan(&rolling, &prices(), &HashMap::new(), &lean).unwrap();
    assert!(kept.drains.is_empty(), "{kept:#?}");
    assert_eq!(
        kept.clusters[0].headroom.as_deref(),
        Some("embed: 2 more tasks of 7000 MiB (maximumPercent 200)")
    );
    // At maximumPercent 150 one more task: 21,000 MiB fits one GPU.
    let gentle = fleet(instances.clone(), vec![service("embed", 2, 150)]);
    assert_eq!(
        plan(&gentle, &prices(), &HashMap::new(), &lean)
            .unwrap()
            .drains
            .len(),
        1
    );
    // Keeping 60 % of the memory spare keeps both.
    let half = PlanQuery {
        spare_percent: 60,
        ..PlanQuery::default()
    };
    let spared = plan(
        &fleet(instances, Vec::new()),
        &prices(),
        &HashMap::new(),
        &half,
    )
    .unwrap();
    assert!(spared.drains.is_empty());
    assert_eq!(spared.clusters[0].held_for_spare, 2);
}

/// CPU counts: a task whose service needs more CPU than the other instance has left stays.
#[test]
fn cpu_left_on_the_instances_kept_bounds_the_plan() {
    let instances = vec![
        instance(
            "i-a",
            "g5.xlarge",
            vec![gpu(0, &[("embed", 1, 6_000)])],
            Some(room(1_024)),
        ),
        instance(
            "i-b",
            "g5.xlarge",
            vec![gpu(0, &[("embed", 2, 6_000)])],
            Some(room(1_024)),
        ),
    ];
    let lean = PlanQuery {
        spare_percent: 0,
        ..PlanQuery::default()
    };
    let needs = |cpu: u32| -> HashMap<(String, String), Needs> {
        [(
            ("prod".to_string(), "embed".to_string()),
            Needs {
                cpu,
                memory_mib: 1_000,
                ..Needs::default()
            },
        )]
        .into()
    };
    let fits = plan(
        &fleet(instances.clone(), Vec::new()),
        &prices(),
        &needs(1_024),
        &lean,
    )
    .unwrap();
    assert_eq!(fits.drains.len(), 1);
    assert!(fits.warnings.is_empty(), "{:?}", fits.warnings);
    let starved = plan(
        &fleet(instances.clone(), Vec::new()),
        &prices(),
        &needs(2_048),
        &lean,
    )
    .unwrap();
    assert!(starved.drains.is_empty());
    // Without the task definition, only GPUs are checked, and the plan says so.
    let unknown = plan(
        &fleet(instances, Vec::new()),
        &prices(),
        &HashMap::new(),
        &lean,
    )
    .unwrap();
    assert!(
        unknown.warnings.iter().any(|w| w.contains("prod/embed")),
        "{:?}",
        unknown.warnings
    );
}

#[test]
fn bad_queries_say_what_to_give() {
    let query = |pairs: &[(&str, &str)]| PlanQuery::from_params(pairs.iter().copied());
    assert_eq!(query(&[("spare", "25")]).unwrap().spare_percent, 25);
    assert_eq!(query(&[("spare", "25 %")]).unwrap().spare_percent, 25);
    assert!(query(&[("spare", "95")]).unwrap_err().contains("0 to 90"));
    assert!(query(&[("spare", "lots")])
        .unwrap_err()
        .contains("spare=10"));
    assert!(query(&[("group", "team")])
        .unwrap_err()
        .contains("cluster and spare"));
    let round = PlanQuery {
        cluster: Some("a b".into()),
        spare_percent: 20,
    };
    assert_eq!(round.to_params(), "cluster=a%20b&spare=20");
    let snapshot = fleet(Vec::new(), Vec::new());
    let error = plan(
        &snapshot,
        &prices(),
        &HashMap::new(),
        &PlanQuery {
            cluster: Some("nope".into()),
            ..PlanQuery::default()
        },
    )
    .unwrap_err();
    assert!(error.contains("prod"), "{error}");
}

/// Over random fleets: every task is somewhere after the plan, no GPU holds more than it
/// has, nothing is left on a drained instance, and the saving is the drained instances'
/// price. Checked by replaying the plan's moves on the snapshot.
#[test]
fn any_plan_replays_onto_the_instances_kept() {
    let mut rng = StdRng::seed_from_u64(7);
    for round in 0..200 {
        let mut instances = Vec::new();
        let mut n = 0;
        for i in 0..rng.random_range(1..12) {
            let gpus = if rng.random_bool(0.5) { 1 } else { 4 };
            let kind = if gpus == 1 {
                "g5.xlarge"
            } else {
                "g5.12xlarge"
            };
            let views = (0..gpus)
                .map(|g| {
                    let mut held: Vec<(String, u32, u32)> = Vec::new();
                    let mut used = 0;
                    for _ in 0..rng.random_range(0..4) {
                        let memory = rng.random_range(1..9) * 1_000;
                        if used + memory <= GPU_MIB {
                            used += memory;
                            n += 1;
                            held.push((format!("s{}", rng.random_range(0..5)), n, memory));
                        }
                    }
                    let held: Vec<Held> =
                        held.iter().map(|(s, n, m)| (s.as_str(), *n, *m)).collect();
                    gpu(g, &held)
                })
                .collect();
            instances.push(instance(&format!("i-{i}"), kind, views, None));
        }
        let snapshot = fleet(instances, Vec::new());
        let spare = rng.random_range(0..40);
        let query = PlanQuery {
            spare_percent: spare,
            ..PlanQuery::default()
        };
        let plan = plan(&snapshot, &prices(), &HashMap::new(), &query).unwrap();
        let drained: BTreeSet<&str> = plan
            .drains
            .iter()
            .map(|d| d.ec2_instance_id.as_str())
            .collect();
        // Replay: memory per kept instance after the moves.
        let mut held: BTreeMap<String, u64> = BTreeMap::new();
        let mut total: BTreeMap<String, u64> = BTreeMap::new();
        for instance in &snapshot.clusters[0].instances {
            total.insert(
                instance.ec2_instance_id.clone(),
                instance.gpus.len() as u64 * u64::from(GPU_MIB),
            );
            if !drained.contains(instance.ec2_instance_id.as_str()) {
                let here: u64 = instance
                    .gpus
                    .iter()
                    .map(|g| u64::from(g.allocated_memory_mib()))
                    .sum();
                *held.entry(instance.ec2_instance_id.clone()).or_default() += here;
            }
        }
        let moved: u64 = plan.drains.iter().map(|d| d.allocated_mib).sum();
        for drain in &plan.drains {
            for step in &drain.moves {
                assert!(
                    step.to.iter().all(|to| !drained.contains(to.as_str())),
                    "round {round}: moved onto a drained instance"
                );
            }
        }
        let all: u64 = snapshot.clusters[0]
            .instances
            .iter()
            .flat_map(|i| &i.gpus)
            .map(|g| u64::from(g.allocated_memory_mib()))
            .sum();
        let kept_total: u64 = total
            .iter()
            .filter(|(id, _)| !drained.contains(id.as_str()))
            .map(|(_, t)| *t)
            .sum();
        assert_eq!(held.values().sum::<u64>() + moved, all, "round {round}");
        assert!(
            plan.drains.is_empty()
                || all as f64 <= kept_total as f64 * (1.0 - f64::from(spare) / 100.0) + 0.5,
            "round {round}: the spare is kept"
        );
        let saving: i64 = plan.drains.iter().map(|d| d.monthly_cents.unwrap()).sum();
        assert_eq!(saving, plan.saving_cents_per_month, "round {round}");
        assert_eq!(
            plan.tasks_moved,
            plan.drains
                .iter()
                .flat_map(|d| &d.moves)
                .map(|m| m.tasks)
                .sum::<u32>()
        );
    }
}
