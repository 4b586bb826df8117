//! Reads the fleet through aws-sdk-ecs: clusters → container instances → tasks → task
//! definitions → services and their team tags, describes batched at the API limits, clusters
//! read concurrently, task definitions cached by ARN (they never change).

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc, Mutex,
    },
};

use app::model::{
    arn::arn_tail, gpu_model_of, nominal_gpu_memory_mib, ClusterView, FleetSnapshot, InstanceView,
    ServiceRef, SharingMode,
};
use aws_sdk_ecs::types::{
    ContainerInstanceField, GpuSharingMode, InstanceHealthCheckState, InstanceHealthCheckType,
    ServiceField, SharingStrategy, TaskDefinitionField,
};
use futures::{future::try_join_all, stream, Stream, StreamExt, TryStreamExt};
use placement::resources::Room;

use super::{
    ec2::{host_names, Ec2Instance, Ec2Reader},
    ecs_failed as failed,
    join::{join, DefinitionGpu, GpuAsk, RawContainer, RawGpu, RawTask},
    usage::{UsageMap, UsageReader},
    ReadError,
};
use crate::aws::pages;

/// DescribeTaskDefinition calls in flight at once on a first read.
const DEFINITION_CONCURRENCY: usize = 50;

/// Reads fleet snapshots; keeps the task definition cache between reads.
pub struct FleetReader {
    ecs: aws_sdk_ecs::Client,
    team_tag: String,
    concurrency: usize,
    definitions: Mutex<HashMap<String, DefinitionGpu>>,
    usage: Option<UsageReader>,
    ec2: Option<Ec2Reader>,
}

impl FleetReader {
    pub fn new(ecs: aws_sdk_ecs::Client, team_tag: &str, concurrency: usize) -> FleetReader {
        FleetReader {
            ecs,
            team_tag: team_tag.to_string(),
            concurrency: concurrency.max(1),
            definitions: Mutex::new(HashMap::new()),
            usage: None,
            ec2: None,
        }
    }

    /// Also reads the instances' EC2 side: hostnames (to join usage), zones and lifecycles.
    pub fn with_ec2(self, ec2: Ec2Reader) -> FleetReader {
        FleetReader {
            ec2: Some(ec2),
            ..self
        }
    }

    /// Also reads GPU usage from CloudWatch, alongside ECS.
    pub fn with_usage(self, usage: UsageReader) -> FleetReader {
        FleetReader {
            usage: Some(usage),
            ..self
        }
    }

    /// Reads the whole fleet, and its usage when a usage reader is set, concurrently. Never
    /// partial: any failed ECS call fails the read. When CloudWatch fails, the snapshot says so
    /// in `usage_error` and every GPU's usage is "no data".
    pub async fn read(&self) -> Result<FleetSnapshot, ReadError> {
        let now = chrono::Utc::now();
        let usage = async {
            match &self.usage {
                Some(reader) => Some(reader.read(now).await),
                None => None,
            }
        };
        let (snapshot, usage) = tokio::join!(self.read_ecs(), usage);
        let (mut snapshot, eni_tasks) = snapshot?;
        // EC2 needs the instance IDs that ECS gave; it describes only instances it has not seen.
        let mut ec2_error = None;
        let ec2 = match &self.ec2 {
            Some(reader) => {
                let ids: Vec<String> = snapshot
                    .clusters
                    .iter()
                    .flat_map(|c| c.instances.iter())
                    .map(|i| i.ec2_instance_id.clone())
                    .collect();
                match reader.describe(&ids).await {
                    Ok(found) => found,
                    Err(error) => {
                        ec2_error = Some(error.to_string());
                        HashMap::new()
                    }
                }
            }
            None => HashMap::new(),
        };
        match usage {
            Some(Ok(usage)) => add_usage(&mut snapshot, &usage, &ec2),
            Some(Err(error)) => {
                add_usage(&mut snapshot, &UsageMap::default(), &ec2);
                snapshot.usage_error = Some(error.to_string());
            }
            None => add_usage(&mut snapshot, &UsageMap::default(), &ec2),
        }
        if let Some(error) = ec2_error {
            snapshot.usage_error.get_or_insert(error);
        }
        if let Some(reader) = &self.ec2 {
            // Types as ECS names them; one EC2 does not know would fail the whole call.
            let mut types: Vec<String> = snapshot
                .clusters
                .iter()
                .flat_map(|c| c.instances.iter())
                .map(|i| i.instance_type.clone())
                .filter(|t| t.contains('.'))
                .collect();
            types.sort();
            types.dedup();
            match reader.network_interfaces(&types).await {
                Ok(interfaces) => count_enis(&mut snapshot, &interfaces, &eni_tasks),
                Err(error) => tracing::warn!("{error}"),
            }
        }
        Ok(snapshot)
    }

