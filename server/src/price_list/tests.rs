//! Unit tests of the `price_list` module: the real SDK client against the emulator's Price List.

use super::*;
use emulator::{Emulator, Fault, Faults, Scenario};

async fn emulator() -> (Emulator, aws_sdk_pricing::Client) {
    let now = chrono::Utc::now();
    let emulator = Emulator::new(
        Scenario::Empty.build(1, now),
        "empty",
        1.0,
        Faults::default(),
    );
    let addr = emulator
        .clone()
        .spawn("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let config = aws_sdk_pricing::Config::builder()
        .behavior_version(aws_sdk_pricing::config::BehaviorVersion::latest())
        .region(aws_sdk_pricing::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_pricing::config::Credentials::new(
            "EMULATOR", "emulator", None, None, "test",
        ))
        .endpoint_url(format!("http://{addr}"))
        .retry_config(aws_sdk_pricing::config::retry::RetryConfig::standard().with_max_attempts(1))
        .build();
    (emulator, aws_sdk_pricing::Client::from_conf(config))
}

async fn database(name: &str) -> crate::audit::SqlAuditLog {
    let dir = std::env::temp_dir().join(format!("gpushare-list-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    crate::audit::SqlAuditLog::open(None, &dir)
        .await
        .expect("a database")
}

fn types(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[tokio::test]
async fn prices_are_read_once_a_day_stored_and_kept_through_a_failure() {
    let (emulator, client) = emulator().await;
    let audit = database("daily").await;
    let list = ListPrices::new(client.clone(), "eu-west-1", &audit);
    let fleet = types(&["g5.xlarge", "p5.48xlarge", "x9.nothing"]);
    let now = 1_796_040_000;
    assert_eq!(list.refresh(&fleet, now).await, Ok(3));
    let quote = list.quote();
    assert_eq!(quote.prices.len(), 2, "{quote:?}");
    let g5 = &quote.prices[0];
    assert_eq!(
        (g5.instance_type.as_str(), g5.usd_per_hour, g5.source),
        ("g5.xlarge", 1.1267, PriceSource::PriceListApi),
        "eu-west-1's price, not us-east-1's, Windows' or dedicated tenancy's"
    );
    assert_eq!(g5.effective.as_deref(), Some("2026-11-01"));
    let note = quote.note.unwrap_or_default();
    assert!(
        note.contains("no on-demand Linux price for x9.nothing in eu-west-1"),
        "{note}"
    );
    let asked = || {
        emulator
            .received()
            .get("pricing:GetProducts")
            .copied()
            .unwrap_or(0)
    };
    assert_eq!(asked(), 3, "one call per type");

    // Within the day nothing is asked again; a day later every type is.
    assert_eq!(list.refresh(&fleet, now + 3600).await, Ok(0));
    assert_eq!(asked(), 3);

    // A failure keeps the prices read and says why the rest are missing, in words.
    let faults = Faults {
        all: Fault {
            error_rate: 1.0,
            ..Fault::default()
        },
        ..Faults::default()
    };
    emulator.set_faults(faults).expect("faults");
    let why = list
        .refresh(&fleet, now + 86_400)
        .await
        .expect_err("every call fails");
    assert!(why.starts_with("The Price List could not be read"), "{why}");
    assert!(!why.contains("ServiceError"), "{why}");
    let quote = list.quote();
    assert_eq!(quote.prices.len(), 2);
    assert!(quote.note.unwrap_or_default().contains("offline fallback"));

    // A restart reads what was stored, without a call for the types priced; a type the list
    // has no price for left nothing stored, and is asked again.
    emulator.set_faults(Faults::default()).expect("faults");
    let calls = asked();
    let again = ListPrices::new(client, "eu-west-1", &audit);
    assert_eq!(again.load().await.expect("stored prices"), 2);
    assert_eq!(again.quote().prices, list.quote().prices);
    assert_eq!(again.refresh(&fleet, now + 3600).await, Ok(1));
    assert_eq!(asked(), calls + 1);
}

#[test]
fn only_the_on_demand_linux_product_of_the_type_and_region_is_taken() {
    let answer = emulator::pricing::handle(
        "GetProducts",
        &serde_json::json!({
            "ServiceCode": "AmazonEC2",
            "Filters": [{"Type": "TERM_MATCH", "Field": "instanceType", "Value": "g5.xlarge"}],
        }),
    )
    .expect("products");
    let taken: Vec<(String, f64)> = answer["PriceList"]
        .as_array()
        .expect("a list")
        .iter()
        .flat_map(|d| on_demand_prices(d.as_str().unwrap_or_default(), "g5.xlarge", "us-east-1"))
        .collect();
    assert_eq!(taken, [("2026-11-01".to_string(), 1.006)]);
    assert!(on_demand_prices("not json", "g5.xlarge", "us-east-1").is_empty());
    assert!(on_demand_prices("{}", "g5.xlarge", "us-east-1").is_empty());
}
