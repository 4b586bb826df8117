//! Capacity providers, as CreateCapacityProvider, UpdateCapacityProvider, DeleteCapacityProvider
//! and PutClusterCapacityProviders keep them: Auto Scaling group providers (`EC2_AUTOSCALING`),
//! which an account's clusters take with PutClusterCapacityProviders, and ECS Managed Instances
//! providers (`MANAGED_INSTANCES`), which belong to the cluster they were made for. `FARGATE` and
//! `FARGATE_SPOT` are always there and cannot be made or deleted; GPU sharing does not run on
//! them.
//!
//! Inferences, where the API reference is silent (the cautious reading each time):
//! - a provider's name is unique in the account, Managed Instances providers included, and a
//!   deleted (INACTIVE) provider's name may be used again;
//! - a Managed Instances provider is in its cluster's `capacityProviders` from its creation
//!   (the reference: it "becomes available only within the specified cluster"), and
//!   PutClusterCapacityProviders neither adds nor removes it;
//! - an Auto Scaling group serves one provider, and an Auto Scaling group provider is in one
//!   cluster's list at a time;
//! - an update answers `UPDATE_IN_PROGRESS` and is complete by the next describe; a deletion
//!   answers `DELETE_IN_PROGRESS`, and the provider is INACTIVE from then on.

use serde_json::{json, Map, Value};

use crate::error::{invalid, EcsError};

/// The providers every account has, for Fargate.
pub const FARGATE_PROVIDERS: [&str; 2] = ["FARGATE", "FARGATE_SPOT"];

/// What kind of capacity a provider gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    /// An EC2 Auto Scaling group, with or without managed scaling.
    AutoScalingGroup,
    /// Instances ECS launches, repairs and retires itself.
    ManagedInstances,
}

impl ProviderKind {
    /// ECS's `type` of the provider.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::AutoScalingGroup => "EC2_AUTOSCALING",
            ProviderKind::ManagedInstances => "MANAGED_INSTANCES",
        }
    }

    /// The field of the provider's settings in requests and answers.
    pub fn field(self) -> &'static str {
        match self {
            ProviderKind::AutoScalingGroup => "autoScalingGroupProvider",
            ProviderKind::ManagedInstances => "managedInstancesProvider",
        }
    }
}

/// A capacity provider of the account.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityProvider {
    pub name: String,
    pub arn: String,
    pub kind: ProviderKind,
    /// The cluster (its name) a Managed Instances provider belongs to.
    pub cluster: Option<String>,
    /// Its settings as ECS answers them: the `autoScalingGroupProvider` or the
    /// `managedInstancesProvider` object.
    pub settings: Map<String, Value>,
    /// ACTIVE, or INACTIVE once deleted.
    pub active: bool,
    pub update_status: Option<&'static str>,
}

/// One entry of a capacity provider strategy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StrategyItem {
    pub capacity_provider: String,
    pub weight: u32,
    pub base: u32,
}

impl StrategyItem {
    pub fn to_json(&self) -> Value {
        json!({"capacityProvider": self.capacity_provider, "weight": self.weight, "base": self.base})
    }
}

/// Checks a provider's name as CreateCapacityProvider does.
pub fn check_name(name: &str) -> Result<(), EcsError> {
    let lower = name.to_ascii_lowercase();
    if !crate::error::is_ecs_name(name) {
        return Err(invalid(
            "name must be 1 to 255 letters, numbers, hyphens and underscores.",
        ));
    }
    if ["aws", "ecs", "fargate"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return Err(invalid(format!(
            "The capacity provider name '{name}' is not valid: it cannot begin with \"aws\", \"ecs\" or \"fargate\"."
        )));
    }
    Ok(())
}

/// An integer member of `object` at `path`, within `range`; `None` when absent or null.
fn integer_in(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, EcsError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .filter(|n| range.contains(n))
            .map(Some)
            .ok_or_else(|| {
                invalid(format!(
                    "{path}.{key} must be a whole number from {} to {}.",
                    range.start(),
                    range.end()
                ))
            }),
    }
}

/// A member of `object` at `path` that must be one of `allowed`, when present.
fn one_of(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
    allowed: &[&str],
) -> Result<(), EcsError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(text)) if allowed.contains(&text.as_str()) => Ok(()),
        Some(other) => Err(invalid(format!(
            "{path}.{key} {other} is not valid: give one of {}.",
            allowed.join(", ")
        ))),
    }
}

