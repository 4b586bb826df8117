//! What happens in a cluster, read from ECS: every service's events (DescribeServices, ten
//! services a call), and tasks with their containers, GPUs and stop reasons (ListTasks and
//! DescribeTasks, a hundred tasks a call). Container instances and GPUs are named from the
//! fleet snapshot: the EC2 instance ID and the GPU's index.

use std::{collections::HashMap, sync::Arc};

use app::{
    model::activity::{arn_tail, ClusterEvent, EventKind, TaskContainer, TaskGpu, TaskInfo},
    ssr::{activity::ClusterActivity, fleet::FleetFeed, task_definitions::BoxFuture},
};
use aws_sdk_ecs::types::DesiredStatus;
use futures::{stream, StreamExt, TryStreamExt};

use crate::task_definitions::ecs_failed;

/// DescribeServices or DescribeTasks calls in flight at once.
const CONCURRENCY: usize = 4;
/// Services per DescribeServices call.
const SERVICES_PER_CALL: usize = 10;
/// Tasks per DescribeTasks call.
const TASKS_PER_CALL: usize = 100;

/// RFC 3339 in UTC with milliseconds, so times sort as text.
pub fn rfc3339(at: &aws_sdk_ecs::primitives::DateTime) -> String {
    chrono::DateTime::from_timestamp(at.secs(), at.subsec_nanos())
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Names container instances and GPUs as the fleet snapshot knows them.
#[derive(Default)]
pub struct Places {
    instances: HashMap<String, String>,
    gpus: HashMap<String, u32>,
}

impl Places {
    /// What the fleet's latest snapshot knows of `cluster`.
    pub fn of(fleet: &dyn FleetFeed, cluster: &str) -> Places {
        let mut places = Places::default();
        let Some(snapshot) = fleet.state().snapshot else {
            return places;
        };
        for view in snapshot.clusters.iter().filter(|c| c.name == cluster) {
            for instance in &view.instances {
                places
                    .instances
                    .insert(instance.arn.clone(), instance.ec2_instance_id.clone());
                for gpu in &instance.gpus {
                    places.gpus.insert(gpu.uuid.clone(), gpu.index);
                }
            }
        }
        places
    }

    fn instance(&self, arn: &str) -> String {
        self.instances
            .get(arn)
            .cloned()
            .unwrap_or_else(|| arn_tail(arn).to_string())
    }
}

/// A described task as the pages show it.
pub fn task_info(task: &aws_sdk_ecs::types::Task, places: &Places) -> TaskInfo {
    let arn = task.task_arn().unwrap_or_default().to_string();
    TaskInfo {
        id: arn_tail(&arn).to_string(),
        service: task
            .group()
            .and_then(|g| g.strip_prefix("service:"))
            .map(str::to_string),
        task_definition: task
            .task_definition_arn()
            .map(|t| arn_tail(t).to_string())
            .unwrap_or_default(),
        started_by: task.started_by().map(str::to_string),
        last_status: task.last_status().unwrap_or_default().to_string(),
        instance: places.instance(task.container_instance_arn().unwrap_or_default()),
        started_at: task.started_at().map(rfc3339),
        stopped_at: task.stopped_at().map(rfc3339),
        stop_code: task.stop_code().map(|c| c.as_str().to_string()),
        stopped_reason: task.stopped_reason().map(str::to_string),
        containers: task
            .containers()
            .iter()
            .map(|c| TaskContainer {
                name: c.name().unwrap_or_default().to_string(),
                last_status: c.last_status().map(str::to_string),
                exit_code: c.exit_code(),
                reason: c.reason().map(str::to_string),
                gpus: c
                    .gpu_ids()
                    .iter()
                    .map(|uuid| TaskGpu {
                        uuid: uuid.clone(),
                        index: places.gpus.get(uuid).copied(),
                    })
                    .collect(),
            })
            .collect(),
        arn,
    }
}

/// Which tasks of a cluster to list. (ECS lists by `startedBy` only without other filters, so a
/// deployment's tasks are its service's, kept by [`TaskInfo::started_by`].)
#[derive(Clone, Debug, Default)]
pub struct TaskQuery {
    pub stopped: bool,
    pub service: Option<String>,
}

/// The tasks of `cluster` the query names, described.
pub async fn tasks(
    ecs: &aws_sdk_ecs::Client,
    places: &Places,
    cluster: &str,
    query: &TaskQuery,
) -> Result<Vec<TaskInfo>, String> {
    let mut arns = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = ecs
            .list_tasks()
            .cluster(cluster)
            .desired_status(if query.stopped {
                DesiredStatus::Stopped
            } else {
                DesiredStatus::Running
            })
            .set_service_name(query.service.clone())
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| ecs_failed("ListTasks", e))?;
        arns.extend(page.task_arns().iter().cloned());
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    let pages: Vec<Vec<TaskInfo>> = stream::iter(arns.chunks(TASKS_PER_CALL).map(<[_]>::to_vec))
        .map(|chunk| async move {
            let out = ecs
                .describe_tasks()
                .cluster(cluster)
                .set_tasks(Some(chunk))
                .send()
                .await
                .map_err(|e| ecs_failed("DescribeTasks", e))?;
            Ok::<_, String>(out.tasks().iter().map(|t| task_info(t, places)).collect())
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect()
        .await?;
    Ok(pages.into_iter().flatten().collect())
}

/// The tasks deployment `deployment` of `cluster/service` started: those still meant to run,
/// and those that stopped, most recent first.
pub async fn deployment_tasks(
    ecs: &aws_sdk_ecs::Client,
    places: &Places,
    cluster: &str,
    service: &str,
    deployment: &str,
) -> Result<(Vec<TaskInfo>, Vec<TaskInfo>), String> {
    let mut found = Vec::with_capacity(2);
    for stopped in [false, true] {
        let query = TaskQuery {
            stopped,
            service: Some(service.to_string()),
        };
        let mut list: Vec<TaskInfo> = tasks(ecs, places, cluster, &query)
            .await?
            .into_iter()
            .filter(|t| t.started_by.as_deref() == Some(deployment))
            .collect();
        list.sort_by(|a, b| {
            b.stopped_at
                .cmp(&a.stopped_at)
                .then_with(|| a.instance.cmp(&b.instance))
                .then_with(|| a.id.cmp(&b.id))
        });
        found.push(list);
    }
    let stopped = found.pop().unwrap_or_default();
    let running = found.pop().unwrap_or_default();
    Ok((running, stopped))
}

/// A cluster's activity over ECS.
pub struct EcsActivity {
    ecs: aws_sdk_ecs::Client,
    fleet: Arc<dyn FleetFeed>,
}

impl EcsActivity {
    pub fn new(ecs: aws_sdk_ecs::Client, fleet: Arc<dyn FleetFeed>) -> EcsActivity {
        EcsActivity { ecs, fleet }
    }

    async fn read_events(
        &self,
        cluster: String,
        services: Vec<String>,
    ) -> Result<Vec<ClusterEvent>, String> {
        let ecs = &self.ecs;
        let cluster = &cluster;
        let pages: Vec<Vec<ClusterEvent>> =
            stream::iter(services.chunks(SERVICES_PER_CALL).map(<[_]>::to_vec))
                .map(|chunk| async move {
                    let out = ecs
                        .describe_services()
                        .cluster(cluster)
                        .set_services(Some(chunk))
                        .send()
                        .await
                        .map_err(|e| ecs_failed("DescribeServices", e))?;
                    Ok::<_, String>(
                        out.services()
                            .iter()
                            .flat_map(|s| {
                                let name = s.service_name().unwrap_or_default().to_string();
                                s.events().iter().map(move |e| {
                                    let message = e.message().unwrap_or_default().to_string();
                                    ClusterEvent {
                                        service: name.clone(),
                                        id: e.id().unwrap_or_default().to_string(),
                                        at: e.created_at().map(rfc3339).unwrap_or_default(),
                                        kind: EventKind::of(&message),
                                        message,
                                    }
                                })
                            })
                            .collect(),
                    )
                })
                .buffer_unordered(CONCURRENCY)
                .try_collect()
                .await?;
        Ok(pages.into_iter().flatten().collect())
    }
}

impl ClusterActivity for EcsActivity {
    fn events(
        &self,
        cluster: String,
        services: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<ClusterEvent>, String>> {
        Box::pin(self.read_events(cluster, services))
    }

    fn stopped_tasks(
        &self,
        cluster: String,
        service: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<TaskInfo>, String>> {
        Box::pin(async move {
            let places = Places::of(self.fleet.as_ref(), &cluster);
            let query = TaskQuery {
                stopped: true,
                service,
            };
            tasks(&self.ecs, &places, &cluster, &query).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_sort_as_text_whatever_their_precision() {
        let whole = aws_sdk_ecs::primitives::DateTime::from_secs(1_796_040_000);
        let half =
            aws_sdk_ecs::primitives::DateTime::from_secs_and_nanos(1_796_040_000, 500_000_000);
        assert!(rfc3339(&whole) < rfc3339(&half));
        assert!(rfc3339(&whole).ends_with(".000Z"));
    }

    #[test]
    fn a_task_names_its_instance_and_gpus_from_the_snapshot() {
        let mut places = Places::default();
        places.instances.insert(
            "arn:aws:ecs:us-east-1:1:container-instance/prod/abc".into(),
            "i-0123".into(),
        );
        places.gpus.insert("GPU-1".into(), 3);
        let task = aws_sdk_ecs::types::Task::builder()
            .task_arn("arn:aws:ecs:us-east-1:1:task/prod/t1")
            .group("service:embed")
            .task_definition_arn("arn:aws:ecs:us-east-1:1:task-definition/embed:4")
            .container_instance_arn("arn:aws:ecs:us-east-1:1:container-instance/prod/abc")
            .stop_code(aws_sdk_ecs::types::TaskStopCode::EssentialContainerExited)
            .stopped_reason("Essential container in task exited")
            .containers(
                aws_sdk_ecs::types::Container::builder()
                    .name("main")
                    .exit_code(137)
                    .gpu_ids("GPU-1")
                    .gpu_ids("GPU-9")
                    .build(),
            )
            .build();
        let info = task_info(&task, &places);
        assert_eq!(info.id, "t1");
        assert_eq!(info.service.as_deref(), Some("embed"));
        assert_eq!(info.task_definition, "embed:4");
        assert_eq!(info.instance, "i-0123");
        assert_eq!(info.stop_code.as_deref(), Some("EssentialContainerExited"));
        assert_eq!(info.containers[0].exit_code, Some(137));
        assert_eq!(info.containers[0].gpus[0].index, Some(3));
        assert_eq!(info.containers[0].gpus[1].index, None);
        let unknown = task_info(
            &aws_sdk_ecs::types::Task::builder()
                .container_instance_arn("arn:aws:ecs:us-east-1:1:container-instance/prod/zzz")
                .build(),
            &places,
        );
        assert_eq!(unknown.instance, "zzz");
    }
}
