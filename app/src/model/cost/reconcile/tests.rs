#![allow(clippy::unwrap_used)]

use super::*;
use crate::model::cost::{
    billed::{Bill, BilledLine, ReadDay, SeenDay},
    Books, Lifecycle, PriceBook, Range, Recorded,
};

/// 2026-11-20 00:00 UTC.
const DAY: i64 = 1_795_132_800;

fn seen(day: i64, id: &str, instance_type: &str, minutes: u32) -> SeenDay {
    SeenDay {
        day,
        instance_id: id.into(),
        cluster: "prod".into(),
        instance_type: instance_type.into(),
        lifecycle: Some(Lifecycle::OnDemand),
        minutes,
    }
}

fn line(day: i64, id: &str, usd: f64) -> BilledLine {
    BilledLine {
        day,
        resource_id: id.into(),
        usd,
    }
}

/// Two days: the first read from Cost Explorer (an instance it billed that the console never
/// saw, one the console saw that it did not bill, 20 hours recorded), the second not.
fn month() -> Reconciliation {
    let bill = Bill {
        seen: vec![
            seen(DAY, "i-a", "g5.xlarge", 1200),
            seen(DAY, "i-b", "g5.12xlarge", 1200),
            seen(DAY + 86_400, "i-a", "g5.xlarge", 1440),
        ],
        billed: vec![line(DAY, "i-a", 17.0), line(DAY, "i-outside", 9.99)],
        read: vec![ReadDay {
            day: DAY,
            read_at: DAY + 2 * 86_400,
            calls: 2,
        }],
        ..Bill::default()
    };
    let books = Books::from(PriceBook::builtin("us-east-1")).with_bill(&bill);
    let mut recorded = Recorded::default();
    recorded.minutes.insert(DAY, 1200);
    recorded.minutes.insert(DAY + 86_400, 1440);
    let range = Range {
        from: DAY,
        to: DAY + 2 * 86_400,
    };
    reconcile("2026-11", range, &recorded, &bill, &books, &|_| {
        "not read".to_string()
    })
}

#[test]
fn a_read_day_compares_the_console_with_cost_explorer_and_explains_the_difference() {
    let month = month();
    assert_eq!(month.days.len(), 2);
    let day = &month.days[0];
    assert_eq!(day.day, "2026-11-20");
    assert_eq!(day.source, "cost-explorer");
    // i-a at the bill ($17.00); i-b, not billed, at its list price for 20 hours.
    let list_b = (5.672_f64 * 20.0 * 100.0).round() as i64;
    assert_eq!(day.console_cents, 1700 + list_b);
    assert_eq!(day.cost_explorer_cents, Some(1700 + 999));
    assert_eq!(day.difference_cents, Some(999 - list_b));
    let kinds: Vec<(&str, i64)> = day
        .explained
        .iter()
        .map(|e| (e.kind.as_str(), e.cents))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("not-seen", 999),
            ("not-billed", -list_b),
            ("hours-not-recorded", 0)
        ]
    );
    // What the difference's parts add up to is the difference.
    let parts: i64 = day.explained.iter().map(|e| e.cents).sum();
    assert_eq!(Some(parts), day.difference_cents);
    assert_eq!(day.instances_seen, 2);
    // At list: i-a for 20 hours of g5.xlarge, and i-b.
    assert_eq!(
        day.list_cents,
        (1.006_f64 * 20.0 * 100.0).round() as i64 + list_b
    );
}

#[test]
fn a_day_not_read_is_at_list_prices_and_says_why() {
    let month = month();
    let day = &month.days[1];
    assert_eq!(day.source, "list-prices");
    assert_eq!(day.cost_explorer_cents, None);
    assert_eq!(day.console_cents, (1.006_f64 * 24.0 * 100.0).round() as i64);
    assert_eq!(day.explained[0].text, "not read");
    assert_eq!(month.days_billed, 1);
    assert_eq!(month.calls, 2);
    assert_eq!(month.cost_explorer_cents, Some(2699));
    assert_eq!(
        month.console_cents,
        month.days[0].console_cents + day.console_cents
    );
    assert_eq!(
        month.difference_cents,
        Some(2699 - month.days[0].console_cents)
    );
    assert_eq!(month.source, "cost-explorer");
}

#[test]
fn the_csv_has_a_line_per_day_the_totals_and_the_notes() {
    let csv = month().to_csv();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("kind,day,source,console_usd,cost_explorer_usd"));
    assert!(
        lines[1].starts_with("day,2026-11-20,cost-explorer,"),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains(",26.99,"), "{}", lines[1]);
    assert!(
        lines[2].starts_with("day,2026-11-21,list-prices,24.14,,,"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].starts_with("month,2026-11,cost-explorer,"),
        "{}",
        lines[3]
    );
    assert!(lines[4].starts_with("note,"), "{}", lines[4]);
}
