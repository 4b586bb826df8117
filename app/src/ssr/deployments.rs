//! Services and rollout pre-checks, for the server functions and the JSON API alike.

use serde_json::Value;

use crate::{
    model::{
        rollout::{pre_check as simulate, Cluster, RolloutPlan},
        task_definition::gpu_settings,
        FleetSnapshot, ServiceRef,
    },
    server_fns::deployments::{PreCheck, ServiceRow},
    ssr::{
        console::ConsoleContext,
        task_definitions::{compare, find_revision, EditFailure},
    },
};

/// The family and revision of a task definition ARN (`…:task-definition/<family>:<revision>`).
pub fn family_revision(arn: &str) -> Option<(String, u32)> {
    let tail = arn.rsplit('/').next()?;
    let (family, revision) = tail.rsplit_once(':')?;
    Some((family.to_string(), revision.parse().ok()?))
}

/// The cluster `name` of the snapshot, or a not-found naming the clusters there are.
pub fn cluster_view<'a>(
    snapshot: &'a FleetSnapshot,
    name: &str,
) -> Result<&'a crate::model::ClusterView, EditFailure> {
    snapshot
        .clusters
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| {
            EditFailure::NotFound(format!(
                "there is no cluster {name:?}; the clusters are {}",
                snapshot
                    .clusters
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// The service `name` of a cluster, or a not-found naming the services it has.
pub fn service_of<'a>(
    view: &'a crate::model::ClusterView,
    name: &str,
) -> Result<&'a ServiceRef, EditFailure> {
    view.service_list
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            EditFailure::NotFound(format!(
                "cluster {} has no service {name:?}; it has {}",
                view.name,
                view.service_list
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// The latest fleet snapshot, or why there is none yet.
pub fn snapshot(context: &ConsoleContext) -> Result<std::sync::Arc<FleetSnapshot>, EditFailure> {
    context.fleet.state().snapshot.ok_or_else(|| {
        EditFailure::Unavailable(
            "the first fleet snapshot is still being read; try again in a few seconds".into(),
        )
    })
}

/// The GPU settings of a task definition's GPU containers, in words.
fn gpu_words_of(task: &serde_json::Map<String, Value>) -> Vec<String> {
    gpu_settings(task)
        .into_iter()
        .filter(|(_, setting)| setting.uses_gpu())
        .map(|(name, setting)| format!("{name}: {}", setting.describe()))
        .collect()
}

/// The GPU settings of `family:revision`'s GPU containers, in words.
async fn gpu_words(context: &ConsoleContext, family: &str, revision: u32) -> Vec<String> {
    match find_revision(context, family, revision).await {
        Ok(Some(source)) => gpu_words_of(&source.task),
        _ => Vec::new(),
    }
}

/// Every service of the snapshot (or of `cluster`), by cluster and name, with the GPU settings
/// of the revision it runs.
pub async fn services(
    context: &ConsoleContext,
    cluster: Option<&str>,
) -> Result<Vec<ServiceRow>, EditFailure> {
    let snapshot = snapshot(context)?;
    if let Some(name) = cluster {
        cluster_view(&snapshot, name)?;
    }
    let mut rows = Vec::new();
    let mut words: std::collections::HashMap<String, Vec<String>> = Default::default();
    for view in snapshot
        .clusters
        .iter()
        .filter(|c| cluster.is_none_or(|name| c.name == name))
    {
        for service in &view.service_list {
            let (family, revision) =
                family_revision(&service.task_definition_arn).unwrap_or_default();
            if !words.contains_key(&service.task_definition_arn) {
                let found = gpu_words(context, &family, revision).await;
                words.insert(service.task_definition_arn.clone(), found);
            }
            rows.push(ServiceRow {
                cluster: view.name.clone(),
                gpu: words
                    .get(&service.task_definition_arn)
                    .cloned()
                    .unwrap_or_default(),
                service: service.clone(),
                family,
                revision,
            });
        }
    }
    Ok(rows)
}

/// One service of the snapshot.
fn find_service(
    snapshot: &FleetSnapshot,
    cluster: &str,
    service: &str,
) -> Result<ServiceRef, EditFailure> {
    service_of(cluster_view(snapshot, cluster)?, service).cloned()
}

/// The GPU request of one task of a revision's JSON, by ECS's rules.
fn request_of(task: &serde_json::Map<String, Value>) -> Result<placement::GpuRequest, EditFailure> {
    placement::rules::check_task(task).map_err(|errors| {
        EditFailure::BadRequest(format!(
            "the revision breaks ECS's GPU rules: {}",
            errors
                .iter()
                .map(|e| e.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ))
    })
}

/// The pre-check of rolling `revision` (the family's newest active one when `None`) out to
/// `cluster/service`: the diff against what runs now, and the rolling update simulated on the
/// fleet snapshot with the service's deployment configuration.
pub async fn pre_check(
    context: &ConsoleContext,
    cluster: &str,
    service: &str,
    revision: Option<u32>,
) -> Result<PreCheck, EditFailure> {
    let snapshot = snapshot(context)?;
    let found = find_service(&snapshot, cluster, service)?;
    let (family, running) = family_revision(&found.task_definition_arn).ok_or_else(|| {
        EditFailure::Unavailable(format!(
            "the service runs {:?}, which is not a task definition ARN",
            found.task_definition_arn
        ))
    })?;
    let detail = context
        .task_definitions
        .family(family.clone())
        .await
        .map_err(EditFailure::Unavailable)?
        .ok_or_else(|| EditFailure::NotFound(format!("there is no family {family:?}")))?;
    let revisions: Vec<u32> = detail.revisions.iter().map(|r| r.revision).collect();
    let target_number = match revision {
        Some(number) => number,
        None => detail
            .revisions
            .iter()
            .find(|r| r.active)
            .map(|r| r.revision)
            .unwrap_or(running),
    };
    let old = find_revision(context, &family, running)
        .await?
        .ok_or_else(|| EditFailure::NotFound(format!("{family} has no revision {running}")))?;
    let target = find_revision(context, &family, target_number)
        .await?
        .ok_or_else(|| {
            EditFailure::NotFound(format!(
                "{family} has no revision {target_number}; its revisions are {}",
                revisions
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    let plan = RolloutPlan {
        cluster: cluster.to_string(),
        service: service.to_string(),
        desired: found.desired,
        running: found.running,
        maximum_percent: found.maximum_percent.unwrap_or(200),
        minimum_healthy_percent: found.minimum_healthy_percent.unwrap_or(100),
        old: request_of(&old.task)?,
        new: request_of(&target.task)?,
    };
    let layout = Cluster::of(&snapshot, cluster, service)
        .ok_or_else(|| EditFailure::NotFound(format!("there is no cluster {cluster:?}")))?;
    let rollout = simulate(&layout, &plan);
    let comparison = if target_number == running {
        None
    } else {
        compare(context, &family, running, target_number, false).await?
    };
    let gpu = gpu_words_of(&old.task);
    Ok(PreCheck {
        service: ServiceRow {
            cluster: cluster.to_string(),
            service: found,
            family,
            revision: running,
            gpu,
        },
        target: target.detail,
        revisions,
        comparison,
        rollout,
    })
}

/// Sends deployments and watches them; implemented by the server over ECS.
pub trait Deployer: Send + Sync {
    /// Rolls `request.revision` out to `cluster/service` after the checks (the revision the
    /// user saw, the pre-check unless forced, the deploy lock), writing the audit record.
    fn deploy<'a>(
        &'a self,
        context: &'a ConsoleContext,
        cluster: String,
        service: String,
        request: crate::model::deployment::DeployRequest,
    ) -> crate::ssr::task_definitions::BoxFuture<
        'a,
        Result<crate::model::deployment::DeployAnswer, DeployRefusal>,
    >;
    /// The state of the deployment of the audit record `id`, read from ECS when no watch holds
    /// it; `None` for no such deployment.
    fn state(
        &self,
        audit: &dyn crate::ssr::audit::AuditLog,
        id: String,
    ) -> crate::ssr::task_definitions::BoxFuture<
        '_,
        Result<Option<crate::model::deployment::WatchState>, String>,
    >;
}

/// Why a deploy was not sent.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum DeployRefusal {
    /// The request is wrong (a revision of nothing, a malformed name).
    BadRequest { message: String },
    /// No such cluster, service or revision.
    NotFound { message: String },
    /// The service changed since the user looked, or another deploy is in flight.
    Conflict { message: String },
    /// The pre-check says the rollout will not complete; `force` sends it anyway.
    PreCheck {
        message: String,
        check: Box<crate::model::rollout::RolloutCheck>,
    },
    /// ECS refused UpdateService, with its code.
    Ecs { message: String },
    /// ECS or the audit log could not be reached.
    Unavailable { message: String },
}

impl DeployRefusal {
    pub fn message(&self) -> &str {
        match self {
            DeployRefusal::BadRequest { message }
            | DeployRefusal::NotFound { message }
            | DeployRefusal::Conflict { message }
            | DeployRefusal::PreCheck { message, .. }
            | DeployRefusal::Ecs { message }
            | DeployRefusal::Unavailable { message } => message,
        }
    }
}

impl From<EditFailure> for DeployRefusal {
    fn from(failure: EditFailure) -> Self {
        match failure {
            EditFailure::BadRequest(message) => DeployRefusal::BadRequest { message },
            EditFailure::NotFound(message) => DeployRefusal::NotFound { message },
            EditFailure::Unavailable(message) => DeployRefusal::Unavailable { message },
        }
    }
}