    /// Reads what ECS knows of the fleet; also, per container instance ARN, how many of its
    /// tasks hold an ENI of their own.
    async fn read_ecs(&self) -> Result<(FleetSnapshot, HashMap<String, u32>), ReadError> {
        let calls = AtomicU32::new(0);
        let (clusters, pages) = list_cluster_arns(&self.ecs).await?;
        calls.fetch_add(pages, Ordering::Relaxed);
        let views = try_join_all(clusters.iter().map(|arn| self.read_cluster(arn, &calls))).await?;
        let unknown = views.iter().map(|(_, unknown, _)| *unknown).sum();
        let mut eni_tasks = HashMap::new();
        let mut clusters: Vec<ClusterView> = Vec::with_capacity(views.len());
        for (view, _, enis) in views {
            clusters.push(view);
            eni_tasks.extend(enis);
        }
        clusters.sort_by(|a, b| a.name.cmp(&b.name));
        let snapshot = FleetSnapshot {
            taken_at: app::service::clock::now(),
            api_calls: calls.load(Ordering::Relaxed),
            cloudwatch_calls: 0,
            usage_error: None,
            clusters,
            unknown_gpu_ids: unknown,
        };
        Ok((snapshot, eni_tasks))
    }

    async fn read_cluster(
        &self,
        cluster: &str,
        calls: &AtomicU32,
    ) -> Result<(ClusterView, u32, HashMap<String, u32>), ReadError> {
        let name = arn_tail(cluster).to_string();
        let (instances, tasks, (services, teams)) = tokio::try_join!(
            self.read_instances(cluster, calls),
            self.read_tasks(cluster, calls),
            self.read_service_teams(cluster, calls),
        )?;
        self.cache_definitions(&tasks, calls).await?;
        let definitions = self
            .definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let gpus: Vec<Vec<RawGpu>> = instances.iter().map(|(_, gpus)| gpus.clone()).collect();
        let joined = join(&gpus, &tasks, &definitions, &teams);
        let instances = instances
            .into_iter()
            .zip(joined.instances)
            .map(|((instance, _), gpus)| InstanceView { gpus, ..instance })
            .collect();
        let mut eni_tasks: HashMap<String, u32> = HashMap::new();
        for task in tasks.iter().filter(|t| t.holds_eni) {
            if let Some(arn) = &task.container_instance_arn {
                *eni_tasks.entry(arn.clone()).or_default() += 1;
            }
        }
        let status = |wanted: &[&str]| {
            tasks
                .iter()
                .filter(|t| {
                    t.last_status
                        .as_deref()
                        .is_some_and(|s| wanted.contains(&s))
                })
                .count() as u32
        };
        Ok((
            ClusterView {
                name,
                instances,
                services: services.len() as u32,
                service_list: services,
                running_tasks: status(&["RUNNING"]),
                pending_tasks: status(&["PROVISIONING", "PENDING", "ACTIVATING"]),
            },
            joined.unknown_gpus.len() as u32,
            eni_tasks,
        ))
    }

