#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use rand::{rngs::StdRng, Rng, SeedableRng};

use super::super::history::price_recorded;
use super::super::tests::{random_fleet, random_fleet_prices};
use super::super::{exact_dollars, holdings::of_snapshot, Grouping, Recorded};
use super::*;
use crate::model::cost::{CostQuery, PriceBook, Range, RowKind};

/// 2026-10-28 00:00 UTC.
const OCT_28: i64 = 1_793_145_600;
/// 2026-11-01 00:00 UTC.
const NOV_1: i64 = 1_793_491_200;

fn sealed(month: &str, version: u32, book: PriceBook) -> SealedMonth {
    SealedMonth {
        sealing: Sealing {
            month: month.into(),
            version,
            sealed_at: "2026-11-01T00:10:00Z".into(),
            sealed_by: "the console".into(),
            ..Sealing::default()
        },
        book,
    }
}

/// A random fleet with priced instances on it.
fn priced_fleet(rng: &mut StdRng) -> crate::model::FleetSnapshot {
    loop {
        let fleet = random_fleet(rng);
        let report = super::super::price(
            &of_snapshot(&fleet, 1.0),
            &random_fleet_prices(),
            &CostQuery::default(),
            1.0,
        );
        if report.total_cents > 0 {
            return fleet;
        }
    }
}

/// Every price of `book` times `factor`.
fn scaled(book: &PriceBook, factor: f64) -> PriceBook {
    let mut book = book.clone();
    for price in &mut book.prices {
        price.usd_per_hour *= factor;
    }
    book
}

#[test]
fn months_read_as_yyyy_mm_and_nothing_else() {
    assert_eq!(
        month_range("2026-11").unwrap(),
        Range {
            from: NOV_1,
            to: NOV_1 + 30 * 86_400
        }
    );
    let december = month_range("2026-12").unwrap();
    assert_eq!(month_label(december.to), "2027-01");
    assert_eq!(month_start(NOV_1 + 17 * 86_400 + 5), NOV_1);
    assert_eq!(month_start(NOV_1 - 1), NOV_1 - 31 * 86_400);
    assert_eq!(month_words(NOV_1), "November 2026");
    for bad in [
        "2026-13",
        "2026-00",
        "26-11",
        "2026/11",
        "",
        "2026-1",
        "2026-11-01",
        "１９９９-01",
    ] {
        let error = check_month(bad).unwrap_err();
        assert!(error.contains("YYYY-MM"), "{bad}: {error}");
    }
}

#[test]
fn the_latest_seal_of_a_month_prices_it_and_other_months_take_todays() {
    let today = PriceBook::builtin("us-east-1");
    let v1 = scaled(&today, 0.5);
    let v2 = scaled(&today, 0.75);
    let books = Books::new(
        today.clone(),
        vec![sealed("2026-10", 2, v2.clone()), sealed("2026-10", 1, v1)],
    );
    assert_eq!(books.at(OCT_28), &v2);
    assert_eq!(books.at(NOV_1 - 1), &v2);
    assert_eq!(books.at(NOV_1), &today);
    assert_eq!(books.sealed("2026-10").unwrap().sealing.version, 2);
    assert!(books.sealed("2026-11").is_none());
    let across = Range {
        from: OCT_28,
        to: NOV_1 + 86_400,
    };
    assert_eq!(books.sealed_in(across).len(), 1);
    let november = Range {
        from: NOV_1,
        to: NOV_1 + 86_400,
    };
    assert!(books.sealed_in(november).is_empty());
}

/// Random days from 28 October to 3 November, October sealed at one price book, November at
/// today's: every row is within a cent of its exact share, each month priced at its own
/// prices; the rows add up to the total; and a price change today leaves October's report as it
/// was, to the cent.
#[test]
fn a_period_across_a_sealed_month_prices_each_part_at_its_own_prices() {
    let mut rng = StdRng::seed_from_u64(20_261_203);
    let today = random_fleet_prices();
    let october = scaled(&today, 0.8);
    for case in 0..40 {
        let mut recorded = Recorded::default();
        for n in 0..7 {
            if rng.random_bool(0.2) {
                continue;
            }
            let day = OCT_28 + n * 86_400;
            let minutes: u32 = [1_440, 1_440, 600][rng.random_range(0..3)];
            let holdings = of_snapshot(&random_fleet(&mut rng), f64::from(minutes) / 60.0);
            recorded.days.insert(day, holdings);
            recorded.minutes.insert(day, minutes);
        }
        let query = CostQuery {
            group: Grouping::ALL[rng.random_range(0..Grouping::ALL.len())],
            share_idle: rng.random_bool(0.5),
            ..CostQuery::default()
        };
        let books = Books::new(today.clone(), vec![sealed("2026-10", 1, october.clone())]);
        let report = price_recorded(&recorded, &books, &query);
        let mut exact: BTreeMap<(String, RowKind), f64> = BTreeMap::new();
        for (month, holdings) in recorded.by_month() {
            let book = if month < NOV_1 { &october } else { &today };
            for (key, dollars) in exact_dollars(&holdings, book, &query) {
                *exact.entry(key).or_default() += dollars;
            }
        }
        let total: f64 = exact.values().sum();
        assert!(
            (report.total_cents as f64 - total * 100.0).abs() <= 1.0,
            "case {case}: {} vs {total}",
            report.total_cents
        );
        assert_eq!(
            report.rows.iter().map(|r| r.cost_cents).sum::<i64>(),
            report.total_cents,
            "case {case}"
        );
        for row in &report.rows {
            let share = exact[&(row.name.clone(), row.kind)] * 100.0;
            assert!(
                (row.cost_cents as f64 - share).abs() < 1.0 + 1e-6,
                "case {case}: {} {} vs {share}",
                row.name,
                row.cost_cents
            );
        }
        // Today's prices change; October's part does not.
        let only_october = Recorded {
            days: recorded
                .days
                .range(..NOV_1)
                .map(|(d, h)| (*d, h.clone()))
                .collect(),
            minutes: recorded
                .minutes
                .range(..NOV_1)
                .map(|(d, m)| (*d, *m))
                .collect(),
            first: None,
        };
        let later = Books::new(
            scaled(&today, 3.0),
            vec![sealed("2026-10", 1, october.clone())],
        );
        assert_eq!(
            price_recorded(&only_october, &books, &query),
            price_recorded(&only_october, &later, &query),
            "case {case}"
        );
    }
}