/// An object member of `object`, when present.
fn object_at<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a Map<String, Value>>, EcsError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(inner)) => Ok(Some(inner)),
        Some(_) => Err(invalid(format!("{path}.{key} must be an object."))),
    }
}

/// Checks `managedScaling`, `managedTerminationProtection` and `managedDraining` of an Auto
/// Scaling group provider (or of its update), and fills managed scaling's documented defaults.
pub fn check_asg_settings(settings: &mut Map<String, Value>, path: &str) -> Result<(), EcsError> {
    const STATUS: [&str; 2] = ["ENABLED", "DISABLED"];
    one_of(settings, "managedTerminationProtection", path, &STATUS)?;
    one_of(settings, "managedDraining", path, &STATUS)?;
    let scaling_path = format!("{path}.managedScaling");
    if let Some(scaling) = object_at(settings, "managedScaling", path)? {
        one_of(scaling, "status", &scaling_path, &STATUS)?;
        integer_in(scaling, "targetCapacity", &scaling_path, 1..=100)?;
        let least = integer_in(scaling, "minimumScalingStepSize", &scaling_path, 1..=10_000)?;
        let most = integer_in(scaling, "maximumScalingStepSize", &scaling_path, 1..=10_000)?;
        integer_in(scaling, "instanceWarmupPeriod", &scaling_path, 0..=10_000)?;
        if least.unwrap_or(1) > most.unwrap_or(10_000) {
            return Err(invalid(format!(
                "{scaling_path}.minimumScalingStepSize cannot be more than maximumScalingStepSize."
            )));
        }
    }
    if let Some(Value::Object(scaling)) = settings.get_mut("managedScaling") {
        for (key, default) in [
            ("targetCapacity", 100),
            ("minimumScalingStepSize", 1),
            ("maximumScalingStepSize", 10_000),
            ("instanceWarmupPeriod", 300),
        ] {
            if scaling.get(key).is_none_or(Value::is_null) {
                scaling.insert(key.into(), json!(default));
            }
        }
    }
    Ok(())
}

/// Checks a Managed Instances provider's settings: the infrastructure role, the launch template
/// with its instance profile and network, and the optional requirements, capacity option, tag
/// propagation, auto repair and infrastructure optimization.
pub fn check_managed_instances(settings: &Map<String, Value>, path: &str) -> Result<(), EcsError> {
    let text = |key: &str| {
        settings
            .get(key)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    };
    if text("infrastructureRoleArn").is_none() {
        return Err(invalid(format!(
            "{path}.infrastructureRoleArn is required."
        )));
    }
    let template_path = format!("{path}.instanceLaunchTemplate");
    let template = object_at(settings, "instanceLaunchTemplate", path)?
        .ok_or_else(|| invalid(format!("{template_path} is required.")))?;
    if template
        .get("ec2InstanceProfileArn")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(invalid(format!(
            "{template_path}.ec2InstanceProfileArn is required."
        )));
    }
    if object_at(template, "networkConfiguration", &template_path)?.is_none() {
        return Err(invalid(format!(
            "{template_path}.networkConfiguration is required."
        )));
    }
    one_of(
        template,
        "capacityOptionType",
        &template_path,
        &["ON_DEMAND", "SPOT", "RESERVED"],
    )?;
    if let Some(requirements) = object_at(template, "instanceRequirements", &template_path)? {
        let requirements_path = format!("{template_path}.instanceRequirements");
        for key in ["vCpuCount", "memoryMiB"] {
            let range = object_at(requirements, key, &requirements_path)?
                .ok_or_else(|| invalid(format!("{requirements_path}.{key} is required.")))?;
            if range.get("min").and_then(Value::as_i64).is_none() {
                return Err(invalid(format!(
                    "{requirements_path}.{key}.min is required."
                )));
            }
        }
    }
    one_of(
        settings,
        "propagateTags",
        path,
        &["CAPACITY_PROVIDER", "NONE"],
    )?;
    if let Some(repair) = object_at(settings, "autoRepairConfiguration", path)? {
        let repair_path = format!("{path}.autoRepairConfiguration");
        one_of(
            repair,
            "actionsStatus",
            &repair_path,
            &["ENABLED", "DISABLED"],
        )?;
    }
    if let Some(optimization) = object_at(settings, "infrastructureOptimization", path)? {
        let optimization_path = format!("{path}.infrastructureOptimization");
        integer_in(optimization, "scaleInAfter", &optimization_path, -1..=3600)?;
    }
    Ok(())
}
