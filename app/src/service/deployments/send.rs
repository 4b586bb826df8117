//! The one path a change of a service takes once its own checks pass — a deploy, a rollback or a
//! change of the desired count, sent directly or as an approved request's: who may change the
//! service, then the team's budget judged under its hold (past it, a request for approval
//! instead, unless the change carries an approval that covers it), the audit intent, and the
//! AWS call as a task that runs to its end whatever the request does.

use std::future::Future;

use crate::{
    model::{
        audit::AuditIntent,
        budget::{BudgetVerdict, Delta},
        deployment::DeployAnswer,
        identity::Actor,
        FleetSnapshot, ServiceError, ServiceRef,
    },
    service::{
        audit,
        budget::{self, Approved},
        context::ServiceContext,
        detached, requests,
    },
};

/// Who a change is sent as: the person who asked for it, and the approval it carries when it
/// waited for one.
pub(super) struct Sender<'a> {
    pub actor: &'a Actor,
    pub approved: Option<Approved>,
}

impl Sender<'_> {
    /// `intent` with the approver and the request, when the change was approved.
    pub fn stamp(&self, intent: AuditIntent) -> AuditIntent {
        AuditIntent {
            approved_by: self.approved.as_ref().map(|a| a.by.subject.clone()),
            approval_id: self.approved.as_ref().map(|a| a.id.clone()),
            ..intent
        }
    }

    /// The policy's rule for `service` (`resource` in the audit log): a refusal is audited
    /// with `refused` as its intent.
    pub async fn may_change(
        &self,
        context: &ServiceContext,
        service: &ServiceRef,
        resource: &str,
        refused: AuditIntent,
    ) -> Result<(), ServiceError> {
        match context.policy.may_change(
            self.actor,
            service.team.as_deref(),
            &format!("Service {resource}"),
        ) {
            Ok(()) => Ok(()),
            Err(reason) => Err(audit::refused(
                context,
                self.stamp(refused),
                ServiceError::forbidden(reason),
            )
            .await),
        }
    }
}

/// Judges `change` against its team's budget under the budget's hold, so that changes sent at
/// once are counted one after the other. Past the budget without an approval, the change
/// becomes the request `ask` builds; with one, the approval must cover it. Then the intent is
/// written (a crash after it leaves a record a reconcile settles; the next judgment counts it,
/// so the hold goes) and `send` runs, with the record's id, to its end.
pub(super) async fn gate_then_send<'a, Ask, Send, Sent>(
    context: &ServiceContext,
    sender: &Sender<'_>,
    snapshot: &FleetSnapshot,
    change: budget::Change<'a>,
    intent: AuditIntent,
    ask: Ask,
    send: Send,
) -> Result<DeployAnswer, ServiceError>
where
    Ask: FnOnce(Delta, BudgetVerdict) -> requests::Asked<'a>,
    Send: FnOnce(ServiceContext, String) -> Sent,
    Sent: Future<Output = Result<DeployAnswer, ServiceError>> + std::marker::Send + 'static,
{
    let hold = budget::hold(context, change.cluster, change.service).await?;
    match (
        &sender.approved,
        budget::judge_change(context, snapshot, change).await?,
    ) {
        (None, Some((delta, verdict))) if verdict.over => {
            return requests::ask(context, sender.actor, ask(delta, verdict)).await;
        }
        (Some(approval), Some((_, verdict))) => budget::covers(approval, &verdict)?,
        _ => {}
    }
    let id = context
        .audit
        .begin(sender.stamp(intent))
        .await
        .map_err(|error| error.with_suffix("; nothing was sent"))?;
    if let Some(hold) = hold {
        hold.release().await;
    }
    let sending = send(context.clone(), id.clone());
    detached::run_to_end(context, &id, sending).await
}
