//! Sealed months through the router and the console's own database: last month, sealed as it
//! closed, keeps its figures in the report, its CSVs and FOCUS when a new price file comes; the
//! months API shows what re-pricing would change; re-pricing needs a reason, is audited, and
//! makes the next version the report uses.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use app::model::cost::{
    holdings,
    sealed::{month_label, month_start},
    PriceSource,
};
use axum::http::StatusCode;

use super::support::{audit_records, fleet_json, get, json, post_json, send, test_state, text};

/// The cents of a CSV's `cost_usd` column (the fourth) over its lines of kind `allocated`,
/// `idle` or `unattributed`.
fn csv_cents(csv: &str) -> i64 {
    csv.lines()
        .skip(1)
        .filter(|l| {
            [",allocated,", ",idle,", ",unattributed,"]
                .iter()
                .any(|k| l.contains(k))
        })
        .map(|line| {
            let usd = line.split(',').nth(3).unwrap();
            let (dollars, cents) = usd.split_once('.').unwrap();
            dollars.parse::<i64>().unwrap() * 100 + cents.parse::<i64>().unwrap()
        })
        .sum()
}

#[tokio::test]
async fn a_sealed_month_keeps_its_figures_and_only_a_reason_reprices_it() {
    let (state, _) = test_state(false, Vec::new(), None, |_| {}).await;
    let app = gpushare::router(state.clone());
    fleet_json(&app, "").await;
    let snapshot = state.services.fleet.state().snapshot.unwrap();
    let per_hour = holdings::of_snapshot(&snapshot, 1.0);
    let now = chrono::Utc::now();
    let this = month_start(now.timestamp());
    let last = month_start(this - 1);
    let month = month_label(last);
    // Three hours on the 2nd of last month.
    let from = (last + 86_400) / 60;
    state
        .history
        .record(&per_hour, from..from + 180)
        .await
        .unwrap();
    let unsealed = json(send(&app, get("/api/v1/cost?period=last_month")).await).await;
    assert_eq!(unsealed["sealed"], serde_json::json!([]), "{unsealed}");
    // A month is sealed once both markets have been asked since the start.
    for _ in 0..100 {
        if state.services.markets.asked() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        state.services.markets.asked(),
        "the spot market and the Price List were not asked within 10 s of the first snapshot"
    );
    let at = now.max(chrono::DateTime::from_timestamp(this + 601, 0).unwrap());
    let sealed = app::service::cost::sealing::seal_closed_months(&state.services, at)
        .await
        .unwrap();
    assert_eq!(sealed, vec![month.clone()]);
    let seals = json(send(&app, get("/api/v1/cost/months")).await).await;
    assert_eq!(seals.as_array().unwrap().len(), 1, "{seals}");
    let sealed_total = seals[0]["total_cents"].as_i64().unwrap();
    assert!(sealed_total > 0);
    assert_eq!(seals[0]["recorded_hours"], 3.0);

    // A new price file: every price doubled, as the file's (which wins over the
    // Price List's).
    let mut dearer = state.clone();
    let mut book = (*state.services.prices).clone();
    for price in &mut book.prices {
        price.usd_per_hour *= 2.0;
        price.source = PriceSource::File;
        price.detail = "price file (doubled)".into();
    }
    dearer.services.prices = Arc::new(book);
    let app = gpushare::router(dearer);
    let query = "/api/v1/cost?period=last_month&group=team";
    let report = json(send(&app, get(query)).await).await;
    assert_eq!(
        report["total_cents"].as_i64().unwrap(),
        sealed_total,
        "{report}"
    );
    assert_eq!(report["sealed"][0]["month"], month.as_str());
    assert!(
        report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("is sealed")),
        "{report}"
    );
    let daily = text(send(&app, get(&format!("{query}&format=csv&detail=day"))).await).await;
    assert_eq!(csv_cents(&daily), sealed_total, "{daily}");
    // This month is at today's prices.
    let this_month = json(send(&app, get("/api/v1/cost?period=this_month")).await).await;
    assert_eq!(this_month["sealed"], serde_json::json!([]));

    // What re-pricing would change; bad months are refused with what to do.
    let look = json(send(&app, get(&format!("/api/v1/cost/months/{month}"))).await).await;
    let after = look["repricing"]["after_total_cents"].as_i64().unwrap();
    assert_eq!(look["repricing"]["before_total_cents"], sealed_total);
    // On-demand doubled; spot stays at the market's.
    assert!(
        after > sealed_total * 3 / 2 && after <= 2 * sealed_total,
        "{look}"
    );
    let moved: i64 = look["repricing"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["after_cents"].as_i64().unwrap() - r["before_cents"].as_i64().unwrap())
        .sum();
    assert_eq!(moved, after - sealed_total, "{look}");
    assert!(!look["repricing"]["rows"].as_array().unwrap().is_empty());
    assert!(!look["repricing"]["prices"].as_array().unwrap().is_empty());
    for (path, status) in [
        (
            "/api/v1/cost/months/2026-13".to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            format!("/api/v1/cost/months/{}", month_label(this)),
            StatusCode::NOT_FOUND,
        ),
    ] {
        let response = send(&app, get(&path)).await;
        assert_eq!(response.status(), status, "{path}");
        assert!(text(response).await.contains("YYYY-MM") || status == StatusCode::NOT_FOUND);
    }

    // Re-pricing needs a reason; then the month is version 2, at the new prices, audited once.
    let path = format!("/api/v1/cost/months/{month}/reprice");
    for body in [
        "{}",
        r#"{"reason": "  "}"#,
        r#"{"reason": "x", "force": true}"#,
        "no",
    ] {
        let response = send(&app, post_json(&path, body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
    }
    assert!(audit_records(&app, "reprice").await.is_empty());
    let done = json(
        send(
            &app,
            post_json(&path, r#"{"reason": "the negotiated rates came in"}"#),
        )
        .await,
    )
    .await;
    assert_eq!(done["applied"], true, "{done}");
    assert_eq!(done["to_version"], 2);
    let report = json(send(&app, get(query)).await).await;
    assert_eq!(report["total_cents"].as_i64().unwrap(), after, "{report}");
    assert_eq!(report["sealed"][0]["version"], 2);
    let records = audit_records(&app, "reprice").await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["outcome"], "succeeded");
    assert_eq!(records[0]["resource"], format!("cost/{month}"));
    assert_eq!(records[0]["description"], "the negotiated rates came in");
    assert_eq!(done["audit_id"], records[0]["id"]);
    let versions = json(send(&app, get("/api/v1/cost/months")).await).await;
    assert_eq!(versions.as_array().unwrap().len(), 2, "{versions}");
    assert_eq!(versions[0]["version"], 2);
    assert_eq!(versions[1]["version"], 1);
}
