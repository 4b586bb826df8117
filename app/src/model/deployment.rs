//! Deployments: the request to roll a revision out, and the live state of a rollout as the
//! watch page and its event stream show it.

use serde::{Deserialize, Serialize};

/// A request to roll `revision` of the service's family out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeployRequest {
    pub revision: u32,
    /// The revision the user saw running; the deploy is refused if the service runs another
    /// one now.
    pub expected_revision: u32,
    /// Deploy even though the pre-check says the rollout will not complete.
    #[serde(default)]
    pub force: bool,
    #[serde(default)]
    pub description: String,
}

/// A deploy that was sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeployAnswer {
    /// The audit record, which is also the deployment's watch id.
    pub audit_id: String,
    /// ECS's id of the new deployment.
    pub deployment_id: Option<String>,
    pub request_id: Option<String>,
    pub action: String,
}

/// One deployment of a service, as DescribeServices reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveDeployment {
    pub id: String,
    /// `PRIMARY`, `ACTIVE` or `INACTIVE`.
    pub status: String,
    pub task_definition: String,
    pub desired: u32,
    pub running: u32,
    pub pending: u32,
    pub failed_tasks: u32,
    /// `IN_PROGRESS`, `COMPLETED` or `FAILED`.
    pub rollout_state: Option<String>,
    pub rollout_state_reason: Option<String>,
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
    pub task_definition: String,
    pub desired: u32,
    pub running: u32,
    pub pending: u32,
    /// PRIMARY first.
    pub deployments: Vec<LiveDeployment>,
    /// Newest first.
    pub events: Vec<LiveEvent>,
}

/// A rollout being watched: what was sent, the service now, and the result once it is known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchState {
    pub audit_id: String,
    pub cluster: String,
    pub service: String,
    pub action: String,
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
    pub tasks: Vec<crate::model::activity::TaskInfo>,
    /// The new deployment's tasks that stopped, with why; most recent first.
    #[serde(default)]
    pub stopped_tasks: Vec<crate::model::activity::TaskInfo>,
    /// `succeeded`, `failed` or `rolled_back` (a failure: ECS put the old revision back).
    pub result: Option<String>,
    /// Why it failed, in words, with the events that explain it.
    pub detail: Option<String>,
    /// The last error reading ECS, while the watch keeps trying.
    pub watch_error: Option<String>,
    /// When the state was read, RFC 3339.
    pub read_at: String,
}

impl WatchState {
    /// Whether the rollout has ended.
    pub fn done(&self) -> bool {
        self.result.is_some()
    }
}

/// The result of a rollout from the service's deployments: `None` while it runs. `from` is the
/// task definition ARN the service ran before.
pub fn rollout_result(
    live: &LiveService,
    deployment_id: &str,
    from: &str,
) -> Option<(String, Option<String>)> {
    let ours = live.deployments.iter().find(|d| d.id == deployment_id);
    match ours {
        Some(d) if d.rollout_state.as_deref() == Some("COMPLETED") => {
            Some(("succeeded".into(), None))
        }
        Some(d) if d.rollout_state.as_deref() == Some("FAILED") => {
            // The circuit breaker's rollback makes a new PRIMARY deployment of the old revision.
            let rolled_back = live
                .deployments
                .iter()
                .any(|other| other.id != d.id && other.status == "PRIMARY");
            let reason = d.rollout_state_reason.clone();
            Some((
                if rolled_back { "rolled_back" } else { "failed" }.into(),
                reason,
            ))
        }
        Some(_) => None,
        // Gone: rolled back to what ran before, or replaced by another deployment.
        None if live.task_definition == from => Some((
            "rolled_back".into(),
            Some(format!("the service runs {from} again")),
        )),
        None => Some((
            "failed".into(),
            Some(format!(
                "the deployment was replaced before it completed; the service runs {}",
                live.task_definition
            )),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(id: &str, status: &str, state: Option<&str>) -> LiveDeployment {
        LiveDeployment {
            id: id.into(),
            status: status.into(),
            rollout_state: state.map(str::to_string),
            ..LiveDeployment::default()
        }
    }

    #[test]
    fn a_rollback_is_a_failure_not_a_success() {
        let running = LiveService {
            deployments: vec![
                deployment("new", "PRIMARY", Some("IN_PROGRESS")),
                deployment("old", "ACTIVE", Some("COMPLETED")),
            ],
            ..LiveService::default()
        };
        assert_eq!(rollout_result(&running, "new", "old-td"), None);
        let done = LiveService {
            deployments: vec![deployment("new", "PRIMARY", Some("COMPLETED"))],
            ..LiveService::default()
        };
        assert_eq!(
            rollout_result(&done, "new", "old-td"),
            Some(("succeeded".into(), None))
        );
        let rolled_back = LiveService {
            deployments: vec![
                deployment("back", "PRIMARY", Some("IN_PROGRESS")),
                deployment("new", "ACTIVE", Some("FAILED")),
            ],
            ..LiveService::default()
        };
        assert_eq!(
            rollout_result(&rolled_back, "new", "old-td").map(|r| r.0),
            Some("rolled_back".into())
        );
        let failed = LiveService {
            deployments: vec![deployment("new", "PRIMARY", Some("FAILED"))],
            ..LiveService::default()
        };
        assert_eq!(
            rollout_result(&failed, "new", "old-td").map(|r| r.0),
            Some("failed".into())
        );
        let gone = LiveService {
            task_definition: "old-td".into(),
            ..LiveService::default()
        };
        assert_eq!(
            rollout_result(&gone, "new", "old-td").map(|r| r.0),
            Some("rolled_back".into())
        );
        let other = LiveService {
            task_definition: "third-td".into(),
            ..LiveService::default()
        };
        assert_eq!(
            rollout_result(&other, "new", "old-td").map(|r| r.0),
            Some("failed".into())
        );
    }
}
