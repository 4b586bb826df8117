//! Services and their rollouts: every service with the revision it runs and the capacity
//! pre-check of rolling a revision out (here); the deploy or rollback itself with its checks,
//! deploy lock and audit record (`deploy.rs`); a change of the desired count (`scale.rs`);
//! retiring a service (`retire.rs`); and the state of a rollout, and the
//! reconciliation of the audit log with ECS at start (`state.rs`).

mod deploy;
mod retire;
mod scale;
mod send;
mod state;

pub use deploy::{deploy, deploy_approved, restart, rollback};
pub(crate) use deploy::{lock_or_refuse, verdict_words};
pub use retire::{retire, retire_preview};
pub use scale::{scale, scale_approved};
pub use state::{deployment_state, reconcile, settle_all, unsettled, GRACE};

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::{
    model::{
        arn::{RevisionRef, TaskDefinitionId},
        deployment::{PreCheck, ServiceRow},
        identity::Actor,
        identity::Permission,
        rollout::{pre_check as simulate, Cluster, RolloutPlan},
        task_definition::{gpu_settings, SourceRevision},
        FleetSnapshot, ServiceError, ServiceRef,
    },
    service::{
        context::ServiceContext,
        lookup,
        task_definitions::{compare, find_revision},
    },
};

/// The GPU settings of a task definition's GPU containers, in words.
fn gpu_words_of(task: &Map<String, Value>) -> Vec<String> {
    gpu_settings(task)
        .into_iter()
        .filter(|(_, setting)| setting.uses_gpu())
        .map(|(name, setting)| format!("{name}: {}", setting.describe()))
        .collect()
}

/// The GPU settings of `revision`'s GPU containers, in words, or why they could not be read.
async fn gpu_words(
    context: &ServiceContext,
    revision: &TaskDefinitionId,
) -> Result<Vec<String>, String> {
    match find_revision(context, &revision.family, revision.revision).await {
        Ok(Some(source)) => Ok(gpu_words_of(&source.task)),
        Ok(None) => Err(format!("ECS has no revision {revision}")),
        Err(error) => Err(error.message().to_string()),
    }
}

/// Every service of the snapshot (or of `cluster`), by cluster and name, with the GPU settings
/// of the revision it runs.
pub async fn services(
    context: &ServiceContext,
    cluster: Option<&str>,
) -> Result<Vec<ServiceRow>, ServiceError> {
    let snapshot = lookup::snapshot(context)?;
    lookup::known_cluster(&snapshot, cluster)?;
    let shown = || {
        snapshot
            .clusters
            .iter()
            .filter(|c| cluster.is_none_or(|name| c.name == name))
    };
    // Each running revision once, all at once: a slow or throttled ECS costs one wait, not one
    // per service.
    let mut arns: Vec<String> = shown()
        .flat_map(|c| c.service_list.iter())
        .map(|s| s.task_definition_arn.clone())
        .collect();
    arns.sort();
    arns.dedup();
    let found = futures::future::join_all(arns.iter().map(|arn| async move {
        let runs = TaskDefinitionId::parse(arn).unwrap_or_else(|| TaskDefinitionId::new("", 0));
        gpu_words(context, &runs).await
    }))
    .await;
    let words: HashMap<String, Result<Vec<String>, String>> = arns.into_iter().zip(found).collect();
    let mut rows = Vec::new();
    for view in shown() {
        for service in &view.service_list {
            let runs = TaskDefinitionId::parse(&service.task_definition_arn)
                .unwrap_or_else(|| TaskDefinitionId::new("", 0));
            let (gpu, gpu_unread) = match words.get(&service.task_definition_arn) {
                Some(Ok(gpu)) => (gpu.clone(), None),
                Some(Err(why)) => (Vec::new(), Some(why.clone())),
                None => (Vec::new(), Some("it was not asked for".to_string())),
            };
            rows.push(ServiceRow {
                cluster: view.name.clone(),
                gpu,
                gpu_unread,
                service: service.clone(),
                family: runs.family,
                revision: runs.revision,
            });
        }
    }
    Ok(rows)
}

/// A service of the snapshot and the revision it runs.
pub(super) fn running(
    snapshot: &FleetSnapshot,
    cluster: &str,
    service: &str,
) -> Result<(ServiceRef, TaskDefinitionId), ServiceError> {
    let found = lookup::service(lookup::cluster(snapshot, cluster)?, service)?.clone();
    let runs = TaskDefinitionId::parse(&found.task_definition_arn).ok_or_else(|| {
        ServiceError::unavailable(format!(
            "the service runs {:?}, which is not a task definition ARN",
            found.task_definition_arn
        ))
    })?;
    Ok((found, runs))
}

/// The revision number a reference names in the family the service runs.
pub(super) fn revision_number(reference: &RevisionRef, family: &str) -> Result<u32, ServiceError> {
    reference.of_family(family).map_err(ServiceError::invalid)
}

/// The GPU request of one task of a revision's JSON, by ECS's rules.
/// What one task needs of an instance besides GPUs, with the service's constraints.
pub(crate) fn needs_of(
    task: &Map<String, Value>,
    service_constraints: &[Value],
) -> Result<placement::resources::Needs, ServiceError> {
    placement::resources::needs_of(task, service_constraints).map_err(|why| {
        ServiceError::invalid(format!(
            "the pre-check cannot evaluate a placement constraint: {why}"
        ))
    })
}

