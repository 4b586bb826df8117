//! The audit log: every registration, deployment and rollback — who, when, which resource,
//! the diff, the pre-check's verdict, the AWS request id, and the outcome. The intent is written
//! before the AWS call and the outcome after it.

use serde::{Deserialize, Serialize};

use crate::model::identity::{Actor, AuthMode, Role};

/// What was done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    Register,
    #[default]
    Deploy,
    Rollback,
    /// The running revision rolled out again (`forceNewDeployment`): new tasks, same revision.
    Restart,
    /// A service's desired count changed.
    Scale,
    /// A new service created (CreateService), its first deployment watched.
    Create,
    /// A service scaled to 0 and deleted.
    Retire,
    /// A capacity provider created and added to a cluster's providers.
    AddProvider,
    /// A change past its team's budget, asked for and waiting for approval.
    Request,
    /// A request approved; the change follows as its own record, approved by the approver.
    Approve,
    Reject,
    /// A request its requester took back.
    Withdraw,
    /// A closed month's cost re-priced at today's prices (sends nothing to AWS).
    Reprice,
}

impl AuditAction {
    pub const ALL: [AuditAction; 13] = [
        AuditAction::Register,
        AuditAction::Deploy,
        AuditAction::Rollback,
        AuditAction::Restart,
        AuditAction::Scale,
        AuditAction::Create,
        AuditAction::Retire,
        AuditAction::AddProvider,
        AuditAction::Request,
        AuditAction::Approve,
        AuditAction::Reject,
        AuditAction::Withdraw,
        AuditAction::Reprice,
    ];

    /// Whether the record is a decision about a request rather than a change sent to AWS.
    pub fn is_decision(self) -> bool {
        matches!(
            self,
            AuditAction::Request
                | AuditAction::Approve
                | AuditAction::Reject
                | AuditAction::Withdraw
        )
    }

    /// The name in the API, the CSV and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::Register => "register",
            AuditAction::Deploy => "deploy",
            AuditAction::Rollback => "rollback",
            AuditAction::Restart => "restart",
            AuditAction::Scale => "scale",
            AuditAction::Create => "create",
            AuditAction::Retire => "retire",
            AuditAction::AddProvider => "add-provider",
            AuditAction::Request => "request",
            AuditAction::Approve => "approve",
            AuditAction::Reject => "reject",
            AuditAction::Withdraw => "withdraw",
            AuditAction::Reprice => "reprice",
        }
    }

    pub fn parse(text: &str) -> Option<AuditAction> {
        AuditAction::ALL.into_iter().find(|a| a.as_str() == text)
    }
}

/// How it went. `pending`: the intent is written, the AWS call not answered (yet); `unknown`:
/// the call went out and no answer came back (a timeout, a lost connection), so whether it took
/// effect is not known. Both are settled by asking ECS: at start, and every reconcile interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    #[default]
    Pending,
    /// Not sent: a check failed, or AWS refused the call.
    Refused,
    /// A task definition revision was registered.
    Registered,
    /// UpdateService was sent; the rollout runs.
    InProgress,
    Succeeded,
    Failed,
    /// The circuit breaker put the previous revision back: a failure.
    RolledBack,
    /// Sent, and no answer came back: ECS is asked what happened, and the record settled.
    Unknown,
    /// A request or a decision about one, written; nothing was sent to AWS by it.
    Recorded,
}

impl Outcome {
    pub const ALL: [Outcome; 9] = [
        Outcome::Pending,
        Outcome::Refused,
        Outcome::Registered,
        Outcome::InProgress,
        Outcome::Succeeded,
        Outcome::Failed,
        Outcome::RolledBack,
        Outcome::Unknown,
        Outcome::Recorded,
    ];

    /// The name in the API, the CSV and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pending => "pending",
            Outcome::Refused => "refused",
            Outcome::Registered => "registered",
            Outcome::InProgress => "in_progress",
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::RolledBack => "rolled_back",
            Outcome::Unknown => "unknown",
            Outcome::Recorded => "recorded",
        }
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == text)
    }

    /// Whether nothing more will happen to the record.
    pub fn is_final(self) -> bool {
        !matches!(
            self,
            Outcome::Pending | Outcome::InProgress | Outcome::Unknown
        )
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a lock in the audit store keeps to one writer at a time, across the console's replicas.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lock {
    /// A service, while a deploy, rollback or change of its desired count is sent (and, when
    /// the answer never came, until a reconcile asks ECS what happened).
    Service { cluster: String, service: String },
    /// A team's GPU budget on a cluster, while a change of the team's use there is judged and
    /// its intent written.
    Budget { team: String, cluster: String },
}

impl Lock {
    /// The lock of the service an audit record's `cluster/service` resource names; `None` for a
    /// resource that is not a service (a family's registration).
    pub fn of_service_resource(resource: &str) -> Option<Lock> {
        let (cluster, service) = resource.split_once('/')?;
        Some(Lock::Service {
            cluster: cluster.to_string(),
            service: service.to_string(),
        })
    }

