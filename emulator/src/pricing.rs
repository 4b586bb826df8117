//! The AWS Price List Query API (`AWSPriceListService`, `awsJson1_1`): `GetProducts` over the
//! EC2 products of every instance type the emulator knows, in the regions it prices.
//!
//! Each type and region has the products a real answer mixes in, so that a client which does not
//! filter closely picks a wrong price: Linux on shared tenancy (`capacitystatus` `Used`, the
//! on-demand price an instance is billed), the same for unused capacity reservations, Windows, and
//! dedicated tenancy. Each product is a JSON document in a string, as AWS sends them, with its
//! `OnDemand` term's hourly price in USD and the term's `effectiveDate`. The figures are the
//! emulator's own: the us-east-1 list prices of 2026-11 times a factor per region.

use serde_json::{json, Value};

use crate::instance_types::{on_demand_price, ALL, DESCRIBED_ONLY};

/// The `X-Amz-Target` prefix of the Price List Query API.
pub const TARGET_PREFIX: &str = "AWSPriceListService.";

/// When the emulated prices took effect.
pub const EFFECTIVE_DATE: &str = "2026-11-01T00:00:00Z";

/// The regions the emulator prices, with their location as the Price List names it and the
/// factor on the us-east-1 price.
const REGIONS: [(&str, &str, f64); 6] = [
    ("us-east-1", "US East (N. Virginia)", 1.0),
    ("us-east-2", "US East (Ohio)", 1.0),
    ("us-west-2", "US West (Oregon)", 1.0),
    ("eu-west-1", "EU (Ireland)", 1.12),
    ("eu-central-1", "EU (Frankfurt)", 1.2),
    ("ap-northeast-1", "Asia Pacific (Tokyo)", 1.26),
];

/// What list prices in `region` are, times us-east-1's (1 for a region not priced here).
pub fn region_factor(region: &str) -> f64 {
    REGIONS
        .iter()
        .find(|(r, _, _)| *r == region)
        .map_or(1.0, |(_, _, f)| *f)
}

/// The most products one page holds, and the default.
const MAX_RESULTS: usize = 100;

/// A refusal, as the Price List API words it.
#[derive(Debug, PartialEq)]
pub struct PricingError {
    pub code: &'static str,
    pub message: String,
}

fn invalid(message: String) -> PricingError {
    PricingError {
        code: "InvalidParameterException",
        message,
    }
}

/// The operations this emulator answers.
pub const OPERATIONS: [&str; 1] = ["GetProducts"];

/// Answers `operation` with `input`.
pub fn handle(operation: &str, input: &Value) -> Result<Value, PricingError> {
    match operation {
        "GetProducts" => get_products(input),
        _ => Err(PricingError {
            code: "UnknownOperationException",
            message: format!("The operation {operation} is not supported by this emulator."),
        }),
    }
}

/// One filter of a request: the attribute, how it compares, the value.
struct Filter {
    field: String,
    kind: String,
    value: String,
}

impl Filter {
    fn matches(&self, attributes: &Value) -> bool {
        let Some(have) = attributes.get(&self.field).and_then(Value::as_str) else {
            return self.kind == "NONE_OF";
        };
        let listed = || self.value.split(',').map(str::trim);
        match self.kind.as_str() {
            "CONTAINS" => have.contains(&self.value),
            "ANY_OF" => listed().any(|v| v == have),
            "NONE_OF" => listed().all(|v| v != have),
            // TERM_MATCH and EQUALS.
            _ => have == self.value,
        }
    }
}

/// GetProducts: the products of `ServiceCode` that every filter matches, a page at a time.
fn get_products(input: &Value) -> Result<Value, PricingError> {
    let service = input
        .get("ServiceCode")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("ServiceCode is required.".into()))?;
    let format = input
        .get("FormatVersion")
        .and_then(Value::as_str)
        .unwrap_or("aws_v1");
    if format != "aws_v1" {
        return Err(invalid(format!(
            "FormatVersion {format} is not valid; use aws_v1."
        )));
    }
    let filters = filters(input)?;
    let page = input
        .get("MaxResults")
        .map(|m| {
            m.as_u64()
                .filter(|m| (1..=MAX_RESULTS as u64).contains(m))
                .ok_or_else(|| invalid(format!("MaxResults must be between 1 and {MAX_RESULTS}.")))
        })
        .transpose()?
        .map_or(MAX_RESULTS, |m| m as usize);
    let start = match input.get("NextToken").and_then(Value::as_str) {
        None => 0,
        Some(token) => token
            .strip_prefix("emulator-pricing:")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| PricingError {
                code: "InvalidNextTokenException",
                message: "The NextToken is not valid.".into(),
            })?,
    };
    let matching: Vec<Value> = if service == "AmazonEC2" {
        products()
            .into_iter()
            .filter(|p| {
                filters
                    .iter()
                    .all(|f| f.matches(&p["product"]["attributes"]))
            })
            .collect()
    } else {
        Vec::new()
    };
    let end = (start + page).min(matching.len());
    let mut answer = json!({
        "FormatVersion": "aws_v1",
        "PriceList": matching
            .get(start.min(end)..end)
            .unwrap_or_default()
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>(),
    });
    if end < matching.len() {
        answer["NextToken"] = json!(format!("emulator-pricing:{end}"));
    }
    Ok(answer)
}

