//! The price file (`--prices`): hourly prices that replace or add to the built-in table, such
//! as negotiated or Savings Plans effective rates, or spot prices.

use std::path::Path;

use app::model::cost::{
    prices::{check_commitment, check_duplicates, check_entry, check_managed_fee},
    PriceBook, PriceFile,
};
use serde::Deserialize;

/// The file as written; every field is checked after reading, so a missing one gets a message
/// that names the entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    price: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    instance_type: Option<String>,
    region: Option<String>,
    lifecycle: Option<String>,
    usd_per_hour: Option<f64>,
    source: Option<String>,
    managed_instances_usd_per_hour: Option<f64>,
    commitment: Option<String>,
}

/// Reads and checks the price file at `path`.
pub fn load(path: &Path) -> Result<PriceFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the price file {}: {e}", path.display()))?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    parse(&name, &text).map_err(|e| format!("the price file {} is not valid: {e}", path.display()))
}

/// Reads a price file's TOML; `name` is how sources and notes call it.
pub fn parse(name: &str, text: &str) -> Result<PriceFile, String> {
    let raw: Raw = toml::from_str(text).map_err(|e| e.message().to_string())?;
    if raw.price.is_empty() {
        return Err(
            "it prices nothing: add [[price]] entries with instance_type and usd_per_hour".into(),
        );
    }
    let prices = raw
        .price
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let at = format!("[[price]] {}", i + 1);
            let mut entry = check_entry(
                &at,
                e.instance_type.as_deref(),
                e.region.as_deref(),
                e.lifecycle.as_deref(),
                e.usd_per_hour,
                e.source.as_deref(),
            )?;
            entry.managed_instances_usd_per_hour =
                check_managed_fee(&at, e.managed_instances_usd_per_hour)?;
            entry.commitment = check_commitment(&at, entry.lifecycle, e.commitment.as_deref())?;
            Ok::<_, String>(entry)
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_duplicates(&prices)?;
    Ok(PriceFile {
        name: name.to_string(),
        prices,
    })
}

/// The prices for `region`: the built-in table, then the file at `path` when given.
pub fn book(region: &str, path: Option<&Path>) -> Result<PriceBook, String> {
    let book = PriceBook::builtin(region);
    Ok(match path {
        Some(path) => book.with_file(&load(path)?),
        None => book,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use app::model::cost::{prices::Commitment, Lifecycle};

    #[test]
    fn a_price_file_reads_and_overrides_the_table() {
        let file = parse(
            "prices.toml",
            r#"
            [[price]]
            instance_type = "g5.12xlarge"
            usd_per_hour = 4
            source = "Savings Plan, 2026-11"

            [[price]]
            instance_type = "g5.12xlarge"
            lifecycle = "spot"
            usd_per_hour = 2.1
            "#,
        )
        .unwrap();
        let book = PriceBook::builtin("us-east-1").with_file(&file);
        let price = book.price("g5.12xlarge", Lifecycle::OnDemand).unwrap();
        assert_eq!(
            (price.usd_per_hour, price.detail.as_str()),
            (4.0, "Savings Plan, 2026-11 (price file prices.toml)")
        );
        let spot = book.price("g5.12xlarge", Lifecycle::Spot).unwrap();
        assert_eq!(spot.detail, "price file prices.toml");
    }

    #[test]
    fn the_example_price_file_reads() {
        let file = parse(
            "prices.example.toml",
            include_str!("../../prices.example.toml"),
        )
        .unwrap();
        assert_eq!(file.prices.len(), 4);
        assert_eq!(file.prices[0].commitment, Some(Commitment::SavingsPlan));
        assert_eq!(file.prices[1].lifecycle, Lifecycle::CapacityBlock);
        // The Managed Instances charge is read beside the EC2 price.
        assert_eq!(file.prices[3].managed_instances_usd_per_hour, Some(0.63));
        let spot_commitment = parse(
            "p.toml",
            "[[price]]\ninstance_type = \"g6.xlarge\"\nusd_per_hour = 1\nlifecycle = \"spot\"\ncommitment = \"savings-plan\"",
        )
        .unwrap_err();
        assert!(
            spot_commitment.contains("prices on-demand instances, not spot ones"),
            "{spot_commitment}"
        );
        let unknown = parse(
            "p.toml",
            "[[price]]\ninstance_type = \"g6.xlarge\"\nusd_per_hour = 1\ncommitment = \"edp\"",
        )
        .unwrap_err();
        assert!(
            unknown.contains("not savings-plan or reserved-instance"),
            "{unknown}"
        );
        let bad = parse(
            "p.toml",
            "[[price]]\ninstance_type = \"g6.xlarge\"\nusd_per_hour = 1\nmanaged_instances_usd_per_hour = -1",
        )
        .unwrap_err();
        assert!(
            bad.contains("managed_instances_usd_per_hour -1 is not a charge"),
            "{bad}"
        );
    }

    #[test]
    fn a_bad_price_file_says_what_and_where() {
        let error = |text: &str| parse("p.toml", text).unwrap_err();
        assert!(error("").contains("prices nothing"));
        assert!(error("[[price]]\nusd_per_hour = 1.0").contains("[[price]] 1 has no instance_type"));
        assert!(
            error("[[price]]\ninstance_type = \"g5.xlarge\"\nusd_per_hour = -2")
                .contains("not a price")
        );
        assert!(error(
            "[[price]]\ninstance_type = \"g5.xlarge\"\nusd_per_hour = 1\nregion = \"moon\""
        )
        .contains("not an AWS region"));
        assert!(error("[[price]]\ninstance_type = \"g5.xlarge\"\ncost = 1").contains("cost"));
        assert!(
            error("[[price]]\ninstance_type = \"g5.xlarge\"\nusd_per_hour = \"cheap\"")
                .contains("invalid type")
        );
        let missing = load(Path::new("/nonexistent/prices.toml")).unwrap_err();
        assert!(
            missing.starts_with("cannot read the price file"),
            "{missing}"
        );
    }
}
