#![allow(clippy::unwrap_used)]

use rand::{rngs::StdRng, Rng, SeedableRng};

use super::split::cents;
use super::*;
use crate::model::{
    ClusterView, GpuContainer, GpuUsage, GpuView, HostReserved, HostUse, InstanceView, Reading,
    SharingMode,
};

fn container(service: &str, team: Option<&str>, memory: Option<u32>) -> GpuContainer {
    GpuContainer {
        task_arn: format!("arn:aws:ecs:us-east-1:1:task/c/{service}"),
        container: "main".into(),
        service: Some(service.into()),
        team: team.map(str::to_string),
        memory_mib: memory,
        compute_percent: 100,
        whole_gpu: memory.is_none(),
        started_at: None,
    }
}

fn gpu(index: u32, mode: SharingMode, remaining: u32, containers: Vec<GpuContainer>) -> GpuView {
    GpuView {
        uuid: format!("GPU-{index}"),
        index,
        mode,
        total_memory_mib: 24_000,
        remaining_memory_mib: remaining,
        compute_allocated_percent: 0,
        containers,
        usage: None,
    }
}

fn instance(instance_type: &str, lifecycle: Option<&str>, gpus: Vec<GpuView>) -> InstanceView {
    InstanceView::of("i-1", instance_type)
        .with_arn(format!(
            "arn:aws:ecs:us-east-1:1:container-instance/c/{instance_type}"
        ))
        .with_gpus(gpus)
        .with_lifecycle(lifecycle.and_then(Lifecycle::parse))
}

fn snapshot(clusters: Vec<(&str, Vec<InstanceView>)>) -> FleetSnapshot {
    FleetSnapshot {
        taken_at: "2026-12-02T00:00:00Z".into(),
        api_calls: 0,
        cloudwatch_calls: 0,
        usage_error: None,
        clusters: clusters
            .into_iter()
            .map(|(name, instances)| ClusterView {
                name: name.into(),
                instances,
                ..ClusterView::default()
            })
            .collect(),
        unknown_gpu_ids: 0,
    }
}

/// One g5.12xlarge ($5.672 an hour, 4 GPUs at $1.418): a whole GPU for team x, an MPS GPU half
/// team y's and a quarter team x's, an idle GPU, and an MPS GPU with 8,000 MiB allocated that no
/// known container holds.
fn hand_fleet() -> FleetSnapshot {
    snapshot(vec![(
        "prod",
        vec![instance(
            "g5.12xlarge",
            None,
            vec![
                gpu(
                    0,
                    SharingMode::Dedicated,
                    24_000,
                    vec![container("a", Some("x"), None)],
                ),
                gpu(
                    1,
                    SharingMode::NvidiaMps,
                    6_000,
                    vec![
                        container("b", Some("y"), Some(12_000)),
                        container("c", Some("x"), Some(6_000)),
                    ],
                ),
                gpu(2, SharingMode::Idle, 24_000, vec![]),
                gpu(3, SharingMode::NvidiaMps, 16_000, vec![]),
            ],
        )],
    )])
}

fn cents_of(report: &CostReport, name: &str, kind: RowKind) -> i64 {
    report
        .rows
        .iter()
        .find(|r| r.name == name && r.kind == kind)
        .unwrap_or_else(|| panic!("no row {name} {kind:?} in {:?}", report.rows))
        .cost_cents
}

#[test]
fn an_hour_of_one_instance_splits_as_computed_by_hand() {
    let query = CostQuery {
        span: Span::Hour,
        ..CostQuery::default()
    };
    let report = report(&hand_fleet(), &PriceBook::builtin("us-east-1"), &query).unwrap();
    // Exact: x 1.418 + 0.3545 = 1.7725; y 0.709; idle 0.3545 + 1.418 + 0.9453 = 2.7178;
    // unattributed 0.4727. Floors 177 + 70 + 271 + 47 = 565 of 567: the two cents left go to
    // the largest remainders, y (.9) and idle (.78).
    assert_eq!(report.total_cents, 567);
    assert_eq!(cents_of(&report, "x", RowKind::Allocated), 177);
    assert_eq!(cents_of(&report, "y", RowKind::Allocated), 71);
    assert_eq!(cents_of(&report, "prod", RowKind::Idle), 272);
    assert_eq!(cents_of(&report, "prod", RowKind::Unattributed), 47);
    assert_eq!(report.idle_cents, 272);
    assert_eq!((report.gpus, report.instances), (4, 1));
    // GPU-hours: x holds 1.25 GPUs for the hour.
    let x = report.rows.iter().find(|r| r.name == "x").unwrap();
    assert!((x.gpu_hours - 1.25).abs() < 1e-9, "{}", x.gpu_hours);
    // Sorted by cost, idle last.
    let names: Vec<&str> = report.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["x", "y", "prod", "prod"]);
    assert_eq!(report.rows.last().unwrap().kind, RowKind::Idle);
}