/// A period across two months lists both rates of a type whose price changed, each with the
/// instances it priced.
#[test]
fn a_type_priced_differently_in_two_months_lists_both_rates() {
    let mut rng = StdRng::seed_from_u64(7);
    let today = random_fleet_prices();
    let october = scaled(&today, 0.5);
    let fleet = priced_fleet(&mut rng);
    let mut recorded = Recorded::default();
    for day in [NOV_1 - 86_400, NOV_1] {
        recorded.days.insert(day, of_snapshot(&fleet, 24.0));
        recorded.minutes.insert(day, 1_440);
    }
    let books = Books::new(today, vec![sealed("2026-10", 1, october)]);
    let report = price_recorded(&recorded, &books, &CostQuery::default());
    let first = &report.prices[0].price;
    let rates: Vec<f64> = report
        .prices
        .iter()
        .filter(|u| {
            u.price.instance_type == first.instance_type && u.price.lifecycle == first.lifecycle
        })
        .map(|u| u.price.usd_per_hour)
        .collect();
    assert_eq!(rates.len(), 2, "{:?}", report.prices);
    assert!((rates[0] - 2.0 * rates[1]).abs() < 1e-9 || (rates[1] - 2.0 * rates[0]).abs() < 1e-9);
}

#[test]
fn a_repricing_names_the_rows_and_prices_that_change() {
    let mut rng = StdRng::seed_from_u64(11);
    let today = random_fleet_prices();
    let mut recorded = Recorded::default();
    recorded
        .days
        .insert(OCT_28, of_snapshot(&priced_fleet(&mut rng), 24.0));
    recorded.minutes.insert(OCT_28, 1_440);
    let query = CostQuery {
        group: Grouping::Team,
        ..CostQuery::default()
    };
    let before = price_recorded(&recorded, &scaled(&today, 0.5).into(), &query);
    let after = price_recorded(&recorded, &today.clone().into(), &query);
    let change = compare("2026-10", 1, &before, &after);
    assert_eq!((change.from_version, change.to_version), (1, 2));
    assert_eq!(change.before_total_cents, before.total_cents);
    assert_eq!(change.after_total_cents, after.total_cents);
    assert!(!change.applied);
    assert!(!change.rows.is_empty());
    for row in &change.rows {
        assert_ne!(row.before_cents, row.after_cents, "{row:?}");
    }
    let moved: i64 = change
        .rows
        .iter()
        .map(|r| r.after_cents - r.before_cents)
        .sum();
    assert_eq!(moved, after.total_cents - before.total_cents);
    assert_eq!(
        change.prices.len(),
        before.prices.len(),
        "{:?}",
        change.prices
    );
    assert!(change.prices.iter().all(|p| p.before != p.after));
    // Nothing changes at the same prices.
    let same = compare("2026-10", 1, &after, &after);
    assert!(same.rows.is_empty() && same.prices.is_empty());
}

#[test]
fn the_months_page_reads_a_month_or_nothing() {
    assert_eq!(
        MonthsQuery::from_params([]).unwrap(),
        MonthsQuery::default()
    );
    assert_eq!(
        MonthsQuery::from_params([("month", "")]).unwrap(),
        MonthsQuery::default()
    );
    assert_eq!(
        MonthsQuery::from_params([("month", "2026-11")])
            .unwrap()
            .month
            .as_deref(),
        Some("2026-11")
    );
    assert!(MonthsQuery::from_params([("month", "November")])
        .unwrap_err()
        .contains("YYYY-MM"));
    assert!(MonthsQuery::from_params([("mnth", "2026-11")])
        .unwrap_err()
        .contains("month"));
}
