//! Unit tests of the `prices` module.

use super::*;

#[test]
fn a_managed_instances_charge_is_zero_or_more_dollars_an_hour() {
    assert_eq!(check_managed_fee("[[price]] 1", None), Ok(None));
    assert_eq!(check_managed_fee("[[price]] 1", Some(0.63)), Ok(Some(0.63)));
    for bad in [-1.0, f64::NAN, 5_000.0] {
        let error = check_managed_fee("[[price]] 2", Some(bad)).unwrap_err();
        assert!(
            error.starts_with("[[price]] 2: managed_instances_usd_per_hour"),
            "{error}"
        );
    }
}

#[test]
fn a_price_says_how_it_bills_and_whether_it_keeps_billing() {
    let committed = Price {
        instance_type: "g5.xlarge".into(),
        usd_per_hour: 0.7,
        source: PriceSource::File,
        detail: "price file p.toml".into(),
        commitment: Some(Commitment::SavingsPlan),
        ..Price::default()
    };
    assert_eq!(committed.billed(), "on-demand, under a Savings Plan");
    assert_eq!(committed.provenance(), "file: price file p.toml");
    assert!(committed.keeps_billing());
    let block = Price {
        lifecycle: Lifecycle::CapacityBlock,
        ..Price::default()
    };
    assert!(block.keeps_billing());
    assert!(!Price::default().keeps_billing());
    assert_eq!(
        serde_json::to_value(&committed).unwrap()["source"],
        "file",
        "the API names the source by its word"
    );
    assert_eq!(
        check_commitment(
            "[[price]] 1",
            Lifecycle::OnDemand,
            Some("reserved-instance")
        ),
        Ok(Some(Commitment::ReservedInstance))
    );
    assert!(check_commitment(
        "[[price]] 1",
        Lifecycle::CapacityBlock,
        Some("savings-plan")
    )
    .unwrap_err()
    .contains("not capacity-block ones"));
}

#[test]
fn the_builtin_table_is_for_its_region_only() {
    let book = PriceBook::builtin("us-east-1");
    assert_eq!(
        book.price("g5.xlarge", Lifecycle::OnDemand)
            .unwrap()
            .usd_per_hour,
        1.006
    );
    assert!(book.price("g5.xlarge", Lifecycle::Spot).is_none());
    let elsewhere = PriceBook::builtin("eu-west-1");
    assert!(elsewhere.prices.is_empty());
    assert!(
        elsewhere.notes[0].contains("eu-west-1"),
        "{:?}",
        elsewhere.notes
    );
}

#[test]
fn a_price_file_replaces_adds_and_names_what_it_left_out() {
    let entry = |t: &str, region: Option<&str>, lifecycle: &str, usd: f64| {
        check_entry(
            "[[price]]",
            Some(t),
            region,
            Some(lifecycle),
            Some(usd),
            Some("negotiated"),
        )
        .unwrap()
    };
    let file = PriceFile {
        name: "prices.toml".into(),
        prices: vec![
            entry("g5.xlarge", None, "on-demand", 0.8),
            entry("g5.xlarge", None, "spot", 0.4),
            entry("g5.xlarge", Some("eu-west-1"), "on-demand", 1.2),
        ],
    };
    let book = PriceBook::builtin("us-east-1").with_file(&file);
    let on_demand = book.price("g5.xlarge", Lifecycle::OnDemand).unwrap();
    assert_eq!(
        (
            on_demand.usd_per_hour,
            on_demand.source,
            on_demand.detail.as_str()
        ),
        (
            0.8,
            PriceSource::File,
            "negotiated (price file prices.toml)"
        )
    );
    assert_eq!(
        book.price("g5.xlarge", Lifecycle::Spot)
            .unwrap()
            .usd_per_hour,
        0.4
    );
    assert!(
        book.notes[0].contains("g5.xlarge (eu-west-1)"),
        "{:?}",
        book.notes
    );
}

