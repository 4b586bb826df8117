//! Cost Explorer (`AWSInsightsIndexService`, `awsJson1_1`): `GetCostAndUsageWithResources`
//! over a ledger of every EC2 instance the account ran — when it started, when it ended, and how
//! it is bought — so that the bill of an instance stays known after it is gone.
//!
//! How the emulated account buys its instances, and so what each costs amortized:
//! - **on demand**, at the list price of the fleet's region;
//! - **under a Savings Plan**: about four in ten on-demand instances (chosen by a hash of the
//!   instance ID) are covered by a Compute Savings Plan, at 28 % below the list price. A real
//!   plan covers a dollar amount an hour, whichever instances use it first; the emulator fixes
//!   the covered instances instead, so a test knows which;
//! - **spot**, at the emulated spot market's price of its zone, six hours at a time;
//! - **in a Capacity Block**, at the block's price spread over its hours (43 % below on demand
//!   for a p5), as the amortized view shows a reservation paid up front.
//!
//! Like AWS, it answers only for the last 14 days (by the emulator's clock), only for EC2
//! compute (`SERVICE` = `Amazon Elastic Compute Cloud - Compute` must be in the filter), daily
//! or hourly, grouped by `RESOURCE_ID` or not.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde_json::{json, Value};

/// The `X-Amz-Target` prefix of Cost Explorer.
pub const TARGET_PREFIX: &str = "AWSInsightsIndexService.";

/// The operations this emulator answers.
pub const OPERATIONS: [&str; 1] = ["GetCostAndUsageWithResources"];

/// The one service resource-level data covers.
pub const EC2_COMPUTE: &str = "Amazon Elastic Compute Cloud - Compute";

/// How far back resource-level data reaches.
pub const WINDOW_DAYS: i64 = 14;

/// The most groups one page holds.
const PAGE: usize = 200;

/// Of the list price, what a Savings Plan's covered hour costs.
pub const SAVINGS_PLAN_FACTOR: f64 = 0.72;
/// Of the list price, what a Capacity Block's hour costs.
pub const CAPACITY_BLOCK_FACTOR: f64 = 0.57;

/// How an instance is bought.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purchase {
    OnDemand,
    SavingsPlan,
    Spot,
    CapacityBlock,
}

/// One instance's billable life.
#[derive(Clone, Debug)]
pub struct Lifetime {
    pub instance_type: String,
    pub zone: String,
    pub purchase: Purchase,
    /// The list price an hour, in the fleet's region.
    pub list_usd_per_hour: f64,
    pub start: DateTime<Utc>,
    pub end: Option<DateTime<Utc>>,
}

/// Every instance the account ran, by EC2 instance ID.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    pub instances: BTreeMap<String, Lifetime>,
}

/// Whether the Savings Plan covers the instance `id`: about four in ten.
pub fn covered(id: &str) -> bool {
    let hash = id.bytes().fold(1469598103934665603_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(1099511628211)
    });
    hash % 10 < 4
}

impl Ledger {
    /// Instance `id` of `instance_type` in `zone` started running at `start`, bought as
    /// `purchase`, in a region whose prices are `factor` times us-east-1's.
    pub fn started(
        &mut self,
        id: &str,
        instance_type: &str,
        zone: &str,
        purchase: Purchase,
        start: DateTime<Utc>,
        factor: f64,
    ) {
        let list = crate::instance_types::on_demand_price(instance_type).unwrap_or(0.0);
        self.instances.entry(id.to_string()).or_insert(Lifetime {
            instance_type: instance_type.to_string(),
            zone: zone.to_string(),
            purchase,
            list_usd_per_hour: list * factor,
            start,
            end: None,
        });
    }

    /// The instance `id` was bought differently from the start (a scenario's set-up).
    pub fn rebuy(&mut self, id: &str, purchase: Purchase) {
        if let Some(life) = self.instances.get_mut(id) {
            life.purchase = purchase;
        }
    }

    /// The instance `id` stopped running at `at`.
    pub fn ended(&mut self, id: &str, at: DateTime<Utc>) {
        if let Some(life) = self.instances.get_mut(id) {
            life.end.get_or_insert(at);
        }
    }

