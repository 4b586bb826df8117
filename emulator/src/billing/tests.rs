#![allow(clippy::unwrap_used)]

use super::*;
use chrono::TimeZone;

fn at(day: u32, hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, day, hour, 0, 0).unwrap()
}

fn life(purchase: Purchase, start: DateTime<Utc>, end: Option<DateTime<Utc>>) -> Lifetime {
    Lifetime {
        instance_type: "p5.48xlarge".into(),
        zone: "us-east-1a".into(),
        purchase,
        list_usd_per_hour: 55.04,
        start,
        end,
    }
}

fn ledger() -> Ledger {
    let mut ledger = Ledger::default();
    ledger
        .instances
        .insert("i-od".into(), life(Purchase::OnDemand, at(1, 0), None));
    ledger.instances.insert(
        "i-sp".into(),
        life(Purchase::SavingsPlan, at(2, 6), Some(at(2, 18))),
    );
    ledger
        .instances
        .insert("i-cb".into(), life(Purchase::CapacityBlock, at(1, 0), None));
    ledger
        .instances
        .insert("i-spot".into(), life(Purchase::Spot, at(2, 0), None));
    ledger
}

fn ask(day: &str, next: &str) -> Value {
    json!({
        "TimePeriod": {"Start": day, "End": next},
        "Granularity": "DAILY",
        "Filter": {"Dimensions": {"Key": "SERVICE", "Values": [EC2_COMPUTE]}},
        "Metrics": ["AmortizedCost"],
        "GroupBy": [{"Type": "DIMENSION", "Key": "RESOURCE_ID"}],
    })
}

#[test]
fn each_purchase_costs_its_own_rate_for_the_hours_it_ran() {
    let ledger = ledger();
    let (from, to) = (at(2, 0), at(3, 0));
    assert!((ledger.cost("i-od", from, to) - 24.0 * 55.04).abs() < 1e-9);
    // Twelve hours, under the plan.
    assert!((ledger.cost("i-sp", from, to) - 12.0 * 55.04 * SAVINGS_PLAN_FACTOR).abs() < 1e-9);
    assert!((ledger.cost("i-cb", from, to) - 24.0 * 55.04 * CAPACITY_BLOCK_FACTOR).abs() < 1e-9);
    // Spot: four six-hour periods at the market's prices, each within 12 % of 19.80.
    let spot = ledger.cost("i-spot", from, to);
    assert!(
        spot > 24.0 * 19.80 * 0.88 && spot < 24.0 * 19.80 * 1.12,
        "{spot}"
    );
    assert_eq!(ledger.cost("i-unknown", from, to), 0.0);
    assert_eq!(ledger.cost("i-sp", at(3, 0), at(4, 0)), 0.0);
}

#[test]
fn a_day_is_answered_per_instance_with_what_it_cost() {
    let ledger = ledger();
    let answer = handle(
        "GetCostAndUsageWithResources",
        &ask("2026-11-02", "2026-11-03"),
        &ledger,
        at(10, 0),
        true,
    )
    .unwrap();
    let results = answer["ResultsByTime"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["TimePeriod"]["Start"], "2026-11-02");
    let groups = results[0]["Groups"].as_array().unwrap();
    let ids: Vec<&str> = groups
        .iter()
        .map(|g| g["Keys"][0].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["i-cb", "i-od", "i-sp", "i-spot"]);
    let sp: f64 = groups[2]["Metrics"]["AmortizedCost"]["Amount"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((sp - 12.0 * 55.04 * SAVINGS_PLAN_FACTOR).abs() < 1e-6);
    assert_eq!(groups[2]["Metrics"]["AmortizedCost"]["Unit"], "USD");
    assert!(answer.get("NextPageToken").is_none());
}

#[test]
fn refuses_what_cost_explorer_refuses() {
    let ledger = ledger();
    let refuse = |input: Value, enabled: bool| {
        handle(
            "GetCostAndUsageWithResources",
            &input,
            &ledger,
            at(20, 0),
            enabled,
        )
        .unwrap_err()
    };
    // More than 14 days back.
    let old = refuse(ask("2026-11-02", "2026-11-03"), true);
    assert_eq!(old.code, "ValidationException");
    assert!(old.message.contains("14 days"), "{}", old.message);
    let mut no_service = ask("2026-11-10", "2026-11-11");
    no_service["Filter"] = json!({"Dimensions": {"Key": "REGION", "Values": ["us-east-1"]}});
    assert!(refuse(no_service, true).message.contains("SERVICE"));
    let mut monthly = ask("2026-11-10", "2026-11-11");
    monthly["Granularity"] = json!("MONTHLY");
    assert!(refuse(monthly, true).message.contains("MONTHLY"));
    assert_eq!(
        refuse(ask("2026-11-10", "2026-11-11"), false).code,
        "DataUnavailableException"
    );
    let mut token = ask("2026-11-10", "2026-11-11");
    token["NextPageToken"] = json!("bogus");
    assert_eq!(refuse(token, true).code, "InvalidNextTokenException");
}

#[test]
fn pages_hold_at_most_two_hundred_groups_and_lose_none() {
    let mut ledger = Ledger::default();
    for n in 0..450 {
        ledger.instances.insert(
            format!("i-{n:05}"),
            life(Purchase::OnDemand, at(1, 0), None),
        );
    }
    let mut input = ask("2026-11-10", "2026-11-12");
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let answer = handle(
            "GetCostAndUsageWithResources",
            &input,
            &ledger,
            at(15, 0),
            true,
        )
        .unwrap();
        pages += 1;
        let mut on_page = 0;
        for result in answer["ResultsByTime"].as_array().unwrap() {
            for group in result["Groups"].as_array().unwrap() {
                on_page += 1;
                seen.push((
                    result["TimePeriod"]["Start"].as_str().unwrap().to_string(),
                    group["Keys"][0].as_str().unwrap().to_string(),
                ));
            }
        }
        assert!(on_page <= 200);
        match answer.get("NextPageToken") {
            Some(token) => input["NextPageToken"] = token.clone(),
            None => break,
        }
    }
    assert_eq!(pages, 5);
    assert_eq!(seen.len(), 900);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 900, "no group twice");
}

#[test]
fn about_four_in_ten_instances_are_under_the_savings_plan() {
    let covered = (0..1000)
        .filter(|n| covered(&format!("i-{n:017x}")))
        .count();
    assert!((300..500).contains(&covered), "{covered}");
}
