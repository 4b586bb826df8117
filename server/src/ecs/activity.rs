//! What happens in a cluster, read from ECS: every service's events (DescribeServices, ten
//! services a call), and tasks with their containers, GPUs and stop reasons (ListTasks and
//! DescribeTasks, a hundred tasks a call). Container instances and GPUs are named from the
//! fleet snapshot: the EC2 instance ID and the GPU's index.

use std::collections::HashMap;

use app::{
    model::{
        activity::{ClusterEvent, EventKind, StopCode, TaskContainer, TaskGpu, TaskInfo},
        arn::arn_tail,
        ServiceError,
    },
    service::ports::{FleetFeed, TaskQuery},
};
use aws_sdk_ecs::types::DesiredStatus;
use futures::{stream, StreamExt, TryStreamExt};

use super::Ecs;
use crate::aws::{errors, rfc3339};

/// DescribeServices or DescribeTasks calls in flight at once.
const CONCURRENCY: usize = 4;
/// Services per DescribeServices call.
const SERVICES_PER_CALL: usize = 10;
/// Tasks per DescribeTasks call.
const TASKS_PER_CALL: usize = 100;

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
        stop_code: task.stop_code().map(|c| StopCode::from(c.as_str())),
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

impl Ecs {
    /// The tasks of `cluster` the query names, described.
    pub async fn read_tasks(
        &self,
        cluster: &str,
        query: &TaskQuery,
    ) -> Result<Vec<TaskInfo>, ServiceError> {
        let places = Places::of(self.fleet.as_ref(), cluster);
        let pages = self
            .client
            .list_tasks()
            .cluster(cluster)
            .desired_status(if query.stopped {
                DesiredStatus::Stopped
            } else {
                DesiredStatus::Running
            })
            .set_service_name(query.service.clone())
            .into_paginator()
            .send();
        let mut arns = Vec::new();
        self.paced_pages("ListTasks", pages, |page| {
            arns.extend(page.task_arns().iter().cloned());
            page.next_token().is_some()
        })
        .await?;
        let (client, places) = (&self.client, &places);
        let described: Vec<Vec<TaskInfo>> =
            stream::iter(arns.chunks(TASKS_PER_CALL).map(<[_]>::to_vec))
                .map(|chunk| async move {
                    self.paced("DescribeTasks").await?;
                    let out = client
                        .describe_tasks()
                        .cluster(cluster)
                        .set_tasks(Some(chunk))
                        .send()
                        .await
                        .map_err(|e| errors::ecs_read("DescribeTasks", &e))?;
                    Ok::<_, ServiceError>(
                        out.tasks().iter().map(|t| task_info(t, places)).collect(),
                    )
                })
                .buffer_unordered(CONCURRENCY)
                .try_collect()
                .await?;
        Ok(described.concat())
    }

    /// The events ECS keeps for each of `services` of `cluster`.
    pub async fn read_events(
        &self,
        cluster: &str,
        services: &[String],
    ) -> Result<Vec<ClusterEvent>, ServiceError> {
        let client = &self.client;
        let pages: Vec<Vec<ClusterEvent>> =
            stream::iter(services.chunks(SERVICES_PER_CALL).map(<[_]>::to_vec))
                .map(|chunk| async move {
                    self.paced("DescribeServices").await?;
                    let out = client
                        .describe_services()
                        .cluster(cluster)
                        .set_services(Some(chunk))
                        .send()
                        .await
                        .map_err(|e| errors::ecs_read("DescribeServices", &e))?;
                    Ok::<_, ServiceError>(
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
        Ok(pages.concat())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(info.stop_code, Some(StopCode::EssentialContainerExited));
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
