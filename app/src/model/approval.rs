//! Requests for approval: a deploy or rollback that would take a team past its GPU budget, kept
//! with everything the approver needs to say yes (the revision, the pre-check, the diff, the
//! budget arithmetic, the requester's note), and what became of it.

use serde::{Deserialize, Serialize};

use crate::model::{
    audit::AuditAction,
    budget::{BudgetUse, Delta},
    deployment::{DeployRequest, ScaleRequest},
    identity::Actor,
    new_service::NewServiceForm,
};

/// A new service asked for past its team's budget: the requests as the requester sent them (kept
/// to be checked and sent again once approved), and what the approvers see of it — the task
/// definition, the count, the GPUs each task asks and the capacity provider — without the values
/// of the requests, since approvers may be of any team.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreationAsked {
    /// The requests; left out of what a page or the API shows.
    #[serde(default)]
    pub form: NewServiceForm,
    /// `family:N`, or `family (a new revision)` from the template.
    pub task_definition: String,
    pub desired: u32,
    /// Each container's GPU settings, in words.
    #[serde(default)]
    pub gpu: Vec<String>,
    /// The capacity provider its tasks go to; `None` for the cluster's instances.
    #[serde(default)]
    pub provider: Option<String>,
}

/// What someone decides about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Send the change, as the requester's, approved by the approver.
    Approve,
    /// Close the request without sending anything.
    Reject,
    /// The requester takes the request back.
    Withdraw,
}

impl ApprovalDecision {
    /// The word the forms and the API use.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalDecision::Approve => "approve",
            ApprovalDecision::Reject => "reject",
            ApprovalDecision::Withdraw => "withdraw",
        }
    }
}

impl std::str::FromStr for ApprovalDecision {
    type Err = String;

    fn from_str(word: &str) -> Result<ApprovalDecision, String> {
        match word {
            "approve" => Ok(ApprovalDecision::Approve),
            "reject" => Ok(ApprovalDecision::Reject),
            "withdraw" => Ok(ApprovalDecision::Withdraw),
            other => Err(format!(
                "decision {other:?} is not approve, reject or withdraw"
            )),
        }
    }
}

/// Where a request is. `pending` waits for a decision; `sending`: approved, the checks run again
/// and the change is being sent; then `sent`, or `refused` when the checks no longer passed.
/// `rejected` and `withdrawn` send nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    #[default]
    Pending,
    Sending,
    Sent,
    Refused,
    Rejected,
    Withdrawn,
}

impl ApprovalState {
    pub const ALL: [ApprovalState; 6] = [
        ApprovalState::Pending,
        ApprovalState::Sending,
        ApprovalState::Sent,
        ApprovalState::Refused,
        ApprovalState::Rejected,
        ApprovalState::Withdrawn,
    ];

    /// The name in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Sending => "sending",
            ApprovalState::Sent => "sent",
            ApprovalState::Refused => "refused",
            ApprovalState::Rejected => "rejected",
            ApprovalState::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(text: &str) -> Option<ApprovalState> {
        ApprovalState::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether nothing more will happen to the request.
    pub fn is_final(self) -> bool {
        !matches!(self, ApprovalState::Pending | ApprovalState::Sending)
    }

    /// The state in words, for the page.
    pub fn words(self) -> &'static str {
        match self {
            ApprovalState::Pending => "waiting for approval",
            ApprovalState::Sending => "approved, being sent",
            ApprovalState::Sent => "approved and sent",
            ApprovalState::Refused => "approved, but the checks no longer pass: nothing was sent",
            ApprovalState::Rejected => "rejected: nothing was sent",
            ApprovalState::Withdrawn => "withdrawn by the requester: nothing was sent",
        }
    }
}

impl std::fmt::Display for ApprovalState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A change waiting for (or past) a decision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub id: String,
    /// When it was asked for, and last changed, RFC 3339.
    pub created_at: String,
    pub updated_at: String,
    pub state: ApprovalState,
    /// A deploy or a rollback.
    pub action: AuditAction,
    pub team: String,
    pub cluster: String,
    pub service: String,
    /// Who asked, as they were when they asked: the change is sent as theirs.
    pub requester: Actor,
    /// The deploy as it will be sent: revision, the revision expected to run, force, note.
    pub request: DeployRequest,
    /// For a change of the desired count instead of a deploy: the count, the one expected now,
    /// the note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<ScaleRequest>,
    /// `family:N` the service ran, and the one it would run.
    pub from: String,
    pub target: String,
    /// The diff of the two revisions, as JSON (the audit log's form).
    pub diff: String,
    /// The pre-check's verdict when asked.
    pub pre_check: String,
    /// The budget's arithmetic when asked, in words.
    pub arithmetic: String,
    /// What the change adds to the team's use.
    pub delta: Delta,
    /// Held + waiting + this change when asked: an approval does not cover more than this.
    pub after_mib: u64,
    /// Who decided (approved, rejected or withdrew), when, and their note.
    #[serde(default)]
    pub decided_by: Option<String>,
    #[serde(default)]
    pub decided_by_email: Option<String>,
    #[serde(default)]
    pub decided_at: Option<String>,
    #[serde(default)]
    pub decision_note: Option<String>,
    /// What happened after the approval: why nothing was sent, or what was.
    #[serde(default)]
    pub detail: Option<String>,
    /// The audit record of the change sent, which is also its rollout's watch id.
    #[serde(default)]
    pub audit_id: Option<String>,
    /// For a new service instead of a change of one: what would be created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation: Option<CreationAsked>,
}

impl ApprovalRequest {
    /// `cluster/service`.
    pub fn resource(&self) -> String {
        format!("{}/{}", self.cluster, self.service)
    }

