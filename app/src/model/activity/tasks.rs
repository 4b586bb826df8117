//! Tasks as the pages show them: where they run, the GPUs they hold, and why they stopped;
//! and the filter over a cluster's recently stopped tasks.

use serde::{Deserialize, Serialize};

use super::{check_limit, check_text, contains, DEFAULT_LIMIT};

/// A GPU a task's container was given: its UUID, and where it is when the fleet snapshot knows
/// it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskGpu {
    pub uuid: String,
    /// The GPU's index on its instance.
    pub index: Option<u32>,
}

/// One container of a task.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskContainer {
    pub name: String,
    pub last_status: Option<String>,
    pub exit_code: Option<i32>,
    pub reason: Option<String>,
    pub gpus: Vec<TaskGpu>,
}

/// A task of a cluster, as DescribeTasks reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInfo {
    /// The task's ID, the last part of its ARN.
    pub id: String,
    pub arn: String,
    /// The service that started it, if one did.
    pub service: Option<String>,
    /// `family:revision`.
    pub task_definition: String,
    /// The deployment (or other starter) that started it.
    pub started_by: Option<String>,
    pub last_status: String,
    /// The EC2 instance ID when the fleet snapshot knows the container instance, else the
    /// container instance ID.
    pub instance: String,
    pub started_at: Option<String>,
    pub stopped_at: Option<String>,
    pub stop_code: Option<StopCode>,
    pub stopped_reason: Option<String>,
    pub containers: Vec<TaskContainer>,
}

impl TaskInfo {
    /// The UUIDs of every GPU the task holds.
    pub fn gpu_uuids(&self) -> impl Iterator<Item = &str> {
        self.containers
            .iter()
            .flat_map(|c| c.gpus.iter().map(|g| g.uuid.as_str()))
    }
}

/// The stop code ECS gives a stopped task. ECS may add codes: one this console does not know
/// is kept as ECS spelled it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum StopCode {
    TaskFailedToStart,
    EssentialContainerExited,
    UserInitiated,
    ServiceSchedulerInitiated,
    SpotInterruption,
    TerminationNotice,
    /// The instance or the task failed a health check of ECS's infrastructure.
    InfrastructureHealth,
    /// A code this console does not know, as ECS spelled it.
    Other(String),
}

impl StopCode {
    /// The codes ECS documents, to filter by.
    pub const KNOWN: [StopCode; 7] = [
        StopCode::TaskFailedToStart,
        StopCode::EssentialContainerExited,
        StopCode::UserInitiated,
        StopCode::ServiceSchedulerInitiated,
        StopCode::SpotInterruption,
        StopCode::TerminationNotice,
        StopCode::InfrastructureHealth,
    ];

    /// ECS's spelling.
    pub fn as_str(&self) -> &str {
        match self {
            StopCode::TaskFailedToStart => "TaskFailedToStart",
            StopCode::EssentialContainerExited => "EssentialContainerExited",
            StopCode::UserInitiated => "UserInitiated",
            StopCode::ServiceSchedulerInitiated => "ServiceSchedulerInitiated",
            StopCode::SpotInterruption => "SpotInterruption",
            StopCode::TerminationNotice => "TerminationNotice",
            StopCode::InfrastructureHealth => "InfrastructureHealth",
            StopCode::Other(code) => code,
        }
    }

    /// One of the documented codes, or `None`.
    pub fn known(text: &str) -> Option<StopCode> {
        StopCode::KNOWN.into_iter().find(|c| c.as_str() == text)
    }
}

impl From<String> for StopCode {
    fn from(text: String) -> StopCode {
        StopCode::known(&text).unwrap_or(StopCode::Other(text))
    }
}

impl From<&str> for StopCode {
    fn from(text: &str) -> StopCode {
        StopCode::from(text.to_string())
    }
}

impl From<StopCode> for String {
    fn from(code: StopCode) -> String {
        code.as_str().to_string()
    }
}

impl std::fmt::Display for StopCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which of a cluster's recently stopped tasks to show.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoppedFilter {
    pub service: Option<String>,
    pub stop_code: Option<String>,
    /// Words the stop reason, a container's reason or the task ID contains.
    pub q: Option<String>,
    pub limit: Option<u32>,
}

/// The parameters of the stopped-tasks list, for error messages.
pub const STOPPED_PARAMETERS: &str = "service, stop_code, q and limit";

impl StoppedFilter {
    pub fn problem(&self) -> Option<String> {
        if let Some(code) = self
            .stop_code
            .as_deref()
            .filter(|c| StopCode::known(c).is_none())
        {
            return Some(format!(
                "stop_code {code:?} is not one of ECS's stop codes: {}",
                StopCode::KNOWN.map(|c| c.as_str().to_string()).join(", ")
            ));
        }
        check_text("q", &self.q).or_else(|| check_limit(self.limit))
    }

    pub fn tidy(self) -> StoppedFilter {
        let tidy = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        StoppedFilter {
            service: tidy(self.service),
            stop_code: tidy(self.stop_code),
            q: tidy(self.q),
            limit: self.limit,
        }
    }

