//! The container instances' EC2 side through aws-sdk-ec2 (DescribeInstances): the private DNS
//! name, which is the hostname the CloudWatch agent publishes as its `host` dimension unless
//! configured otherwise, and the Availability Zone and lifecycle (spot or on-demand).
//!
//! What EC2 says of an instance does not change while it runs, so each instance is described
//! once: a refresh describes only instance IDs it has not seen, by the `instance-id` filter
//! (an unknown ID in `InstanceIds` would fail the whole call), 200 IDs a call, the calls at once.
//!
//! DescribeInstanceTypes gives each instance type's network interface limit, which bounds
//! `awsvpc` tasks (one ENI each, the primary interface the instance's own); a type is
//! described once, 100 types a call.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU32, Ordering},
        Mutex,
    },
};

use app::model::words::Lifecycle;
use aws_sdk_ec2::types::{Filter, InstanceLifecycleType};

use super::ReadError;

/// Values one EC2 filter takes at most.
const IDS_PER_CALL: usize = 200;

/// What EC2 says of one instance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ec2Instance {
    pub private_dns_name: Option<String>,
    pub availability_zone: Option<String>,
    /// `spot` or `on-demand` (EC2 names only spot and scheduled instances; the rest are
    /// on-demand).
    pub lifecycle: Lifecycle,
    /// ECS Managed Instances launched it: EC2 names ECS (`ecs.amazonaws.com`) as the
    /// instance's managing operator.
    pub managed_by_ecs: bool,
}

/// Instance types one DescribeInstanceTypes call takes at most.
const TYPES_PER_CALL: usize = 100;

/// Reads and keeps what EC2 says of the fleet's instances and their types.
pub struct Ec2Reader {
    ec2: aws_sdk_ec2::Client,
    known: Mutex<HashMap<String, Ec2Instance>>,
    /// Instance type → its maximum network interfaces.
    interfaces: Mutex<HashMap<String, u32>>,
    calls: AtomicU32,
}

impl Ec2Reader {
    pub fn new(ec2: aws_sdk_ec2::Client) -> Ec2Reader {
        Ec2Reader {
            ec2,
            known: Mutex::new(HashMap::new()),
            interfaces: Mutex::new(HashMap::new()),
            calls: AtomicU32::new(0),
        }
    }

    /// EC2 calls made so far.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }

    /// What EC2 says of `ids`, describing only those not seen before. Instances EC2 does not
    /// know (terminated long ago) are left out.
    pub async fn describe(
        &self,
        ids: &[String],
    ) -> Result<HashMap<String, Ec2Instance>, ReadError> {
        let missing = not_yet_known(&self.known, ids);
        // The chunks at once: on a first read they are on the way to the snapshot.
        futures::future::try_join_all(missing.chunks(IDS_PER_CALL).map(|chunk| async move {
            let found = self.describe_chunk(chunk).await?;
            self.known
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(found);
            Ok::<_, ReadError>(())
        }))
        .await?;
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        Ok(ids
            .iter()
            .filter_map(|id| Some((id.clone(), known.get(id)?.clone())))
            .collect())
    }

    /// The most network interfaces an instance of each of `types` can have, describing only
    /// types not seen before.
    pub async fn network_interfaces(
        &self,
        types: &[String],
    ) -> Result<HashMap<String, u32>, ReadError> {
        let missing = not_yet_known(&self.interfaces, types);
        for chunk in missing.chunks(TYPES_PER_CALL) {
            let mut pages = self
                .ec2
                .describe_instance_types()
                .set_instance_types(Some(chunk.iter().map(|t| t.as_str().into()).collect()))
                .into_paginator()
                .send();
            while let Some(page) = pages.next().await {
                self.calls.fetch_add(1, Ordering::Relaxed);
                let page = page.map_err(|error| ReadError {
                    operation: "DescribeInstanceTypes",
                    message: format!(
                        "{}; the checks cannot count ENI attachment points for awsvpc tasks until the console may call ec2:DescribeInstanceTypes",
                        crate::aws::errors::failure("EC2", "DescribeInstanceTypes", &error)
                    ),
                    throttled: crate::aws::errors::is_throttling(&error),
                })?;
                let mut known = self.interfaces.lock().unwrap_or_else(|p| p.into_inner());
                for info in page.instance_types() {
                    let (Some(kind), Some(max)) = (
                        info.instance_type(),
                        info.network_info()
                            .and_then(|n| n.maximum_network_interfaces()),
                    ) else {
                        continue;
                    };
                    known.insert(kind.as_str().to_string(), max.max(0) as u32);
                }
            }
        }
        let known = self.interfaces.lock().unwrap_or_else(|p| p.into_inner());
        Ok(types
            .iter()
            .filter_map(|t| Some((t.clone(), *known.get(t)?)))
            .collect())
    }