    /// The name the store keeps the lock under: the service's `cluster/service` (its audit
    /// records' resource), or `budget:team@cluster`.
    pub fn key(&self) -> String {
        match self {
            Lock::Service { cluster, service } => format!("{cluster}/{service}"),
            Lock::Budget { team, cluster } => format!("budget:{team}@{cluster}"),
        }
    }
}

/// Who made a change and from where, as the intent and the record both keep it (its fields sit
/// at the top level of either's JSON, as they always did).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditActor {
    /// The sign-in's subject (`local` without sign-in).
    pub actor: String,
    #[serde(default)]
    pub actor_email: Option<String>,
    #[serde(default)]
    pub actor_role: Option<Role>,
    #[serde(default)]
    pub auth_mode: Option<AuthMode>,
    /// The address the request came from.
    #[serde(default)]
    pub source: Option<String>,
}

impl AuditActor {
    /// The signed-in (or local) person `actor`.
    pub fn of(actor: &Actor) -> AuditActor {
        AuditActor {
            actor: actor.subject.clone(),
            actor_email: actor.email.clone(),
            actor_role: Some(actor.role),
            auth_mode: Some(actor.auth),
            source: actor.source.clone(),
        }
    }

    /// Someone known only by name (a test's or an old record's).
    pub fn named(actor: &str) -> AuditActor {
        AuditActor {
            actor: actor.to_string(),
            ..AuditActor::default()
        }
    }
}

/// The intent, written before the AWS call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditIntent {
    /// Who, and from where.
    #[serde(flatten)]
    pub who: AuditActor,
    pub action: AuditAction,
    /// The family for a registration, `cluster/service` for a deployment.
    pub resource: String,
    /// The revision the change starts from, and the one it makes or rolls out.
    pub from_revision: Option<String>,
    pub to_revision: Option<String>,
    /// The diff, as JSON.
    pub diff: String,
    /// The pre-check's verdict, for a deployment.
    pub pre_check: Option<String>,
    /// The change description.
    pub description: Option<String>,
    /// Who approved the change, when it waited for approval (the actor asked for it).
    #[serde(default)]
    pub approved_by: Option<String>,
    /// The approval request the record belongs to.
    #[serde(default)]
    pub approval_id: Option<String>,
}

impl AuditIntent {
    /// An intent of `actor` to do `action` to `resource`; the rest is filled in by the caller.
    pub fn by(actor: &Actor, action: AuditAction, resource: impl Into<String>) -> AuditIntent {
        AuditIntent {
            who: AuditActor::of(actor),
            action,
            resource: resource.into(),
            diff: "[]".into(),
            ..AuditIntent::default()
        }
    }
}

/// The outcome, written after the AWS call and again when a rollout ends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditOutcome {
    pub outcome: Outcome,
    pub request_id: Option<String>,
    pub deployment_id: Option<String>,
    /// What happened, in words (ECS's error, the events that explain a failure).
    pub detail: Option<String>,
    /// The revision registered, when the AWS call made one.
    pub to_revision: Option<String>,
    /// The deployments ECS had (listed or named in its events) just before UpdateService.
    pub prior_deployments: Option<Vec<String>>,
}

/// One record of the log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub id: String,
    /// When the intent was written, RFC 3339.
    pub at: String,
    /// When the record last changed, RFC 3339.
    pub updated_at: String,
    /// Who, and from where, as the intent said.
    #[serde(flatten)]
    pub who: AuditActor,
    pub action: AuditAction,
    pub resource: String,
    pub from_revision: Option<String>,
    pub to_revision: Option<String>,
    pub diff: String,
    pub pre_check: Option<String>,
    pub description: Option<String>,
    pub outcome: Outcome,
    pub request_id: Option<String>,
    pub deployment_id: Option<String>,
    pub detail: Option<String>,
    /// Who approved the change, when it waited for approval.
    #[serde(default)]
    pub approved_by: Option<String>,
    /// The approval request the record belongs to.
    #[serde(default)]
    pub approval_id: Option<String>,
    /// For a deploy, rollback or restart: the deployments ECS had (listed, or named in its
    /// events) just before UpdateService was sent. A reconcile tells the deployment the call
    /// made by its not being among them, without comparing the console's clock with ECS's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_deployments: Option<Vec<String>>,
}

/// A filter of the log; every part optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditFilter {
    pub action: Option<String>,
    /// Part of the resource name.
    pub resource: Option<String>,
    pub outcome: Option<String>,
    /// At most this many records, newest first (default 200, at most 10,000).
    pub limit: Option<u32>,
}

