use std::collections::BTreeSet;

use super::*;

const DAY: i64 = 86_400;

#[test]
fn a_day_is_due_once_closed_for_a_day_within_the_fourteen_and_not_read() {
    // 2026-12-06 10:00 UTC.
    let today = 20_428 * DAY;
    let now = today + 10 * 3600;
    let due = CostExplorer::due(now, 0, &BTreeSet::new());
    // Yesterday closed 10 hours ago: not yet. The day before closed 34 hours ago: due.
    assert_eq!(due.last(), Some(&(today - 2 * DAY)));
    // The earliest is 13 days back, so that the start is never more than 14 days ago.
    assert_eq!(due.first(), Some(&(today - 13 * DAY)));
    assert_eq!(due.len(), 12);
    // Read days and days before the history's first are not asked.
    let read: BTreeSet<i64> = [today - 5 * DAY].into_iter().collect();
    let due = CostExplorer::due(now, today - 6 * DAY, &read);
    assert_eq!(
        due,
        vec![
            today - 6 * DAY,
            today - 4 * DAY,
            today - 3 * DAY,
            today - 2 * DAY
        ]
    );
    // Exactly at the settle time the day is due.
    let due = CostExplorer::due(today + SETTLE, today - DAY, &BTreeSet::new());
    assert_eq!(due, vec![today - DAY]);
    assert!(CostExplorer::due(today + SETTLE - 1, today - DAY, &BTreeSet::new()).is_empty());
}
