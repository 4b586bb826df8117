//! The bill's own numbers, end to end: the demo's last 30 days replayed through the SDK into the
//! recorder (its spot dev boxes, its p5 in a Capacity Block, the instances a Savings Plan
//! covers), with a three-hour restart gap; Cost Explorer read through the SDK from the emulator
//! for each closed day within its 14; and per day the console's total equal to the emulated
//! Cost Explorer's amortized total for the instances it saw, to the cent, every row within a
//! cent of its exact share, and a closed month unchanged after the prices change.

use std::{collections::BTreeSet, sync::Arc};

use crate::support::temp_dir;

use app::model::cost::{
    billed::Bill, exact_dollars, history::price_recorded, reconcile::reconcile, Books, CostQuery,
    Grouping, Lifecycle, PriceBook, PriceSource, Range, SealedMonth, Sealing,
};
use app::service::ports::CostHistory;
use emulator::billing::Purchase;
use gpushare::{
    audit::SqlAuditLog, config::EmulatorArgs, cost_explorer::CostExplorer,
    cost_history::SqlCostHistory,
};

const DAY: i64 = 86_400;

#[tokio::test]
#[allow(clippy::unwrap_used)]
async fn thirty_days_replayed_price_each_billed_day_at_cost_explorers_total_to_the_cent() {
    let days = 30;
    let args = EmulatorArgs {
        history_days: days,
        ..EmulatorArgs::default()
    };
    let now = chrono::Utc::now();
    let today = now.timestamp().div_euclid(DAY) * DAY;
    let emulator = gpushare::build_emulator(&args, days)
        .await
        .expect("the demo");
    let (_, clients) = gpushare::serve_emulator(&emulator).await.expect("serves");
    let dir = temp_dir("cost-explorer");
    let audit = SqlAuditLog::open(None, &dir).await.expect("opens");
    let history = Arc::new(SqlCostHistory::new(&audit, 400));
    // The fleet as the console reads it, with EC2's lifecycles (spot, Capacity Block); GPU
    // usage is not part of the bill, so it is not read.
    let reader = || {
        gpushare::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", 16)
            .with_ec2(gpushare::fleet::ec2::Ec2Reader::new(clients.ec2.clone()))
    };
    // A restart: five days ago from 10:00 to 13:00 UTC nothing is recorded.
    let gap = chrono::DateTime::from_timestamp(today - 5 * DAY + 10 * 3600, 0).unwrap();
    // An hour a step: the bill's figures do not depend on the step (a coarser one reads the
    // fleet a quarter as often as the console's start-up does).
    let replay = |until| {
        gpushare::cost_history::replay_in_steps(
            emulator.clone(),
            reader(),
            history.clone(),
            until,
            60,
        )
    };
    replay(gap).await.expect("replays to the gap");
    emulator.advance_to(gap + chrono::Duration::hours(3));
    replay(now).await.expect("replays after the gap");

    // Cost Explorer, read as the console reads it: each day closed for a day, within its 14.
    let explorer = CostExplorer::new(clients.cost_explorer.clone(), history.clone(), false);
    let read = explorer.read_due(now.timestamp()).await.expect("reads");
    let expected: Vec<i64> = (2..=13).rev().map(|ago| today - ago * DAY).collect();
    assert_eq!(read, expected.len(), "one read per closed day in reach");
    assert_eq!(history.read_days().await.unwrap(), expected);
    // Read once: nothing is due again. Each request is counted for /metrics (the demo's
    // instances fit one page a day).
    assert_eq!(explorer.read_due(now.timestamp()).await.unwrap(), 0);
    let asked: u64 = clients
        .calls
        .attempts()
        .into_iter()
        .filter(|(service, operation, _, _)| {
            service == "ce" && operation == "GetCostAndUsageWithResources"
        })
        .map(|(_, _, _, count)| count)
        .sum();
    assert_eq!(asked, expected.len() as u64);
    assert!(explorer.off().is_none());

    let from = today - i64::from(days) * DAY;
    let mut bill = history.bill(from, today + DAY).await.expect("the bill");
    assert!(bill.seen.is_empty() && bill.billed.is_empty(), "sums only");
    bill.seen = history.seen(from, today + DAY).await.expect("seen");
    bill.billed = history
        .billed_lines(from, today + DAY)
        .await
        .expect("the lines");
    // The store's sums per day, type and lifecycle are what the instances' own rows add up to.
    let detail = Bill {
        sums: Default::default(),
        ..bill.clone()
    };
    assert_eq!(
        bill.sums.keys().copied().collect::<Vec<_>>(),
        {
            let mut days = expected.clone();
            days.sort_unstable();
            days
        },
        "a sum for each day read"
    );
    for (day, sums) in &bill.sums {
        let summed = detail.groups(*day);
        assert_eq!(
            sums.keys().collect::<Vec<_>>(),
            summed.keys().collect::<Vec<_>>()
        );
        for (key, group) in sums {
            let other = &summed[key];
            assert_eq!(
                (group.minutes, group.instances, group.listed),
                (other.minutes, other.instances, other.listed),
                "{day} {key:?}"
            );
            assert!((group.usd - other.usd).abs() < 1e-6, "{day} {key:?}");
        }
    }
    let list = PriceBook::builtin("us-east-1");
    let books = Books::new(list.clone(), Vec::new()).with_bill(&bill);
    let ledger = emulator.with_fleet(|fleet| fleet.billing.clone());

    // The fleet the days were billed for has every kind of purchase.
    let seen_ids: BTreeSet<&str> = bill.seen.iter().map(|s| s.instance_id.as_str()).collect();
    for purchase in [
        Purchase::OnDemand,
        Purchase::SavingsPlan,
        Purchase::Spot,
        Purchase::CapacityBlock,
    ] {
        assert!(
            ledger
                .instances
                .iter()
                .any(|(id, life)| life.purchase == purchase && seen_ids.contains(id.as_str())),
            "{purchase:?}"
        );
    }

    let mut gap_seen = false;
    for day in &expected {
        let recorded = history.select(*day, day + DAY).await.expect("the day");
        let minutes = recorded.minutes.get(day).copied().unwrap_or(0);
        gap_seen |= minutes < 1440;
        // What the emulator's Cost Explorer billed for the instances the console saw that day.
        let saw: BTreeSet<&str> = bill
            .seen
            .iter()
            .filter(|s| s.day == *day && s.minutes > 0)
            .map(|s| s.instance_id.as_str())
            .collect();
        let (from_t, to_t) = (
            chrono::DateTime::from_timestamp(*day, 0).unwrap(),
            chrono::DateTime::from_timestamp(day + DAY, 0).unwrap(),
        );
        let billed_usd: f64 = saw.iter().map(|id| ledger.cost(id, from_t, to_t)).sum();
        let billed_cents = (billed_usd * 100.0).round() as i64;
        for group in [Grouping::Team, Grouping::Service, Grouping::Cluster] {
            let query = CostQuery {
                group,
                ..CostQuery::default()
            };
            let report = price_recorded(&recorded, &books, &query);
            assert_eq!(report.total_cents, billed_cents, "day {day}, by {group:?}");
            assert!(report.unpriced.is_empty(), "{:?}", report.unpriced);
            assert!(report
                .prices
                .iter()
                .all(|p| p.price.source == PriceSource::CostExplorer));
            let exact = exact_dollars(&recorded.days[day], books.at(*day), &query);
            for row in &report.rows {
                let want = exact[&(row.name.clone(), row.kind)] * 100.0;
                assert!(
                    (row.cost_cents as f64 - want).abs() <= 1.0,
                    "{}: {} vs {want}",
                    row.name,
                    row.cost_cents
                );
            }
        }
        // The reconciliation's day says the same, and explains whatever else Cost Explorer billed.
        let range = Range {
            from: *day,
            to: day + DAY,
        };
        let month = reconcile("day", range, &recorded, &bill, &books, &|_| String::new());
        let row = &month.days[0];
        assert_eq!(row.console_cents, billed_cents);
        let all_usd: f64 = ledger
            .instances
            .keys()
            .map(|id| ledger.cost(id, from_t, to_t))
            .sum();
        assert_eq!(
            row.cost_explorer_cents,
            Some((all_usd * 100.0).round() as i64)
        );
        let parts: i64 = row.explained.iter().map(|e| e.cents).sum();
        assert_eq!(Some(parts), row.difference_cents, "{:?}", row.explained);
    }
    assert!(gap_seen, "the restart gap falls on a billed day");

    // A day Cost Explorer no longer reaches is at list prices; its Capacity Block p5, which has
    // no list price, is priced at the latest day Cost Explorer billed it, and says so — never at
    // the on-demand rate.
    let old = today - 20 * DAY;
    assert!(!books.billed(old));
    let recorded = history.select(old, old + DAY).await.unwrap();
    let report = price_recorded(&recorded, &books, &CostQuery::default());
    let p5 = report
        .prices
        .iter()
        .find(|p| p.price.instance_type == "p5.48xlarge")
        .expect("the p5 is priced");
    assert_eq!(p5.price.lifecycle, Lifecycle::CapacityBlock);
    assert!(
        p5.price
            .detail
            .contains("the latest day Cost Explorer billed"),
        "{}",
        p5.price.detail
    );
    let g5 = report
        .prices
        .iter()
        .find(|p| p.price.instance_type == "g5.12xlarge")
        .expect("the g5 is priced");
    assert_eq!(g5.price.source, PriceSource::BuiltIn);

    // A closed month, sealed at the list prices, does not change when the prices do.
    let month_start = app::model::cost::sealed::month_start(today);
    let last = app::model::cost::sealed::month_label(month_start - 1);
    let whole = app::model::cost::sealed::month_range(&last).unwrap();
    let seal = SealedMonth {
        sealing: Sealing {
            month: last.clone(),
            version: 1,
            ..Sealing::default()
        },
        book: list.clone(),
    };
    let mut dearer = list.clone();
    for price in &mut dearer.prices {
        price.usd_per_hour *= 1.3;
    }
    let recorded = history.select(whole.from, whole.to).await.unwrap();
    let query = CostQuery::default();
    let before = price_recorded(
        &recorded,
        &Books::new(list, vec![seal.clone()]).with_bill(&bill),
        &query,
    );
    let after = price_recorded(
        &recorded,
        &Books::new(dearer, vec![seal]).with_bill(&bill),
        &query,
    );
    assert!(before.total_cents > 0);
    assert_eq!(before.total_cents, after.total_cents);
    assert_eq!(before.rows, after.rows);
}
