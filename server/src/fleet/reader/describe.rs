//! Listing and describing: ECS's list pages and describe batches, each call after the budget allows
//! it, and the task definition cache filled as described tasks name them.

use super::*;
use app::model::words::ServiceStatus;

/// Listing and describing, paced by the budget.
impl FleetReader {
    /// Reads a list's pages, each after the budget allows it, as a stream.
    pub(super) fn listing<'a>(
        &'a self,
        cluster: &'a str,
        listing: Listing,
        calls: &'a AtomicU32,
        lane: Lane,
    ) -> impl Stream<Item = Result<Vec<String>, ReadError>> + Send + 'a {
        stream::try_unfold(
            (Some(None::<String>), listing),
            move |(next, listing)| async move {
                let Some(token) = next else {
                    return Ok(None);
                };
                self.pace(listing.operation(), lane).await;
                calls.fetch_add(1, Ordering::Relaxed);
                let (items, token) = match &listing {
                    Listing::Instances => {
                        let call = self
                            .ecs
                            .list_container_instances()
                            .cluster(cluster)
                            .max_results(100)
                            .set_next_token(token);
                        let out = crate::aws::again::read(|| call.clone().send())
                            .await
                            .map_err(failed("ListContainerInstances"))?;
                        (
                            out.container_instance_arns().to_vec(),
                            out.next_token().map(str::to_string),
                        )
                    }
                    Listing::Tasks(instance) => {
                        let call = self
                            .ecs
                            .list_tasks()
                            .cluster(cluster)
                            .set_container_instance(instance.clone())
                            .max_results(100)
                            .set_next_token(token);
                        let out = crate::aws::again::read(|| call.clone().send())
                            .await
                            .map_err(failed("ListTasks"))?;
                        (
                            out.task_arns().to_vec(),
                            out.next_token().map(str::to_string),
                        )
                    }
                    Listing::Services => {
                        let call = self
                            .ecs
                            .list_services()
                            .cluster(cluster)
                            .max_results(100)
                            .set_next_token(token);
                        let out = crate::aws::again::read(|| call.clone().send())
                            .await
                            .map_err(failed("ListServices"))?;
                        (
                            out.service_arns().to_vec(),
                            out.next_token().map(str::to_string),
                        )
                    }
                };
                Ok(Some((items, (token.map(Some), listing))))
            },
        )
    }

    /// Describes what a list's pages name as soon as each page arrives (in batches of
    /// `batch`, at most `concurrency` at once), so that describing overlaps listing.
    pub(super) async fn pipelined<T, D, DF>(
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
                throttled: false,
            })?;
            items.extend(described?);
            calls.fetch_add(1, Ordering::Relaxed);
        }
        Ok(items)
    }

    /// Describes `arns` in batches of `batch`, at most `concurrency` at once.
    pub(super) async fn described<T, D, DF>(
        &self,
        calls: &AtomicU32,
        batch: usize,
        arns: Vec<String>,
        describe: D,
    ) -> Result<Vec<T>, ReadError>
    where
        D: Fn(Vec<String>) -> DF,
        DF: std::future::Future<Output = Result<Vec<T>, ReadError>> + Send + 'static,
        T: Send + 'static,
    {
        if arns.is_empty() {
            return Ok(Vec::new());
        }
        self.pipelined(calls, batch, stream::iter([Ok(arns)]), describe)
            .await
    }

    /// DescribeContainerInstances of one batch: each instance, or the ARN ECS did not find.
    pub(super) fn describe_instances(
        &self,
        cluster: &str,
        lane: Lane,
    ) -> impl Fn(Vec<String>) -> Described<incremental::KnownInstance> {
        let (ecs, cluster, budget) = (self.ecs.clone(), cluster.to_string(), self.budget.clone());
        move |batch| {
            let (ecs, cluster, budget) = (ecs.clone(), cluster.clone(), budget.clone());
            Box::pin(async move {
                if let Some(budget) = &budget {
                    budget.take("DescribeContainerInstances", lane).await;
                }
                let call = ecs
                    .describe_container_instances()
                    .cluster(cluster)
                    .set_container_instances(Some(batch))
                    // Without it ECS leaves out healthStatus, and an impaired MPS daemon.
                    .include(aws_sdk_ecs::types::ContainerInstanceField::ContainerInstanceHealth);
                let out = crate::aws::again::read(|| call.clone().send())
                    .await
                    .map_err(failed("DescribeContainerInstances"))?;
                Ok(out
                    .container_instances()
                    .iter()
                    .map(|i| Ok(incremental::KnownInstance::of(i)))
                    .chain(
                        out.failures()
                            .iter()
                            .map(|f| Err(f.arn().unwrap_or_default().to_string())),
                    )
                    .collect())
            })
        }
    }

    /// DescribeTasks of one batch: each task, or the ARN ECS did not find. Each task's
    /// definition ARN also goes to `definitions`, when given.
    pub(super) fn describe_tasks(
        &self,
        cluster: &str,
        lane: Lane,
        definitions: Option<futures::channel::mpsc::UnboundedSender<String>>,
    ) -> impl Fn(Vec<String>) -> Described<RawTask> {
        let (ecs, cluster, budget) = (self.ecs.clone(), cluster.to_string(), self.budget.clone());
        move |batch| {
            let (ecs, cluster, budget, definitions) = (
                ecs.clone(),
                cluster.clone(),
                budget.clone(),
                definitions.clone(),
            );
            Box::pin(async move {
                if let Some(budget) = &budget {
                    budget.take("DescribeTasks", lane).await;
                }
                let call = ecs.describe_tasks().cluster(cluster).set_tasks(Some(batch));
                let out = crate::aws::again::read(|| call.clone().send())
                    .await
                    .map_err(failed("DescribeTasks"))?;
                if let Some(definitions) = definitions {
                    for arn in out.tasks().iter().filter_map(|t| t.task_definition_arn()) {
                        // Closed only once the reading of definitions has failed, and then
                        // so has the read.
                        let _ = definitions.unbounded_send(arn.to_string());
                    }
                }
                Ok(out
                    .tasks()
                    .iter()
                    .map(|t| Ok(raw_task(t)))
                    .chain(
                        out.failures()
                            .iter()
                            .map(|f| Err(f.arn().unwrap_or_default().to_string())),
                    )
                    .collect())
            })
        }
    }

    /// DescribeServices of one batch (with tags): each service by ARN with its status, or the
    /// ARN ECS did not find.
    pub(super) fn describe_services(
        &self,
        cluster: &str,
        lane: Lane,
    ) -> impl Fn(Vec<String>) -> Described<incremental::KnownService> {
        let (ecs, cluster, budget, team_tag) = (
            self.ecs.clone(),
            cluster.to_string(),
            self.budget.clone(),
            self.team_tag.clone(),
        );
        move |batch| {
            let (ecs, cluster, budget, team_tag) = (
                ecs.clone(),
                cluster.clone(),
                budget.clone(),
                team_tag.clone(),
            );
            Box::pin(async move {
                if let Some(budget) = &budget {
                    budget.take("DescribeServices", lane).await;
                }
                let call = ecs
                    .describe_services()
                    .cluster(cluster)
                    .set_services(Some(batch))
                    .include(aws_sdk_ecs::types::ServiceField::Tags);
                let out = crate::aws::again::read(|| call.clone().send())
                    .await
                    .map_err(failed("DescribeServices"))?;
                Ok(out
                    .services()
                    .iter()
                    .map(|s| {
                        Ok(incremental::KnownService {
                            arn: s.service_arn().unwrap_or_default().to_string(),
                            status: ServiceStatus::from(s.status().unwrap_or("ACTIVE")),
                            service: service_ref(s, &team_tag),
                        })
                    })
                    .chain(
                        out.failures()
                            .iter()
                            .map(|f| Err(f.arn().unwrap_or_default().to_string())),
                    )
                    .collect())
            })
        }
    }

    /// Every cluster ARN, each page within the budget.
    pub(super) async fn list_cluster_arns(
        &self,
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<Vec<String>, ReadError> {
        let mut arns = Vec::new();
        let mut token = None;
        loop {
            self.pace("ListClusters", lane).await;
            calls.fetch_add(1, Ordering::Relaxed);
            let call = self.ecs.list_clusters().set_next_token(token);
            let page = crate::aws::again::read(|| call.clone().send())
                .await
                .map_err(failed("ListClusters"))?;
            arns.extend(page.cluster_arns().iter().cloned());
            token = page.next_token().map(str::to_string);
            if token.is_none() {
                return Ok(arns);
            }
        }
    }

    /// DescribeClusters' counts of each of `arns` that ECS still has as ACTIVE.
    pub(super) async fn describe_clusters(
        &self,
        arns: &[String],
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<HashMap<String, incremental::ClusterCounts>, ReadError> {
        let mut counts = HashMap::new();
        for chunk in arns.chunks(100) {
            self.pace("DescribeClusters", lane).await;
            calls.fetch_add(1, Ordering::Relaxed);
            let call = self
                .ecs
                .describe_clusters()
                .set_clusters(Some(chunk.to_vec()));
            let out = crate::aws::again::read(|| call.clone().send())
                .await
                .map_err(failed("DescribeClusters"))?;
            for cluster in out.clusters() {
                if cluster.status().is_some_and(|s| s != "ACTIVE") {
                    continue;
                }
                counts.insert(
                    cluster.cluster_arn().unwrap_or_default().to_string(),
                    incremental::ClusterCounts {
                        instances: cluster.registered_container_instances_count(),
                        running: cluster.running_tasks_count(),
                        pending: cluster.pending_tasks_count(),
                        services: cluster.active_services_count(),
                    },
                );
            }
        }
        Ok(counts)
    }

    /// Describes the task definitions of `tasks` not yet cached.
    pub(super) async fn cache_definitions(
        &self,
        tasks: &[RawTask],
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<(), ReadError> {
        let arns: Vec<String> = tasks
            .iter()
            .map(|t| t.task_definition_arn.to_string())
            .collect();
        self.cache_definitions_of(stream::iter(arns), calls, lane)
            .await
    }

    /// Describes each task definition `arns` names, as it comes, unless cached or already
    /// asked for; each goes into the cache as soon as it is read.
    pub(super) async fn cache_definitions_of(
        &self,
        arns: impl Stream<Item = String> + Send,
        calls: &AtomicU32,
        lane: Lane,
    ) -> Result<(), ReadError> {
        let mut asked = std::collections::HashSet::new();
        let missing = arns.filter(move |arn| {
            let new = asked.insert(arn.clone())
                && !self
                    .definitions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains_key(arn);
            futures::future::ready(new)
        });
        let team_tag = self.team_tag.as_str();
        missing
            .map(|arn| async move {
                self.pace("DescribeTaskDefinition", lane).await;
                calls.fetch_add(1, Ordering::Relaxed);
                let call = self
                    .ecs
                    .describe_task_definition()
                    .task_definition(&arn)
                    .include(TaskDefinitionField::Tags);
                let out = crate::aws::again::read(|| call.clone().send())
                    .await
                    .map_err(failed("DescribeTaskDefinition"))?;
                let (cpu, memory_mib) = out.task_definition().map(host_needs).unwrap_or_default();
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
                Ok::<_, ReadError>((
                    arn,
                    DefinitionGpu {
                        containers,
                        team,
                        cpu,
                        memory_mib,
                    },
                ))
            })
            // Small calls, many at once where ECS's burst allows.
            .buffer_unordered(self.concurrency.max(DEFINITION_CONCURRENCY))
            .try_for_each(|(arn, definition)| {
                self.definitions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(arn, definition);
                futures::future::ready(Ok(()))
            })
            .await
    }
}

/// One describe call's answer: each item found, or the ARN ECS did not find.
pub(super) type Described<T> =
    futures::future::BoxFuture<'static, Result<Vec<Result<T, String>>, ReadError>>;

/// Which list a [`FleetReader::listing`] reads.
#[derive(Clone, Debug)]
pub(super) enum Listing {
    Instances,
    /// A cluster's tasks, or one container instance's.
    Tasks(Option<String>),
    Services,
}

impl Listing {
    pub(super) fn operation(&self) -> &'static str {
        match self {
            Listing::Instances => "ListContainerInstances",
            Listing::Tasks(_) => "ListTasks",
            Listing::Services => "ListServices",
        }
    }
}