impl AuditFilter {
    /// What is wrong with the filter, or `None`.
    pub fn problem(&self) -> Option<String> {
        if let Some(action) = self.action.as_deref().filter(|a| !a.is_empty()) {
            if AuditAction::parse(action).is_none() {
                return Some(format!(
                    "action {action:?} is not one of {}",
                    AuditAction::ALL.map(AuditAction::as_str).join(", ")
                ));
            }
        }
        if let Some(outcome) = self.outcome.as_deref().filter(|o| !o.is_empty()) {
            if Outcome::parse(outcome).is_none() {
                return Some(format!(
                    "outcome {outcome:?} is not one of {}",
                    Outcome::ALL.map(Outcome::as_str).join(", ")
                ));
            }
        }
        if self.limit.is_some_and(|l| l == 0 || l > 10_000) {
            return Some("limit must be from 1 to 10000".into());
        }
        None
    }
}

/// The records as CSV, a header first; fields quoted as RFC 4180 says.
pub fn to_csv(records: &[AuditRecord]) -> String {
    use crate::model::csv::field;
    let mut out = String::from(
        "id,at,updated_at,actor,action,resource,from_revision,to_revision,outcome,request_id,deployment_id,pre_check,description,detail,actor_email,actor_role,auth_mode,source,approved_by,approval_id\n",
    );
    for r in records {
        let cells = [
            r.id.as_str(),
            &r.at,
            &r.updated_at,
            &r.who.actor,
            r.action.as_str(),
            &r.resource,
            r.from_revision.as_deref().unwrap_or_default(),
            r.to_revision.as_deref().unwrap_or_default(),
            r.outcome.as_str(),
            r.request_id.as_deref().unwrap_or_default(),
            r.deployment_id.as_deref().unwrap_or_default(),
            r.pre_check.as_deref().unwrap_or_default(),
            r.description.as_deref().unwrap_or_default(),
            r.detail.as_deref().unwrap_or_default(),
            r.who.actor_email.as_deref().unwrap_or_default(),
            r.who.actor_role.map(Role::as_str).unwrap_or_default(),
            r.who.auth_mode.map(AuthMode::as_str).unwrap_or_default(),
            r.who.source.as_deref().unwrap_or_default(),
            r.approved_by.as_deref().unwrap_or_default(),
            r.approval_id.as_deref().unwrap_or_default(),
        ];
        out.push_str(&cells.map(field).join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it_and_defuses_formulas() {
        let record = AuditRecord {
            id: "a1".into(),
            at: "2026-11-30T10:00:00Z".into(),
            updated_at: "2026-11-30T10:00:01Z".into(),
            who: AuditActor {
                actor: "local".into(),
                actor_email: Some("ana@example.com".into()),
                actor_role: Some(Role::Deployer),
                auth_mode: Some(AuthMode::Proxy),
                source: Some("10.0.0.7".into()),
            },
            action: AuditAction::Deploy,
            resource: "prod/embed".into(),
            from_revision: Some("embed:1".into()),
            to_revision: Some("embed:2".into()),
            diff: "[]".into(),
            pre_check: Some("completes".into()),
            description: Some("more memory, \"batch 32\"".into()),
            outcome: Outcome::Succeeded,
            request_id: None,
            deployment_id: Some("ecs-svc/1".into()),
            detail: Some("=HYPERLINK(\"x\")".into()),
            approved_by: Some("cy".into()),
            approval_id: None,
            prior_deployments: None,
        };
        let csv = to_csv(&[record]);
        let line = csv.lines().nth(1).expect("a row");
        assert!(line.starts_with("a1,2026-11-30T10:00:00Z,"));
        assert!(line.contains(",\"more memory, \"\"batch 32\"\"\","));
        assert!(
            line.ends_with(
                ",\"'=HYPERLINK(\"\"x\"\")\",ana@example.com,deployer,proxy,10.0.0.7,cy,"
            ),
            "{line}"
        );
        assert_eq!(csv.lines().count(), 2);
    }

    #[test]
    fn a_lock_is_kept_under_the_name_it_always_had_and_only_a_service_resource_names_a_service() {
        let service = Lock::of_service_resource("prod/embed").expect("a service");
        assert_eq!(
            service,
            Lock::Service {
                cluster: "prod".into(),
                service: "embed".into()
            }
        );
        assert_eq!(service.key(), "prod/embed");
        let budget = Lock::Budget {
            team: "search".into(),
            cluster: "prod".into(),
        };
        assert_eq!(budget.key(), "budget:search@prod");
        assert_ne!(budget.key(), service.key());
        assert_eq!(Lock::of_service_resource("embed-family"), None);
    }

    #[test]
    fn a_filter_names_what_it_cannot_take() {
        assert!(AuditFilter::default().problem().is_none());
        let bad = AuditFilter {
            action: Some("delete".into()),
            ..AuditFilter::default()
        };
        assert!(bad
            .problem()
            .is_some_and(|p| p.contains("register, deploy")));
        let bad = AuditFilter {
            outcome: Some("ok".into()),
            ..AuditFilter::default()
        };
        assert!(bad.problem().is_some());
        let bad = AuditFilter {
            limit: Some(0),
            ..AuditFilter::default()
        };
        assert!(bad.problem().is_some());
    }
}
