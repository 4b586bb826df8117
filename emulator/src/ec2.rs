//! EC2 DescribeInstances and DescribeInstanceTypes over the EC2 query protocol (`POST /`, a
//! form body with `Action=…`, an XML answer), as aws-sdk-ec2 and botocore speak it: the
//! container instances' EC2 side — private IP address and DNS name (the hostname the
//! CloudWatch agent publishes), Availability Zone, instance type, state, and spot or
//! on-demand — and each instance type's vCPUs, memory, GPUs and network interface limit; and
//! DescribeSpotPriceHistory: an emulated spot market for the GPU instance types, a price per
//! type and Availability Zone that changes every six hours.

use std::fmt::Write as _;

use crate::{
    instance_types,
    model::{ContainerInstance, Fleet},
};

/// The EC2 operations the emulator serves.
pub const OPERATIONS: [&str; 3] = [
    "DescribeInstances",
    "DescribeInstanceTypes",
    "DescribeSpotPriceHistory",
];
/// The namespace of EC2's XML answers.
const XMLNS: &str = "http://ec2.amazonaws.com/doc/2016-11-15/";

/// An EC2 error: its code and message, answered as EC2's `<Response><Errors>` document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ec2Error {
    pub code: &'static str,
    pub message: String,
}

impl Ec2Error {
    fn new(code: &'static str, message: impl Into<String>) -> Ec2Error {
        Ec2Error {
            code,
            message: message.into(),
        }
    }

    /// The error document EC2 answers with.
    pub fn to_xml(&self, request_id: &str) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{}</Code><Message>{}</Message></Error></Errors><RequestID>{}</RequestID></Response>",
            escape(self.code),
            escape(&self.message),
            escape(request_id)
        )
    }
}

/// Decodes an `application/x-www-form-urlencoded` body.
pub fn parse_form(body: &[u8]) -> Vec<(String, String)> {
    let decode = |text: &str| -> String {
        let bytes = text.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                    match u8::from_str_radix(hex, 16) {
                        Ok(byte) => {
                            out.push(byte);
                            i += 2;
                        }
                        Err(_) => out.push(b'%'),
                    }
                }
                other => out.push(other),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

/// Runs one EC2 query request; the XML answer.
pub fn handle(
    fleet: &Fleet,
    params: &[(String, String)],
    request_id: &str,
) -> Result<String, Ec2Error> {
    let get = |key: &str| param(params, key);
    match get("Action") {
        Some("DescribeInstances") => describe_instances(fleet, params, request_id),
        Some("DescribeInstanceTypes") => describe_instance_types(params, request_id),
        Some("DescribeSpotPriceHistory") => describe_spot_price_history(fleet, params, request_id),
        Some(other) => Err(Ec2Error::new(
            "InvalidAction",
            format!(
                "The action {other} is not valid for this web service (this emulator serves {}).",
                OPERATIONS.join(", ")
            ),
        )),
        None => Err(Ec2Error::new(
            "MissingAction",
            "The request must contain the parameter Action.",
        )),
    }
}

/// The value of a parameter, if given.
fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The start of the page a `NextToken` made with `prefix` names (0 without one).
fn page_start(params: &[(String, String)], prefix: &str) -> Result<usize, Ec2Error> {
    match param(params, "NextToken") {
        None | Some("") => Ok(0),
        Some(token) => token
            .strip_prefix(prefix)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| Ec2Error::new("InvalidParameterValue", "The NextToken is not valid.")),
    }
}

/// `MaxResults` between `least` and `most` (`most` when not given), or EC2's error.
fn max_results(params: &[(String, String)], least: usize, most: usize) -> Result<usize, Ec2Error> {
    match param(params, "MaxResults") {
        None => Ok(most),
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (least..=most).contains(&n) => Ok(n),
            _ => Err(Ec2Error::new(
                "InvalidParameterValue",
                format!(
                    "MaxResults '{text}' is invalid. Expecting a value between {least} and {most}."
                ),
            )),
        },
    }
}