    /// The tasks that pass, most recently stopped first, at most `limit`.
    pub fn apply(&self, mut tasks: Vec<TaskInfo>) -> Vec<TaskInfo> {
        tasks.retain(|t| {
            self.service
                .as_ref()
                .is_none_or(|s| t.service.as_ref() == Some(s))
                && self
                    .stop_code
                    .as_ref()
                    .is_none_or(|c| t.stop_code.as_ref().map(StopCode::as_str) == Some(c))
                && self.q.as_ref().is_none_or(|q| {
                    contains(&t.id, q)
                        || t.stopped_reason.as_deref().is_some_and(|r| contains(r, q))
                        || t.containers
                            .iter()
                            .any(|c| c.reason.as_deref().is_some_and(|r| contains(r, q)))
                })
        });
        tasks.sort_by(|a, b| b.stopped_at.cmp(&a.stopped_at).then(b.id.cmp(&a.id)));
        tasks.truncate(self.limit.unwrap_or(DEFAULT_LIMIT) as usize);
        tasks
    }
}

/// A cluster's recently stopped tasks as the page and the API answer them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoppedTasks {
    pub cluster: String,
    pub services: Vec<String>,
    pub tasks: Vec<TaskInfo>,
    /// Stopped tasks before the filter (ECS keeps them for about an hour).
    pub total: usize,
    pub read_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_stop_code_is_known_and_others_are_kept() {
        for code in [
            "TaskFailedToStart",
            "EssentialContainerExited",
            "UserInitiated",
            "ServiceSchedulerInitiated",
            "SpotInterruption",
            "TerminationNotice",
            "InfrastructureHealth",
        ] {
            let parsed = StopCode::from(code);
            assert!(!matches!(parsed, StopCode::Other(_)), "{code}");
            assert_eq!(parsed.as_str(), code);
        }
        assert_eq!(
            StopCode::from("SomethingNew"),
            StopCode::Other("SomethingNew".into())
        );
    }

    #[test]
    fn a_wrong_stopped_task_filter_says_what_to_write() {
        let limit = StoppedFilter {
            limit: Some(0),
            ..Default::default()
        };
        assert!(limit
            .problem()
            .expect("refused")
            .contains("between 1 and 1000"));
        let code = StoppedFilter {
            stop_code: Some("Crashed".into()),
            ..Default::default()
        };
        assert!(code
            .problem()
            .expect("refused")
            .contains("TaskFailedToStart"));
        let long = StoppedFilter {
            q: Some("x".repeat(201)),
            ..Default::default()
        };
        assert!(long.problem().is_some());
        assert_eq!(StoppedFilter::default().problem(), None);
    }

    #[test]
    fn stopped_tasks_filter_by_service_code_and_reason() {
        let task = |id: &str, service: &str, code: &str, at: &str, reason: &str| TaskInfo {
            id: id.into(),
            service: Some(service.into()),
            stop_code: Some(StopCode::from(code)),
            stopped_at: Some(at.into()),
            stopped_reason: Some(reason.into()),
            containers: vec![TaskContainer {
                name: "main".into(),
                reason: Some("OutOfMemoryError: Container killed".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let tasks = vec![
            task(
                "t1",
                "a",
                "EssentialContainerExited",
                "2026-11-30T11:00:00.000Z",
                "Essential container in task exited",
            ),
            task(
                "t2",
                "b",
                "ServiceSchedulerInitiated",
                "2026-11-30T11:10:00.000Z",
                "Scaling activity initiated by deployment",
            ),
            task(
                "t3",
                "a",
                "TaskFailedToStart",
                "2026-11-30T11:05:00.000Z",
                "CannotPullContainerError",
            ),
        ];
        let all = StoppedFilter::default().apply(tasks.clone());
        assert_eq!(
            all.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            ["t2", "t3", "t1"]
        );
        let a = StoppedFilter {
            service: Some("a".into()),
            ..Default::default()
        };
        assert_eq!(a.apply(tasks.clone()).len(), 2);
        let failed = StoppedFilter {
            stop_code: Some("TaskFailedToStart".into()),
            ..Default::default()
        };
        assert_eq!(failed.apply(tasks.clone())[0].id, "t3");
        let oom = StoppedFilter {
            q: Some("outofmemory".into()),
            ..Default::default()
        };
        assert_eq!(oom.apply(tasks.clone()).len(), 3);
        let pull = StoppedFilter {
            q: Some("pull".into()),
            ..Default::default()
        };
        assert_eq!(pull.apply(tasks)[0].id, "t3");
    }

    #[test]
    fn a_stop_code_keeps_its_spelling_known_or_not() {
        let known: StopCode = serde_json::from_str("\"SpotInterruption\"").expect("json");
        assert_eq!(known, StopCode::SpotInterruption);
        let new: StopCode = serde_json::from_str("\"SomethingNew\"").expect("json");
        assert_eq!(new, StopCode::Other("SomethingNew".into()));
        assert_eq!(
            serde_json::to_string(&new).expect("json"),
            "\"SomethingNew\""
        );
        assert_eq!(StopCode::known("SomethingNew"), None);
    }
}