    /// What `id` cost from `from` to `to`, amortized, USD.
    pub fn cost(&self, id: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
        let Some(life) = self.instances.get(id) else {
            return 0.0;
        };
        let start = life.start.max(from);
        let end = life.end.map_or(to, |e| e.min(to));
        if end <= start {
            return 0.0;
        }
        let hours = |a: DateTime<Utc>, b: DateTime<Utc>| (b - a).num_milliseconds() as f64 / 3.6e6;
        match life.purchase {
            Purchase::OnDemand => hours(start, end) * life.list_usd_per_hour,
            Purchase::SavingsPlan => {
                hours(start, end) * life.list_usd_per_hour * SAVINGS_PLAN_FACTOR
            }
            Purchase::CapacityBlock => {
                hours(start, end) * life.list_usd_per_hour * CAPACITY_BLOCK_FACTOR
            }
            Purchase::Spot => {
                let period = crate::spot_market::SPOT_PERIOD_SECONDS;
                let mut total = 0.0;
                let mut at = start;
                while at < end {
                    let period_start = at.timestamp().div_euclid(period) * period;
                    let next = DateTime::from_timestamp(period_start + period, 0)
                        .unwrap_or(end)
                        .min(end);
                    let usd = crate::spot_market::spot_price(
                        &life.instance_type,
                        &life.zone,
                        period_start,
                    )
                    .unwrap_or(life.list_usd_per_hour);
                    total += hours(at, next) * usd;
                    at = next;
                }
                total
            }
        }
    }
}

/// A refusal, as Cost Explorer words it.
#[derive(Debug, PartialEq)]
pub struct CostError {
    pub code: &'static str,
    pub message: String,
}

fn invalid(message: impl Into<String>) -> CostError {
    CostError {
        code: "ValidationException",
        message: message.into(),
    }
}

/// Answers `operation` with `input`, from `ledger`, at `now`; `enabled` is whether the account
/// opted in to resource-level data.
pub fn handle(
    operation: &str,
    input: &Value,
    ledger: &Ledger,
    now: DateTime<Utc>,
    enabled: bool,
) -> Result<Value, CostError> {
    match operation {
        "GetCostAndUsageWithResources" if !enabled => Err(CostError {
            code: "DataUnavailableException",
            message: "Resource-level data is not enabled for this account. Enable it on the Cost Explorer Settings page.".into(),
        }),
        "GetCostAndUsageWithResources" => with_resources(input, ledger, now),
        _ => Err(CostError {
            code: "UnknownOperationException",
            message: format!("The operation {operation} is not supported by this emulator."),
        }),
    }
}

/// The asked granularity's step.
fn step(granularity: &str) -> Result<Duration, CostError> {
    match granularity {
        "DAILY" => Ok(Duration::days(1)),
        "HOURLY" => Ok(Duration::hours(1)),
        "MONTHLY" => Err(invalid(
            "MONTHLY granularity is not supported with resources; use DAILY or HOURLY.",
        )),
        other => Err(invalid(format!(
            "Granularity '{other}' is not valid; use DAILY or HOURLY."
        ))),
    }
}

fn date(input: &Value, field: &str) -> Result<NaiveDate, CostError> {
    let text = input["TimePeriod"][field]
        .as_str()
        .ok_or_else(|| invalid(format!("TimePeriod.{field} is required (YYYY-MM-DD).")))?;
    NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| {
        invalid(format!(
            "TimePeriod.{field} '{text}' is not a YYYY-MM-DD date."
        ))
    })
}

/// Whether `filter` says `SERVICE` is EC2 compute, alone or within an `And`.
fn filters_ec2(filter: &Value) -> bool {
    let is = |e: &Value| {
        e["Dimensions"]["Key"].as_str() == Some("SERVICE")
            && e["Dimensions"]["Values"]
                .as_array()
                .is_some_and(|v| v.len() == 1 && v[0].as_str() == Some(EC2_COMPUTE))
    };
    is(filter)
        || filter["And"]
            .as_array()
            .is_some_and(|all| all.iter().any(is))
}

