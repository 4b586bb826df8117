//! A new GPU service for a team: the CreateService request (and, from the template, the
//! RegisterTaskDefinition before it) read as the AWS SDK reads them, checked against the fleet
//! and its capacity providers, pre-checked for its whole desired count with what its provider
//! would launch, judged against the team's budget (`prepare.rs`, with the rules that need more
//! than the request in `rules.rs`) — then registered, created and watched, each step audited,
//! under the new service's lock (`send.rs`).

mod prepare;
mod rules;
mod send;

use serde_json::{Map, Value};

use self::{prepare::prepare, send::send_create};
use crate::{
    model::{
        approval::CreationAsked,
        audit::{AuditAction, AuditIntent, Lock},
        budget::{BudgetVerdict, Delta, TaskGpu},
        deployment::{DeployAnswer, DeployRequest},
        identity::Actor,
        new_service::{refusal, NewServiceCheck, NewServiceForm},
        rollout::Verdict,
        sent::CREATED_TEAM_PATH,
        task_definition::{DiffChange, DiffEntry},
        ServiceError, ServiceRef,
    },
    service::{
        budget::{self, Approved},
        context::ServiceContext,
        deployments::verdict_words,
        detached, lookup, requests,
    },
};

/// A new service checked: what the page shows, and what is sent.
struct Prepared {
    check: NewServiceCheck,
    create: Map<String, Value>,
    register: Option<Map<String, Value>>,
    desired: u32,
    /// What one task asks of the GPUs, as the budget counts it.
    per_task: TaskGpu,
}

/// The audit intent of creating `cluster/service`.
fn intent(actor: &Actor, cluster: &str, service: &str, form: &NewServiceForm) -> AuditIntent {
    AuditIntent {
        description: Some(form.description.trim().to_string()).filter(|d| !d.is_empty()),
        ..AuditIntent::by(actor, AuditAction::Create, format!("{cluster}/{service}"))
    }
}

/// What the new service would be, checked, with nothing created.
pub async fn check(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: &NewServiceForm,
) -> Result<NewServiceCheck, ServiceError> {
    Ok(prepare(context, actor, cluster, form, false).await?.check)
}

/// Creates the service after the checks (again, on the fleet as it is now): the revision from the
/// template registered first (its own audit record), then CreateService (a `create` record), and
/// its first deployment watched. A pre-check that does not complete refuses unless forced; past
/// the team's budget it becomes a request for approval, as a deploy does.
pub async fn create(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: NewServiceForm,
) -> Result<DeployAnswer, ServiceError> {
    create_as(context, actor, cluster, form, None).await
}

/// Creates the service of an approved request as its requester's (the checks run again; the
/// team's use may not have grown past what the request showed).
pub async fn create_approved(
    context: &ServiceContext,
    requester: &Actor,
    cluster: &str,
    form: NewServiceForm,
    approved: Approved,
) -> Result<DeployAnswer, ServiceError> {
    create_as(context, requester, cluster, form, Some(approved)).await
}

async fn create_as(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: NewServiceForm,
    approved: Option<Approved>,
) -> Result<DeployAnswer, ServiceError> {
    let prepared = prepare(context, actor, cluster, &form, true).await?;
    let name = prepared.check.service.clone();
    let pre_check = placed_or_forced(&prepared, form.force)?;
    // The team's budget is judged again under its hold, so that changes and new services sent at
    // once are counted one after the other.
    let owner = ServiceRef {
        name: name.clone(),
        team: Some(prepared.check.team.clone()).filter(|t| !t.is_empty()),
        ..ServiceRef::default()
    };
    let hold = budget::hold(context, cluster, &owner).await?;
    match (
        &approved,
        judged(context, cluster, &owner, &prepared).await?,
    ) {
        (None, Some((delta, verdict))) if verdict.over => {
            let asked = asked(
                cluster,
                &owner,
                &prepared,
                form,
                pre_check,
                (delta, verdict),
            );
            return requests::ask(context, actor, asked).await;
        }
        (Some(approval), Some((_, verdict))) => budget::covers(approval, &verdict)?,
        _ => {}
    }
    let lock = Lock::Service {
        cluster: cluster.to_string(),
        service: name.clone(),
    };
    let intent = AuditIntent {
        to_revision: None,
        diff: creation_diff(&prepared),
        pre_check: Some(pre_check),
        approved_by: approved.as_ref().map(|a| a.by.subject.clone()),
        approval_id: approved.as_ref().map(|a| a.id.clone()),
        ..intent(actor, cluster, &name, &form)
    };
    let id = context
        .audit
        .begin(intent)
        .await
        .map_err(|error| error.with_suffix("; nothing was created"))?;
    let (owned, actor, cluster, record) = (
        context.clone(),
        actor.clone(),
        cluster.to_string(),
        id.clone(),
    );
    detached::run_to_end(context, &id, async move {
        let answer = send_create(&owned, &actor, &cluster, prepared, &form, &record).await;
        // The team's budget is held until the service exists (or is refused), so that the next
        // judgment finds its record.
        if let Some(hold) = hold {
            hold.release().await;
        }
        if !matches!(answer, Err(ServiceError::NoAnswer { .. })) {
            let _ = owned.audit.unlock(lock, record).await;
        }
        answer
    })
    .await
}