/// The values of a list parameter: `Prefix.1`, `Prefix.2`, … in order.
pub(crate) fn list<'a>(params: &'a [(String, String)], prefix: &str) -> Vec<&'a str> {
    let mut items: Vec<(u32, &str)> = params
        .iter()
        .filter_map(|(key, value)| {
            let n = key.strip_prefix(prefix)?.strip_prefix('.')?.parse().ok()?;
            Some((n, value.as_str()))
        })
        .collect();
    items.sort_by_key(|(n, _)| *n);
    items.into_iter().map(|(_, v)| v).collect()
}

/// The filters of a request: `Filter.N.Name` and its `Filter.N.Value.M`.
fn filters(params: &[(String, String)]) -> Result<Vec<(String, Vec<String>)>, Ec2Error> {
    let mut out = Vec::new();
    for n in 1.. {
        let name_key = format!("Filter.{n}.Name");
        let Some(name) = params.iter().find(|(k, _)| *k == name_key).map(|(_, v)| v) else {
            break;
        };
        let values: Vec<String> = list(params, &format!("Filter.{n}.Value"))
            .into_iter()
            .map(str::to_string)
            .collect();
        if values.len() > 200 {
            return Err(Ec2Error::new(
                "InvalidParameterValue",
                format!("The filter '{name}' has more than 200 values."),
            ));
        }
        if ![
            "instance-id",
            "private-dns-name",
            "private-ip-address",
            "availability-zone",
            "instance-type",
            "instance-lifecycle",
            "instance-state-name",
        ]
        .contains(&name.as_str())
        {
            return Err(Ec2Error::new(
                "InvalidParameterValue",
                format!("The filter '{name}' is invalid (this emulator knows instance-id, private-dns-name, private-ip-address, availability-zone, instance-type, instance-lifecycle, instance-state-name)."),
            ));
        }
        out.push((name.clone(), values));
    }
    Ok(out)
}

fn describe_instances(
    fleet: &Fleet,
    params: &[(String, String)],
    request_id: &str,
) -> Result<String, Ec2Error> {
    let ids = list(params, "InstanceId");
    let filters = filters(params)?;
    let max_results = instances_max_results(params, &ids)?;
    let start = page_start(params, "emulator-ec2:")?;
    let all: Vec<&ContainerInstance> = fleet
        .clusters
        .values()
        .flat_map(|c| c.instances.iter())
        .collect();
    refuse_unknown_ids(&all, &ids)?;
    let matching: Vec<&ContainerInstance> = all
        .into_iter()
        .filter(|i| ids.is_empty() || ids.contains(&i.ec2_instance_id.as_str()))
        .filter(|i| {
            filters
                .iter()
                .all(|(name, values)| values.contains(&instance_field(fleet, i, name)))
        })
        .collect();
    let end = max_results.map_or(matching.len(), |n| (start + n).min(matching.len()));
    let page = matching.get(start..end).unwrap_or_default();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DescribeInstancesResponse xmlns=\"{XMLNS}\"><requestId>{}</requestId><reservationSet>",
        escape(request_id)
    );
    for instance in page {
        write_reservation(&mut xml, fleet, instance);
    }
    xml.push_str("</reservationSet>");
    if end < matching.len() {
        let _ = write!(xml, "<nextToken>emulator-ec2:{end}</nextToken>");
    }
    xml.push_str("</DescribeInstancesResponse>");
    Ok(xml)
}