/// The same hour with 20 % of the price on CPU and memory: the instance registered 4,000 CPU
/// units and 16,000 MiB; service a (team x) reserves 1,000 units and 8,000 MiB, service b
/// (team y) 2,000 units and no memory.
#[test]
fn a_share_of_the_price_on_cpu_and_memory_goes_by_the_tasks_reservations() {
    let mut fleet = hand_fleet();
    fleet.clusters[0].instances[0].host = Some(HostUse {
        cpu: 4_000,
        memory_mib: 16_000,
        reserved: vec![
            HostReserved {
                service: Some("a".into()),
                team: Some("x".into()),
                cpu: 1_000,
                memory_mib: 8_000,
            },
            HostReserved {
                service: Some("b".into()),
                team: Some("y".into()),
                cpu: 2_000,
                memory_mib: 0,
            },
        ],
    });
    let query = CostQuery {
        span: Span::Hour,
        ..CostQuery::default()
    };
    let book = PriceBook::builtin("us-east-1")
        .with_host_share(20.0)
        .unwrap();
    let report = report(&fleet, &book, &query).unwrap();
    // $5.672: $1.1344 to CPU and memory (half each), $1.1344 per GPU.
    // x: 1.25 GPUs 1.418 + CPU ¼ of 0.5672 + memory ½ of 0.5672 = 1.8434;
    // y: ½ GPU 0.5672 + CPU ½ of 0.5672 = 0.8508; unattributed ⅓ GPU 0.3781;
    // idle 5.672 less those = 2.5997. Scaled to 567 cents: 184.275, 85.05, 37.8, 259.875;
    // the two cents left go to idle (.875) and unattributed (.8).
    assert_eq!(report.total_cents, 567);
    assert_eq!(cents_of(&report, "x", RowKind::Allocated), 184);
    assert_eq!(cents_of(&report, "y", RowKind::Allocated), 85);
    assert_eq!(cents_of(&report, "prod", RowKind::Unattributed), 38);
    assert_eq!(cents_of(&report, "prod", RowKind::Idle), 260);
    assert!(
        report
            .rule
            .starts_with("80 % of each instance's hourly price"),
        "{}",
        report.rule
    );
    assert!(
        !report.notes.iter().any(|n| n.contains("CPU and memory")),
        "{:?}",
        report.notes
    );

    // Without the instance's CPU and memory, the whole price goes to the GPUs, and the report
    // says so.
    let report = report_without_host(&book, &query);
    assert_eq!(cents_of(&report, "x", RowKind::Allocated), 177);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("CPU and memory of 1 instance are not known")),
        "{:?}",
        report.notes
    );
    // A share out of range is refused with the range.
    let refused = PriceBook::builtin("us-east-1")
        .with_host_share(95.0)
        .unwrap_err();
    assert!(refused.contains("between 0 and 90"), "{refused}");
}

fn report_without_host(book: &PriceBook, query: &CostQuery) -> CostReport {
    report(&hand_fleet(), book, query).unwrap()
}

#[test]
fn shared_idle_goes_to_the_clusters_rows_by_their_cost() {
    let query = CostQuery {
        span: Span::Hour,
        share_idle: true,
        ..CostQuery::default()
    };
    let report = report(&hand_fleet(), &PriceBook::builtin("us-east-1"), &query).unwrap();
    assert!(
        report.rows.iter().all(|r| r.kind != RowKind::Idle),
        "{:?}",
        report.rows
    );
    // Idle 2.7178 shared 1.7725 : 0.709 → x 1.7725 + 1.9413 = 3.7138, y 0.709 + 0.7765 = 1.4855.
    assert_eq!(cents_of(&report, "x", RowKind::Allocated), 371);
    assert_eq!(cents_of(&report, "y", RowKind::Allocated), 149);
    assert_eq!(report.rows.iter().map(|r| r.cost_cents).sum::<i64>(), 567);
    assert_eq!(report.idle_cents, 272, "idle shared out is still idle");
}

