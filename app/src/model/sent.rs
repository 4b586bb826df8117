//! Changes the console sent to services that the fleet snapshot may not show yet. The snapshot
//! reads a service every refresh at best (and a service that moves no task only when its turn in
//! the sweep comes), so a budget judged on it alone would let a second scale-up, sent before the
//! first is read back, through as if the first had not happened. Every deploy, rollback and
//! scale writes its audit intent before it is sent, so the audit log is the list of what was
//! sent; a budget counts, for each service, the larger of what the snapshot read and what the
//! changes sent since that read make it.

use chrono::{DateTime, Utc};

use crate::model::{
    audit::{AuditAction, AuditRecord, Outcome},
    fleet::ServiceRef,
    task_definition::DiffEntry,
};

/// How long after its intent was written a change may still reach ECS (the SDK's 25 s deadline
/// with its retries), with room for the clocks of two replicas: a change written less than this
/// before a service was read may not be in that read.
pub const SENT_MARGIN_SECONDS: i64 = 60;

/// One change sent to a service of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentChange {
    pub service: String,
    /// When its intent was written.
    pub at: DateTime<Utc>,
    /// `family:N` the service runs after it.
    pub task_definition: String,
    /// The desired count after it, for a change of the count.
    pub desired: Option<u32>,
    /// For a new service: the team it was created for (from the record's diff).
    pub created_for: Option<String>,
}

impl SentChange {
    /// The change an audit record of `cluster` sent (or may have sent): a deploy, rollback,
    /// scale or new service whose outcome is not a refusal or a failure. `None` for anything
    /// else.
    pub fn of(record: &AuditRecord, cluster: &str) -> Option<SentChange> {
        if !matches!(
            record.action,
            AuditAction::Deploy | AuditAction::Rollback | AuditAction::Scale | AuditAction::Create
        ) || matches!(record.outcome, Outcome::Refused | Outcome::Failed)
        {
            return None;
        }
        let service = record.resource.strip_prefix(cluster)?.strip_prefix('/')?;
        let at = DateTime::parse_from_rfc3339(&record.at)
            .ok()?
            .with_timezone(&Utc);
        let to = record.to_revision.as_deref()?;
        let (task_definition, desired) = match to.rsplit_once(" × ") {
            Some((runs, count)) => (runs.to_string(), Some(count.parse().ok()?)),
            None => (to.to_string(), None),
        };
        let created_for =
            (record.action == AuditAction::Create).then(|| team_of_creation(&record.diff));
        Some(SentChange {
            service: service.to_string(),
            at,
            task_definition,
            desired,
            created_for,
        })
    }
}

/// The path of the team in a new service's diff.
pub const CREATED_TEAM_PATH: &str = "team";

/// The team a new service's record names in its diff (an entry at [`CREATED_TEAM_PATH`]), or
/// none.
fn team_of_creation(diff: &str) -> String {
    serde_json::from_str::<Vec<DiffEntry>>(diff)
        .ok()
        .and_then(|entries| {
            entries
                .into_iter()
                .find(|e| e.path == CREATED_TEAM_PATH)
                .and_then(|e| e.after)
        })
        .and_then(|after| serde_json::from_str::<String>(&after).ok())
        .unwrap_or_default()
}

/// The services of `team` the console created (or may have) that the snapshot does not show
/// yet (`seen` says which it shows): each with its latest creation.
pub fn created_unseen<'a>(
    sent: &'a [SentChange],
    team: &str,
    seen: impl Fn(&str) -> bool,
) -> Vec<&'a SentChange> {
    let mut latest: std::collections::BTreeMap<&str, &SentChange> = Default::default();
    for change in sent
        .iter()
        .filter(|c| c.created_for.as_deref() == Some(team) && !seen(&c.service))
    {
        let slot = latest.entry(change.service.as_str()).or_insert(change);
        if change.at > slot.at {
            *slot = change;
        }
    }
    latest.into_values().collect()
}

