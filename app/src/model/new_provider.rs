//! A capacity provider for GPU sharing: ECS's CreateCapacityProvider request (a Managed Instances
//! provider of NVIDIA GPU instances, or an Auto Scaling group with managed scaling), the rules
//! the console checks before anything is created, and what the cluster's providers and default
//! strategy become.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::model::capacity::{LaunchOption, ProviderView, StrategyItem};

/// A new capacity provider as the form or the API sends it: the CreateCapacityProvider request
/// as JSON text, whether it becomes the cluster's default strategy, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderForm {
    pub create: String,
    #[serde(default)]
    pub make_default: bool,
    #[serde(default)]
    pub description: String,
}

/// What a new provider would be, checked and nothing created.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderCheck {
    pub cluster: String,
    pub name: String,
    /// The CreateCapacityProvider request as it will be sent.
    pub create: Value,
    /// The provider as the capacity page will show it, with each type it may launch.
    pub provider: ProviderView,
    /// Of the types its requirements match, those that can share GPUs with MPS, and those that
    /// cannot (with why), with their GPUs, memory and hourly price.
    pub sharing: Vec<LaunchOption>,
    pub not_sharing: Vec<LaunchOption>,
    /// The cluster's providers and default strategy after it is added.
    pub providers_after: Vec<String>,
    pub default_after: Vec<StrategyItem>,
    /// Whether PutClusterCapacityProviders is sent after CreateCapacityProvider (an Auto
    /// Scaling group provider, or a change of the default strategy).
    pub associate: bool,
    /// The AWS CLI commands that make the same requests.
    pub cli: String,
}

/// A Managed Instances provider of NVIDIA GPU instances, as the form fills it in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManagedTemplate {
    pub name: String,
    /// Accelerator names (`a10g`, `l4`, `l40s`, `h100`, …), comma-separated.
    pub accelerator_names: String,
    pub gpus_min: Option<u32>,
    pub gpus_max: Option<u32>,
    /// Total GPU memory of an instance, MiB, at least.
    pub gpu_memory_min_mib: Option<u32>,
    pub vcpu_min: u32,
    pub vcpu_max: Option<u32>,
    pub memory_min_mib: u32,
    /// Allowed and excluded instance types (wildcards allowed), comma-separated.
    pub allowed: String,
    pub excluded: String,
    /// `ON_DEMAND` or `SPOT`.
    pub capacity_option: String,
    pub auto_repair: bool,
    /// Seconds an idle instance stays; `None` for ECS's default, -1 for never.
    pub scale_in_after: Option<i64>,
    pub subnets: String,
    pub security_groups: String,
    pub infrastructure_role_arn: String,
    pub instance_profile_arn: String,
}

impl Default for ManagedTemplate {
    fn default() -> ManagedTemplate {
        ManagedTemplate {
            name: String::new(),
            accelerator_names: "a10g, l4, l40s".into(),
            gpus_min: Some(1),
            gpus_max: None,
            gpu_memory_min_mib: None,
            vcpu_min: 4,
            vcpu_max: Some(192),
            memory_min_mib: 16_384,
            allowed: "g5.*, g6.*, g6e.*".into(),
            excluded: String::new(),
            capacity_option: "ON_DEMAND".into(),
            auto_repair: true,
            scale_in_after: Some(3_600),
            subnets: String::new(),
            security_groups: String::new(),
            infrastructure_role_arn: String::new(),
            instance_profile_arn: String::new(),
        }
    }
}

