//! Deployments: the services as the deployments page lists them, the pre-check of a rollout,
//! the request to roll a revision out, and the live state of a rollout as the watch page and
//! its event stream show it, with the words that explain how it ended.

use serde::{Deserialize, Serialize};

use crate::model::words::{DeploymentStatus, RolloutState};
use crate::model::{
    activity::TaskInfo,
    arn::{RevisionRef, TaskDefinitionId},
    audit::AuditAction,
    identity::Permission,
    rollout::RolloutCheck,
    task_definition::{Comparison, RevisionDetail},
    ServiceRef,
};

/// One service as the services table shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServiceRow {
    pub cluster: String,
    pub service: ServiceRef,
    /// The family and revision it runs.
    pub family: String,
    pub revision: u32,
    /// The GPU settings of that revision's GPU containers, in words; empty without GPUs, or when
    /// the revision could not be read (then `gpu_unread` says why).
    pub gpu: Vec<String>,
    /// Why the revision's GPU settings are not known: ECS did not describe it in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_unread: Option<String>,
}

/// The pre-check of rolling a revision out to a service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PreCheck {
    pub service: ServiceRow,
    /// The revision to roll out.
    pub target: RevisionDetail,
    /// The family's revisions, newest first, to choose from.
    pub revisions: Vec<u32>,
    /// What changes from the running revision; `None` when the target is the running one.
    pub comparison: Option<Comparison>,
    pub rollout: RolloutCheck,
    /// Whether the person asking may deploy to the service, and why not.
    #[serde(default)]
    pub deploy: Permission,
    /// The team's GPU budget's verdict on the rollout; `None` when the service's team has no
    /// budget on the cluster. Past the budget, a deploy waits for approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::model::budget::BudgetVerdict>,
}

/// A request to roll `revision` of the service's family out. Each revision is a number of the
/// service's family or `"family:N"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeployRequest {
    pub revision: RevisionRef,
    /// The revision the user saw running; the deploy is refused if the service runs another
    /// one now.
    pub expected_revision: RevisionRef,
    /// Deploy even though the pre-check says the rollout will not complete.
    #[serde(default)]
    pub force: bool,
    #[serde(default)]
    pub description: String,
    /// A restart: the running revision again, as new tasks (`forceNewDeployment`); set by
    /// `…/restart`, never by a deploy's body.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart: bool,
}

/// A request to restart a service: new tasks of the revision it runs (ECS's
/// `forceNewDeployment`), to pick up an image whose tag moved or to move off an impaired
/// instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartRequest {
    /// The revision the user saw running: the restart is refused if the service runs another.
    pub expected_revision: RevisionRef,
    /// Restart even though the pre-check says the rollout will not complete.
    #[serde(default)]
    pub force: bool,
    #[serde(default)]
    pub description: String,
}

impl RestartRequest {
    /// The deploy it is: the running revision to itself.
    pub fn as_deploy(self) -> DeployRequest {
        DeployRequest {
            revision: self.expected_revision.clone(),
            expected_revision: self.expected_revision,
            force: self.force,
            description: self.description,
            restart: true,
        }
    }
}

/// A change of a service's desired count. `expected_desired` is the count the user saw: the
/// change is refused if the service has another now.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleRequest {
    pub desired: u32,
    pub expected_desired: u32,
    /// The revision the user saw running (`family:N`, or a number of the family it runs): the
    /// change is refused if the service runs another one now. A request for approval always
    /// binds it, so that an approval covers the tasks it was shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<crate::model::arn::RevisionRef>,
    #[serde(default)]
    pub description: String,
}

/// The most tasks a service may be asked to run: ECS's quota of tasks per service (5,000 by
/// default; a raised quota is not known to the console).
pub const MAX_DESIRED: u32 = 5000;

/// A deploy that was sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeployAnswer {
    /// The audit record, which is also the deployment's watch id.
    pub audit_id: String,
    /// ECS's id of the new deployment.
    pub deployment_id: Option<String>,
    pub request_id: Option<String>,
    pub action: AuditAction,
    /// When the deploy would take its team past its GPU budget: the request waiting for
    /// approval (`/approvals/{id}`); nothing was sent, and `audit_id` is the request's record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// The same change of the same service was already waiting for approval: `approval` is
    /// that request, and nothing new was asked for (nor audited).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub already_asked: bool,
}

/// One deployment of a service, as DescribeServices reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveDeployment {
    pub id: String,
    pub status: DeploymentStatus,
    pub task_definition: String,
    pub desired: u32,
    pub running: u32,
    pub pending: u32,
    pub failed_tasks: u32,
    pub rollout_state: Option<RolloutState>,
    pub rollout_state_reason: Option<String>,
    /// When ECS created it (RFC 3339), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// One service event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveEvent {
    pub id: String,
    pub at: String,
    pub message: String,
}

/// A service now, as DescribeServices reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveService {
    /// `ACTIVE`; `DRAINING` or `INACTIVE` once deleted (empty when not read).
    #[serde(default)]
    pub status: String,
    pub task_definition: String,
    pub desired: u32,
    pub running: u32,
    pub pending: u32,
    /// PRIMARY first.
    pub deployments: Vec<LiveDeployment>,
    /// Newest first.
    pub events: Vec<LiveEvent>,
}

