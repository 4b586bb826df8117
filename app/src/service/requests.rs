//! Asking for approval: a change past its team's budget kept as a request (one per service and
//! change, and a bounded number per team), audited as the requester's. The decisions about
//! requests are in [`crate::service::approvals`].

use crate::{
    model::{
        approval::{ApprovalRequest, ApprovalState, CreationAsked},
        audit::{AuditAction, AuditIntent},
        budget::{BudgetVerdict, Delta},
        deployment::{DeployAnswer, DeployRequest, ScaleRequest},
        identity::Actor,
        ServiceError, ServiceRef,
    },
    service::{audit, context::ServiceContext, ports::Decision},
};

/// Requests one team may have waiting on one cluster: past it, a new one is refused until some
/// are decided or withdrawn, so that one team cannot bury the others' in the approvers' list.
pub const MAX_PENDING_PER_TEAM: u64 = 20;

/// What a deploy past the budget asks for.
pub struct Asked<'a> {
    pub cluster: &'a str,
    pub service: &'a ServiceRef,
    pub request: DeployRequest,
    /// A change of the desired count rather than a deploy.
    pub scale: Option<ScaleRequest>,
    pub action: AuditAction,
    pub from: String,
    pub target: String,
    pub diff: String,
    pub pre_check: String,
    pub delta: Delta,
    pub verdict: BudgetVerdict,
    /// A new service rather than a change of one.
    pub creation: Option<CreationAsked>,
}

/// Keeps a change past its team's budget as a request waiting for approval, audited as the
/// requester's; the answer names the request. The same change of the same service already
/// waiting is that request (nothing new is kept); a team with [`MAX_PENDING_PER_TEAM`] requests
/// waiting on the cluster is refused until some are decided.
pub async fn ask(
    context: &ServiceContext,
    actor: &Actor,
    asked: Asked<'_>,
) -> Result<DeployAnswer, ServiceError> {
    let team = asked.service.team.clone().unwrap_or_default();
    let resource = format!("{}/{}", asked.cluster, asked.service.name);
    let request = request_of(actor, &asked);
    let waiting: u64 = context
        .approvals
        .pending_counts(actor.subject.clone(), None)
        .await?
        .iter()
        .filter(|c| c.team == team && c.cluster == asked.cluster)
        .map(|c| c.count)
        .sum();
    if waiting >= MAX_PENDING_PER_TEAM {
        return Err(ServiceError::conflict(format!(
            "Team {team} already has {waiting} requests waiting for approval on {}, the most one team may have; nothing was sent or asked for. Withdraw the ones no longer needed, or wait for decisions, then ask again.",
            asked.cluster
        )));
    }
    let description = Some(request.note().to_string()).filter(|d| !d.is_empty());
    let created = context
        .approvals
        .create(request)
        .await
        .map_err(|error| error.with_suffix("; nothing was sent or asked for"))?;
    let id = created.id;
    if created.existing {
        return Ok(DeployAnswer {
            audit_id: String::new(),
            deployment_id: None,
            request_id: None,
            action: asked.action,
            approval: Some(id),
            already_asked: true,
        });
    }
    let intent = AuditIntent {
        from_revision: Some(asked.from),
        to_revision: Some(asked.target),
        diff: asked.diff,
        pre_check: Some(asked.pre_check),
        description,
        approval_id: Some(id.clone()),
        ..AuditIntent::by(actor, AuditAction::Request, resource)
    };
    let detail = format!(
        "waiting for approval: {} See /approvals/{id}.",
        asked.verdict.arithmetic
    );
    match audit::recorded(context, intent, detail).await {
        Ok(audit_id) => Ok(DeployAnswer {
            audit_id,
            deployment_id: None,
            request_id: None,
            action: asked.action,
            approval: Some(id),
            already_asked: false,
        }),
        Err(error) => {
            withdraw_untraced(context, id).await;
            Err(error.with_suffix("; nothing was sent or asked for"))
        }
    }
}

/// The request to keep for what was asked, its descriptions trimmed.
fn request_of(actor: &Actor, asked: &Asked<'_>) -> ApprovalRequest {
    ApprovalRequest {
        state: ApprovalState::Pending,
        action: asked.action,
        team: asked.service.team.clone().unwrap_or_default(),
        cluster: asked.cluster.to_string(),
        service: asked.service.name.clone(),
        requester: actor.clone(),
        request: DeployRequest {
            description: asked.request.description.trim().to_string(),
            ..asked.request.clone()
        },
        scale: asked.scale.clone().map(|scale| ScaleRequest {
            description: scale.description.trim().to_string(),
            ..scale
        }),
        from: asked.from.clone(),
        target: asked.target.clone(),
        diff: asked.diff.clone(),
        pre_check: asked.pre_check.clone(),
        arithmetic: asked.verdict.arithmetic.clone(),
        delta: asked.delta,
        after_mib: asked.verdict.after_mib,
        creation: asked.creation.clone(),
        ..ApprovalRequest::default()
    }
}

/// A request nobody can trace is not left waiting: it is withdrawn. If even that fails, it is
/// said in the log, and an approver sees a request without its audit record.
async fn withdraw_untraced(context: &ServiceContext, id: String) {
    let withdrawn = context
        .approvals
        .decide(
            id.clone(),
            Decision {
                to: ApprovalState::Withdrawn,
                by: "gpushare".into(),
                note: Some("the audit log could not record the request".into()),
                ..Decision::default()
            },
        )
        .await;
    if let Err(error) = withdrawn {
        tracing::warn!(%error, %id, "a request the audit log could not record could not be withdrawn either");
    }
}
