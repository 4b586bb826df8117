//! `/cost` and `GET /api/v1/cost`: the report adds up to the instances' bill at the console's
//! prices (the price file's over the built-in ones), its CSV is its table, and bad parameters
//! get a clear 400.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use axum::http::StatusCode;

use super::support::{fleet_json, get, json, send, test_app_configured, text};

/// The report at `path` once the market's prices are in — EC2's spot prices and the Price
/// List's, read once the fleet has been: a spot price, and no on-demand price left to the
/// built-in table.
#[allow(clippy::unwrap_used)]
async fn report_with_spot_prices(app: &axum::Router, path: &str) -> serde_json::Value {
    for _ in 0..100 {
        let response = send(app, get(path)).await;
        assert_eq!(response.status(), StatusCode::OK);
        let report = json(response).await;
        let prices = report["prices"].as_array().unwrap();
        if prices.iter().any(|p| p["price"]["lifecycle"] == "spot")
            && prices.iter().all(|p| p["price"]["source"] != "built-in")
        {
            return report;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let last = json(send(app, get(path)).await).await;
    panic!(
        "no spot price, or built-in prices left, in {path} after 10 s: {:#}",
        last["prices"]
    );
}

/// The demo's p5 runs in a Capacity Block, which has no list price: its rate, as a price file
/// gives it.
pub(super) const BLOCK_RATE: &str = "[[price]]\ninstance_type = \"p5.48xlarge\"\nlifecycle = \"capacity-block\"\nusd_per_hour = 31.37\nsource = \"Capacity Block reservation\"\n";

/// A price file with only the Capacity Block's rate.
pub(super) fn block_rate_file() -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("gpushare-prices-{}", super::support::rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("prices.toml");
    std::fs::write(&file, BLOCK_RATE).unwrap();
    file
}

#[tokio::test]
async fn the_cost_report_adds_up_to_the_bill_and_its_csv_is_its_table() {
    let dir =
        std::env::temp_dir().join(format!("gpushare-prices-{}", super::support::rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("prices.toml");
    std::fs::write(
        &file,
        format!("[[price]]\ninstance_type = \"g5.12xlarge\"\nusd_per_hour = 4.25\nsource = \"negotiated rate\"\n{BLOCK_RATE}"),
    )
    .unwrap();
    let (app, _) = test_app_configured(false, Vec::new(), None, |args| {
        args.prices = Some(file.clone());
    })
    .await;
    let (_, fleet) = fleet_json(&app, "").await;

    let report = report_with_spot_prices(&app, "/api/v1/cost?group=service&span=day").await;
    let rows = report["rows"].as_array().unwrap();
    let total = report["total_cents"].as_i64().unwrap();
    assert!(total > 0, "{report}");
    assert_eq!(
        rows.iter()
            .map(|r| r["cost_cents"].as_i64().unwrap())
            .sum::<i64>(),
        total
    );

    // The total is Σ instance-hours × price, computed here from the fleet and the prices used.
    let prices: BTreeMap<(String, String), f64> = report["prices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                (
                    p["price"]["instance_type"].as_str().unwrap().to_string(),
                    p["price"]["lifecycle"].as_str().unwrap().to_string(),
                ),
                p["price"]["usd_per_hour"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        prices.get(&("g5.12xlarge".to_string(), "on-demand".to_string())),
        Some(&4.25),
        "the price file wins: {report}"
    );
    let used = report["prices"].as_array().unwrap();
    assert!(used.iter().any(|p| p["price"]["source"] == "file"
        && p["price"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("negotiated rate (price file")));
    // Every other on-demand price is the Price List's, with the date it took effect.
    for p in used
        .iter()
        .filter(|p| p["price"]["lifecycle"] == "on-demand" && p["price"]["source"] != "file")
    {
        assert_eq!(p["price"]["source"], "price-list-api", "{p}");
        assert_eq!(p["price"]["effective"], "2026-11-01", "{p}");
    }
    let metrics = text(send(&app, get("/metrics")).await).await;
    assert!(
        metrics.contains(
            r#"gpushare_aws_calls_total{service="pricing",operation="GetProducts",outcome="ok"}"#
        ),
        "the Price List's calls are counted"
    );
    let mut dollars = 0.0;
    let mut spot = 0;
    for cluster in fleet["snapshot"]["clusters"].as_array().unwrap() {
        for instance in cluster["instances"].as_array().unwrap() {
            let lifecycle = instance["lifecycle"].as_str().unwrap();
            if lifecycle == "spot" {
                spot += 1;
            }
            let kind = instance["instance_type"].as_str().unwrap();
            let price = prices
                .get(&(kind.to_string(), lifecycle.to_string()))
                .unwrap_or_else(|| {
                    panic!("{kind} ({lifecycle}) has a price in the demo: {report}")
                });
            dollars += price * 24.0;
        }
    }
    assert_eq!(total, (dollars * 100.0).round() as i64);
    assert!(spot > 0, "the demo has spot instances");
    // The spot instances at EC2's spot price, named as such; nothing unpriced.
    assert!(used.iter().any(|p| p["price"]["lifecycle"] == "spot"
        && p["price"]["source"] == "spot-history"
        && p["price"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("EC2 spot price history")));
    assert!(
        report["unpriced"].as_array().unwrap().is_empty(),
        "{report}"
    );
    assert!(report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["kind"] == "idle"));

    // The CSV is the table: the same rows in the same order, then the total, then the prices,
    // the instances without a price, the notes and the method.
    let response = send(&app, get("/api/v1/cost?group=service&span=day&format=csv")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("gpushare-cost-by-service-day.csv"));
    let csv = text(response).await;
    let lines: Vec<&str> = csv.lines().collect();
    let trailer = report["prices"].as_array().unwrap().len()
        + report["unpriced"].as_array().unwrap().len()
        + report["notes"].as_array().unwrap().len()
        + 1;
    assert_eq!(lines.len(), rows.len() + 2 + trailer, "{csv}");
    for (line, row) in lines[1..].iter().zip(rows) {
        let cents = row["cost_cents"].as_i64().unwrap();
        let expected = format!(
            "{},{},{}.{:02},",
            row["name"].as_str().unwrap(),
            row["kind"].as_str().unwrap(),
            cents / 100,
            cents % 100
        );
        assert!(line.starts_with(&expected), "{line} vs {expected}");
    }
    assert!(lines[rows.len() + 1].starts_with(&format!(
        "total,total,{}.{:02},",
        total / 100,
        total % 100
    )));
    assert!(lines.last().unwrap().ends_with(",method,,,,,"), "{csv}");
    assert!(
        lines.iter().any(|l| l.starts_with(
            "\"g5.12xlarge (on-demand) at $4.25/h, file: negotiated rate (price file "
        ) && l.ends_with(",price,,,,,")),
        "each price used names its source: {csv}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("\"g5.xlarge (on-demand) at $1.006/h, price-list-api: AWS Price List, on-demand Linux, us-east-1, effective 2026-11-01, ")),
        "the Price List's prices name it: {csv}"
    );

    // The page, without JavaScript: the view's table, its total and the rule.
    let response = send(&app, get("/cost?period=now&group=cluster&idle=share")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let page = text(response).await;
    let shared = json(
        send(
            &app,
            get("/api/v1/cost?period=now&group=cluster&idle=share"),
        )
        .await,
    )
    .await;
    let money = app::model::cost::money(shared["total_cents"].as_i64().unwrap());
    assert!(page.contains(r#"data-testid="cost-table""#), "{page}");
    assert!(page.contains(&money), "{money} in the page");
    assert!(page.contains("How the cost is split"));
    assert!(page.contains("negotiated rate"));
    // Idle shared out: only a cluster where nothing is allocated keeps an idle row.
    let shared_rows = shared["rows"].as_array().unwrap();
    for idle in shared_rows.iter().filter(|r| r["kind"] == "idle") {
        assert!(
            !shared_rows
                .iter()
                .any(|r| r["kind"] == "allocated" && r["name"] == idle["name"]),
            "{idle} kept although its cluster has allocations"
        );
    }
    let as_rows = json(send(&app, get("/api/v1/cost?period=now&group=cluster")).await).await;
    assert_eq!(as_rows["total_cents"], shared["total_cents"]);
    // Shared out or not, the idle figure is the capacity nobody holds (to a cent of rounding).
    let idle = |r: &serde_json::Value| r["idle_cents"].as_i64().unwrap();
    assert!(
        (idle(&shared) - idle(&as_rows)).abs() <= 1,
        "{shared} {as_rows}"
    );
    assert!(
        page.contains("/api/v1/cost?period=now&amp;group=cluster&amp;idle=share&amp;format=csv"),
        "the CSV link keeps the view"
    );

    // A recorded period this server has barely recorded: rows that still add up, and a note
    // that says how little of the period the history covers.
    let week = json(send(&app, get("/api/v1/cost?period=7d&group=service")).await).await;
    let sum: i64 = week["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cost_cents"].as_i64().unwrap())
        .sum();
    assert_eq!(sum, week["total_cents"].as_i64().unwrap(), "{week}");
    assert!(
        week["notes"].to_string().contains("The history covers"),
        "{week}"
    );
    // One bar per calendar day the period's hour-aligned range touches: 8, or 7 when its ends
    // fall on midnight (between 23:00 and 24:00 UTC).
    let (from, to) = (
        week["range"]["from"].as_i64().unwrap(),
        week["range"]["to"].as_i64().unwrap(),
    );
    let touched = (to + 86_399).div_euclid(86_400) - from.div_euclid(86_400);
    assert!(touched == 7 || touched == 8, "{week}");
    assert_eq!(
        week["chart"]["days"].as_array().unwrap().len() as i64,
        touched,
        "{week}"
    );
    let page = text(
        send(
            &app,
            get("/cost?period=custom&from=2026-11-01&to=2026-11-02"),
        )
        .await,
    )
    .await;
    assert!(page.contains(r#"data-testid="cost-form""#), "{page}");

    // A bad value on the page says so and shows the default view.
    let page = text(send(&app, get("/cost?group=owner")).await).await;
    assert!(page.contains(r#"data-testid="cost-query-error""#), "{page}");
    assert!(page.contains(r#"data-testid="cost-table""#));
}

/// When EC2 refuses DescribeSpotPriceHistory, spot instances are listed as unpriced — never
/// priced at zero or at the on-demand rate — and the report says why and what to do.
#[tokio::test]
async fn spot_instances_without_a_spot_price_are_listed_and_the_report_says_why() {
    let (app, _) = test_app_configured(
        false,
        vec!["DescribeSpotPriceHistory:error=1".into()],
        None,
        |_| {},
    )
    .await;
    let (_, fleet) = fleet_json(&app, "").await;
    let spot = fleet["snapshot"]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["instances"].as_array().unwrap())
        .filter(|i| i["lifecycle"] == "spot")
        .count() as i64;
    assert!(spot > 0);
    let mut report = serde_json::Value::Null;
    let mut noted = false;
    for _ in 0..200 {
        report = json(send(&app, get("/api/v1/cost?span=day")).await).await;
        noted = report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("Spot prices unknown"));
        if noted {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        noted,
        "no note of unknown spot prices within 20 s: {:#}",
        report["notes"]
    );
    let notes: Vec<&str> = report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let why = notes
        .iter()
        .find(|n| n.starts_with("Spot prices unknown"))
        .unwrap_or_else(|| panic!("no note on spot prices: {notes:?}"));
    assert!(
        why.contains("DescribeSpotPriceHistory") && why.contains("--prices"),
        "{why}"
    );
    assert!(
        !why.contains("ServiceError") && !why.contains("Some("),
        "{why}"
    );
    let unpriced: i64 = report["unpriced"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["lifecycle"] == "spot")
        .map(|u| u["instances"].as_i64().unwrap())
        .sum();
    assert_eq!(unpriced, spot);
    assert!(!report["prices"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["price"]["lifecycle"] == "spot"));
}

#[tokio::test]
async fn bad_cost_parameters_say_what_is_wrong_and_what_exists() {
    let (app, _) = test_app_configured(false, Vec::new(), None, |_| {}).await;
    fleet_json(&app, "").await;
    for (query, says) in [
        ("group=owner", "team, service, cluster, instance_type"),
        ("span=week", "hour, day, month"),
        ("idle=hide", "row or share"),
        ("sort=size", "gpu_hours"),
        ("cluster=nope", "inference-prod"),
        (
            "colour=red",
            "period, from, to, group, span, sort, idle, cluster, split, format and detail",
        ),
        ("split=compute", "is not memory (memory share) or max"),
        ("period=week", "7d, 30d, this_month"),
        ("detail=day", "add format=csv"),
        (
            "detail=day&format=csv&period=now",
            "a daily CSV is of a recorded period",
        ),
        ("detail=hour&format=csv", "rows or day"),
        ("format=xml", "is not json, csv or focus"),
        (
            "format=focus&period=now",
            "a FOCUS export is of a recorded period",
        ),
        (
            "format=focus&detail=day&period=7d",
            "already a line per day",
        ),
        ("period=custom", "needs from and to"),
        ("from=1%20Nov&to=2026-11-02", "YYYY-MM-DD"),
        ("from=2026-02-30&to=2026-03-02", "is not a day"),
        ("from=2026-11-05&to=2026-11-01", "reversed"),
        ("from=2999-01-01&to=2999-01-02", "after today"),
        ("from=2020-01-01&to=2020-01-02", "kept for 400 days"),
    ] {
        let response = send(&app, get(&format!("/api/v1/cost?{query}"))).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
        let body = text(response).await;
        assert!(body.contains(says), "{query}: {body}");
        assert!(
            !body.contains("Error {") && !body.contains("Some("),
            "{body}"
        );
    }
}

/// With a quarter of each instance's price on CPU and memory, the report still adds up to the
/// same bill, the rule on the page says how it splits, and the share moves cost between rows
/// (the CPU and memory no task reserves is idle).
#[tokio::test]
#[allow(clippy::unwrap_used)]
async fn a_share_of_the_price_on_cpu_and_memory_changes_the_split_not_the_bill() {
    let report_with = |share: f64| async move {
        let (app, _) = test_app_configured(false, Vec::new(), None, |args| {
            args.cost_host_share = share;
        })
        .await;
        fleet_json(&app, "").await;
        // Both reports price the same instances.
        let report =
            report_with_spot_prices(&app, "/api/v1/cost?period=now&group=service&span=day").await;
        let page = text(send(&app, get("/cost?period=now&span=day")).await).await;
        (report, page)
    };
    let (plain, plain_page) = report_with(0.0).await;
    let (shared, shared_page) = report_with(25.0).await;
    let cents = |report: &serde_json::Value| -> BTreeMap<String, i64> {
        report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    format!("{} {}", r["kind"], r["name"]),
                    r["cost_cents"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    let total = shared["total_cents"].as_i64().unwrap();
    assert!(total > 0);
    assert_eq!(
        plain["total_cents"].as_i64().unwrap(),
        total,
        "the same bill"
    );
    assert_eq!(cents(&shared).values().sum::<i64>(), total, "{shared}");
    assert_ne!(cents(&plain), cents(&shared), "the split moves");
    assert!(
        shared["rule"]
            .as_str()
            .unwrap()
            .starts_with("75 % of each instance's hourly price is split equally across its GPUs; the other 25 % pays for its CPU and memory"),
        "{}",
        shared["rule"]
    );
    assert!(shared_page.contains("the other 25 % pays for its CPU and memory"));
    assert!(!plain_page.contains("pays for its CPU and memory"));
    assert!(
        !shared["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("CPU and memory")),
        "the demo's instances report their CPU and memory: {}",
        shared["notes"]
    );
}
