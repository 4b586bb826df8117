//! The split's rules by hand: the ECS Managed Instances charge (added on top of EC2's price for
//! the instances EC2 names ECS as the operator of, split like the rest, and said when the price
//! file does not give it), Capacity Blocks, the larger-of-memory-and-compute split, and unused
//! on MPS GPUs as an estimate.

use crate::model::{
    cost::{report, CostQuery, Grouping, Lifecycle, Price, PriceBook, RowKind, Span, SplitRule},
    ClusterView, FleetSnapshot, GpuContainer, GpuUsage, GpuView, InstanceView, Reading,
    SharingMode,
};

fn idle_gpu() -> GpuView {
    GpuView {
        uuid: "GPU-0".into(),
        index: 0,
        mode: SharingMode::Idle,
        total_memory_mib: 22_000,
        remaining_memory_mib: 22_000,
        compute_allocated_percent: 0,
        containers: Vec::new(),
        usage: None,
    }
}

/// Three g5.xlarge: two ECS Managed Instances (one of them spot) and one registered by hand.
fn fleet() -> FleetSnapshot {
    let instance = |id: &str, managed: bool, lifecycle: Lifecycle| {
        let mut instance = InstanceView::of(id, "g5.xlarge")
            .with_arn(format!("arn:aws:ecs:us-east-1:1:container-instance/c/{id}"))
            .with_gpus(vec![idle_gpu()])
            .with_lifecycle(Some(lifecycle));
        instance.managed_instance = managed;
        instance
    };
    FleetSnapshot {
        taken_at: "2026-12-04T00:00:00Z".into(),
        api_calls: 0,
        cloudwatch_calls: 0,
        usage_error: None,
        clusters: vec![ClusterView {
            name: "prod".into(),
            instances: vec![
                instance("i-1", true, Lifecycle::OnDemand),
                instance("i-2", true, Lifecycle::Spot),
                instance("i-3", false, Lifecycle::OnDemand),
            ],
            ..ClusterView::default()
        }],
        unknown_gpu_ids: 0,
    }
}

fn book(fee: Option<f64>) -> PriceBook {
    let mut book = PriceBook::builtin("us-east-1");
    book.prices.retain(|p| p.instance_type != "g5.xlarge");
    for (lifecycle, usd) in [(Lifecycle::OnDemand, 1.006), (Lifecycle::Spot, 0.4)] {
        book.prices.push(Price {
            instance_type: "g5.xlarge".into(),
            lifecycle,
            usd_per_hour: usd,
            // Given on the on-demand entry only: the charge is the type's, whatever EC2 bills.
            managed_instances_usd_per_hour: fee.filter(|_| lifecycle == Lifecycle::OnDemand),
            detail: "test".into(),
            ..Price::default()
        });
    }
    book
}

fn day() -> CostQuery {
    CostQuery {
        span: Span::Day,
        ..CostQuery::default()
    }
}

#[test]
fn managed_instances_pay_their_charge_on_top_of_ec2s_price_spot_or_not() {
    let report = report(&fleet(), &book(Some(0.1)), &day()).expect("a report");
    // EC2: 2 × $1.006 + $0.40 an hour; the charge: 2 × $0.10 — over 24 hours.
    let ec2: f64 = (2.0 * 1.006 + 0.4) * 24.0;
    let charge = 2.0 * 0.1 * 24.0;
    assert_eq!(report.total_cents, ((ec2 + charge) * 100.0).round() as i64);
    assert_eq!(report.managed_instances_cents, 480);
    let sum: i64 = report.rows.iter().map(|r| r.cost_cents).sum();
    assert_eq!(sum, report.total_cents, "the rows still add up");
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("$4.80 of ECS Managed Instances charge for 2 instances")),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_charge_the_price_file_does_not_give_is_left_out_and_said() {
    let report = report(&fleet(), &book(None), &day()).expect("a report");
    let ec2: f64 = (2.0 * 1.006 + 0.4) * 24.0;
    assert_eq!(report.total_cents, (ec2 * 100.0).round() as i64);
    assert_eq!(report.managed_instances_cents, 0);
    let note = report
        .notes
        .iter()
        .find(|n| n.contains("Managed Instances charge of 2 instances"))
        .unwrap_or_else(|| panic!("{:?}", report.notes));
    assert!(note.contains("g5.xlarge") && note.contains("managed_instances_usd_per_hour"));
}

#[test]
fn a_fleet_without_managed_instances_has_no_charge_and_no_note() {
    let mut plain = fleet();
    for instance in &mut plain.clusters[0].instances {
        instance.managed_instance = false;
    }
    let report = report(&plain, &book(None), &day()).expect("a report");
    assert_eq!(report.managed_instances_cents, 0);
    assert!(!report.notes.iter().any(|n| n.contains("Managed Instances")));
}

#[test]
fn a_capacity_block_is_never_priced_at_the_on_demand_rate() {
    let mut fleet = fleet();
    fleet.clusters[0].instances[2].lifecycle = Some(Lifecycle::CapacityBlock);
    // The book prices g5.xlarge on demand, but not in a Capacity Block.
    let report = report(&fleet, &book(None), &day()).expect("a report");
    let ec2: f64 = (1.006 + 0.4) * 24.0;
    assert_eq!(report.total_cents, (ec2 * 100.0).round() as i64);
    assert_eq!(report.unpriced.len(), 1, "{:?}", report.unpriced);
    assert_eq!(report.unpriced[0].lifecycle, Lifecycle::CapacityBlock);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("never priced at the on-demand rate")
                && n.contains("lifecycle = \"capacity-block\"")),
        "{:?}",
        report.notes
    );
    // With the block's own rate, it is priced at that rate.
    let mut priced = book(None);
    priced.prices.push(Price {
        instance_type: "g5.xlarge".into(),
        lifecycle: Lifecycle::CapacityBlock,
        usd_per_hour: 0.7,
        detail: "block".into(),
        ..Price::default()
    });
    let report = report_of(&fleet, &priced);
    assert!(report.unpriced.is_empty());
    assert_eq!(
        report.total_cents,
        ((1.006 + 0.4 + 0.7) * 24.0 * 100.0_f64).round() as i64
    );
    assert!(!report.notes.iter().any(|n| n.contains("Capacity Block")));
}

