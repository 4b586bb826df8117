#![allow(clippy::unwrap_used)]

use rand::{rngs::StdRng, Rng, SeedableRng};

use super::super::history::price_recorded;
use super::super::tests::{random_fleet, random_fleet_prices};
use super::super::{exact_dollars, holdings::of_snapshot, Books, CostQuery, Grouping, Recorded};
use super::*;
use crate::model::FleetSnapshot;

/// 2026-11-20 00:00 UTC.
const DAY: i64 = 1_795_132_800;

/// `fleet` with an EC2 instance ID on every instance.
fn with_ids(mut fleet: FleetSnapshot) -> FleetSnapshot {
    let mut n = 0;
    for cluster in &mut fleet.clusters {
        for instance in &mut cluster.instances {
            n += 1;
            instance.ec2_instance_id = format!("i-{n:017x}");
        }
    }
    fleet
}

/// `fleet` recorded for `minutes` of `day`, and the bill's side of it.
fn recorded(fleet: &FleetSnapshot, day: i64, minutes: u32) -> (Recorded, Vec<SeenDay>) {
    let hours = f64::from(minutes) / 60.0;
    let mut recorded = Recorded::default();
    recorded.days.insert(day, of_snapshot(fleet, hours));
    recorded.minutes.insert(day, minutes);
    let seen = fleet
        .clusters
        .iter()
        .flat_map(|c| {
            c.instances.iter().map(|i| SeenDay {
                day,
                instance_id: i.ec2_instance_id.clone(),
                cluster: c.name.clone(),
                instance_type: i.instance_type.clone(),
                lifecycle: i.lifecycle,
                minutes,
            })
        })
        .collect();
    (recorded, seen)
}

/// A bill of `seen`: every instance billed a random amount, and `others` instances the
/// console never saw.
fn billed(rng: &mut StdRng, seen: &[SeenDay], others: usize) -> Bill {
    let mut lines: Vec<BilledLine> = seen
        .iter()
        .map(|s| BilledLine {
            day: s.day,
            resource_id: s.instance_id.clone(),
            usd: rng.random_range(0.5..80.0),
        })
        .collect();
    for n in 0..others {
        lines.push(BilledLine {
            day: DAY,
            resource_id: format!("i-other{n}"),
            usd: rng.random_range(0.5..80.0),
        });
    }
    Bill {
        seen: seen.to_vec(),
        billed: lines,
        read: vec![ReadDay {
            day: DAY,
            read_at: DAY + 2 * 86_400,
            calls: 1,
        }],
        ..Bill::default()
    }
}

#[test]
fn a_billed_day_adds_up_to_what_cost_explorer_billed_for_the_instances_seen_to_the_cent() {
    let mut rng = StdRng::seed_from_u64(36);
    let mut cases = 0;
    while cases < 60 {
        let fleet = with_ids(random_fleet(&mut rng));
        if fleet.instances().next().is_none() {
            continue;
        }
        cases += 1;
        // A restart gap: part of the day unrecorded.
        let minutes = if rng.random_bool(0.3) {
            rng.random_range(60..1440)
        } else {
            1440
        };
        let (recorded, seen) = recorded(&fleet, DAY, minutes);
        let others = rng.random_range(0..3);
        let bill = billed(&mut rng, &seen, others);
        let books = Books::from(random_fleet_prices()).with_bill(&bill);
        let seen_ids: std::collections::BTreeSet<&str> =
            seen.iter().map(|s| s.instance_id.as_str()).collect();
        let seen_usd: f64 = bill
            .billed
            .iter()
            .filter(|l| seen_ids.contains(l.resource_id.as_str()))
            .map(|l| l.usd)
            .sum();
        for group in [Grouping::Team, Grouping::Service, Grouping::InstanceType] {
            let query = CostQuery {
                group,
                ..CostQuery::default()
            };
            let report = price_recorded(&recorded, &books, &query);
            assert_eq!(
                report.total_cents,
                (seen_usd * 100.0).round() as i64,
                "case {cases}: the day's total is the bill's"
            );
            assert!(
                report.unpriced.is_empty(),
                "every type is billed: {:?}",
                report.unpriced
            );
            // Every row within a cent of its exact share.
            let exact = exact_dollars(&recorded.days[&DAY], books.at(DAY), &query);
            for row in &report.rows {
                let want = exact
                    .get(&(row.name.clone(), row.kind))
                    .copied()
                    .unwrap_or(0.0)
                    * 100.0;
                assert!(
                    (row.cost_cents as f64 - want).abs() <= 1.0,
                    "{} {:?}: {} against {want:.3}",
                    row.name,
                    row.kind,
                    row.cost_cents
                );
            }
            assert!(report
                .prices
                .iter()
                .all(|p| p.price.source == PriceSource::CostExplorer));
        }
    }
}