    /// Reads a list's pages (the SDK's paginator) and describes each page as soon as it
    /// arrives (in batches of `batch`, at most `concurrency` at once), so that describing
    /// overlaps listing.
    async fn pipelined<T, D, DF>(
        &self,
        calls: &AtomicU32,
        batch: usize,
        list: impl Stream<Item = Result<Vec<String>, ReadError>>,
        describe: D,
    ) -> Result<Vec<T>, ReadError>
    where
        D: Fn(Vec<String>) -> DF,
        DF: std::future::Future<Output = Result<Vec<T>, ReadError>> + Send + 'static,
        T: Send + 'static,
    {
        let limit = Arc::new(tokio::sync::Semaphore::new(self.concurrency));
        let mut handles = Vec::new();
        let mut list = std::pin::pin!(list);
        let listed = loop {
            let page = match list.next().await {
                None => break Ok(()),
                Some(Ok(page)) => page,
                Some(Err(error)) => break Err(error),
            };
            calls.fetch_add(1, Ordering::Relaxed);
            for chunk in page.chunks(batch) {
                let described = describe(chunk.to_vec());
                let limit = limit.clone();
                handles.push(tokio::spawn(async move {
                    let _permit = limit.acquire_owned().await;
                    described.await
                }));
            }
        };
        if let Err(error) = listed {
            handles.iter().for_each(tokio::task::JoinHandle::abort);
            return Err(error);
        }
        let mut items = Vec::new();
        for handle in handles {
            let described = handle.await.map_err(|e| ReadError {
                operation: "describe",
                message: format!("a describe call stopped before it answered: {e}"),
            })?;
            items.extend(described?);
            calls.fetch_add(1, Ordering::Relaxed);
        }
        Ok(items)
    }

    async fn read_instances(
        &self,
        cluster: &str,
        calls: &AtomicU32,
    ) -> Result<Vec<(InstanceView, Vec<RawGpu>)>, ReadError> {
        let list = pages(
            self.ecs
                .list_container_instances()
                .cluster(cluster)
                .max_results(100)
                .into_paginator()
                .send(),
        )
        .map(|page| {
            page.map(|out| out.container_instance_arns().to_vec())
                .map_err(failed("ListContainerInstances"))
        });
        let describe = |batch: Vec<String>| {
            let (ecs, cluster) = (self.ecs.clone(), cluster.to_string());
            async move {
                let out = ecs
                    .describe_container_instances()
                    .cluster(cluster)
                    .set_container_instances(Some(batch))
                    // Without it ECS leaves out healthStatus, and an impaired MPS daemon.
                    .include(ContainerInstanceField::ContainerInstanceHealth)
                    .send()
                    .await
                    .map_err(failed("DescribeContainerInstances"))?;
                Ok(out
                    .container_instances()
                    .iter()
                    .map(instance_view)
                    .collect())
            }
        };
        self.pipelined(calls, 100, list, describe).await
    }

    async fn read_tasks(
        &self,
        cluster: &str,
        calls: &AtomicU32,
    ) -> Result<Vec<RawTask>, ReadError> {
        let list = pages(
            self.ecs
                .list_tasks()
                .cluster(cluster)
                .max_results(100)
                .into_paginator()
                .send(),
        )
        .map(|page| {
            page.map(|out| out.task_arns().to_vec())
                .map_err(failed("ListTasks"))
        });
        let describe = |batch: Vec<String>| {
            let (ecs, cluster) = (self.ecs.clone(), cluster.to_string());
            async move {
                let out = ecs
                    .describe_tasks()
                    .cluster(cluster)
                    .set_tasks(Some(batch))
                    .send()
                    .await
                    .map_err(failed("DescribeTasks"))?;
                Ok(out.tasks().iter().map(raw_task).collect())
            }
        };
        self.pipelined(calls, 100, list, describe).await
    }

