#![allow(clippy::unwrap_used)]

use chrono::TimeZone;

use super::*;
use crate::{model::cost::holdings, service::fake::Fake};

/// 2026-11-20 12:00 UTC.
fn noon() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0).unwrap()
}

#[tokio::test]
async fn without_cost_explorer_every_day_is_at_list_prices_and_says_why() {
    let fake = Fake::new();
    let snapshot = fake.context().fleet.state().snapshot.unwrap();
    let per_hour = holdings::of_snapshot(&snapshot, 1.0);
    let start = noon().timestamp() - 86_400;
    *fake.history.lock().unwrap() = (0..90)
        .map(|m| (start + m * 60, per_hour.clone()))
        .collect();
    let query = ReconciliationQuery {
        month: Some("2026-11".into()),
        format: None,
    };
    let answer = reconciliation(&fake.context(), &query, noon())
        .await
        .unwrap();
    assert_eq!(answer.month, "2026-11");
    assert_eq!(answer.source, "list-prices");
    assert_eq!(answer.days_billed, 0);
    assert_eq!(answer.cost_explorer_cents, None);
    // The fake's markets do not read Cost Explorer, and the page says so.
    assert!(
        answer
            .notes
            .iter()
            .any(|n| n.contains("not read by this console")),
        "{:?}",
        answer.notes
    );
    assert!(answer.notes.iter().any(|n| n.contains("not the bill")));
}

#[tokio::test]
async fn a_month_is_yyyy_mm_and_not_in_the_future() {
    let fake = Fake::new();
    let ask = |month: &str| ReconciliationQuery {
        month: Some(month.into()),
        format: None,
    };
    for bad in ["2026-13", "november", "2026-1"] {
        let error = reconciliation(&fake.context(), &ask(bad), noon())
            .await
            .unwrap_err();
        assert_eq!(error.status(), 400, "{bad}");
        assert!(error.to_string().contains("YYYY-MM"), "{error}");
    }
    let error = reconciliation(&fake.context(), &ask("2027-01"), noon())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("has not begun"), "{error}");
    // No month: this one.
    let answer = reconciliation(&fake.context(), &ReconciliationQuery::default(), noon())
        .await
        .unwrap();
    assert_eq!(answer.month, "2026-11");
}
