//! The emulated spot market's prices: a price per GPU instance type, zone and six-hour period,
//! which EC2's DescribeSpotPriceHistory reports and Cost Explorer bills spot instances at.

/// How often the emulated spot price of a type in a zone changes.
pub const SPOT_PERIOD_SECONDS: i64 = 6 * 3600;

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
pub fn spot_price(instance_type: &str, zone: &str, period_start: i64) -> Option<f64> {
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