#[test]
fn unpriced_instances_are_listed_and_never_priced_at_zero() {
    let fleet = snapshot(vec![(
        "prod",
        vec![
            instance(
                "g5.xlarge",
                Some("spot"),
                vec![gpu(0, SharingMode::Idle, 24_000, vec![])],
            ),
            instance(
                "g5.xlarge",
                None,
                vec![gpu(0, SharingMode::Idle, 24_000, vec![])],
            ),
        ],
    )]);
    let report = report(
        &fleet,
        &PriceBook::builtin("us-east-1"),
        &CostQuery::default(),
    )
    .unwrap();
    assert_eq!(report.instances, 1);
    assert_eq!(report.total_cents, 73_438); // 1.006 × 730, a month as the plan counts it too
    assert_eq!(report.unpriced.len(), 1);
    assert_eq!(report.unpriced[0].lifecycle, Lifecycle::Spot);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("EC2 could not be read for 1 instance, so whether it is spot")),
        "{:?}",
        report.notes
    );
    assert!(
        report.notes.iter().any(|n| n.contains("g5.xlarge (spot)")),
        "{:?}",
        report.notes
    );
    // The CSV says so too, so a spreadsheet's total is not taken for the whole fleet's.
    let csv = to_csv(&report);
    assert!(
        csv.contains(
            "\n\"g5.xlarge (spot), 1 instance with 1 GPU: no price, not in the totals\",unpriced,,,,,\n"
        ),
        "{csv}"
    );
    assert!(csv.contains(",note,,,,,\n"), "{csv}");
}

#[test]
fn unused_is_what_the_gpu_did_not_use_of_its_allocation() {
    let mut fleet = hand_fleet();
    let gpus = &mut fleet.clusters[0].instances[0].gpus;
    // Whole GPU 25 % busy: 75 % of x's whole-GPU cost is unused.
    gpus[0].usage = Some(GpuUsage {
        utilization_percent: Some(Reading {
            latest: 25.0,
            average: 25.0,
        }),
        memory_used_mib: None,
    });
    let query = CostQuery {
        span: Span::Hour,
        group: Grouping::Service,
        ..CostQuery::default()
    };
    let report = report(&fleet, &PriceBook::builtin("us-east-1"), &query).unwrap();
    let a = report.rows.iter().find(|r| r.name == "prod/a").unwrap();
    assert_eq!(a.cost_cents, 142);
    assert_eq!(a.unused_cents, Some(106)); // 1.418 × 0.75 = 1.0635
    let b = report.rows.iter().find(|r| r.name == "prod/b").unwrap();
    assert_eq!(b.unused_cents, None);
    assert_eq!(b.without_usage_cents, b.cost_cents);
}

#[test]
fn a_dedicated_gpu_whose_holder_is_not_known_is_not_idle() {
    let mut fleet = hand_fleet();
    fleet.clusters[0].instances[0].gpus[0].containers.clear();
    let query = CostQuery {
        span: Span::Hour,
        ..CostQuery::default()
    };
    let report = report(&fleet, &PriceBook::builtin("us-east-1"), &query).unwrap();
    // The whole GPU (141.8 ¢) joins the 47.27 ¢ held by nobody known; idle is unchanged.
    assert_eq!(cents_of(&report, "prod", RowKind::Unattributed), 189);
    assert_eq!(cents_of(&report, "prod", RowKind::Idle), 272);
    assert_eq!(report.rows.iter().map(|r| r.cost_cents).sum::<i64>(), 567);
}

#[test]
fn an_unknown_cluster_names_the_ones_there_are() {
    let query = CostQuery {
        cluster: Some("nope".into()),
        ..CostQuery::default()
    };
    let error = report(&hand_fleet(), &PriceBook::builtin("us-east-1"), &query).unwrap_err();
    assert!(
        error.contains("\"nope\"") && error.contains("prod"),
        "{error}"
    );
}