    async fn describe_chunk(
        &self,
        ids: &[String],
    ) -> Result<HashMap<String, Ec2Instance>, ReadError> {
        let mut out = HashMap::new();
        let mut pages = self
            .ec2
            .describe_instances()
            .filters(
                Filter::builder()
                    .name("instance-id")
                    .set_values(Some(ids.to_vec()))
                    .build(),
            )
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            self.calls.fetch_add(1, Ordering::Relaxed);
            let page = page.map_err(|error| ReadError {
                operation: "DescribeInstances",
                message: format!(
                    "{}; GPUs whose CloudWatch agent names them by hostname show no usage until the console may call ec2:DescribeInstances (or configure the agent with append_dimensions InstanceId)",
                    crate::aws::errors::failure("EC2", "DescribeInstances", &error)
                ),
                throttled: crate::aws::errors::is_throttling(&error),
            })?;
            for instance in page.reservations().iter().flat_map(|r| r.instances()) {
                let Some(id) = instance.instance_id() else {
                    continue;
                };
                out.insert(
                    id.to_string(),
                    Ec2Instance {
                        private_dns_name: instance
                            .private_dns_name()
                            .filter(|name| !name.is_empty())
                            .map(str::to_string),
                        availability_zone: instance
                            .placement()
                            .and_then(|p| p.availability_zone())
                            .map(str::to_string),
                        lifecycle: match instance.instance_lifecycle() {
                            Some(InstanceLifecycleType::Spot) => Lifecycle::Spot,
                            Some(InstanceLifecycleType::CapacityBlock) => Lifecycle::CapacityBlock,
                            _ => Lifecycle::OnDemand,
                        },
                        managed_by_ecs: instance.operator().is_some_and(|o| {
                            o.managed() == Some(true)
                                && o.principal().is_some_and(|p| p.starts_with("ecs."))
                        }),
                    },
                );
            }
        }
        Ok(out)
    }
}

/// The keys of `keys` that `known` does not hold yet, sorted, each once.
fn not_yet_known<V>(known: &Mutex<HashMap<String, V>>, keys: &[String]) -> Vec<String> {
    let known = known.lock().unwrap_or_else(|p| p.into_inner());
    let mut missing: Vec<String> = keys
        .iter()
        .filter(|key| !known.contains_key(*key))
        .cloned()
        .collect();
    missing.sort();
    missing.dedup();
    missing
}

/// The names under which a CloudWatch agent may publish an instance as `host`: its instance ID
/// (agents configured so, or resource-name hostnames `i-….ec2.internal`), its private DNS name,
/// and that name's first label (`ip-10-1-2-3`).
pub fn host_names(instance_id: &str, ec2: Option<&Ec2Instance>) -> Vec<String> {
    let mut names = vec![instance_id.to_string()];
    if let Some(dns) = ec2.and_then(|e| e.private_dns_name.as_deref()) {
        names.push(dns.to_string());
        if let Some((short, _)) = dns.split_once('.') {
            names.push(short.to_string());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_answers_to_its_id_its_private_dns_name_and_its_short_hostname() {
        let ec2 = Ec2Instance {
            private_dns_name: Some("ip-10-1-2-3.ec2.internal".into()),
            ..Ec2Instance::default()
        };
        assert_eq!(
            host_names("i-0abc", Some(&ec2)),
            vec!["i-0abc", "ip-10-1-2-3.ec2.internal", "ip-10-1-2-3"]
        );
        assert_eq!(host_names("i-0abc", None), vec!["i-0abc"]);
    }
}