/// The pre-check's verdict in words when the tasks would all be placed, or when the requester
/// chose to create the service anyway; otherwise the refusal.
fn placed_or_forced(prepared: &Prepared, force: bool) -> Result<String, ServiceError> {
    let verdict = verdict_words(&prepared.check.rollout.verdict);
    match prepared.check.rollout.verdict {
        Verdict::Completes => Ok(verdict),
        _ if force => Ok(format!("{verdict} (created anyway)")),
        _ => Err(ServiceError::PreCheck {
            message: format!(
                "the pre-check says the service's {} tasks would not all be placed; change it, or create it anyway (force)",
                prepared.desired
            ),
            check: Box::new(prepared.check.rollout.clone()),
        }),
    }
}

/// The budget's verdict on the new service of `owner`'s team, on the fleet as it is now.
async fn judged(
    context: &ServiceContext,
    cluster: &str,
    owner: &ServiceRef,
    prepared: &Prepared,
) -> Result<Option<(Delta, BudgetVerdict)>, ServiceError> {
    let snapshot = lookup::snapshot(context)?;
    budget::judge_new(
        context,
        &snapshot,
        cluster,
        owner.team.as_deref().unwrap_or_default(),
        prepared.desired,
        prepared.per_task,
        "this new service",
    )
    .await
}

/// A new service as its record's diff: everything added — its name, task definition, count and
/// team (which the budget reads until the snapshot shows the service).
fn creation_diff(prepared: &Prepared) -> String {
    let check = &prepared.check;
    let added = |path: &str, value: Value| DiffEntry {
        path: path.to_string(),
        change: DiffChange::Added,
        before: None,
        after: Some(value.to_string()),
        gpu: false,
    };
    let entries = [
        added("serviceName", Value::String(check.service.clone())),
        added(
            "taskDefinition",
            Value::String(check.task_definition.clone()),
        ),
        added("desiredCount", Value::from(prepared.desired)),
        added(CREATED_TEAM_PATH, Value::String(check.team.clone())),
    ];
    serde_json::to_string(&entries).unwrap_or_else(|_| "[]".into())
}

/// Past the budget: the request for approval of the new service, with what the approvers see of
/// it and the requests to send once approved.
fn asked<'a>(
    cluster: &'a str,
    owner: &'a ServiceRef,
    prepared: &Prepared,
    form: NewServiceForm,
    pre_check: String,
    (delta, verdict): (Delta, BudgetVerdict),
) -> requests::Asked<'a> {
    let check = &prepared.check;
    requests::Asked {
        cluster,
        service: owner,
        request: DeployRequest {
            description: form.description.clone(),
            force: form.force,
            ..DeployRequest::default()
        },
        scale: None,
        action: AuditAction::Create,
        from: String::new(),
        target: format!("{} × {}", check.task_definition, prepared.desired),
        diff: "[]".into(),
        pre_check,
        delta,
        verdict,
        creation: Some(CreationAsked {
            form,
            task_definition: check.task_definition.clone(),
            desired: prepared.desired,
            gpu: check.gpu.clone(),
            provider: check.provider.clone(),
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