/// The resource IDs a `RESOURCE_ID` dimension in `filter` keeps, when it has one.
fn kept_ids(filter: &Value) -> Option<Vec<String>> {
    let of = |e: &Value| {
        (e["Dimensions"]["Key"].as_str() == Some("RESOURCE_ID")).then(|| {
            e["Dimensions"]["Values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect::<Vec<_>>()
        })
    };
    of(filter).or_else(|| filter["And"].as_array()?.iter().find_map(of))
}

fn amount(usd: f64) -> Value {
    json!({"Amount": format!("{usd:.10}"), "Unit": "USD"})
}

fn with_resources(input: &Value, ledger: &Ledger, now: DateTime<Utc>) -> Result<Value, CostError> {
    let start = date(input, "Start")?;
    let end = date(input, "End")?;
    if end <= start {
        return Err(invalid("TimePeriod.End must be after TimePeriod.Start."));
    }
    let earliest = (now - Duration::days(WINDOW_DAYS)).date_naive();
    if start < earliest {
        return Err(invalid(format!(
            "TimePeriod.Start {start} is more than {WINDOW_DAYS} days ago; resource-level data starts at {earliest}."
        )));
    }
    let step = step(input["Granularity"].as_str().unwrap_or_default())?;
    if !filters_ec2(&input["Filter"]) {
        return Err(invalid(format!(
            "The filter must have SERVICE = \"{EC2_COMPUTE}\": resource-level data covers EC2 compute only."
        )));
    }
    let metrics: Vec<&str> = input["Metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if metrics.is_empty() {
        return Err(invalid("Metrics is required, e.g. [\"AmortizedCost\"]."));
    }
    let grouped = match input["GroupBy"].as_array().map(Vec::as_slice) {
        None | Some([]) => false,
        Some([one]) if one["Type"] == "DIMENSION" && one["Key"] == "RESOURCE_ID" => true,
        Some(_) => {
            return Err(invalid(
                "This emulator groups by the RESOURCE_ID dimension only.",
            ))
        }
    };
    let kept = kept_ids(&input["Filter"]);
    let mut periods = Vec::new();
    let mut at = start
        .and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc())
        .unwrap_or(now);
    let stop = end.and_hms_opt(0, 0, 0).map(|t| t.and_utc()).unwrap_or(now);
    while at < stop {
        let next = at + step;
        let groups: Vec<(String, f64)> = ledger
            .instances
            .keys()
            .filter(|id| kept.as_ref().is_none_or(|k| k.contains(id)))
            .map(|id| (id.clone(), ledger.cost(id, at, next.min(now))))
            .filter(|(_, usd)| *usd > 0.0)
            .collect();
        periods.push((at, next, groups));
        at = next;
    }
    page(input, &metrics, grouped, &periods)
}

type Period = (DateTime<Utc>, DateTime<Utc>, Vec<(String, f64)>);

/// One page of the answer: groups in order across the periods, [`PAGE`] at most, the token the
/// index of the next group.
fn page(
    input: &Value,
    metrics: &[&str],
    grouped: bool,
    periods: &[Period],
) -> Result<Value, CostError> {
    let skip = match input["NextPageToken"].as_str() {
        None => 0,
        Some(token) => token
            .strip_prefix("groups-")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| CostError {
                code: "InvalidNextTokenException",
                message: "The NextPageToken is not one this service gave.".into(),
            })?,
    };
    let stamp = |t: DateTime<Utc>, hourly: bool| {
        if hourly {
            t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
        } else {
            t.format("%Y-%m-%d").to_string()
        }
    };
    let metric_map = |usd: f64| -> Value {
        metrics
            .iter()
            .map(|m| ((*m).to_string(), amount(usd)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let total: usize = periods.iter().map(|(_, _, g)| g.len()).sum();
    let last = skip + PAGE;
    let more = grouped && total > last;
    let mut results = Vec::new();
    let mut offset = 0;
    for (from, to, groups) in periods {
        let hourly = (*to - *from) < Duration::days(1);
        let here = offset;
        offset += groups.len();
        let mut out = Vec::new();
        if grouped {
            for (n, (id, usd)) in groups.iter().enumerate() {
                if (skip..last).contains(&(here + n)) {
                    out.push(json!({"Keys": [id], "Metrics": metric_map(*usd)}));
                }
            }
            let empty_here = groups.is_empty() && here >= skip && (here < last || !more);
            if out.is_empty() && !empty_here {
                continue;
            }
        }
        let sum: f64 = groups.iter().map(|(_, usd)| usd).sum();
        results.push(json!({
            "TimePeriod": {"Start": stamp(*from, hourly), "End": stamp(*to, hourly)},
            "Total": if grouped { json!({}) } else { metric_map(sum) },
            "Groups": out,
            "Estimated": false,
        }));
    }
    let mut answer = json!({
        "ResultsByTime": results,
        "GroupDefinitions": if grouped { json!([{"Type": "DIMENSION", "Key": "RESOURCE_ID"}]) } else { json!([]) },
        "DimensionValueAttributes": [],
    });
    if more {
        answer["NextPageToken"] = json!(format!("groups-{last}"));
    }
    Ok(answer)
}

#[cfg(test)]
mod tests;