    /// The requester's note.
    pub fn note(&self) -> &str {
        match &self.scale {
            Some(scale) => &scale.description,
            None => &self.request.description,
        }
    }

    /// What is asked, in words: "Deploy embed-api:3 to prod/embed-api", "Scale prod/embed-api
    /// from 8 to 12 tasks".
    pub fn title(&self) -> String {
        if let Some(creation) = &self.creation {
            return format!(
                "Create {} ({} × {})",
                self.resource(),
                creation.task_definition,
                creation.desired
            );
        }
        match (&self.scale, self.action) {
            (Some(scale), _) => format!(
                "Scale {} from {} to {} tasks",
                self.resource(),
                scale.expected_desired,
                scale.desired
            ),
            (None, AuditAction::Rollback) => {
                format!("Roll back {} to {}", self.resource(), self.target)
            }
            (None, AuditAction::Restart) => {
                format!("Restart {} (new tasks of {})", self.resource(), self.target)
            }
            (None, _) => format!("Deploy {} to {}", self.target, self.resource()),
        }
    }

    /// What exactly is asked, as one text: two requests with the same key for the same service
    /// ask for the same change, and only one of them waits. A deploy names both revisions with
    /// their family and whether it is forced; a scale names the revision it runs and both counts.
    pub fn change_key(&self) -> String {
        if let Some(creation) = &self.creation {
            return format!("create {} × {}", creation.task_definition, creation.desired);
        }
        match &self.scale {
            Some(scale) => format!(
                "scale {} {} -> {}",
                self.from, scale.expected_desired, scale.desired
            ),
            None => format!(
                "{} {} -> {}{}",
                self.action.as_str(),
                self.from,
                self.target,
                if self.request.force { " forced" } else { "" }
            ),
        }
    }

    /// The request as a page or the API shows it: a new service's requests left out (what is
    /// created is shown by its summary).
    pub fn shown(mut self) -> ApprovalRequest {
        if let Some(creation) = self.creation.as_mut() {
            creation.form = NewServiceForm::default();
        }
        self
    }

    /// Who asked, in words.
    pub fn requester_words(&self) -> String {
        self.requester
            .email
            .clone()
            .unwrap_or_else(|| self.requester.subject.clone())
    }
}

/// A decision about a request: approve or reject, with a note.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    #[serde(default)]
    pub note: String,
}

/// Which requests to list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalFilter {
    /// One state; all by default.
    pub state: Option<String>,
    pub team: Option<String>,
    pub cluster: Option<String>,
    /// The page, from 1 (the first by default).
    pub page: Option<String>,
}

impl ApprovalFilter {
    /// The page the filter names (from 1), or what is wrong with it.
    pub fn page(&self) -> Result<u32, String> {
        match self
            .page
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            None => Ok(1),
            Some(text) => text
                .parse::<u32>()
                .ok()
                .filter(|p| (1..=100_000).contains(p))
                .ok_or_else(|| format!("page {text:?} is not a page number from 1")),
        }
    }

    /// The state the filter names, or what is wrong with it.
    pub fn state(&self) -> Result<Option<ApprovalState>, String> {
        match self.state.as_deref().filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some(text) => ApprovalState::parse(text).map(Some).ok_or_else(|| {
                format!(
                    "state {text:?} is not one of {}",
                    ApprovalState::ALL.map(ApprovalState::as_str).join(", ")
                )
            }),
        }
    }
}

/// The approvals page: requests, newest first, what the person may do with each, and every
/// team's budget use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalsView {
    pub requests: Vec<ApprovalItem>,
    pub budgets: Vec<BudgetUse>,
    /// How many requests match the filter in all (the list shows [`APPROVALS_PAGE`] at a time).
    #[serde(default)]
    pub total: u64,
    /// The page shown, from 1.
    #[serde(default)]
    pub page: u32,
}

/// Requests listed on one page.
pub const APPROVALS_PAGE: u32 = 100;

/// A request and what the person looking may do with it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalItem {
    pub request: ApprovalRequest,
    /// Whether they may approve or reject it now, and why not.
    pub may_decide: bool,
    #[serde(default)]
    pub why_not: Option<String>,
    /// Whether they may withdraw it (their own, still waiting).
    pub may_withdraw: bool,
    /// When the console read it (RFC 3339, UTC): a page that follows a waiting request says how
    /// fresh it is.
    #[serde(default)]
    pub read_at: String,
}

/// A note's longest length.
pub const NOTE_MAX: usize = 1024;

/// What is wrong with a note, or `None`.
pub fn note_problem(note: &str) -> Option<String> {
    if note.chars().count() > NOTE_MAX {
        return Some(format!(
            "the note is {} characters; keep it to {NOTE_MAX}",
            note.chars().count()
        ));
    }
    if note.chars().any(|c| c.is_control() && c != '\n') {
        return Some("the note holds control characters; write plain text".into());
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_say_what_they_mean() {
        for state in ApprovalState::ALL {
            assert_eq!(ApprovalState::parse(state.as_str()), Some(state));
        }
        assert!(!ApprovalState::Pending.is_final());
        assert!(!ApprovalState::Sending.is_final());
        assert!(ApprovalState::Rejected.is_final());
        assert!(ApprovalState::Refused.words().contains("nothing was sent"));
        let filter = ApprovalFilter {
            state: Some("open".into()),
            ..ApprovalFilter::default()
        };
        assert!(filter.state().unwrap_err().contains("pending, sending"));
    }

    #[test]
    fn notes_are_plain_and_short() {
        assert!(note_problem("ok, the launch needs it\nthanks").is_none());
        assert!(note_problem(&"x".repeat(NOTE_MAX + 1)).is_some());
        assert!(note_problem("bell\u{7}").is_some());
    }
}
