//! The ECS Managed Instances charge in the cost: added on top of EC2's price for the instances
//! EC2 names ECS as the operator of, split like the rest, and said when the price file does not
//! give it.

use crate::model::{
    cost::{report, CostQuery, Lifecycle, Price, PriceBook, Span},
    ClusterView, FleetSnapshot, GpuView, InstanceView, SharingMode,
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