/// DescribeInstances' `MaxResults`: 5 to 1000, and never beside instance IDs.
fn instances_max_results(
    params: &[(String, String)],
    ids: &[&str],
) -> Result<Option<usize>, Ec2Error> {
    let Some(text) = param(params, "MaxResults") else {
        return Ok(None);
    };
    if !ids.is_empty() {
        return Err(Ec2Error::new(
            "InvalidParameterCombination",
            "The parameter instancesSet cannot be used with the parameter maxResults",
        ));
    }
    let n: usize = text.parse().map_err(|_| {
        Ec2Error::new(
            "InvalidParameterValue",
            format!("MaxResults '{text}' is not a number."),
        )
    })?;
    if !(5..=1000).contains(&n) {
        return Err(Ec2Error::new(
            "InvalidParameterValue",
            "Value for parameter maxResults is invalid. Expecting a value between 5 and 1000.",
        ));
    }
    Ok(Some(n))
}

/// Instance IDs that do not exist fail the whole request, as EC2 does; filters do not.
fn refuse_unknown_ids(all: &[&ContainerInstance], ids: &[&str]) -> Result<(), Ec2Error> {
    let unknown: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| !all.iter().any(|i| i.ec2_instance_id == *id))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(Ec2Error::new(
        "InvalidInstanceID.NotFound",
        format!(
            "The instance ID{} '{}' {} not exist",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", "),
            if unknown.len() == 1 { "does" } else { "do" }
        ),
    ))
}

/// The value of the field a DescribeInstances filter names.
fn instance_field(fleet: &Fleet, instance: &ContainerInstance, filter: &str) -> String {
    match filter {
        "instance-id" => instance.ec2_instance_id.clone(),
        "private-dns-name" => instance.private_dns_name(&fleet.region),
        "private-ip-address" => instance.private_ip.clone(),
        "availability-zone" => instance.availability_zone.clone(),
        "instance-type" => instance.instance_type.clone(),
        "instance-lifecycle" => if instance.spot { "spot" } else { "" }.to_string(),
        _ => "running".to_string(),
    }
}

/// One instance in its reservation, as DescribeInstances' XML has it.
fn write_reservation(xml: &mut String, fleet: &Fleet, instance: &ContainerInstance) {
    let id = &instance.ec2_instance_id;
    let reservation = id.replacen("i-", "r-", 1);
    let _ = write!(
        xml,
        "<item><reservationId>{}</reservationId><ownerId>{}</ownerId><groupSet/><instancesSet><item>\
<instanceId>{}</instanceId><imageId>ami-0ecsgpu000000001</imageId>\
<instanceState><code>16</code><name>running</name></instanceState>\
<privateDnsName>{}</privateDnsName><dnsName/><reason/><amiLaunchIndex>0</amiLaunchIndex>\
<instanceType>{}</instanceType><launchTime>{}</launchTime>\
<placement><availabilityZone>{}</availabilityZone><groupName/><tenancy>default</tenancy></placement>\
<monitoring><state>disabled</state></monitoring><privateIpAddress>{}</privateIpAddress>\
<architecture>x86_64</architecture><rootDeviceType>ebs</rootDeviceType><rootDeviceName>/dev/xvda</rootDeviceName>\
{}{}<hypervisor>xen</hypervisor><virtualizationType>hvm</virtualizationType>\
<privateDnsNameOptions><hostnameType>ip-name</hostnameType><enableResourceNameDnsARecord>false</enableResourceNameDnsARecord><enableResourceNameDnsAAAARecord>false</enableResourceNameDnsAAAARecord></privateDnsNameOptions>\
</item></instancesSet></item>",
        escape(&reservation),
        escape(&fleet.account),
        escape(id),
        escape(&instance.private_dns_name(&fleet.region)),
        escape(&instance.instance_type),
        instance.registered_at.format("%Y-%m-%dT%H:%M:%S.000Z"),
        escape(&instance.availability_zone),
        escape(&instance.private_ip),
        if instance.spot {
            "<instanceLifecycle>spot</instanceLifecycle>"
        } else {
            ""
        },
        if managed_by_ecs(fleet, instance) {
            "<operator><managed>true</managed><principal>ecs.amazonaws.com</principal></operator>"
        } else {
            ""
        },
    );
}

