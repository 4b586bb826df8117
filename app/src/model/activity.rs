//! What happens in a cluster: every service's events merged into one feed, the tasks that
//! stopped recently with why, and where a deployment's tasks were placed. Plain types and the
//! filters over them, shared by the pages and the JSON API.

use serde::{Deserialize, Serialize};

/// The last part of an ARN: a task's ID, `family:revision` of a task definition, a container
/// instance's ID; the text itself when it has no `/`.
pub fn arn_tail(arn: &str) -> &str {
    arn.rsplit('/').next().unwrap_or(arn)
}

/// An RFC 3339 time as tables show it: `2026-11-30 13:35:07`, to the second; anything else as
/// it is.
pub fn when(at: &str) -> String {
    match (at.get(..10), at.get(11..19)) {
        (Some(day), Some(time)) if at.as_bytes().get(10) == Some(&b'T') => format!("{day} {time}"),
        _ => at.to_string(),
    }
}

/// What a service event is about, read from ECS's wording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Something went wrong: a task could not be placed, a deployment failed or rolled back, a
    /// target is unhealthy.
    Problem,
    /// A deployment's progress: tasks started and stopped, a deployment completed.
    Deployment,
    /// The service reached a steady state.
    Steady,
    /// Anything else.
    Other,
}

impl EventKind {
    pub const ALL: [EventKind; 4] = [
        EventKind::Problem,
        EventKind::Deployment,
        EventKind::Steady,
        EventKind::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Problem => "problem",
            EventKind::Deployment => "deployment",
            EventKind::Steady => "steady",
            EventKind::Other => "other",
        }
    }

    pub fn parse(text: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// The kind of an ECS service event message.
    pub fn of(message: &str) -> EventKind {
        let m = message.to_ascii_lowercase();
        const PROBLEMS: [&str; 8] = [
            "unable to place",
            "deployment failed",
            "rolling back",
            "is unhealthy",
            "failed",
            "throttl",
            "insufficient",
            "circuit breaker",
        ];
        if PROBLEMS.iter().any(|p| m.contains(p)) {
            EventKind::Problem
        } else if m.contains("steady state") {
            EventKind::Steady
        } else if m.contains("has started")
            || m.contains("has stopped")
            || m.contains("deployment completed")
            || m.contains("registered")
            || m.contains("deregistered")
            || m.contains("draining")
        {
            EventKind::Deployment
        } else {
            EventKind::Other
        }
    }
}

/// One service event of a cluster's feed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterEvent {
    pub service: String,
    pub id: String,
    /// When ECS recorded it, RFC 3339 in UTC.
    pub at: String,
    pub message: String,
    pub kind: EventKind,
}

/// The longest text filter.
pub const MAX_TEXT: usize = 200;
/// The most rows one answer holds.
pub const MAX_LIMIT: u32 = 1000;
/// Rows when no limit is given.
pub const DEFAULT_LIMIT: u32 = 200;

/// A window back from now, `<n>m`, `<n>h` or `<n>d` up to 30 days, in minutes.
pub fn parse_since(text: &str) -> Result<i64, String> {
    let wrong = || {
        format!("since {text:?} is not a window back from now: write minutes, hours or days, as 30m, 6h or 2d (at most 30d)")
    };
    let text = text.trim();
    let unit = text.chars().last().ok_or_else(wrong)?;
    let number: i64 = text[..text.len() - unit.len_utf8()]
        .parse()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(wrong)?;
    let minutes = match unit {
        'm' => number,
        'h' => number.saturating_mul(60),
        'd' => number.saturating_mul(24 * 60),
        _ => return Err(wrong()),
    };
    if minutes > 30 * 24 * 60 {
        return Err(wrong());
    }
    Ok(minutes)
}

fn check_text(name: &str, text: &Option<String>) -> Option<String> {
    text.as_ref()
        .filter(|t| t.chars().count() > MAX_TEXT)
        .map(|_| format!("{name} is longer than {MAX_TEXT} characters; shorten it"))
}

fn check_limit(limit: Option<u32>) -> Option<String> {
    limit
        .filter(|l| *l == 0 || *l > MAX_LIMIT)
        .map(|l| format!("limit {l} is not between 1 and {MAX_LIMIT}"))
}