impl LiveService {
    /// Every deployment ECS lists for the service or names in its events (`(deployment ID)`,
    /// `rolling back to deployment ID`): what a deploy's audit record keeps just before
    /// UpdateService, so that a reconcile tells the deployment the call made without
    /// comparing clocks.
    pub fn known_deployments(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.deployments.iter().map(|d| d.id.clone()).collect();
        for id in self.named_deployments(&["(deployment ", "rolling back to deployment "]) {
            if !ids.iter().any(|known| known == id) {
                ids.push(id.to_string());
            }
        }
        ids
    }

    /// The deployment IDs the events name after one of `markers`, oldest event first, each
    /// once.
    pub fn named_deployments(&self, markers: &[&str]) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for event in self.events.iter().rev() {
            for marker in markers {
                let mut rest = event.message.as_str();
                while let Some(at) = rest.find(marker) {
                    rest = &rest[at + marker.len()..];
                    let end = rest
                        .find(|c: char| c == ')' || c.is_whitespace())
                        .unwrap_or(rest.len());
                    let id = rest[..end].trim_end_matches('.');
                    // "(deployment ecs-svc)" in a scaling reason names no deployment.
                    if id.contains('/') && !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
        }
        ids
    }
}

/// A rollout being watched: what was sent, the service now, and the result once it is known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchState {
    pub audit_id: String,
    pub cluster: String,
    pub service: String,
    pub action: AuditAction,
    pub deployment_id: Option<String>,
    /// The revision rolled out, `family:revision`.
    pub target: String,
    pub from: String,
    pub live: LiveService,
    /// The service's events since the deploy was sent, newest first.
    pub events: Vec<LiveEvent>,
    /// Running tasks of the new deployment out of its desired count, 0 to 1.
    pub progress: f64,
    /// The new deployment's tasks still meant to run, with the GPUs they were placed on.
    #[serde(default)]
    pub tasks: Vec<TaskInfo>,
    /// The new deployment's tasks that stopped, with why; most recent first.
    #[serde(default)]
    pub stopped_tasks: Vec<TaskInfo>,
    /// How it ended; `None` while it runs.
    pub result: Option<RolloutResult>,
    /// Why it failed, in words, with the events that explain it.
    pub detail: Option<String>,
    /// The last error reading ECS, while the watch keeps trying.
    pub watch_error: Option<String>,
    /// When the state was read, RFC 3339.
    pub read_at: String,
}

impl Default for DeployRequest {
    fn default() -> Self {
        DeployRequest {
            revision: RevisionRef::number(1),
            expected_revision: RevisionRef::number(1),
            force: false,
            description: String::new(),
            restart: false,
        }
    }
}

impl WatchState {
    /// Whether the rollout has ended.
    pub fn done(&self) -> bool {
        self.result.is_some()
    }
}

/// How a rollout ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RolloutResult {
    /// The new deployment completed.
    Succeeded,
    /// It failed and nothing was put back.
    Failed,
    /// The circuit breaker put the previous revision back: a failure.
    RolledBack,
    /// It was never sent (a deploy the audit log records as refused).
    Refused,
}

impl RolloutResult {
    pub fn as_str(self) -> &'static str {
        match self {
            RolloutResult::Succeeded => "succeeded",
            RolloutResult::Failed => "failed",
            RolloutResult::RolledBack => "rolled_back",
            RolloutResult::Refused => "refused",
        }
    }

    /// The audit outcome that records it.
    pub fn outcome(self) -> crate::model::audit::Outcome {
        use crate::model::audit::Outcome;
        match self {
            RolloutResult::Succeeded => Outcome::Succeeded,
            RolloutResult::Failed => Outcome::Failed,
            RolloutResult::RolledBack => Outcome::RolledBack,
            RolloutResult::Refused => Outcome::Refused,
        }
    }

    /// The result an audit outcome records, when it records one.
    pub fn of_outcome(outcome: crate::model::audit::Outcome) -> Option<RolloutResult> {
        use crate::model::audit::Outcome;
        match outcome {
            Outcome::Succeeded => Some(RolloutResult::Succeeded),
            Outcome::Failed => Some(RolloutResult::Failed),
            Outcome::RolledBack => Some(RolloutResult::RolledBack),
            Outcome::Refused => Some(RolloutResult::Refused),
            Outcome::Pending
            | Outcome::InProgress
            | Outcome::Registered
            | Outcome::Unknown
            | Outcome::Recorded => None,
        }
    }
}

