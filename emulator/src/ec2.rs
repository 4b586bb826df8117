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
        "instance-lifecycle" => instance.lifecycle().unwrap_or_default().to_string(),
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
        match instance.lifecycle() {
            Some("spot") => "<instanceLifecycle>spot</instanceLifecycle>",
            Some(_) => "<instanceLifecycle>capacity-block</instanceLifecycle>",
            None => "",
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
/// Refuses names of types EC2 does not have, as EC2 does.
fn refuse_unknown(names: &[&str]) -> Result<(), Ec2Error> {
    let unknown: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| {
            instance_types::find(name).is_none()
                && !instance_types::DESCRIBED_ONLY
                    .iter()
                    .any(|t| t.name == *name)
        })
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(Ec2Error::new(
        "InvalidInstanceType",
        format!(
            "The following supplied instance types do not exist: [{}]",
            unknown.join(", ")
        ),
    ))
}

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
    refuse_unknown(&names)?;
    let max_results = max_results(params, 5, 100)?;
    let start = page_start(params, "emulator-ec2-types:")?;
    let matching: Vec<&instance_types::InstanceType> = instance_types::ALL
        .iter()
        .chain(instance_types::DESCRIBED_ONLY.iter())
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

/// Text for XML.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

mod spot;

use spot::describe_spot_price_history;
#[cfg(test)]
use spot::ZONES;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