/// A comma-separated list, trimmed, empty items left out.
pub fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl ManagedTemplate {
    /// The CreateCapacityProvider request for `cluster`.
    pub fn create_json(&self, cluster: &str) -> Map<String, Value> {
        let range = |min: Option<u32>, max: Option<u32>| {
            let mut r = Map::new();
            if let Some(min) = min {
                r.insert("min".into(), json!(min));
            }
            if let Some(max) = max {
                r.insert("max".into(), json!(max));
            }
            Value::Object(r)
        };
        let mut requirements = json!({
            "vCpuCount": range(Some(self.vcpu_min), self.vcpu_max),
            "memoryMiB": range(Some(self.memory_min_mib), None),
            "acceleratorTypes": ["gpu"],
            "acceleratorManufacturers": ["nvidia"],
        });
        let names = list(&self.accelerator_names);
        if !names.is_empty() {
            requirements["acceleratorNames"] = json!(names);
        }
        if self.gpus_min.is_some() || self.gpus_max.is_some() {
            requirements["acceleratorCount"] = range(self.gpus_min, self.gpus_max);
        }
        if let Some(min) = self.gpu_memory_min_mib {
            requirements["acceleratorTotalMemoryMiB"] = range(Some(min), None);
        }
        let (allowed, excluded) = (list(&self.allowed), list(&self.excluded));
        if !allowed.is_empty() {
            requirements["allowedInstanceTypes"] = json!(allowed);
        }
        if !excluded.is_empty() {
            requirements["excludedInstanceTypes"] = json!(excluded);
        }
        let mut managed = json!({
            "infrastructureRoleArn": self.infrastructure_role_arn.trim(),
            "instanceLaunchTemplate": {
                "ec2InstanceProfileArn": self.instance_profile_arn.trim(),
                "networkConfiguration": {
                    "subnets": list(&self.subnets),
                    "securityGroups": list(&self.security_groups),
                },
                "capacityOptionType": self.capacity_option,
                "instanceRequirements": requirements,
            },
            "propagateTags": "CAPACITY_PROVIDER",
            "autoRepairConfiguration": {"actionsStatus": if self.auto_repair { "ENABLED" } else { "DISABLED" }},
        });
        if let Some(seconds) = self.scale_in_after {
            managed["infrastructureOptimization"] = json!({"scaleInAfter": seconds});
        }
        let body = json!({
            "name": self.name.trim(),
            "cluster": cluster,
            "managedInstancesProvider": managed,
        });
        match body {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

/// An Auto Scaling group provider with managed scaling, as the form fills it in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupTemplate {
    pub name: String,
    pub group_arn: String,
    pub target_capacity: u32,
    pub step_min: u32,
    pub step_max: u32,
    pub warmup_seconds: u32,
}

impl Default for GroupTemplate {
    fn default() -> GroupTemplate {
        GroupTemplate {
            name: String::new(),
            group_arn: String::new(),
            target_capacity: 90,
            step_min: 1,
            step_max: 2,
            warmup_seconds: 300,
        }
    }
}

impl GroupTemplate {
    /// The CreateCapacityProvider request.
    pub fn create_json(&self) -> Map<String, Value> {
        let body = json!({
            "name": self.name.trim(),
            "autoScalingGroupProvider": {
                "autoScalingGroupArn": self.group_arn.trim(),
                "managedScaling": {
                    "status": "ENABLED",
                    "targetCapacity": self.target_capacity,
                    "minimumScalingStepSize": self.step_min,
                    "maximumScalingStepSize": self.step_max,
                    "instanceWarmupPeriod": self.warmup_seconds,
                },
                "managedTerminationProtection": "DISABLED",
                "managedDraining": "ENABLED",
            },
        });
        match body {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

/// Whether `name` is a capacity provider name ECS takes: 1 to 255 letters, numbers, hyphens and
/// underscores, not beginning with `aws`, `ecs` or `fargate` (in any case: the reference does not
/// say whether the prefixes are matched case-sensitively, so the cautious reading).
pub fn check_provider_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("give the provider a name".into());
    }
    if name.chars().count() > 255 {
        return Err(format!(
            "{} characters is longer than ECS's 255 for a capacity provider name",
            name.chars().count()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(format!(
            "{bad:?} is not allowed in a capacity provider name: use letters, numbers, hyphens and underscores"
        ));
    }
    let lower = name.to_ascii_lowercase();
    if let Some(prefix) = ["aws", "ecs", "fargate"]
        .into_iter()
        .find(|p| lower.starts_with(p))
    {
        return Err(format!(
            "ECS refuses a capacity provider name that begins with {prefix:?} (or aws, ecs, fargate in any case): choose another"
        ));
    }
    Ok(())
}

/// The AWS CLI commands: the provider, then the cluster's providers when they are sent.
pub fn provider_cli(
    create: &Value,
    cluster: &str,
    associate: Option<(&[String], &[StrategyItem])>,
) -> String {
    let quoted = |value: &Value| {
        serde_json::to_string_pretty(value)
            .unwrap_or_default()
            .replace('\'', "'\\''")
    };
    let mut out = format!(
        "aws ecs create-capacity-provider --cli-input-json '{}'\n",
        quoted(create)
    );
    if let Some((providers, strategy)) = associate {
        let body = json!({
            "cluster": cluster,
            "capacityProviders": providers,
            "defaultCapacityProviderStrategy": strategy.iter().map(|s| json!({
                "capacityProvider": s.capacity_provider, "weight": s.weight, "base": s.base,
            })).collect::<Vec<_>>(),
        });
        out.push_str(&format!(
            "\naws ecs put-cluster-capacity-providers --cli-input-json '{}'\n",
            quoted(&body)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_follow_ecs_and_refuse_its_prefixes_in_any_case() {
        assert!(check_provider_name("gpu-sharing-l4").is_ok());
        for bad in [
            "",
            "aws-gpu",
            "ECS_gpu",
            "Fargate1",
            "gpu sharing",
            "gpu.mps",
        ] {
            assert!(check_provider_name(bad).is_err(), "{bad}");
        }
        let long = "g".repeat(256);
        assert!(check_provider_name(&long)
            .expect_err("too long")
            .contains("255"));
    }

    #[test]
    fn the_managed_template_asks_for_nvidia_gpus_with_auto_repair() {
        let template = ManagedTemplate {
            name: "gpu-l4".into(),
            subnets: "subnet-1, subnet-2".into(),
            security_groups: "sg-1".into(),
            infrastructure_role_arn: "arn:aws:iam::1:role/infra".into(),
            instance_profile_arn: "arn:aws:iam::1:instance-profile/ecs".into(),
            ..ManagedTemplate::default()
        };
        let body = template.create_json("prod");
        let requirements =
            &body["managedInstancesProvider"]["instanceLaunchTemplate"]["instanceRequirements"];
        assert_eq!(requirements["acceleratorManufacturers"], json!(["nvidia"]));
        assert_eq!(
            requirements["acceleratorNames"],
            json!(["a10g", "l4", "l40s"])
        );
        assert_eq!(
            requirements["allowedInstanceTypes"],
            json!(["g5.*", "g6.*", "g6e.*"])
        );
        assert_eq!(
            body["managedInstancesProvider"]["autoRepairConfiguration"]["actionsStatus"],
            "ENABLED"
        );
        assert_eq!(body["cluster"], "prod");
        let cli = provider_cli(&Value::Object(body), "prod", None);
        assert!(cli.starts_with("aws ecs create-capacity-provider --cli-input-json '"));
        assert!(!cli.contains("put-cluster-capacity-providers"));
    }
}