#[test]
fn a_bad_entry_says_what_is_wrong() {
    let check =
        |t: Option<&str>, region: Option<&str>, lifecycle: Option<&str>, usd: Option<f64>| {
            check_entry("[[price]] 2", t, region, lifecycle, usd, None).unwrap_err()
        };
    assert!(check(None, None, None, Some(1.0)).contains("has no instance_type"));
    assert!(check(Some("g5 xlarge"), None, None, Some(1.0)).contains("not an EC2 instance type"));
    assert!(
        check(Some("g5.xlarge"), Some("Virginia"), None, Some(1.0)).contains("not an AWS region")
    );
    assert!(check(Some("g5.xlarge"), None, Some("reserved"), Some(1.0))
        .contains("not on-demand, spot or capacity-block"));
    assert!(check(Some("g5.xlarge"), None, None, None).contains("has no usd_per_hour"));
    assert!(check(Some("g5.xlarge"), None, None, Some(-1.0)).contains("not a price"));
    assert!(check(Some("g5.xlarge"), None, None, Some(f64::NAN)).contains("not a price"));
    assert!(check(Some("g5.xlarge"), None, None, Some(100_600.0)).contains("in cents"));
    let ok = check_entry(
        "[[price]] 1",
        Some("g5.xlarge"),
        Some("us-gov-west-1"),
        None,
        Some(1.0),
        None,
    );
    assert!(ok.is_ok(), "{ok:?}");
    let twice = [ok.clone().unwrap(), ok.unwrap()];
    assert!(check_duplicates(&twice)
        .unwrap_err()
        .contains("priced twice"));
}

#[test]
fn the_price_lists_rates_replace_the_builtin_table_but_not_the_file() {
    let list = |instance_type: &str, usd: f64| Price {
        instance_type: instance_type.into(),
        usd_per_hour: usd,
        source: PriceSource::PriceListApi,
        detail: "AWS Price List, us-east-1".into(),
        effective: Some("2026-11-01".into()),
        ..Price::default()
    };
    let file = PriceFile {
        name: "p.toml".into(),
        prices: vec![{
            let mut entry = check_entry(
                "[[price]] 1",
                Some("g5.12xlarge"),
                None,
                None,
                Some(4.25),
                None,
            )
            .unwrap();
            entry.commitment = Some(Commitment::SavingsPlan);
            entry
        }],
    };
    let quote = ListQuote {
        prices: vec![
            list("g5.xlarge", 1.1),
            list("g5.12xlarge", 5.9),
            list("g6e.2xlarge", 2.24),
        ],
        note: None,
    };
    let book = PriceBook::builtin("us-east-1")
        .with_file(&file)
        .with_list(&quote);
    let g5 = book.price("g5.xlarge", Lifecycle::OnDemand).unwrap();
    assert_eq!(
        (g5.usd_per_hour, g5.source),
        (1.1, PriceSource::PriceListApi)
    );
    assert_eq!(g5.effective.as_deref(), Some("2026-11-01"));
    let committed = book.price("g5.12xlarge", Lifecycle::OnDemand).unwrap();
    assert_eq!(
        (committed.usd_per_hour, committed.source),
        (4.25, PriceSource::File),
        "the file's commitment wins over the list"
    );
    // A type the built-in table does not know is priced from the list.
    assert_eq!(
        book.price("g6e.2xlarge", Lifecycle::OnDemand)
            .unwrap()
            .usd_per_hour,
        2.24
    );
    // A type the list did not price keeps the built-in fallback.
    assert_eq!(
        book.price("p5.48xlarge", Lifecycle::OnDemand)
            .unwrap()
            .source,
        PriceSource::BuiltIn
    );
    // In a region without a built-in table, the list prices it all; its note is carried.
    let elsewhere = PriceBook::builtin("eu-west-1").with_list(&ListQuote {
        prices: vec![list("g5.xlarge", 1.1267)],
        note: Some("partial".into()),
    });
    assert_eq!(elsewhere.prices.len(), 1);
    assert!(elsewhere.notes.iter().any(|n| n == "partial"));
}
