//! A cluster's events feed: every service's events (ECS keeps the latest 100 of each), each
//! with a kind read from ECS's wording, merged newest first and filtered.

use serde::{Deserialize, Serialize};

use super::{check_limit, check_text};
#[cfg(feature = "ssr")]
use super::{contains, DEFAULT_LIMIT};

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
    }
}