pub(crate) fn request_of(task: &Map<String, Value>) -> Result<placement::GpuRequest, ServiceError> {
    placement::rules::check_task(task).map_err(|errors| {
        ServiceError::invalid(format!(
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
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    service: &str,
    revision: Option<RevisionRef>,
) -> Result<PreCheck, ServiceError> {
    let snapshot = lookup::snapshot(context)?;
    let (found, runs) = running(&snapshot, cluster, service)?;
    let family = runs.family.clone();
    let wanted = revision.map(|r| revision_number(&r, &family)).transpose()?;
    let (numbers, old, (target_number, target)) =
        old_and_target(context, &family, runs.revision, wanted).await?;
    let mut plan = rollout_plan(cluster, service, &found, &old, &target)?;
    plan.growth =
        crate::service::capacity::growth::growth_of(context, &snapshot, cluster, &found).await?;
    let provider = crate::service::capacity::growth::provider_of(&found.capacity_provider_strategy);
    let layout = Cluster::of_provider(&snapshot, cluster, service, provider)
        .ok_or_else(|| lookup::no_cluster(&snapshot, cluster))?;
    let simulated = plan.clone();
    let rollout = context
        .heavy
        .run(move || simulate(&layout, &simulated))
        .await?;
    let comparison = if target_number == runs.revision {
        None
    } else {
        compare(context, actor, &family, runs.revision, target_number, false).await?
    };
    let deploy = Permission::of(context.policy.may_change(
        actor,
        found.team.as_deref(),
        &format!("Service {cluster}/{service}"),
    ));
    let action = if target_number < runs.revision {
        "this rollback"
    } else {
        "this deploy"
    };
    // A budget that cannot be judged now is said at the deploy, which judges it again.
    let target_id = TaskDefinitionId::new(family.clone(), target_number);
    let budget = crate::service::budget::judge_change(
        context,
        &snapshot,
        crate::service::budget::Change {
            cluster,
            service: &found,
            before: (found.desired, &runs),
            after: (found.desired, &target_id),
            what: action,
        },
    )
    .await
    .ok()
    .flatten()
    .map(|(_, verdict)| verdict);
    Ok(PreCheck {
        deploy,
        budget,
        service: ServiceRow {
            cluster: cluster.to_string(),
            service: found,
            family,
            revision: runs.revision,
            gpu: gpu_words_of(&old.task),
            gpu_unread: None,
        },
        target: target.detail,
        revisions: numbers,
        comparison,
        rollout,
    })
}

/// The family's revision numbers, the revision that runs (`running`) and the one to roll out:
/// `wanted`, or else the newest active one.
async fn old_and_target(
    context: &ServiceContext,
    family: &str,
    running: u32,
    wanted: Option<u32>,
) -> Result<(Vec<u32>, SourceRevision, (u32, SourceRevision)), ServiceError> {
    let revisions = context.ecs.revisions(family.to_string()).await?;
    if revisions.is_empty() {
        return Err(ServiceError::not_found(format!(
            "there is no family {family:?}"
        )));
    }
    let numbers: Vec<u32> = revisions.iter().map(|r| r.revision).collect();
    let target_number = wanted.unwrap_or_else(|| {
        revisions
            .iter()
            .find(|r| r.active)
            .map_or(running, |r| r.revision)
    });
    let old = find_revision(context, family, running)
        .await?
        .ok_or_else(|| ServiceError::not_found(format!("{family} has no revision {running}")))?;
    let target = find_revision(context, family, target_number)
        .await?
        .ok_or_else(|| {
            ServiceError::not_found(format!(
                "{family} has no revision {target_number}; its revisions are {}",
                numbers
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    Ok((numbers, old, (target_number, target)))
}

/// The rollout of `target` over `old` on `found`, as the simulation takes it.
fn rollout_plan(
    cluster: &str,
    service: &str,
    found: &ServiceRef,
    old: &SourceRevision,
    target: &SourceRevision,
) -> Result<RolloutPlan, ServiceError> {
    Ok(RolloutPlan {
        cluster: cluster.to_string(),
        service: service.to_string(),
        desired: found.desired,
        running: found.running,
        maximum_percent: found.maximum_percent.unwrap_or(200),
        minimum_healthy_percent: found.minimum_healthy_percent.unwrap_or(100),
        old: request_of(&old.task)?,
        new: request_of(&target.task)?,
        old_needs: needs_of(&old.task, &found.placement_constraints)?,
        new_needs: needs_of(&target.task, &found.placement_constraints)?,
        strategy: found.strategy.clone(),
        placement_strategy: found.placement_strategy.clone(),
        growth: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::fake::Fake;
    use std::sync::atomic::Ordering;

    #[tokio::test]
    async fn a_revision_ecs_did_not_describe_is_not_listed_as_one_without_gpus() {
        let fake = Fake::new();
        let rows = services(&fake.context(), None).await.expect("listed");
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].gpu_unread, None);
        assert!(rows[0].gpu[0].contains("MPS 2048 MiB"), "{:?}", rows[0].gpu);

        fake.throttle_revision_reads.store(true, Ordering::SeqCst);
        let rows = services(&fake.context(), None).await.expect("listed");
        assert!(rows[0].gpu.is_empty(), "{:?}", rows[0].gpu);
        let why = rows[0].gpu_unread.as_deref().unwrap_or_default();
        assert!(why.contains("ECS is throttling"), "{why}");

        // A running revision ECS no longer has is said so, not shown as one without GPUs.
        fake.throttle_revision_reads.store(false, Ordering::SeqCst);
        *fake.registered.lock().unwrap_or_else(|p| p.into_inner()) = 0;
        let rows = services(&fake.context(), None).await.expect("listed");
        assert_eq!(
            rows[0].gpu_unread.as_deref(),
            Some("ECS has no revision embed:1")
        );
    }
}