/// The result of a rollout from the service's deployments: `None` while it runs. `from` is the
/// task definition the service ran before, `to` the one the deployment runs (both ARNs or
/// `family:revision`; the same for a restart).
pub fn rollout_result(
    live: &LiveService,
    deployment_id: &str,
    from: &str,
    to: &str,
) -> Option<(RolloutResult, Option<String>)> {
    let ours = live.deployments.iter().find(|d| d.id == deployment_id);
    match ours {
        Some(d) if d.rollout_state == Some(RolloutState::Completed) => {
            Some((RolloutResult::Succeeded, None))
        }
        Some(d) if d.rollout_state == Some(RolloutState::Failed) => {
            // The circuit breaker's rollback makes a new PRIMARY deployment of the old revision.
            let rolled_back = live
                .deployments
                .iter()
                .any(|other| other.id != d.id && other.status == DeploymentStatus::Primary);
            let reason = d.rollout_state_reason.clone();
            Some((
                if rolled_back {
                    RolloutResult::RolledBack
                } else {
                    RolloutResult::Failed
                },
                reason,
            ))
        }
        Some(_) => None,
        None => Some(gone(live, deployment_id, from, to)),
    }
}

/// The result of a deployment ECS no longer lists. A rollback re-activates the last completed
/// deployment, which may complete at once (its tasks still run), and the failed one leaves the
/// list: the breaker's event says why. Without that event, the service running `from` again
/// tells a rollback only when the deployment ran something else: a restart's deployment (`from`
/// is `to`) that is gone was replaced by a later one, such as another restart.
fn gone(
    live: &LiveService,
    deployment_id: &str,
    from: &str,
    to: &str,
) -> (RolloutResult, Option<String>) {
    let same = |a: &str, b: &str| match (TaskDefinitionId::parse(a), TaskDefinitionId::parse(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    };
    let back = same(&live.task_definition, from);
    let restart = same(from, to);
    let marker = format!("(deployment {deployment_id}) deployment failed: ");
    let breaker = live.events.iter().find_map(|e| {
        let (_, why) = e.message.split_once(&marker)?;
        Some(why.trim_end_matches('.').to_string())
    });
    match breaker {
        Some(why) if back => (
            RolloutResult::RolledBack,
            Some(format!(
                "ECS deployment circuit breaker: {why}; the service runs {from} again."
            )),
        ),
        Some(why) => (
            RolloutResult::Failed,
            Some(format!(
                "ECS deployment circuit breaker: {why}; the service runs {}.",
                live.task_definition
            )),
        ),
        None if back && !restart => (
            RolloutResult::RolledBack,
            Some(format!("the service runs {from} again")),
        ),
        None => {
            let by = live
                .deployments
                .iter()
                .find(|d| d.status == DeploymentStatus::Primary)
                .map(|d| format!(" by deployment {}", d.id))
                .unwrap_or_default();
            (
                RolloutResult::Failed,
                Some(format!(
                    "the deployment was replaced{by} before it completed; the service runs {}",
                    live.task_definition
                )),
            )
        }
    }
}

/// Why a rollout ended as it did, in words: ECS's reason, then the service events that explain
/// it and, unless it succeeded, why its tasks stopped.
pub fn explain(
    result: RolloutResult,
    reason: Option<String>,
    events: &[LiveEvent],
    stopped: &[TaskInfo],
) -> Option<String> {
    let mut explaining: Vec<String> = events
        .iter()
        .filter(|e| {
            let m = e.message.to_ascii_lowercase();
            m.contains("fail")
                || m.contains("unable")
                || m.contains("rolling back")
                || m.contains("stopped")
        })
        .map(|e| e.message.clone())
        .take(5)
        .collect();
    let succeeded = result == RolloutResult::Succeeded;
    if !succeeded {
        explaining.extend(stop_reasons(stopped).into_iter().take(3));
    }
    match (reason, explaining.is_empty()) {
        (Some(reason), true) => Some(reason),
        (Some(reason), false) => Some(format!("{reason} Events: {}", explaining.join(" | "))),
        (None, _) if !succeeded => Some(explaining.join(" | ")),
        (None, _) => None,
    }
}

/// Why tasks stopped, in words, one line per distinct reason with how many tasks gave it:
/// failures first, then the tasks the scheduler stopped.
pub fn stop_reasons(tasks: &[TaskInfo]) -> Vec<String> {
    use crate::model::activity::StopCode;
    let mut reasons: Vec<(bool, String, usize)> = Vec::new();
    for task in tasks {
        let mut words = match (&task.stop_code, &task.stopped_reason) {
            (Some(code), Some(reason)) => format!("({code}): {reason}"),
            (None, Some(reason)) => format!(": {reason}"),
            (Some(code), None) => format!("({code})"),
            (None, None) => continue,
        };
        for c in &task.containers {
            if let Some(code) = c.exit_code {
                words.push_str(&format!("; {} exited {code}", c.name));
            }
        }
        let scheduled = task.stop_code == Some(StopCode::ServiceSchedulerInitiated);
        match reasons.iter_mut().find(|(_, w, _)| *w == words) {
            Some((_, _, count)) => *count += 1,
            None => reasons.push((scheduled, words, 1)),
        }
    }
    reasons.sort_by_key(|(scheduled, _, count)| (*scheduled, std::cmp::Reverse(*count)));
    reasons
        .into_iter()
        .map(|(_, words, count)| {
            let tasks = if count == 1 { "task" } else { "tasks" };
            format!("{count} {tasks} stopped {words}")
        })
        .collect()
}

#[cfg(test)]
mod tests;