    /// The number of services, and the team of each tagged one.
    async fn read_service_teams(
        &self,
        cluster: &str,
        calls: &AtomicU32,
    ) -> Result<(Vec<ServiceRef>, HashMap<String, String>), ReadError> {
        let list = pages(
            self.ecs
                .list_services()
                .cluster(cluster)
                .max_results(100)
                .into_paginator()
                .send(),
        )
        .map(|page| {
            page.map(|out| out.service_arns().to_vec())
                .map_err(failed("ListServices"))
        });
        let describe = |batch: Vec<String>| {
            let (ecs, cluster, team_tag) =
                (self.ecs.clone(), cluster.to_string(), self.team_tag.clone());
            async move {
                let out = ecs
                    .describe_services()
                    .cluster(cluster)
                    .set_services(Some(batch))
                    .include(ServiceField::Tags)
                    .send()
                    .await
                    .map_err(failed("DescribeServices"))?;
                Ok(out
                    .services()
                    .iter()
                    .map(|s| {
                        let team = s
                            .tags()
                            .iter()
                            .find(|t| t.key() == Some(team_tag.as_str()))
                            .and_then(|t| t.value());
                        let config = s.deployment_configuration();
                        let breaker = config.and_then(|c| c.deployment_circuit_breaker());
                        let count = |n: i32| n.max(0) as u32;
                        ServiceRef {
                            name: s.service_name().unwrap_or_default().to_string(),
                            task_definition_arn: s
                                .task_definition()
                                .unwrap_or_default()
                                .to_string(),
                            team: team.map(str::to_string),
                            desired: count(s.desired_count()),
                            running: count(s.running_count()),
                            pending: count(s.pending_count()),
                            rollout_state: s
                                .deployments()
                                .iter()
                                .find(|d| d.status() == Some("PRIMARY"))
                                .and_then(|d| d.rollout_state())
                                .map(|state| state.as_str().to_string()),
                            deployments: s.deployments().len() as u32,
                            maximum_percent: config.and_then(|c| c.maximum_percent()).map(count),
                            minimum_healthy_percent: config
                                .and_then(|c| c.minimum_healthy_percent())
                                .map(count),
                            circuit_breaker: breaker.is_some_and(|b| b.enable()),
                            circuit_breaker_rollback: breaker.is_some_and(|b| b.rollback()),
                            strategy: config
                                .and_then(|c| c.strategy())
                                .map(|s| s.as_str().to_string()),
                            placement_constraints: s
                                .placement_constraints()
                                .iter()
                                .map(constraint_json)
                                .collect(),
                            placement_strategy: s
                                .placement_strategy()
                                .iter()
                                .map(strategy_text)
                                .collect(),
                        }
                    })
                    .collect::<Vec<_>>())
            }
        };
        let mut services = self.pipelined(calls, 10, list, describe).await?;
        services.sort_by(|a, b| a.name.cmp(&b.name));
        let teams = services
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.team.clone()?)))
            .collect();
        Ok((services, teams))
    }

    /// Describes the task definitions not yet cached.
    async fn cache_definitions(
        &self,
        tasks: &[RawTask],
        calls: &AtomicU32,
    ) -> Result<(), ReadError> {
        let missing: Vec<String> = {
            let cache = self.definitions.lock().unwrap_or_else(|p| p.into_inner());
            let mut missing: Vec<String> = tasks
                .iter()
                .map(|t| t.task_definition_arn.clone())
                .filter(|arn| !cache.contains_key(arn))
                .collect();
            missing.sort();
            missing.dedup();
            missing
        };
        let team_tag = self.team_tag.as_str();
        let found: Vec<(String, DefinitionGpu)> =
            stream::iter(missing.into_iter().map(|arn| async move {
                let out = self
                    .ecs
                    .describe_task_definition()
                    .task_definition(&arn)
                    .include(TaskDefinitionField::Tags)
                    .send()
                    .await
                    .map_err(failed("DescribeTaskDefinition"))?;
                calls.fetch_add(1, Ordering::Relaxed);
                let containers = out
                    .task_definition()
                    .map(|td| {
                        td.container_definitions()
                            .iter()
                            .map(|c| {
                                (
                                    c.name().unwrap_or_default().to_string(),
                                    gpu_ask(c.resource_requirements()),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let team = out
                    .tags()
                    .iter()
                    .find(|t| t.key() == Some(team_tag))
                    .and_then(|t| t.value())
                    .map(str::to_string);
                Ok::<_, ReadError>((arn, DefinitionGpu { containers, team }))
            }))
            // Small calls at the end of the dependent chain: one wave where ECS's burst allows.
            .buffer_unordered(self.concurrency.max(DEFINITION_CONCURRENCY))
            .try_collect()
            .await?;
        self.definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(found);
        Ok(())
    }
}

/// Puts usage and GPU models on the snapshot's GPUs, joined by host and GPU index (the order
/// of `gpuDevices`): the agent's host is the instance ID, or its hostname, which EC2's private
/// DNS name gives (see [`host_names`]). Also the lifecycle and zone EC2 reports.
fn add_usage(snapshot: &mut FleetSnapshot, usage: &UsageMap, ec2: &HashMap<String, Ec2Instance>) {
    snapshot.cloudwatch_calls = usage.calls;
    for instance in snapshot
        .clusters
        .iter_mut()
        .flat_map(|c| c.instances.iter_mut())
    {
        let described = ec2.get(&instance.ec2_instance_id);
        if let Some(described) = described {
            instance.lifecycle = Some(described.lifecycle.clone());
            if instance.availability_zone.is_none() {
                instance.availability_zone = described.availability_zone.clone();
            }
        }
        let names = host_names(&instance.ec2_instance_id, described);
        let host = names
            .iter()
            .find(|name| usage.models.contains_key(*name))
            .or_else(|| {
                names
                    .iter()
                    .find(|name| usage.by_gpu.keys().any(|(host, _)| host == *name))
            })
            .cloned()
            .unwrap_or_else(|| instance.ec2_instance_id.clone());
        instance.gpu_model = usage
            .models
            .get(&host)
            .cloned()
            .or_else(|| gpu_model_of(&instance.instance_type).map(str::to_string));
        for gpu in &mut instance.gpus {
            gpu.usage = usage.by_gpu.get(&(host.clone(), gpu.index)).copied();
        }
    }
}

/// Every cluster ARN, and the number of calls it took.
pub async fn list_cluster_arns(ecs: &aws_sdk_ecs::Client) -> Result<(Vec<String>, u32), ReadError> {
    let mut arns = Vec::new();
    let mut calls = 0;
    let mut pages = ecs.list_clusters().into_paginator().send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(failed("ListClusters"))?;
        calls += 1;
        arns.extend(page.cluster_arns().iter().cloned());
    }
    Ok((arns, calls))
}

fn raw_task(task: &aws_sdk_ecs::types::Task) -> RawTask {
    RawTask {
        arn: task.task_arn().unwrap_or_default().to_string(),
        task_definition_arn: task.task_definition_arn().unwrap_or_default().to_string(),
        group: task.group().map(str::to_string),
        last_status: task.last_status().map(str::to_string),
        started_at: task.started_at().map(crate::aws::rfc3339),
        containers: task
            .containers()
            .iter()
            .map(|c| RawContainer {
                name: c.name().unwrap_or_default().to_string(),
                gpu_ids: c.gpu_ids().to_vec(),
            })
            .collect(),
        container_instance_arn: task.container_instance_arn().map(str::to_string),
        holds_eni: task.last_status() != Some("STOPPED")
            && task.attachments().iter().any(|a| {
                a.r#type() == Some("ElasticNetworkInterface")
                    && !matches!(a.status(), Some("DELETED" | "DETACHED" | "FAILED"))
            }),
    }
}

/// A container's GPU ask from its resource requirements. An empty `value` beside a sharing
/// strategy is shared, never "0 GPUs".
pub fn gpu_ask(requirements: &[aws_sdk_ecs::types::ResourceRequirement]) -> GpuAsk {
    for requirement in requirements {
        if requirement.r#type().as_str() != "GPU" {
            continue;
        }
        if let Some(SharingStrategy::NvidiaMps(mps)) = requirement.sharing_strategy() {
            return GpuAsk::Mps {
                memory_mib: mps.memory().max(0) as u32,
                max_compute_percent: mps.max_compute_percent().map(|p| p.max(0) as u32),
            };
        }
        if let Ok(count) = requirement.value().parse::<u32>() {
            return GpuAsk::Whole(count);
        }
        if requirement.value() == "ALL" {
            return GpuAsk::Whole(u32::MAX);
        }
    }
    GpuAsk::None
}

/// A placement constraint as the ECS API spells it in JSON.
fn constraint_json(constraint: &aws_sdk_ecs::types::PlacementConstraint) -> serde_json::Value {
    let mut out = serde_json::json!({
        "type": constraint.r#type().map(|t| t.as_str()).unwrap_or_default(),
    });
    if let Some(expression) = constraint.expression() {
        out["expression"] = expression.into();
    }
    out
}

fn instance_view(instance: &aws_sdk_ecs::types::ContainerInstance) -> (InstanceView, Vec<RawGpu>) {
    let attribute = |name: &str| {
        instance
            .attributes()
            .iter()
            .find(|a| a.name() == name)
            .and_then(|a| a.value())
            .map(str::to_string)
    };
    let impaired = instance.health_status().and_then(|h| {
        h.details()
            .iter()
            .find(|d| {
                d.r#type() == Some(&InstanceHealthCheckType::AcceleratedCompute)
                    && d.status() == Some(&InstanceHealthCheckState::Impaired)
            })
            // The agent gives no reason text.
            .map(|d| {
                d.status_reason()
                    .unwrap_or("the agent's ACCELERATED_COMPUTE health check reports IMPAIRED")
                    .to_string()
            })
    });
    let instance_type = attribute("ecs.instance-type").unwrap_or_else(|| "unknown".into());
    let gpus = if instance.gpu_devices().is_empty() {
        gpus_from_resources(instance, &instance_type)
    } else {
        devices(instance)
    };
    let view = InstanceView {
        arn: instance
            .container_instance_arn()
            .unwrap_or_default()
            .to_string(),
        ec2_instance_id: instance.ec2_instance_id().unwrap_or_default().to_string(),
        instance_type,
        impaired,
        mps_capable: instance
            .attributes()
            .iter()
            .any(|a| a.name() == "ecs.capability.gpu-sharing-mps"),
        gpu_model: None,
        gpus: Vec::new(),
        availability_zone: attribute("ecs.availability-zone"),
        // From EC2, after the ECS read.
        lifecycle: None,
        not_placing: InstanceView::not_placing_reason(
            instance.status().unwrap_or("ACTIVE"),
            instance.agent_connected(),
        ),
        room: Some(room(instance)),
    };
    (view, gpus)
}

/// A placement strategy as ECS writes it: `spread(attribute:ecs.availability-zone)`.
fn strategy_text(strategy: &aws_sdk_ecs::types::PlacementStrategy) -> String {
    let kind = strategy.r#type().map_or("", |t| t.as_str());
    match strategy.field() {
        Some(field) => format!("{kind}({field})"),
        None => kind.to_string(),
    }
}

/// The attribute of a container instance with ENI trunking on: its limit is the trunk's, which
/// EC2 does not report.
const TRUNK_ATTRIBUTE: &str = "ecs.awsvpc-trunk-id";

/// Sets each instance's ENI attachment points left: its type's network interfaces, less the
/// primary one, less one per task holding an ENI. Left unknown for a type EC2 did not
/// describe and for an instance with ENI trunking.
fn count_enis(
    snapshot: &mut FleetSnapshot,
    interfaces: &HashMap<String, u32>,
    eni_tasks: &HashMap<String, u32>,
) {
    for instance in snapshot
        .clusters
        .iter_mut()
        .flat_map(|c| c.instances.iter_mut())
    {
        let held = eni_tasks.get(&instance.arn).copied().unwrap_or(0);
        let max = interfaces.get(&instance.instance_type).copied();
        if let Some(room) = &mut instance.room {
            room.enis_free = match max {
                Some(max) if !room.attributes.contains_key(TRUNK_ATTRIBUTE) => {
                    Some(max.saturating_sub(1).saturating_sub(held))
                }
                _ => None,
            };
        }
    }
}

/// What an instance has left besides GPUs, from its status, agent connection, remaining
/// resources (`PORTS` and `PORTS_UDP` there are the host ports in use) and attributes.
fn room(instance: &aws_sdk_ecs::types::ContainerInstance) -> Room {
    let remaining = instance.remaining_resources();
    let integer = |name: &str| {
        remaining
            .iter()
            .find(|r| r.name() == Some(name))
            .map_or(0, |r| r.integer_value().max(0) as u32)
    };
    let ports = |name: &str| -> std::collections::BTreeSet<u16> {
        remaining
            .iter()
            .find(|r| r.name() == Some(name))
            .map(|r| {
                r.string_set_value()
                    .iter()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    Room {
        status: instance.status().unwrap_or("ACTIVE").to_string(),
        agent_connected: instance.agent_connected(),
        cpu_remaining: integer("CPU"),
        memory_remaining_mib: integer("MEMORY"),
        tcp_ports_used: ports("PORTS"),
        udp_ports_used: ports("PORTS_UDP"),
        // From EC2 and the tasks' ENI attachments, after the ECS read.
        enis_free: None,
        // Attributes with a value: instance type, zone, custom ones (not the capabilities).
        attributes: instance
            .attributes()
            .iter()
            .filter_map(|a| Some((a.name().to_string(), a.value()?.to_string())))
            .chain(instance.ec2_instance_id().map(|id| {
                (
                    placement::resources::EC2_INSTANCE_ID.to_string(),
                    id.to_string(),
                )
            }))
            .collect(),
    }
}

/// The GPUs an instance reports with `gpuDevices` (instances that support GPU sharing).
fn devices(instance: &aws_sdk_ecs::types::ContainerInstance) -> Vec<RawGpu> {
    instance
        .gpu_devices()
        .iter()
        .map(|g| RawGpu {
            uuid: g.gpu_id().unwrap_or_default().to_string(),
            mode: match g.sharing_mode() {
                Some(GpuSharingMode::NvidiaMps) => SharingMode::NvidiaMps,
                Some(GpuSharingMode::Dedicated) => SharingMode::Dedicated,
                _ => SharingMode::Idle,
            },
            total_memory_mib: g.total_memory_in_mib().unwrap_or(0).max(0) as u32,
            remaining_memory_mib: g.remaining_memory_in_mib().unwrap_or(0).max(0) as u32,
        })
        .collect()
}

/// The GPUs of an instance that reports no `gpuDevices` (an agent or AMI without GPU sharing):
/// the GPU IDs of its registered `GPU` resource, allocated unless in the remaining one, each a
/// whole GPU with the instance type's nominal memory (0 when the type is unknown).
fn gpus_from_resources(
    instance: &aws_sdk_ecs::types::ContainerInstance,
    instance_type: &str,
) -> Vec<RawGpu> {
    let ids = |resources: &[aws_sdk_ecs::types::Resource]| -> Vec<String> {
        resources
            .iter()
            .find(|r| r.name() == Some("GPU"))
            .map(|r| r.string_set_value().to_vec())
            .unwrap_or_default()
    };
    let free = ids(instance.remaining_resources());
    let total = nominal_gpu_memory_mib(instance_type).unwrap_or(0);
    ids(instance.registered_resources())
        .into_iter()
        .map(|uuid| {
            let idle = free.contains(&uuid);
            RawGpu {
                uuid,
                mode: if idle {
                    SharingMode::Idle
                } else {
                    SharingMode::Dedicated
                },
                total_memory_mib: total,
                remaining_memory_mib: if idle { total } else { 0 },
            }
        })
        .collect()
}

/// Shared handle, for the background refresher.
pub type SharedReader = Arc<FleetReader>;

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(attributes: &[(&str, &str)]) -> FleetSnapshot {
        let room = Room {
            status: "ACTIVE".into(),
            agent_connected: true,
            attributes: attributes
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Room::default()
        };
        FleetSnapshot {
            clusters: vec![ClusterView {
                name: "prod".into(),
                instances: vec![InstanceView {
                    arn: "arn:ci/1".into(),
                    ec2_instance_id: "i-1".into(),
                    instance_type: "g5.xlarge".into(),
                    impaired: None,
                    mps_capable: true,
                    gpu_model: None,
                    gpus: Vec::new(),
                    not_placing: None,
                    availability_zone: None,
                    lifecycle: None,
                    room: Some(room),
                }],
                ..ClusterView::default()
            }],
            taken_at: "t".into(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            unknown_gpu_ids: 0,
        }
    }

    #[test]
    fn enis_left_are_the_interfaces_less_the_primary_and_the_tasks_unless_trunked() {
        let interfaces: HashMap<String, u32> = [("g5.xlarge".to_string(), 4)].into();
        let tasks: HashMap<String, u32> = [("arn:ci/1".to_string(), 2)].into();
        let enis = |snapshot: &FleetSnapshot| {
            snapshot.clusters[0].instances[0]
                .room
                .as_ref()
                .and_then(|r| r.enis_free)
        };
        let mut plain = snapshot(&[]);
        count_enis(&mut plain, &interfaces, &tasks);
        assert_eq!(enis(&plain), Some(1));
        count_enis(&mut plain, &interfaces, &HashMap::new());
        assert_eq!(enis(&plain), Some(3));
        let mut trunked = snapshot(&[(TRUNK_ATTRIBUTE, "eni-0trunk")]);
        count_enis(&mut trunked, &interfaces, &tasks);
        assert_eq!(enis(&trunked), None, "the trunk's limit is not known");
        let mut undescribed = snapshot(&[]);
        count_enis(&mut undescribed, &HashMap::new(), &tasks);
        assert_eq!(enis(&undescribed), None);
    }
}