/// What a service may hold: `(desired count, task definition)` as the snapshot read it, and, when
/// changes were sent since (or up to [`SENT_MARGIN_SECONDS`] before) that read, as they leave it.
/// The budget counts the larger, so that a change not yet read back is counted, and a
/// scale-down only once ECS shows it.
pub fn states(service: &ServiceRef, sent: &[SentChange]) -> Vec<(u32, String)> {
    let read = (service.desired, service.task_definition_arn.clone());
    let since = service
        .read_at
        .as_deref()
        .and_then(|at| DateTime::parse_from_rfc3339(at).ok())
        .map(|at| at.with_timezone(&Utc) - chrono::Duration::seconds(SENT_MARGIN_SECONDS));
    let mut after: Option<(u32, String)> = None;
    let mut mine: Vec<&SentChange> = sent
        .iter()
        .filter(|c| c.service == service.name && since.is_none_or(|since| c.at >= since))
        .collect();
    mine.sort_by_key(|c| c.at);
    for change in mine {
        let (desired, _) = after.clone().unwrap_or_else(|| read.clone());
        after = Some((
            change.desired.unwrap_or(desired),
            change.task_definition.clone(),
        ));
    }
    match after {
        Some(after) if after != read => vec![read, after],
        _ => vec![read],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(action: AuditAction, outcome: Outcome, at: &str, to: &str) -> AuditRecord {
        AuditRecord {
            id: "r".into(),
            at: at.into(),
            who: crate::model::audit::AuditActor::named("ana"),
            action,
            resource: "prod/embed".into(),
            to_revision: Some(to.into()),
            outcome,
            ..AuditRecord::default()
        }
    }

    fn embed(desired: u32, read_at: &str) -> ServiceRef {
        ServiceRef {
            name: "embed".into(),
            task_definition_arn: "arn:aws:ecs:us-east-1:1:task-definition/embed:1".into(),
            desired,
            read_at: Some(read_at.into()),
            ..ServiceRef::default()
        }
    }

    #[test]
    fn only_changes_sent_to_the_cluster_and_not_refused_count() {
        let scale = record(
            AuditAction::Scale,
            Outcome::Succeeded,
            "2026-12-03T10:00:00Z",
            "embed:1 × 8",
        );
        let sent = SentChange::of(&scale, "prod").expect("a scale");
        assert_eq!(
            (sent.desired, sent.task_definition.as_str()),
            (Some(8), "embed:1")
        );
        assert_eq!(SentChange::of(&scale, "prod-eu"), None, "another cluster");
        for outcome in [Outcome::Refused, Outcome::Failed] {
            assert_eq!(
                SentChange::of(
                    &record(
                        AuditAction::Scale,
                        outcome,
                        "2026-12-03T10:00:00Z",
                        "embed:1 × 8"
                    ),
                    "prod"
                ),
                None
            );
        }
        for outcome in [Outcome::Pending, Outcome::Unknown, Outcome::InProgress] {
            assert!(SentChange::of(
                &record(
                    AuditAction::Deploy,
                    outcome,
                    "2026-12-03T10:00:00Z",
                    "embed:2"
                ),
                "prod"
            )
            .is_some());
        }
        assert_eq!(
            SentChange::of(
                &record(
                    AuditAction::Register,
                    Outcome::Registered,
                    "2026-12-03T10:00:00Z",
                    "embed:2"
                ),
                "prod"
            ),
            None
        );
    }

    #[test]
    fn changes_sent_since_the_read_give_a_second_state_in_order() {
        let change = |at: &str, to: &str, desired: Option<u32>| SentChange {
            service: "embed".into(),
            at: DateTime::parse_from_rfc3339(at)
                .expect("a time")
                .with_timezone(&Utc),
            task_definition: to.into(),
            desired,
            created_for: None,
        };
        let service = embed(2, "2026-12-03T10:00:00Z");
        assert_eq!(states(&service, &[]).len(), 1);
        // Three scale-ups and a deploy, sent after the read, in any order in the log.
        let sent = [
            change("2026-12-03T10:00:20Z", "embed:1", Some(6)),
            change("2026-12-03T10:00:10Z", "embed:1", Some(4)),
            change("2026-12-03T10:00:30Z", "embed:2", None),
        ];
        assert_eq!(
            states(&service, &sent),
            [
                (2, service.task_definition_arn.clone()),
                (6, "embed:2".to_string())
            ]
        );
        // Long before the read (past the margin): the read shows it already.
        let old = [change("2026-12-03T09:58:00Z", "embed:1", Some(9))];
        assert_eq!(states(&service, &old).len(), 1);
        // Within the margin before the read: it may not be in the read, so it counts.
        let close = [change("2026-12-03T09:59:30Z", "embed:1", Some(9))];
        assert_eq!(states(&service, &close)[1].0, 9);
        // Another service's change is not this one's.
        let other = [SentChange {
            service: "rerank".into(),
            ..change("2026-12-03T10:00:10Z", "rerank:1", Some(9))
        }];
        assert_eq!(states(&service, &other).len(), 1);
    }

    #[test]
    fn a_new_service_counts_for_the_team_its_record_names_until_the_snapshot_shows_it() {
        let diff = serde_json::to_string(&[DiffEntry {
            path: CREATED_TEAM_PATH.into(),
            change: crate::model::task_definition::DiffChange::Added,
            before: None,
            after: Some("\"search\"".into()),
            gpu: false,
        }])
        .unwrap_or_default();
        let created = |at: &str, to: &str| AuditRecord {
            resource: "prod/embed-canary".into(),
            diff: diff.clone(),
            ..record(AuditAction::Create, Outcome::InProgress, at, to)
        };
        let first = SentChange::of(&created("2026-12-03T10:00:00Z", "embed:1 × 2"), "prod")
            .expect("a creation counts");
        assert_eq!(first.created_for.as_deref(), Some("search"));
        assert_eq!(first.desired, Some(2));
        let again = SentChange::of(&created("2026-12-03T10:00:09Z", "embed:1 × 4"), "prod")
            .expect("a creation counts");
        let refused = record(
            AuditAction::Create,
            Outcome::Refused,
            "2026-12-03T10:00:01Z",
            "embed:1 × 9",
        );
        assert_eq!(
            SentChange::of(&refused, "prod"),
            None,
            "refused: nothing exists"
        );
        let sent = [first.clone(), again.clone()];
        // The latest creation of each unseen service of the team.
        assert_eq!(created_unseen(&sent, "search", |_| false), [&again]);
        assert!(created_unseen(&sent, "vision", |_| false).is_empty());
        assert!(
            created_unseen(&sent, "search", |name| name == "embed-canary").is_empty(),
            "once the snapshot shows it, the snapshot counts it"
        );
        // A record without the team counts for no team.
        let anonymous = AuditRecord {
            diff: "[]".into(),
            ..created("2026-12-03T10:00:00Z", "embed:1 × 2")
        };
        assert_eq!(
            SentChange::of(&anonymous, "prod").and_then(|c| c.created_for),
            Some(String::new())
        );
    }
}
