//! EC2 Auto Scaling's DescribeAutoScalingGroups over its query protocol (`POST /`, a form body
//! with `Action=DescribeAutoScalingGroups&Version=2011-01-01`, an XML answer), as
//! aws-sdk-autoscaling and botocore speak it: the groups behind `EC2_AUTOSCALING` capacity
//! providers, with their sizes, their instance types and their instances.

use std::fmt::Write as _;

use crate::{
    ec2::{escape, list},
    elastic::AutoScalingGroup,
    model::Fleet,
};

/// The Auto Scaling operations the emulator serves.
pub const OPERATIONS: [&str; 1] = ["DescribeAutoScalingGroups"];
/// The namespace of Auto Scaling's XML answers.
const XMLNS: &str = "http://autoscaling.amazonaws.com/doc/2011-01-01/";
/// Groups per page by default and at most.
const PAGE: usize = 50;
const PAGE_MAX: usize = 100;

/// An Auto Scaling error: its code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoScalingError {
    pub code: &'static str,
    pub message: String,
}

impl AutoScalingError {
    /// The error document Auto Scaling answers with.
    pub fn to_xml(&self, request_id: &str) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ErrorResponse xmlns=\"{XMLNS}\"><Error><Type>Sender</Type><Code>{}</Code><Message>{}</Message></Error><RequestId>{}</RequestId></ErrorResponse>",
            escape(self.code),
            escape(&self.message),
            escape(request_id)
        )
    }
}

fn validation(message: impl Into<String>) -> AutoScalingError {
    AutoScalingError {
        code: "ValidationError",
        message: message.into(),
    }
}

/// Whether a query request is for Auto Scaling: its action is one of Auto Scaling's, or its
/// version Auto Scaling's.
pub fn is_for_autoscaling(params: &[(String, String)]) -> bool {
    params.iter().any(|(k, v)| {
        (k == "Action" && OPERATIONS.contains(&v.as_str())) || (k == "Version" && v == "2011-01-01")
    })
}

/// Runs one Auto Scaling query request; the XML answer.
pub fn handle(
    fleet: &Fleet,
    params: &[(String, String)],
    request_id: &str,
) -> Result<String, AutoScalingError> {
    let action = params
        .iter()
        .find(|(k, _)| k == "Action")
        .map(|(_, v)| v.as_str());
    match action {
        Some("DescribeAutoScalingGroups") => describe_groups(fleet, params, request_id),
        Some(other) => Err(AutoScalingError {
            code: "InvalidAction",
            message: format!(
                "The action {other} is not valid for this web service (this emulator serves {}).",
                OPERATIONS.join(", ")
            ),
        }),
        None => Err(AutoScalingError {
            code: "MissingAction",
            message: "The request must contain the parameter Action.".into(),
        }),
    }
}

fn describe_groups(
    fleet: &Fleet,
    params: &[(String, String)],
    request_id: &str,
) -> Result<String, AutoScalingError> {
    let names = list(params, "AutoScalingGroupNames.member");
    let get = |key: &str| {
        params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let max = match get("MaxRecords") {
        None => PAGE,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=PAGE_MAX).contains(n))
            .ok_or_else(|| validation(format!("MaxRecords must be from 1 to {PAGE_MAX}.")))?,
    };
    let start = match get("NextToken") {
        None | Some("") => 0,
        Some(token) => token
            .strip_prefix("emulator-asg:")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| validation("The NextToken is not valid."))?,
    };
    let groups: Vec<&AutoScalingGroup> = fleet
        .elastic
        .groups
        .values()
        .filter(|g| names.is_empty() || names.contains(&g.name.as_str()))
        .collect();
    let end = (start + max).min(groups.len());
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DescribeAutoScalingGroupsResponse xmlns=\"{XMLNS}\"><DescribeAutoScalingGroupsResult><AutoScalingGroups>"
    );
    for group in groups.get(start..end).unwrap_or_default() {
        group_xml(fleet, group, &mut xml);
    }
    xml.push_str("</AutoScalingGroups>");
    if end < groups.len() {
        let _ = write!(xml, "<NextToken>emulator-asg:{end}</NextToken>");
    }
    let _ = write!(
        xml,
        "</DescribeAutoScalingGroupsResult><ResponseMetadata><RequestId>{}</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>",
        escape(request_id)
    );
    Ok(xml)
}

/// One group as a `<member>`: sizes, zones, the launch template's type overrides, and the
/// instances of its capacity provider in its cluster (those launching are `Pending`).
fn group_xml(fleet: &Fleet, group: &AutoScalingGroup, xml: &mut String) {
    let provider = fleet
        .capacity_providers
        .values()
        .find(|p| {
            p.active
                && p.settings
                    .get("autoScalingGroupArn")
                    .and_then(|v| v.as_str())
                    .is_some_and(|arn| arn == group.arn || arn == group.name)
        })
        .map(|p| p.name.clone());
    let created = fleet.now - chrono::Duration::days(30);
    let _ = write!(
        xml,
        "<member><AutoScalingGroupName>{}</AutoScalingGroupName><AutoScalingGroupARN>{}</AutoScalingGroupARN>\
<MinSize>{}</MinSize><MaxSize>{}</MaxSize><DesiredCapacity>{}</DesiredCapacity><DefaultCooldown>300</DefaultCooldown>\
<AvailabilityZones><member>{r}a</member><member>{r}b</member><member>{r}c</member></AvailabilityZones>\
<HealthCheckType>EC2</HealthCheckType><CreatedTime>{}</CreatedTime><NewInstancesProtectedFromScaleIn>false</NewInstancesProtectedFromScaleIn>\
<MixedInstancesPolicy><LaunchTemplate><LaunchTemplateSpecification><LaunchTemplateName>{}</LaunchTemplateName><Version>$Latest</Version></LaunchTemplateSpecification><Overrides>",
        escape(&group.name),
        escape(&group.arn),
        group.min_size,
        group.max_size,
        group.desired_capacity,
        created.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
        escape(&group.name),
        r = escape(&fleet.region),
    );
    for kind in &group.instance_types {
        let _ = write!(
            xml,
            "<member><InstanceType>{}</InstanceType></member>",
            escape(kind)
        );
    }
    xml.push_str("</Overrides></LaunchTemplate></MixedInstancesPolicy><Instances>");
    if let (Some(provider), Some(cluster)) =
        (provider.as_deref(), fleet.clusters.get(&group.cluster))
    {
        for instance in cluster
            .instances
            .iter()
            .filter(|i| i.capacity_provider.as_deref() == Some(provider))
        {
            let state = if instance.room.status == "ACTIVE" || instance.room.status == "DRAINING" {
                "InService"
            } else {
                "Terminating"
            };
            let _ = write!(
                xml,
                "<member><InstanceId>{}</InstanceId><InstanceType>{}</InstanceType><AvailabilityZone>{}</AvailabilityZone>\
<LifecycleState>{state}</LifecycleState><HealthStatus>Healthy</HealthStatus><ProtectedFromScaleIn>false</ProtectedFromScaleIn></member>",
                escape(&instance.ec2_instance_id),
                escape(&instance.instance_type),
                escape(&instance.availability_zone),
            );
        }
    }
    xml.push_str("</Instances></member>");
}
