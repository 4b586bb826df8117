//! The emulated spot market: a price per GPU instance type, zone and six-hour period, and
//! DescribeSpotPriceHistory over it.

use super::*;

/// The Availability Zones of the emulated region.
pub(super) const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];

/// How often the emulated spot price of a type in a zone changes.
const SPOT_PERIOD_SECONDS: i64 = 6 * 3600;

/// The emulated market's middle price of each GPU instance type, USD an hour (about a third of
/// on demand, as GPU spot prices often are); none for a type with no spot market here.
fn spot_middle(instance_type: &str) -> Option<f64> {
    Some(match instance_type {
        "g5.xlarge" => 0.36,
        "g5.12xlarge" => 2.05,
        "g5.48xlarge" => 5.90,
        "g6.12xlarge" => 1.65,
        "g6.48xlarge" => 4.80,
        "g6e.12xlarge" => 3.80,
        "g6e.48xlarge" => 10.90,
        "p4d.24xlarge" => 8.10,
        "p5.48xlarge" => 19.80,
        _ => return None,
    })
}

/// The spot price of `instance_type` in `zone` in the period starting at `period_start`: the
/// middle price moved up to 12 % either way by a hash of the three, to four decimals.
fn spot_price(instance_type: &str, zone: &str, period_start: i64) -> Option<f64> {
    let middle = spot_middle(instance_type)?;
    let mut hash: u64 = 1469598103934665603;
    for byte in instance_type
        .bytes()
        .chain(zone.bytes())
        .chain(period_start.to_le_bytes())
    {
        hash = (hash ^ u64::from(byte)).wrapping_mul(1099511628211);
    }
    let swing = (hash % 2401) as f64 / 10_000.0 - 0.12;
    Some((middle * (1.0 + swing) * 10_000.0).round() / 10_000.0)
}

/// An EC2 timestamp: `2026-12-02T06:00:00.000Z`.
fn ec2_time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S.000Z").to_string()
}

/// DescribeSpotPriceHistory: for each type and zone asked (all by default), the price in effect
/// at `StartTime` and every change after it up to `EndTime` (both default to now), newest first,
/// as EC2 answers. Only `Linux/UNIX` is sold here.
pub(super) fn describe_spot_price_history(
    fleet: &Fleet,
    params: &[(String, String)],
    request_id: &str,
) -> Result<String, Ec2Error> {
    let now = fleet.now;
    let (start, end) = spot_window(params, now)?;
    if params.iter().any(|(k, _)| k.starts_with("Filter.")) {
        return Err(Ec2Error::new(
            "InvalidParameterValue",
            "This emulator answers DescribeSpotPriceHistory by InstanceType, ProductDescription and AvailabilityZone only, without filters.",
        ));
    }
    let products = list(params, "ProductDescription");
    let linux = products.is_empty() || products.contains(&"Linux/UNIX");
    let types = list(params, "InstanceType");
    let zone = param(params, "AvailabilityZone");
    if let Some(zone) = zone {
        if !ZONES.contains(&zone) {
            return Err(Ec2Error::new(
                "InvalidParameterValue",
                format!("Invalid availability zone: [{zone}]"),
            ));
        }
    }
    let max_results = max_results(params, 1, 1000)?;
    let mut items = if linux {
        spot_prices_between(start, end, &types, zone)
    } else {
        Vec::new()
    };
    items.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)).then(a.2.cmp(b.2)));
    let begin = page_start(params, "emulator-ec2-spot:")?;
    let stop = (begin + max_results).min(items.len());
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DescribeSpotPriceHistoryResponse xmlns=\"{XMLNS}\"><requestId>{}</requestId><spotPriceHistorySet>",
        escape(request_id)
    );
    for (at, kind, z, price) in items.get(begin..stop).unwrap_or_default() {
        let stamp = chrono::DateTime::from_timestamp(*at, 0).unwrap_or(now);
        let _ = write!(
            xml,
            "<item><instanceType>{}</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>{price:.6}</spotPrice><timestamp>{}</timestamp><availabilityZone>{}</availabilityZone></item>",
            escape(kind),
            ec2_time(stamp),
            escape(z)
        );
    }
    xml.push_str("</spotPriceHistorySet>");
    if stop < items.len() {
        let _ = write!(xml, "<nextToken>emulator-ec2-spot:{stop}</nextToken>");
    } else {
        xml.push_str("<nextToken/>");
    }
    xml.push_str("</DescribeSpotPriceHistoryResponse>");
    Ok(xml)
}

/// The window a DescribeSpotPriceHistory request asks about (`StartTime`, `EndTime`), neither
/// past now.
fn spot_window(
    params: &[(String, String)],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>), Ec2Error> {
    let time = |key: &str| -> Result<Option<chrono::DateTime<chrono::Utc>>, Ec2Error> {
        param(params, key)
            .map(|text| {
                chrono::DateTime::parse_from_rfc3339(text)
                    .map(|t| t.with_timezone(&chrono::Utc))
                    .map_err(|_| {
                        Ec2Error::new(
                            "InvalidParameterValue",
                            format!("Value ({text}) for parameter {key} is invalid."),
                        )
                    })
            })
            .transpose()
    };
    let start = time("StartTime")?.unwrap_or(now).min(now);
    let end = time("EndTime")?.unwrap_or(now).min(now);
    if end < start {
        return Err(Ec2Error::new(
            "InvalidParameterValue",
            "The end time must be after the start time.",
        ));
    }
    Ok((start, end))
}

/// Every spot price set in the window, per type and zone asked for: (when, type, zone, price).
fn spot_prices_between(
    start: chrono::DateTime<chrono::Utc>,
    end: chrono::DateTime<chrono::Utc>,
    types: &[&str],
    zone: Option<&str>,
) -> Vec<(i64, &'static str, &'static str, f64)> {
    let mut items = Vec::new();
    let first = start.timestamp().div_euclid(SPOT_PERIOD_SECONDS) * SPOT_PERIOD_SECONDS;
    for kind in instance_types::ALL
        .iter()
        .filter(|t| types.is_empty() || types.contains(&t.name))
    {
        for z in ZONES
            .iter()
            .filter(|z| zone.is_none_or(|asked| asked == **z))
        {
            let mut at = first;
            while at <= end.timestamp() {
                if let Some(price) = spot_price(kind.name, z, at) {
                    items.push((at, kind.name, *z, price));
                }
                at += SPOT_PERIOD_SECONDS;
            }
        }
    }
    items
}