fn contains(haystack: &str, needle: &str) -> bool {
    haystack
        .to_lowercase()
        .contains(&needle.trim().to_lowercase())
}

/// Which events of a cluster's feed to show.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventFilter {
    /// One service's events.
    pub service: Option<String>,
    /// `problem`, `deployment`, `steady` or `other`.
    pub kind: Option<String>,
    /// Words the message contains, any case.
    pub q: Option<String>,
    /// Only events this far back: `30m`, `6h`, `2d`.
    pub since: Option<String>,
    pub limit: Option<u32>,
}

/// The parameters of the events feed, for error messages.
pub const EVENT_PARAMETERS: &str = "service, kind, q, since and limit";

impl EventFilter {
    /// What is wrong with the filter, in words that say how to fix it.
    pub fn problem(&self) -> Option<String> {
        if let Some(kind) = self
            .kind
            .as_deref()
            .filter(|k| EventKind::parse(k).is_none())
        {
            return Some(format!(
                "kind {kind:?} does not exist; use {}",
                EventKind::ALL.map(EventKind::as_str).join(", ")
            ));
        }
        if let Some(Err(message)) = self.since.as_deref().map(parse_since) {
            return Some(message);
        }
        check_text("q", &self.q).or_else(|| check_limit(self.limit))
    }

    /// The filter with empty values dropped and text trimmed.
    pub fn tidy(self) -> EventFilter {
        let tidy = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        EventFilter {
            service: tidy(self.service),
            kind: tidy(self.kind),
            q: tidy(self.q),
            since: tidy(self.since),
            limit: self.limit,
        }
    }

    /// The events that pass, newest first, at most `limit`; `since` counts back from `now`.
    #[cfg(feature = "ssr")]
    pub fn apply(
        &self,
        mut events: Vec<ClusterEvent>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Vec<ClusterEvent> {
        let kind = self.kind.as_deref().and_then(EventKind::parse);
        let after = self
            .since
            .as_deref()
            .and_then(|s| parse_since(s).ok())
            .map(|minutes| now - chrono::Duration::minutes(minutes));
        events.retain(|e| {
            self.service.as_ref().is_none_or(|s| &e.service == s)
                && kind.is_none_or(|k| e.kind == k)
                && self.q.as_ref().is_none_or(|q| contains(&e.message, q))
                && after.is_none_or(|after| {
                    chrono::DateTime::parse_from_rfc3339(&e.at).is_ok_and(|at| at >= after)
                })
        });
        // RFC 3339 in UTC with the same precision sorts as text; the id breaks ties.
        events.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| b.id.cmp(&a.id)));
        events.truncate(self.limit.unwrap_or(DEFAULT_LIMIT) as usize);
        events
    }
}

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
    /// `TaskFailedToStart`, `EssentialContainerExited`, `UserInitiated`,
    /// `ServiceSchedulerInitiated`, `SpotInterruption` or `TerminationNotice`.
    pub stop_code: Option<String>,
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