/// Whether ECS Managed Instances launched `instance`: EC2 names ECS as its operator.
fn managed_by_ecs(fleet: &Fleet, instance: &ContainerInstance) -> bool {
    instance
        .capacity_provider
        .as_deref()
        .and_then(|name| fleet.capacity_provider(name))
        .is_some_and(|p| p.kind == crate::capacity::ProviderKind::ManagedInstances)
}

/// The instance types asked for (`InstanceType.N`, at most 100), or every type the emulator
/// knows, a page at a time (`MaxResults` 5 to 100, `NextToken`).
fn describe_instance_types(
    params: &[(String, String)],
    request_id: &str,
) -> Result<String, Ec2Error> {
    let names = list(params, "InstanceType");
    if names.len() > 100 {
        return Err(Ec2Error::new(
            "InvalidParameterValue",
            "The request asks for more than 100 instance types.",
        ));
    }
    // The `instance-type` filter, with `*` wildcards (`g*`, `p5.*`); the emulator has no other.
    let mut patterns: Vec<String> = Vec::new();
    for (name, values) in filters(params)? {
        if name != "instance-type" {
            return Err(Ec2Error::new(
                "InvalidParameterValue",
                format!("This emulator filters DescribeInstanceTypes by instance-type only, not by '{name}'."),
            ));
        }
        patterns.extend(values);
    }
    let unknown: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| instance_types::find(name).is_none())
        .collect();
    if !unknown.is_empty() {
        return Err(Ec2Error::new(
            "InvalidInstanceType",
            format!(
                "The following supplied instance types do not exist: [{}]",
                unknown.join(", ")
            ),
        ));
    }
    let max_results = max_results(params, 5, 100)?;
    let start = page_start(params, "emulator-ec2-types:")?;
    let matching: Vec<&instance_types::InstanceType> = instance_types::ALL
        .iter()
        .filter(|t| names.is_empty() || names.contains(&t.name))
        .filter(|t| {
            patterns.is_empty()
                || patterns
                    .iter()
                    .any(|p| crate::placement::growth::type_pattern_matches(p, t.name))
        })
        .collect();
    let end = (start + max_results).min(matching.len());
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DescribeInstanceTypesResponse xmlns=\"{XMLNS}\"><requestId>{}</requestId><instanceTypeSet>",
        escape(request_id)
    );
    for kind in matching.get(start..end).unwrap_or_default() {
        let _ = write!(
            xml,
            "<item><instanceType>{}</instanceType><currentGeneration>true</currentGeneration>\
<vCpuInfo><defaultVCpus>{}</defaultVCpus></vCpuInfo><memoryInfo><sizeInMiB>{}</sizeInMiB></memoryInfo>\
<networkInfo><maximumNetworkInterfaces>{}</maximumNetworkInterfaces></networkInfo>\
<gpuInfo><gpus><item><name>{}</name><manufacturer>NVIDIA</manufacturer><count>{}</count>\
<memoryInfo><sizeInMiB>{}</sizeInMiB></memoryInfo></item></gpus><totalGpuMemoryInMiB>{}</totalGpuMemoryInMiB></gpuInfo></item>",
            escape(kind.name),
            kind.vcpus,
            kind.memory_gib * 1024,
            kind.max_network_interfaces,
            escape(kind.ec2_gpu_name),
            kind.gpus,
            kind.ec2_gpu_memory_mib,
            kind.ec2_gpu_memory_mib * kind.gpus as u32,
        );
    }
    xml.push_str("</instanceTypeSet>");
    if end < matching.len() {
        let _ = write!(xml, "<nextToken>emulator-ec2-types:{end}</nextToken>");
    }
    xml.push_str("</DescribeInstanceTypesResponse>");
    Ok(xml)
}

/// The Availability Zones of the emulated region.
const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];

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
fn describe_spot_price_history(
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

/// Text for XML.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
