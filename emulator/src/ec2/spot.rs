//! The emulated spot market: a price per GPU instance type, zone and six-hour period, and
//! DescribeSpotPriceHistory over it.

use super::*;

/// The Availability Zones of the emulated region.
pub(super) const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];

use crate::spot_market::{spot_price, SPOT_PERIOD_SECONDS};

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