/// The stop codes ECS gives stopped tasks.
pub const STOP_CODES: [&str; 6] = [
    "TaskFailedToStart",
    "EssentialContainerExited",
    "UserInitiated",
    "ServiceSchedulerInitiated",
    "SpotInterruption",
    "TerminationNotice",
];

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
            .filter(|c| !STOP_CODES.contains(c))
        {
            return Some(format!(
                "stop_code {code:?} is not one of ECS's stop codes: {}",
                STOP_CODES.join(", ")
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
                    .is_none_or(|c| t.stop_code.as_ref() == Some(c))
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

/// Why a feed could not be answered: the HTTP status it calls for and what to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// 400 for a wrong filter, 404 for no such cluster or service, 503 when ECS failed.
    pub status: u16,
    pub message: String,
}

/// A cluster's events feed as the page and the API answer it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventFeed {
    pub cluster: String,
    /// Every service of the cluster, to filter by.
    pub services: Vec<String>,
    pub events: Vec<ClusterEvent>,
    /// Events before the filter.
    pub total: usize,
    /// When ECS was read, RFC 3339.
    pub read_at: String,
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

    #[cfg(feature = "ssr")]
    fn event(service: &str, at: &str, message: &str) -> ClusterEvent {
        ClusterEvent {
            service: service.into(),
            id: format!("{service}-{at}"),
            at: at.into(),
            message: message.into(),
            kind: EventKind::of(message),
        }
    }

    #[test]
    fn times_show_to_the_second() {
        assert_eq!(when("2026-11-30T13:35:07.058Z"), "2026-11-30 13:35:07");
        assert_eq!(when("2026-11-30T13:35:07Z"), "2026-11-30 13:35:07");
        assert_eq!(when("—"), "—");
        assert_eq!(when(""), "");
    }

    #[test]
    fn ecs_wording_gives_the_kind() {
        assert_eq!(
            EventKind::of("(service a) was unable to place a task because no container instance met all of its requirements."),
            EventKind::Problem
        );
        assert_eq!(
            EventKind::of(
                "(service a) (deployment ecs-svc/1) deployment failed: tasks failed to start."
            ),
            EventKind::Problem
        );
        assert_eq!(
            EventKind::of("(service a) has reached a steady state."),
            EventKind::Steady
        );
        assert_eq!(
            EventKind::of("(service a) has started 2 tasks: (task 1) (task 2)."),
            EventKind::Deployment
        );
        assert_eq!(
            EventKind::of("(service a) (deployment ecs-svc/1) deployment completed."),
            EventKind::Deployment
        );
        assert_eq!(EventKind::of("something new"), EventKind::Other);
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn events_of_all_services_merge_newest_first_and_filter() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
            .expect("a fixed time")
            .with_timezone(&chrono::Utc);
        let events = vec![
            event(
                "a",
                "2026-11-30T11:00:00.000Z",
                "(service a) has reached a steady state.",
            ),
            event(
                "b",
                "2026-11-30T11:59:00.000Z",
                "(service b) was unable to place a task.",
            ),
            event(
                "a",
                "2026-11-30T11:30:00.000Z",
                "(service a) has started 1 tasks: (task x).",
            ),
            event(
                "b",
                "2026-11-28T11:30:00.000Z",
                "(service b) has reached a steady state.",
            ),
        ];
        let all = EventFilter::default().apply(events.clone(), now);
        let order: Vec<&str> = all.iter().map(|e| e.at.as_str()).collect();
        assert_eq!(
            order,
            [
                "2026-11-30T11:59:00.000Z",
                "2026-11-30T11:30:00.000Z",
                "2026-11-30T11:00:00.000Z",
                "2026-11-28T11:30:00.000Z"
            ]
        );
        let only_a = EventFilter {
            service: Some("a".into()),
            ..Default::default()
        };
        assert!(only_a
            .apply(events.clone(), now)
            .iter()
            .all(|e| e.service == "a"));
        let problems = EventFilter {
            kind: Some("problem".into()),
            ..Default::default()
        };
        assert_eq!(problems.apply(events.clone(), now).len(), 1);
        let recent = EventFilter {
            since: Some("1h".into()),
            ..Default::default()
        };
        assert_eq!(recent.apply(events.clone(), now).len(), 3);
        let words = EventFilter {
            q: Some("STEADY".into()),
            limit: Some(1),
            ..Default::default()
        };
        let found = words.apply(events, now);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].at, "2026-11-30T11:00:00.000Z");
    }

    #[test]
    fn a_wrong_filter_says_what_to_write() {
        let kind = EventFilter {
            kind: Some("bad".into()),
            ..Default::default()
        };
        assert!(kind
            .problem()
            .expect("refused")
            .contains("problem, deployment, steady, other"));
        for since in ["0h", "5", "h", "31d", "3w", "-1h"] {
            let filter = EventFilter {
                since: Some(since.into()),
                ..Default::default()
            };
            assert!(filter.problem().is_some(), "{since} passed");
        }
        assert_eq!(parse_since("90m"), Ok(90));
        assert_eq!(parse_since("2h"), Ok(120));
        assert_eq!(parse_since("30d"), Ok(30 * 24 * 60));
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
            stop_code: Some(code.into()),
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
}