/// The request's filters, checked.
fn filters(input: &Value) -> Result<Vec<Filter>, PricingError> {
    let Some(list) = input.get("Filters") else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| invalid("Filters must be a list.".into()))?;
    list.iter()
        .map(|f| {
            let text = |key: &str| f.get(key).and_then(Value::as_str).map(str::to_string);
            let kind = text("Type").ok_or_else(|| invalid("A filter needs a Type.".into()))?;
            if !["TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF"].contains(&kind.as_str()) {
                return Err(invalid(format!("Filter type {kind} is not valid.")));
            }
            Ok(Filter {
                field: text("Field").ok_or_else(|| invalid("A filter needs a Field.".into()))?,
                kind,
                value: text("Value").ok_or_else(|| invalid("A filter needs a Value.".into()))?,
            })
        })
        .collect()
}

/// The emulator's price of a type it describes but nothing launches.
fn described_only_price(name: &str) -> Option<f64> {
    (name == "g6f.xlarge").then_some(0.2305)
}

/// Every EC2 product: per type and region, the four variants.
fn products() -> Vec<Value> {
    let mut out = Vec::new();
    for kind in ALL.iter().chain(DESCRIBED_ONLY.iter()) {
        let Some(base) = on_demand_price(kind.name).or_else(|| described_only_price(kind.name))
        else {
            continue;
        };
        for (region, location, factor) in REGIONS {
            let linux = base * factor;
            let windows = linux + 0.046 * f64::from(kind.vcpus);
            for (os, tenancy, status, usd) in [
                ("Linux", "Shared", "Used", linux),
                ("Linux", "Shared", "UnusedCapacityReservation", linux),
                ("Windows", "Shared", "Used", windows),
                ("Linux", "Dedicated", "Used", linux * 1.1),
            ] {
                out.push(product(
                    kind.name, kind.vcpus, region, location, os, tenancy, status, usd,
                ));
            }
        }
    }
    out
}

/// One product document.
#[allow(clippy::too_many_arguments)]
fn product(
    instance_type: &str,
    vcpus: u32,
    region: &str,
    location: &str,
    os: &str,
    tenancy: &str,
    status: &str,
    usd: f64,
) -> Value {
    let sku = sku(&[instance_type, region, os, tenancy, status]);
    let term = format!("{sku}.JRTCKXETXF");
    let dimension = format!("{term}.6YS6EN2CT7");
    let rounded = (usd * 10_000.0).round() / 10_000.0;
    json!({
        "product": {
            "productFamily": "Compute Instance",
            "attributes": {
                "servicecode": "AmazonEC2",
                "instanceType": instance_type,
                "instanceFamily": "GPU instance",
                "vcpu": vcpus.to_string(),
                "regionCode": region,
                "location": location,
                "operatingSystem": os,
                "tenancy": tenancy,
                "capacitystatus": status,
                "preInstalledSw": "NA",
                "licenseModel": "No License required",
                "operation": if os == "Linux" { "RunInstances" } else { "RunInstances:0002" },
                "usagetype": format!("BoxUsage:{instance_type}"),
            },
            "sku": sku,
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                term.clone(): {
                    "priceDimensions": {
                        dimension.clone(): {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "description": format!("${rounded:.4} per On Demand {os} {instance_type} Instance Hour"),
                            "appliesTo": [],
                            "rateCode": dimension,
                            "beginRange": "0",
                            "pricePerUnit": {"USD": format!("{rounded:.10}")},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": EFFECTIVE_DATE,
                    "offerTermCode": "JRTCKXETXF",
                    "termAttributes": {},
                }
            }
        },
        "version": "20261101000000",
        "publicationDate": EFFECTIVE_DATE,
    })
}

/// A product's SKU: sixteen letters and digits from a hash of what it is.
fn sku(parts: &[&str]) -> String {
    let mut hash: u64 = 1469598103934665603;
    for byte in parts.iter().flat_map(|p| p.bytes().chain([0])) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(1099511628211);
    }
    const DIGITS: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    (0..16)
        .map(|i| char::from(DIGITS[((hash >> (i * 4)) as usize + i) % DIGITS.len()]))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
