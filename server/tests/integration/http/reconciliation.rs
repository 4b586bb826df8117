//! The reconciliation through the router: a month's days with what the console saw, at list
//! prices until Cost Explorer has read them and saying why, as JSON and as CSV; bad months,
//! formats and parameters refused with what to do.

#![allow(clippy::unwrap_used)]

use app::model::cost::{holdings, sealed::month_label};
use axum::http::StatusCode;
use gpushare::cost_history::bill::seen_instances;

use super::support::{fleet_json, get, json, send, test_state, text};

#[tokio::test]
async fn a_months_days_are_listed_at_list_prices_until_cost_explorer_reads_them() {
    let (state, _) = test_state(false, Vec::new(), None, |_| {}).await;
    let app = gpushare::router(state.clone());
    fleet_json(&app, "").await;
    let snapshot = state.services.fleet.state().snapshot.unwrap();
    let per_hour = holdings::of_snapshot(&snapshot, 1.0);
    let seen = seen_instances(&snapshot);
    assert!(!seen.is_empty());
    // Two hours today.
    let now = chrono::Utc::now().timestamp();
    let from = now.div_euclid(86_400) * 86_400 / 60;
    state
        .history
        .record_seen(&per_hour, &seen, from..from + 120)
        .await
        .unwrap();
    let month = month_label(now);
    let answer = json(
        send(
            &app,
            get(&format!("/api/v1/cost/reconciliation?month={month}")),
        )
        .await,
    )
    .await;
    assert_eq!(answer["month"], month);
    assert_eq!(answer["source"], "list-prices", "{answer}");
    let days = answer["days"].as_array().unwrap();
    assert_eq!(days.len(), 1, "{answer}");
    let today = &days[0];
    assert_eq!(today["recorded_minutes"], 120);
    assert_eq!(
        today["instances_seen"].as_u64().unwrap() as usize,
        seen.len()
    );
    assert!(today["console_cents"].as_i64().unwrap() > 0);
    assert!(today["cost_explorer_cents"].is_null());
    assert!(today["difference_cents"].is_null());
    let explained = |kind: &str| {
        today["explained"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == kind)
            .map(|e| e["text"].as_str().unwrap().to_string())
    };
    assert!(
        explained("list-prices")
            .unwrap()
            .contains("closed for 24 hours"),
        "{today}"
    );
    // The demo's p5 runs in a Capacity Block, which has no list price: left out, and said so.
    assert!(
        explained("unpriced").unwrap().contains("no price"),
        "{today}"
    );
    assert_eq!(answer["console_cents"], today["console_cents"]);
    assert!(answer["cost_explorer_cents"].is_null());

    // The same as CSV, for a spreadsheet.
    let response = send(
        &app,
        get(&format!(
            "/api/v1/cost/reconciliation?month={month}&format=csv"
        )),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let csv = text(response).await;
    assert!(
        csv.starts_with("kind,day,source,console_usd,cost_explorer_usd"),
        "{csv}"
    );
    assert!(csv.lines().any(|l| l.starts_with("month,")), "{csv}");

    // Refusals say what to give.
    for (query, says) in [
        ("month=2026-13", "YYYY-MM"),
        ("month=2999-01", "has not begun"),
        ("format=xml", "json (the default) or csv"),
        ("months=2026-11", "the parameters are month"),
    ] {
        let response = send(&app, get(&format!("/api/v1/cost/reconciliation?{query}"))).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
        let body = text(response).await;
        assert!(body.contains(says), "{query}: {body}");
    }
}
