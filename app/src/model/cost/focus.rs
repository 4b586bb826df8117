//! The cost of a recorded period in the columns of the FinOps Open Cost and Usage Specification
//! (FOCUS), for FinOps tools: a line per day and row of the report's grouping, each the day's
//! share of the row as the daily CSV gives it, so the lines add up to the report's total.
//!
//! What the console can say and what it cannot: its rows are allocations of GPU instances'
//! cost (a team, a service, a cluster's idle capacity), not the provider's resources, so
//! `ResourceId` is the allocation's key and `ResourceType` says what it is; the costs are the
//! console's prices (list prices, or the price file's rates), so billed, effective, list and
//! contracted cost are the same figure, and `x_PriceSources` names where the prices came from.
//! The account is not known from ECS's answers, so `BillingAccountId` and `SubAccountId` are empty.

use chrono::{DateTime, Datelike, TimeZone, Utc};

use super::history::{daily_rows, Recorded};
use super::{usd, Books, CostQuery, Grouping, RowKind};
use crate::model::csv::field;

/// The columns, in order: FOCUS's, then this console's own (`x_`).
pub const COLUMNS: [&str; 31] = [
    "BilledCost",
    "BillingAccountId",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "SubAccountId",
    "Tags",
    "x_AllocationMethod",
    "x_PriceSources",
];

/// `2026-11-01T00:00:00Z`.
fn instant(seconds: i64) -> String {
    DateTime::from_timestamp(seconds, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// The calendar month (UTC) holding `day`: its first midnight and the next month's.
fn billing_period(day: i64) -> (i64, i64) {
    let Some(date) = DateTime::from_timestamp(day, 0).map(|t| t.date_naive()) else {
        return (day, day);
    };
    let first = date.with_day(1).unwrap_or(date);
    let next = if first.month() == 12 {
        first
            .with_year(first.year() + 1)
            .and_then(|d| d.with_month(1))
    } else {
        first.with_month(first.month() + 1)
    }
    .unwrap_or(first);
    let midnight = |d: chrono::NaiveDate| {
        Utc.from_utc_datetime(&d.and_time(chrono::NaiveTime::MIN))
            .timestamp()
    };
    (midnight(first), midnight(next))
}

/// What a row's key names, for `ResourceType`, and its tags as a JSON object.
fn resource(group: Grouping, kind: RowKind, name: &str) -> (String, String) {
    let (what, tags) = match (kind, group) {
        (RowKind::Idle, _) => (
            "Idle GPU capacity of an ECS cluster",
            serde_json::json!({ "gpushare:cluster": name, "gpushare:kind": "idle" }),
        ),
        (RowKind::Unattributed, _) => (
            "GPU capacity held by tasks the console could not describe",
            serde_json::json!({ "gpushare:cluster": name, "gpushare:kind": "unattributed" }),
        ),
        (_, Grouping::Team) => ("Team", serde_json::json!({ "team": name })),
        (_, Grouping::Service) => {
            let (cluster, service) = name.split_once('/').unwrap_or(("", name));
            (
                "ECS service",
                serde_json::json!({ "gpushare:cluster": cluster, "gpushare:service": service }),
            )
        }
        (_, Grouping::Cluster) => (
            "ECS cluster",
            serde_json::json!({ "gpushare:cluster": name }),
        ),
        (_, Grouping::InstanceType) => (
            "EC2 instance type",
            serde_json::json!({ "gpushare:instance_type": name }),
        ),
    };
    (what.to_string(), tags.to_string())
}

/// The FOCUS CSV of a recorded period: a header of `COLUMNS`, then a line per day and row.
pub fn focus_csv(recorded: &Recorded, books: &Books, query: &CostQuery) -> String {
    let (period, days) = daily_rows(recorded, books, query);
    let method = format!("{}; {}", query.split.label(), period.rule);
    let mut sources: Vec<String> = period
        .prices
        .iter()
        .map(|used| used.price.provenance())
        .collect();
    sources.sort();
    sources.dedup();
    let sources = sources.join("; ");
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for day in &days {
        let (billing_start, billing_end) = billing_period(day.day);
        for row in &day.rows {
            let cost = usd(row.cost_cents);
            let (what, tags) = resource(query.group, row.kind, &row.name);
            let description = format!(
                "{what} {}: its share of GPU instances' cost on {}",
                row.name,
                instant(day.day).get(..10).unwrap_or_default()
            );
            let gpu_hours = format!("{:.4}", row.gpu_hours);
            let fields: [&str; 31] = [
                &cost,
                "",
                "USD",
                &instant(billing_end),
                &instant(billing_start),
                "Usage",
                "",
                &description,
                "Usage-Based",
                &instant(day.day + 86_400),
                &instant(day.day),
                &gpu_hours,
                "GPU-Hours",
                &cost,
                &cost,
                "Amazon Web Services, Inc.",
                &cost,
                &gpu_hours,
                "GPU-Hours",
                "AWS",
                "AWS",
                &period.region,
                &row.name,
                &row.name,
                &what,
                "Compute",
                "Amazon Elastic Compute Cloud",
                "",
                &tags,
                &method,
                &sources,
            ];
            let line: Vec<String> = fields.iter().map(|f| field(f)).collect();
            out.push_str(&line.join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_is_billed_in_its_calendar_month() {
        // 2026-12-31 and 2026-11-15.
        let (start, end) = billing_period(1_798_675_200);
        assert_eq!(instant(start), "2026-12-01T00:00:00Z");
        assert_eq!(instant(end), "2027-01-01T00:00:00Z");
        let (start, end) = billing_period(1_794_700_800);
        assert_eq!(instant(start), "2026-11-01T00:00:00Z");
        assert_eq!(instant(end), "2026-12-01T00:00:00Z");
    }

    #[test]
    fn a_services_tags_name_its_cluster_and_service() {
        let (what, tags) = resource(Grouping::Service, RowKind::Allocated, "prod/embed");
        assert_eq!(what, "ECS service");
        let tags: serde_json::Value = serde_json::from_str(&tags).unwrap_or_default();
        assert_eq!(tags["gpushare:cluster"], "prod");
        assert_eq!(tags["gpushare:service"], "embed");
        let (what, _) = resource(Grouping::Service, RowKind::Idle, "prod");
        assert!(what.starts_with("Idle"));
    }
}
