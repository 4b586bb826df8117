//! What capacity providers may launch, read beside ECS: the region's GPU instance types from EC2
//! (DescribeInstanceTypes, the `g*` and `p*` families, kept a day) matched against each Managed
//! Instances provider's requirements, and the Auto Scaling groups behind Auto Scaling group
//! providers (DescribeAutoScalingGroups, fifty a call). A read that fails leaves a note, not an
//! error: the providers are still shown, with what could not be known.

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use app::model::capacity::{ClusterCapacity, GroupSize, LaunchOption, ProviderType};
use placement::growth::{Requirements, TypeFacts};

use crate::aws::errors;

/// How long the catalogue of GPU instance types is kept.
const CATALOGUE_TTL: Duration = Duration::from_secs(24 * 3600);
/// The instance families that have GPUs (and a few that do not, which the GPU count drops).
const GPU_FAMILIES: [&str; 2] = ["g*", "p*"];
/// Groups per DescribeAutoScalingGroups call.
const GROUPS_PER_CALL: usize = 50;

/// The clients and the kept catalogue.
pub struct CapacitySources {
    ec2: aws_sdk_ec2::Client,
    autoscaling: aws_sdk_autoscaling::Client,
    catalogue: Mutex<Option<(Instant, Vec<TypeFacts>)>>,
}

impl CapacitySources {
    pub fn new(ec2: aws_sdk_ec2::Client, autoscaling: aws_sdk_autoscaling::Client) -> Self {
        CapacitySources {
            ec2,
            autoscaling,
            catalogue: Mutex::new(None),
        }
    }

    /// Fills each provider's `may_launch` and each Auto Scaling group's sizes; what could not
    /// be read goes to the cluster's notes.
    pub async fn complete(&self, clusters: &mut [ClusterCapacity]) {
        // Both kinds need the catalogue: Managed Instances to match their requirements, a
        // group to know its type's GPUs.
        let launching = clusters
            .iter()
            .flat_map(|c| &c.providers)
            .any(|p| p.managed_instances.is_some() || p.auto_scaling_group.is_some());
        let catalogue = if launching {
            self.catalogue().await
        } else {
            Ok(Vec::new())
        };
        let group_names: Vec<String> = clusters
            .iter()
            .flat_map(|c| &c.providers)
            .filter_map(|p| p.auto_scaling_group.as_ref())
            .map(|g| group_name(&g.arn))
            .collect();
        let groups = if group_names.is_empty() {
            Ok(Vec::new())
        } else {
            self.groups(&group_names).await
        };
        for cluster in clusters.iter_mut() {
            if let Err(why) = &catalogue {
                if cluster
                    .providers
                    .iter()
                    .any(|p| p.managed_instances.is_some() || p.auto_scaling_group.is_some())
                {
                    cluster.notes.push(why.clone());
                }
            }
            if let Err(why) = &groups {
                if cluster
                    .providers
                    .iter()
                    .any(|p| p.auto_scaling_group.is_some())
                {
                    cluster.notes.push(why.clone());
                }
            }
            for provider in &mut cluster.providers {
                if let (Some(managed), Ok(types)) = (&provider.managed_instances, &catalogue) {
                    provider.may_launch = options(&managed.requirements, types);
                }
                if provider.kind == ProviderType::AutoScalingGroup {
                    if let (Some(group), Ok(found)) =
                        (provider.auto_scaling_group.as_mut(), &groups)
                    {
                        let name = group_name(&group.arn);
                        group.group = found.iter().find(|g| g.name == name).cloned();
                        if let (Some(size), Ok(types)) = (&group.group, &catalogue) {
                            provider.may_launch = size
                                .instance_types
                                .iter()
                                .filter_map(|t| types.iter().find(|f| &f.name == t))
                                .map(|facts| LaunchOption {
                                    shares_gpus: facts.shares_gpus(),
                                    facts: facts.clone(),
                                    not_matched: None,
                                })
                                .collect();
                        }
                    }
                }
            }
        }
    }