#[test]
fn money_and_csv_read_as_people_and_spreadsheets_expect() {
    assert_eq!(money(0), "$0.00");
    assert_eq!(money(123_456_789), "$1,234,567.89");
    assert_eq!(money(100_000), "$1,000.00");
    let mut report = report(
        &hand_fleet(),
        &PriceBook::builtin("us-east-1"),
        &CostQuery::default(),
    )
    .unwrap();
    report.rows[0].name = "=cmd,\"x\"".into();
    let csv = to_csv(&report);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "team,kind,cost_usd,share_percent,gpu_hours,unused_usd,without_usage_usd"
    );
    assert!(
        lines[1].starts_with("\"'=cmd,\"\"x\"\"\",allocated,"),
        "{}",
        lines[1]
    );
    let total = report.rows.len() + 1;
    assert!(lines[total].starts_with("total,total,4140.56,"), "{csv}");
    // Then what a spreadsheet needs to read it: the prices with their source, each note, the
    // method; as many fields as the header.
    let trailer = &lines[total + 1..];
    assert_eq!(
        trailer.len(),
        report.prices.len() + report.unpriced.len() + report.notes.len() + 1
    );
    assert!(
        trailer[0].contains(" at $") && trailer[0].contains(",price,,,,,"),
        "{}",
        trailer[0]
    );
    assert!(
        trailer.iter().any(|l| l.contains("built-in")),
        "the prices name their source: {csv}"
    );
    assert!(trailer.last().unwrap().ends_with(",method,,,,,"));
    assert_eq!(rate(0.383_260_000_000_000_05), "0.38326");
    assert_eq!(rate(55.04), "55.04");
    assert_eq!(rate(2.0), "2");
    assert!(trailer
        .last()
        .unwrap()
        .starts_with("\"Each instance's hourly price"));
}

#[test]
fn largest_remainder_adds_up_and_favours_the_largest_remainders() {
    assert_eq!(largest_remainder(&[1.0, 1.0, 1.0], 100), [34, 33, 33]);
    assert_eq!(largest_remainder(&[0.5, 0.25, 0.25], 3), [1, 1, 1]);
    assert_eq!(largest_remainder(&[0.6, 0.3, 0.1], 2), [1, 1, 0]);
    assert_eq!(largest_remainder(&[0.0, 0.0], 5), [5, 0]);
    assert_eq!(largest_remainder(&[f64::NAN, 2.0], 4), [0, 4]);
    assert!(largest_remainder(&[], 0).is_empty());
}

/// The built-in prices, with a spot price for `g5.xlarge` so that `random_fleet`'s spot
/// instances of it are priced and those of other types are not.
pub(super) fn random_fleet_prices() -> PriceBook {
    let mut book = PriceBook::builtin("us-east-1");
    book.prices.push(Price {
        instance_type: "g5.xlarge".into(),
        lifecycle: Lifecycle::Spot,
        usd_per_hour: 0.3771,
        detail: "test".into(),
        ..Price::default()
    });
    book
}

/// A random fleet: clusters of instances of known and unknown types, on demand and spot, whose
/// GPUs are idle, whole or shared by containers of random teams and services (sometimes with
/// memory no known container holds), some with usage.
pub(super) fn random_fleet(rng: &mut StdRng) -> FleetSnapshot {
    let types = [
        "g5.xlarge",
        "g5.12xlarge",
        "g6e.48xlarge",
        "p5.48xlarge",
        "x9.mystery",
    ];
    let teams = [None, Some("search"), Some("ads"), Some("vision")];
    let clusters = (0..rng.random_range(1..4))
        .map(|c| {
            let instances = (0..rng.random_range(0..6))
                .map(|_| {
                    let gpus = (0..rng.random_range(0..9u32))
                        .map(|index| {
                            let total = rng.random_range(1..5u32) * 12_000;
                            let mut g = gpu(index, SharingMode::Idle, total, vec![]);
                            g.total_memory_mib = total;
                            match rng.random_range(0..3) {
                                0 => {}
                                1 => {
                                    g.mode = SharingMode::Dedicated;
                                    g.remaining_memory_mib = 0;
                                    g.containers = vec![container(
                                        &format!("svc{}", rng.random_range(0..5)),
                                        teams[rng.random_range(0..teams.len())],
                                        None,
                                    )];
                                }
                                _ => {
                                    g.mode = SharingMode::NvidiaMps;
                                    let mut left = total;
                                    for _ in 0..rng.random_range(0..5) {
                                        let ask = rng.random_range(1..=total / 4);
                                        if ask > left {
                                            break;
                                        }
                                        left -= ask;
                                        g.containers.push(container(
                                            &format!("svc{}", rng.random_range(0..5)),
                                            teams[rng.random_range(0..teams.len())],
                                            Some(ask),
                                        ));
                                    }
                                    // Sometimes ECS holds more than the known containers.
                                    let hidden = if rng.random_bool(0.2) { left / 2 } else { 0 };
                                    g.remaining_memory_mib = left - hidden;
                                }
                            }
                            if rng.random_bool(0.5) {
                                let busy = rng.random_range(0.0..100.0);
                                g.usage = Some(GpuUsage {
                                    utilization_percent: Some(Reading {
                                        latest: busy,
                                        average: busy,
                                    }),
                                    memory_used_mib: Some(Reading {
                                        latest: busy * 100.0,
                                        average: busy * 100.0,
                                    }),
                                });
                            }
                            g
                        })
                        .collect();
                    let lifecycle = rng.random_bool(0.2).then_some("spot");
                    let mut instance =
                        instance(types[rng.random_range(0..types.len())], lifecycle, gpus);
                    // Mostly with CPU and memory, reserved in part by random services.
                    if rng.random_bool(0.7) {
                        let (cpu, memory_mib) = (
                            rng.random_range(1..=192u32) * 1024,
                            rng.random_range(1..=768u32) * 1024,
                        );
                        let (mut cpu_left, mut memory_left) = (cpu, memory_mib);
                        let reserved = (0..rng.random_range(0..4))
                            .map(|_| {
                                let take = (
                                    rng.random_range(0..=cpu_left),
                                    rng.random_range(0..=memory_left),
                                );
                                cpu_left -= take.0;
                                memory_left -= take.1;
                                HostReserved {
                                    service: rng
                                        .random_bool(0.8)
                                        .then(|| format!("svc{}", rng.random_range(0..5))),
                                    team: teams[rng.random_range(0..teams.len())]
                                        .map(str::to_string),
                                    cpu: take.0,
                                    memory_mib: take.1,
                                }
                            })
                            .collect();
                        instance.host = Some(HostUse {
                            cpu,
                            memory_mib,
                            reserved,
                        });
                    }
                    instance
                })
                .collect();
            (["a", "b", "c"][c], instances)
        })
        .collect();
    snapshot(clusters)
}