fn report_of(fleet: &FleetSnapshot, book: &PriceBook) -> crate::model::cost::CostReport {
    report(fleet, book, &day()).expect("a report")
}

/// One g5.xlarge ($1.006 an hour, one GPU of 24,000 MiB) shared through MPS by `tenants`:
/// (team, memory MiB, maxComputePercent); with the GPU's memory used, when given.
fn shared(tenants: &[(&str, u32, u32)], used_mib: Option<f64>) -> FleetSnapshot {
    let held: u32 = tenants.iter().map(|(_, m, _)| m).sum();
    let gpu = GpuView {
        mode: SharingMode::NvidiaMps,
        total_memory_mib: 24_000,
        remaining_memory_mib: 24_000 - held,
        containers: tenants
            .iter()
            .map(|(team, memory, compute)| GpuContainer {
                task_arn: format!("arn:aws:ecs:us-east-1:1:task/prod/{team}"),
                container: "main".into(),
                service: Some(format!("{team}-svc")),
                team: Some((*team).into()),
                memory_mib: Some(*memory),
                compute_percent: *compute,
                whole_gpu: false,
                started_at: None,
            })
            .collect(),
        usage: used_mib.map(|used| GpuUsage {
            utilization_percent: None,
            memory_used_mib: Some(Reading {
                latest: used,
                average: used,
            }),
        }),
        ..idle_gpu()
    };
    let mut fleet = fleet();
    fleet.clusters[0].instances = vec![InstanceView::of("i-1", "g5.xlarge")
        .with_arn("arn:aws:ecs:us-east-1:1:container-instance/c/i-1")
        .with_gpus(vec![gpu])
        .with_lifecycle(Some(Lifecycle::OnDemand))];
    fleet
}

fn hour(split: SplitRule) -> CostQuery {
    CostQuery {
        span: Span::Hour,
        split,
        ..CostQuery::default()
    }
}

fn cents_of(report: &crate::model::cost::CostReport, name: &str) -> i64 {
    report
        .rows
        .iter()
        .find(|r| r.name == name)
        .map_or(0, |r| r.cost_cents)
}

/// a holds a tenth of the memory and may take all the compute; b 40 % of the memory and 20 % of
/// the compute. By memory: a 10 %, b 40 %, idle 50 %. By the larger share: a 1, b 0.4, 1.4 in
/// all, scaled to the GPU: a 71.4 %, b 28.6 %, nothing idle.
#[test]
fn the_larger_share_rule_charges_the_compute_a_tenant_may_take() {
    let fleet = shared(&[("a", 2_400, 100), ("b", 9_600, 20)], None);
    let book = book(None);
    let memory = report(&fleet, &book, &hour(SplitRule::Memory)).expect("a report");
    assert_eq!(memory.total_cents, 101);
    assert_eq!((cents_of(&memory, "a"), cents_of(&memory, "b")), (10, 40));
    assert_eq!(memory.idle_cents, 51);
    let larger = report(&fleet, &book, &hour(SplitRule::Max)).expect("a report");
    assert_eq!(larger.total_cents, 101);
    // 1.006 × 1/1.4 = 0.7186, × 0.4/1.4 = 0.2874.
    assert_eq!((cents_of(&larger, "a"), cents_of(&larger, "b")), (72, 29));
    assert_eq!(larger.idle_cents, 0);
    assert!(
        larger.rule.contains("larger of each container's share"),
        "{}",
        larger.rule
    );
    assert!(!memory.rule.contains("larger of each container's share"));

    // Alone with a 30 % compute limit and a tenth of the memory: 30 %, the rest idle.
    let capped = shared(&[("a", 2_400, 30)], None);
    let larger = report(&capped, &book, &hour(SplitRule::Max)).expect("a report");
    assert_eq!(cents_of(&larger, "a"), 30);
    assert_eq!(larger.idle_cents, 71);
}

/// The GPU used 6,000 of the 12,000 MiB allocated: half of each tenant's share is unused — the
/// GPU's figure shared out, so an estimate, and the report says why.
#[test]
fn unused_on_an_mps_gpu_is_an_estimate_and_said_so() {
    let fleet = shared(&[("a", 2_400, 100), ("b", 9_600, 20)], Some(6_000.0));
    let query = CostQuery {
        group: Grouping::Team,
        ..hour(SplitRule::Memory)
    };
    let report = report(&fleet, &book(None), &query).expect("a report");
    let b = report.rows.iter().find(|r| r.name == "b").expect("b's row");
    assert_eq!(b.unused_cents, Some(20));
    assert_eq!(b.estimated_unused_cents, 20);
    assert!(report
        .notes
        .iter()
        .any(|n| n.starts_with("Unused on GPUs shared through MPS is an estimate")));
    // No usage, no estimate and no note.
    let quiet = report_of(&shared(&[("a", 2_400, 100)], None), &book(None));
    assert!(quiet
        .rows
        .iter()
        .all(|r| r.estimated_unused_cents == 0 || r.kind == RowKind::Idle));
    assert!(!quiet.notes.iter().any(|n| n.contains("is an estimate")));
}