    /// The region's GPU instance types, from the kept copy when it is fresh.
    pub async fn catalogue(&self) -> Result<Vec<TypeFacts>, String> {
        if let Some((at, types)) = self
            .catalogue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            if at.elapsed() < CATALOGUE_TTL {
                return Ok(types.clone());
            }
        }
        let mut types = Vec::new();
        let mut pages = self
            .ec2
            .describe_instance_types()
            .filters(
                aws_sdk_ec2::types::Filter::builder()
                    .name("instance-type")
                    .set_values(Some(GPU_FAMILIES.iter().map(|f| f.to_string()).collect()))
                    .build(),
            )
            .max_results(100)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| {
                format!(
                    "{}; the console cannot say which instance types a Managed Instances provider may launch until it may call ec2:DescribeInstanceTypes",
                    errors::failure("EC2", "DescribeInstanceTypes", &e)
                )
            })?;
            types.extend(page.instance_types().iter().filter_map(type_facts));
        }
        types.sort_by(|a, b| a.name.cmp(&b.name));
        *self.catalogue.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((Instant::now(), types.clone()));
        Ok(types)
    }

    /// The Auto Scaling groups named.
    async fn groups(&self, names: &[String]) -> Result<Vec<GroupSize>, String> {
        let mut found = Vec::new();
        for chunk in names.chunks(GROUPS_PER_CALL) {
            let out = self
                .autoscaling
                .describe_auto_scaling_groups()
                .set_auto_scaling_group_names(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| {
                    format!(
                        "{}; the console cannot say how far an Auto Scaling group provider may grow until it may call autoscaling:DescribeAutoScalingGroups",
                        errors::failure("EC2 Auto Scaling", "DescribeAutoScalingGroups", &e)
                    )
                })?;
            found.extend(out.auto_scaling_groups().iter().map(group_size));
        }
        Ok(found)
    }
}

/// The name of the group an `autoScalingGroupArn` names (ECS takes the name too).
fn group_name(arn: &str) -> String {
    arn.rsplit_once("autoScalingGroupName/")
        .map_or(arn, |(_, name)| name)
        .to_string()
}

fn group_size(group: &aws_sdk_autoscaling::types::AutoScalingGroup) -> GroupSize {
    let size = |n: Option<i32>| n.map_or(0, |n| n.max(0) as u32);
    let mut instance_types: Vec<String> = group
        .mixed_instances_policy()
        .and_then(|p| p.launch_template())
        .map(|t| {
            t.overrides()
                .iter()
                .filter_map(|o| o.instance_type().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if instance_types.is_empty() {
        // A group without overrides launches its launch template's type; what the instances
        // run is the best the console can read without the template.
        for instance in group.instances() {
            if let Some(kind) = instance.instance_type() {
                if !instance_types.iter().any(|t| t == kind) {
                    instance_types.push(kind.to_string());
                }
            }
        }
    }
    GroupSize {
        name: group
            .auto_scaling_group_name()
            .unwrap_or_default()
            .to_string(),
        min_size: size(group.min_size()),
        max_size: size(group.max_size()),
        desired_capacity: size(group.desired_capacity()),
        instance_types,
    }
}

/// One GPU type as the growth rules need it; `None` for a type without GPUs.
fn type_facts(info: &aws_sdk_ec2::types::InstanceTypeInfo) -> Option<TypeFacts> {
    let gpu_info = info.gpu_info()?;
    let gpu = gpu_info.gpus().first()?;
    let gpus = gpu.count().unwrap_or(0).max(0) as usize;
    if gpus == 0 {
        return None;
    }
    let per_gpu = gpu
        .memory_info()
        .and_then(|m| m.size_in_mib())
        .unwrap_or(0)
        .max(0) as u32;
    Some(TypeFacts {
        name: info.instance_type()?.as_str().to_string(),
        gpus,
        // ECS registers less than EC2's figure as usable (92 % to 99 % on the types seen); the
        // console takes 90 %, the cautious reading, until an instance of the type in the fleet
        // says what it registers.
        gpu_memory_mib: per_gpu * 90 / 100,
        total_gpu_memory_mib: gpu_info
            .total_gpu_memory_in_mib()
            .map_or(per_gpu * gpus as u32, |m| m.max(0) as u32),
        accelerator_name: gpu.name().unwrap_or_default().to_ascii_lowercase(),
        manufacturer: gpu.manufacturer().unwrap_or_default().to_ascii_lowercase(),
        vcpus: info
            .v_cpu_info()
            .and_then(|v| v.default_v_cpus())
            .unwrap_or(0)
            .max(0) as u32,
        memory_mib: info
            .memory_info()
            .and_then(|m| m.size_in_mib())
            .unwrap_or(0)
            .max(0) as u32,
        task_enis: info
            .network_info()
            .and_then(|n| n.maximum_network_interfaces())
            .map(|n| (n.max(1) - 1) as u32),
        usd_per_hour: None,
    })
}

/// Each catalogue type with whether `requirements` take it.
fn options(requirements: &Requirements, catalogue: &[TypeFacts]) -> Vec<LaunchOption> {
    catalogue
        .iter()
        .map(|facts| LaunchOption {
            not_matched: requirements.check(facts).err().or_else(|| {
                facts
                    .is_fractional()
                    .then(|| "a fractional GPU, which ECS cannot share with MPS".to_string())
            }),
            shares_gpus: facts.shares_gpus(),
            facts: facts.clone(),
        })
        .collect()
}