/// For any fleet, span and grouping, with idle as rows or shared: the rows add up to
/// Σ instance-hours × price to the cent, the same total whatever the grouping, and every
/// instance is priced or listed as unpriced.
#[test]
fn shares_and_idle_add_up_to_the_instances_bill_to_the_cent() {
    let seed = std::env::var("GPUSHARE_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_202);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut book = random_fleet_prices();
    for case in 0..300 {
        let fleet = random_fleet(&mut rng);
        book.host_share = [0.0, 0.15, 0.5][rng.random_range(0..3)];
        let span = Span::ALL[rng.random_range(0..3)];
        let split = SplitRule::ALL[rng.random_range(0..2)];
        let mut totals = BTreeSet::new();
        let expected: f64 = fleet
            .instances()
            .filter_map(|i| book.price(&i.instance_type, Lifecycle::priced_as(i.lifecycle)))
            .map(|p| p.usd_per_hour * f64::from(span.hours()))
            .sum();
        let all = fleet.instances().count() as u32;
        for group in Grouping::ALL {
            for share_idle in [false, true] {
                let query = CostQuery {
                    group,
                    span,
                    share_idle,
                    split,
                    ..CostQuery::default()
                };
                let report = report(&fleet, &book, &query).unwrap();
                let sum: i64 = report.rows.iter().map(|r| r.cost_cents).sum();
                assert_eq!(
                    sum, report.total_cents,
                    "case {case} seed {seed} {query:?}: {report:?}"
                );
                assert_eq!(
                    report.total_cents,
                    cents(expected),
                    "case {case} seed {seed}"
                );
                assert!(
                    report.rows.iter().all(|r| r.cost_cents >= 0),
                    "case {case}: {report:?}"
                );
                let unpriced: u32 = report.unpriced.iter().map(|u| u.instances).sum();
                assert_eq!(report.instances + unpriced, all, "case {case}");
                let exact = exact_dollars(
                    &holdings::of_snapshot(&fleet, f64::from(span.hours())),
                    &book,
                    &query,
                );
                let sum_exact: f64 = exact.values().sum();
                for row in &report.rows {
                    if let Some(unused) = row.unused_cents {
                        assert!(unused <= row.cost_cents && row.estimated_unused_cents <= unused);
                    }
                    // Each row within a cent of its exact share of the total, not only their sum.
                    let dollars = exact[&(row.name.clone(), row.kind)];
                    let share = dollars * report.total_cents as f64 / sum_exact.max(f64::EPSILON);
                    assert!(
                        (row.cost_cents as f64 - share).abs() < 1.0,
                        "case {case} seed {seed} {query:?}: {row:?} against {share}"
                    );
                }
                totals.insert(report.total_cents);
            }
        }
        assert_eq!(
            totals.len(),
            1,
            "case {case}: totals differ by grouping {totals:?}"
        );
    }
}