#[test]
fn a_type_cost_explorer_did_not_bill_keeps_its_list_price_and_today_learns_a_block_rate() {
    let seen: Vec<SeenDay> = [
        ("i-p5", "p5.48xlarge", Lifecycle::CapacityBlock),
        ("i-g5", "g5.xlarge", Lifecycle::OnDemand),
    ]
    .into_iter()
    .map(|(id, instance_type, lifecycle)| SeenDay {
        day: DAY,
        instance_id: id.into(),
        cluster: "batch".into(),
        instance_type: instance_type.into(),
        lifecycle: Some(lifecycle),
        minutes: 1440,
    })
    .collect();
    // Only the p5 is billed: a Capacity Block at $31.37 an hour.
    let p5: Vec<&SeenDay> = seen
        .iter()
        .filter(|s| s.instance_type == "p5.48xlarge")
        .collect();
    assert!(!p5.is_empty());
    let bill = Bill {
        billed: p5
            .iter()
            .map(|s| BilledLine {
                day: DAY,
                resource_id: s.instance_id.clone(),
                usd: 31.37 * 24.0,
            })
            .collect(),
        seen: seen.clone(),
        read: vec![ReadDay {
            day: DAY,
            read_at: 0,
            calls: 1,
        }],
        ..Bill::default()
    };
    let list = PriceBook::builtin("us-east-1");
    let books = Books::from(list.clone()).with_bill(&bill);
    let day = books.at(DAY);
    let p5_price = day
        .price("p5.48xlarge", p5[0].lifecycle.unwrap_or_default())
        .unwrap();
    assert_eq!(p5_price.source, PriceSource::CostExplorer);
    assert!((p5_price.usd_per_hour - 31.37).abs() < 1e-9);
    assert_eq!(
        day.price("g5.xlarge", Lifecycle::OnDemand),
        list.price("g5.xlarge", Lifecycle::OnDemand),
        "a type with no billed instance keeps its list price"
    );
    // Another day, not read, is at list prices; today's prices learn the p5's billed rate only
    // where they had none.
    assert!(!books.billed(DAY + 86_400));
    assert_eq!(books.at(DAY + 86_400).prices, books.current.prices);
    assert!(list
        .price("p5.48xlarge", Lifecycle::CapacityBlock)
        .is_none());
    let learned = books
        .current
        .price("p5.48xlarge", Lifecycle::CapacityBlock)
        .unwrap();
    assert!(
        learned
            .detail
            .contains("the latest day Cost Explorer billed"),
        "{}",
        learned.detail
    );
}

#[test]
fn instances_of_one_type_under_different_terms_share_the_days_rate() {
    let seen: Vec<SeenDay> = ["i-a", "i-b"]
        .into_iter()
        .map(|id| SeenDay {
            day: DAY,
            instance_id: id.into(),
            cluster: "prod".into(),
            instance_type: "g5.12xlarge".into(),
            lifecycle: Some(Lifecycle::OnDemand),
            minutes: 1440,
        })
        .collect();
    let bill = Bill {
        seen,
        billed: vec![
            // One under a Savings Plan, one at list.
            BilledLine {
                day: DAY,
                resource_id: "i-a".into(),
                usd: 5.672 * 24.0 * 0.72,
            },
            BilledLine {
                day: DAY,
                resource_id: "i-b".into(),
                usd: 5.672 * 24.0,
            },
        ],
        read: vec![ReadDay {
            day: DAY,
            read_at: 0,
            calls: 1,
        }],
        ..Bill::default()
    };
    let groups = bill.groups(DAY);
    let group = &groups[&("g5.12xlarge".to_string(), Lifecycle::OnDemand)];
    assert_eq!(group.instances, 2);
    assert!((group.hours() - 48.0).abs() < 1e-9);
    let book = day_book(&PriceBook::builtin("us-east-1"), &bill, DAY);
    let rate = book.price("g5.12xlarge", Lifecycle::OnDemand).unwrap();
    assert!(
        (rate.usd_per_hour - 5.672 * 0.86).abs() < 1e-9,
        "{}",
        rate.usd_per_hour
    );
    assert!(
        rate.detail.contains("2 instances over 48.0 recorded hours"),
        "{}",
        rate.detail
    );
}
