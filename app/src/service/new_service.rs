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
        audit::{AuditAction, AuditIntent, Lock},
        deployment::DeployAnswer,
        identity::Actor,
        new_service::{refusal, NewServiceCheck, NewServiceForm},
        rollout::Verdict,
        ServiceError,
    },
    service::{context::ServiceContext, detached},
};

/// A new service checked: what the page shows, and what is sent.
struct Prepared {
    check: NewServiceCheck,
    create: Map<String, Value>,
    register: Option<Map<String, Value>>,
    desired: u32,
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
/// the team's budget it is refused with the arithmetic.
pub async fn create(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: NewServiceForm,
) -> Result<DeployAnswer, ServiceError> {
    let prepared = prepare(context, actor, cluster, &form, true).await?;
    let name = prepared.check.service.clone();
    if prepared.check.rollout.verdict != Verdict::Completes && !form.force {
        return Err(ServiceError::PreCheck {
            message: format!(
                "the pre-check says the service's {} tasks would not all be placed; change it, or create it anyway (force)",
                prepared.desired
            ),
            check: Box::new(prepared.check.rollout.clone()),
        });
    }
    if let Some(verdict) = prepared.check.budget.as_ref().filter(|v| v.over) {
        return Err(ServiceError::conflict(format!(
            "{} Ask the team's approvers to raise the budget, or create it with fewer tasks.",
            verdict.arithmetic
        )));
    }
    let lock = Lock::Service {
        cluster: cluster.to_string(),
        service: name.clone(),
    };
    let intent = AuditIntent {
        to_revision: None,
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
        if !matches!(answer, Err(ServiceError::NoAnswer { .. })) {
            let _ = owned.audit.unlock(lock, record).await;
        }
        answer
    })
    .await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
