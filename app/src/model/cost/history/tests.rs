#![allow(clippy::unwrap_used)]

use rand::{rngs::StdRng, Rng, SeedableRng};

use super::super::tests::{random_fleet, random_fleet_prices};
use super::super::{exact_dollars, holdings::of_snapshot, Grouping};
use super::*;

/// Recorded days of random fleets, some days only partly recorded, one not at all.
fn random_history(rng: &mut StdRng) -> Recorded {
    let mut recorded = Recorded::default();
    let start = 1_793_491_200; // 2026-11-01
    for n in 0..rng.random_range(1..12) {
        let day = start + n * 86_400;
        let minutes: u32 = [0, 1_440, 1_440, 1_440, 90, 1_437][rng.random_range(0..6)];
        if minutes == 0 {
            continue;
        }
        let holdings = of_snapshot(&random_fleet(rng), f64::from(minutes) / 60.0);
        recorded.days.insert(day, holdings);
        recorded.minutes.insert(day, minutes);
    }
    recorded
}

/// The cents of a CSV line's `cost_usd` (the fourth field; names here have no commas).
fn cents_of_line(line: &str) -> i64 {
    let usd = line.split(',').nth(3).unwrap();
    let (dollars, cents) = usd.split_once('.').unwrap();
    dollars.parse::<i64>().unwrap() * 100 + cents.parse::<i64>().unwrap()
}

/// Rounding each day on its own drifted from the period's total by up to a cent a day. Now each
/// row's days add up to its line in the period's report, every line to the report's total, and
/// each day is within a cent of its share of the row, by what the day held at the day's prices.
#[test]
fn a_rows_days_add_up_to_its_period_and_each_is_within_a_cent_of_exact() {
    let seed = std::env::var("GPUSHARE_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_206);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut book = random_fleet_prices();
    for case in 0..60 {
        let recorded = random_history(&mut rng);
        book.host_share = [0.0, 0.15][rng.random_range(0..2)];
        let query = CostQuery {
            group: Grouping::ALL[rng.random_range(0..Grouping::ALL.len())],
            share_idle: rng.random_bool(0.5),
            ..CostQuery::default()
        };
        let period = price(&recorded.total(), &book, &query, recorded.recorded_hours());
        let days: Vec<(i64, &Holdings, f64)> = recorded
            .days
            .iter()
            .map(|(day, h)| (*day, h, f64::from(recorded.minutes[day]) / 60.0))
            .collect();
        let (_, shares) = daily_cents(&recorded, &days, &book.clone().into(), &query);
        let exact: Vec<_> = days
            .iter()
            .map(|(_, holdings, _)| exact_dollars(holdings, &book, &query))
            .collect();
        for row in &period.rows {
            let key = (row.name.clone(), row.kind);
            let by_day = &shares[&key];
            assert_eq!(
                by_day.iter().sum::<i64>(),
                row.cost_cents,
                "case {case} seed {seed} {query:?}: {row:?}"
            );
            let weights: Vec<f64> = exact
                .iter()
                .map(|day| day.get(&key).copied().unwrap_or(0.0))
                .collect();
            let held: f64 = weights.iter().sum();
            for (n, weight) in weights.iter().enumerate() {
                let share = weight * row.cost_cents as f64 / held.max(f64::EPSILON);
                assert!(
                    (by_day[n] as f64 - share).abs() < 1.0,
                    "case {case} seed {seed} {query:?} day {n}: {} against {share}",
                    by_day[n]
                );
            }
        }
        let csv = daily_csv(&recorded, &book.clone().into(), &query);
        let total: i64 = csv
            .lines()
            .skip(1)
            .filter(|line| line.starts_with("2026-"))
            .map(cents_of_line)
            .sum();
        let last = csv.lines().last().unwrap();
        assert!(last.ends_with(",method,,,,,"), "{last}");
        assert_eq!(
            total, period.total_cents,
            "case {case} seed {seed} {query:?}"
        );
    }
}

/// The fields of one CSV line (RFC 4180: quoted fields may hold commas and doubled quotes).
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            (c, _) => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// The FOCUS export: its columns, a line per day and row with every column, the costs adding up
/// to the period's report to the cent, charge periods that are the recorded days, billing
/// periods their months, and tags a FinOps tool can read as JSON.
#[test]
fn the_focus_export_is_the_daily_lines_in_focus_columns() {
    let mut rng = StdRng::seed_from_u64(20_261_207);
    let book = random_fleet_prices();
    for case in 0..20 {
        let recorded = random_history(&mut rng);
        let query = CostQuery {
            group: Grouping::ALL[rng.random_range(0..Grouping::ALL.len())],
            ..CostQuery::default()
        };
        let period = price(&recorded.total(), &book, &query, recorded.recorded_hours());
        let csv = crate::model::cost::focus::focus_csv(&recorded, &book.clone().into(), &query);
        let mut lines = csv.lines();
        let header = fields(lines.next().unwrap());
        assert_eq!(header, crate::model::cost::focus::COLUMNS, "case {case}");
        let column = |name: &str| header.iter().position(|h| h == name).unwrap();
        let mut billed = 0;
        for line in lines {
            let row = fields(line);
            assert_eq!(row.len(), header.len(), "case {case}: {line}");
            let cost = &row[column("BilledCost")];
            assert_eq!(cost, &row[column("EffectiveCost")]);
            assert_eq!(cost, &row[column("ListCost")]);
            billed += cents_of_line(&format!(",,,{cost}"));
            let start = &row[column("ChargePeriodStart")];
            let day = chrono::DateTime::parse_from_rfc3339(start)
                .unwrap()
                .timestamp();
            assert!(recorded.minutes[&day] > 0, "case {case}: {start}");
            assert!(row[column("BillingPeriodStart")].ends_with("-01T00:00:00Z"));
            assert_eq!(row[column("BillingCurrency")], "USD");
            let tags: serde_json::Value = serde_json::from_str(&row[column("Tags")]).unwrap();
            assert!(tags.is_object(), "case {case}: {tags}");
        }
        assert_eq!(billed, period.total_cents, "case {case} {query:?}");
    }
}

#[test]
fn coverage_is_said_without_minus_zero_or_a_whole_that_is_not() {
    use super::coverage;
    assert_eq!(coverage(-0.0, 720.0), "none");
    assert_eq!(coverage(0.0, 720.0), "none");
    assert_eq!(coverage(1.0, 0.0), "none");
    assert_eq!(coverage(3.6, 720.0), "under 1 %");
    assert_eq!(coverage(7.2, 720.0), "1 %");
    assert_eq!(coverage(266.4, 720.0), "37 %");
    assert_eq!(coverage(716.0, 720.0), "over 99 %");
}
