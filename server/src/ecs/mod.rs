//! ECS through aws-sdk-ecs, for the use cases: the [`EcsReads`] and [`EcsWrites`] ports over
//! one SDK client. Reads fail as "unavailable"; a write that ECS refuses fails as "refused by
//! AWS", with ECS's code, and a write that got no answer as "no answer" — it may have been made.

pub mod activity;
pub mod services;
pub mod task_definitions;

use std::sync::Arc;

use app::{
    model::{
        activity::{ClusterEvent, TaskInfo},
        deployment::LiveService,
        task_definition::{RevisionDetail, SourceRevision},
        ServiceError,
    },
    service::ports::{
        BoxFuture, EcsReads, EcsWrites, FleetFeed, Registered, ServiceUpdated, TaskQuery,
    },
};
use serde_json::{Map, Value};

/// ECS, read and written through one SDK client.
pub struct Ecs {
    client: aws_sdk_ecs::Client,
    /// The tag key naming a task definition's team.
    team_tag: String,
    /// Names the instances and GPUs of tasks, as the snapshot knows them.
    fleet: Arc<dyn FleetFeed>,
}

impl Ecs {
    pub fn new(client: aws_sdk_ecs::Client, team_tag: &str, fleet: Arc<dyn FleetFeed>) -> Ecs {
        Ecs {
            client,
            team_tag: team_tag.to_string(),
            fleet,
        }
    }
}

impl EcsReads for Ecs {
    fn latest_revisions(&self) -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>> {
        Box::pin(async move {
            self.read_latest_revisions()
                .await
                .map_err(ServiceError::unavailable)
        })
    }

    fn revisions(
        &self,
        family: String,
    ) -> BoxFuture<'_, Result<Vec<RevisionDetail>, ServiceError>> {
        Box::pin(async move {
            self.read_revisions(family)
                .await
                .map_err(ServiceError::unavailable)
        })
    }

    fn revision(
        &self,
        family: String,
        revision: u32,
    ) -> BoxFuture<'_, Result<Option<SourceRevision>, ServiceError>> {
        Box::pin(async move {
            self.describe(&format!("{family}:{revision}"))
                .await
                .map_err(ServiceError::unavailable)
        })
    }

    fn service(
        &self,
        cluster: String,
        service: String,
    ) -> BoxFuture<'_, Result<LiveService, ServiceError>> {
        Box::pin(async move {
            self.live(&cluster, &service)
                .await
                .map_err(ServiceError::unavailable)
        })
    }

    fn events(
        &self,
        cluster: String,
        services: Vec<String>,
    ) -> BoxFuture<'_, Result<Vec<ClusterEvent>, ServiceError>> {
        Box::pin(async move {
            self.read_events(&cluster, &services)
                .await
                .map_err(ServiceError::unavailable)
        })
    }

    fn tasks(
        &self,
        cluster: String,
        query: TaskQuery,
    ) -> BoxFuture<'_, Result<Vec<TaskInfo>, ServiceError>> {
        Box::pin(async move {
            self.read_tasks(&cluster, &query)
                .await
                .map_err(ServiceError::unavailable)
        })
    }
}

impl EcsWrites for Ecs {
    fn register(
        &self,
        task: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Registered, ServiceError>> {
        Box::pin(async move { self.register_task(task).await })
    }

    fn update_service(
        &self,
        cluster: String,
        service: String,
        task_definition: String,
    ) -> BoxFuture<'_, Result<ServiceUpdated, ServiceError>> {
        Box::pin(async move { self.update(&cluster, &service, &task_definition).await })
    }
}
