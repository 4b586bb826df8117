//! Who may do what: the policy file's groups → roles and groups → teams, the fields only an
//! admin may change, and the rules that decide a registration, a deploy and a reveal. Every
//! refusal says which rule refused and who could do it instead.

use serde::{Deserialize, Serialize};

use crate::model::{
    budget::BudgetRule,
    identity::{Actor, Role},
    task_definition::DiffEntry,
};

/// A group's role. The first rule whose group the person is in decides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleRule {
    pub group: String,
    pub role: Role,
}

/// A group's team. A person is on the team of every group they are in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamRule {
    pub group: String,
    pub team: String,
}

/// The fields of a task definition that widen what a task may do on its host or in AWS: only
/// an admin may change them. A path names a field as the diff does, `[*]` for any item of a
/// list (`containerDefinitions[*].privileged`); a path covers everything below it.
pub const DEFAULT_ADMIN_ONLY_FIELDS: [&str; 14] = [
    "taskRoleArn",
    "executionRoleArn",
    "networkMode",
    "pidMode",
    "ipcMode",
    "volumes[*].host",
    "volumes[*].dockerVolumeConfiguration",
    "containerDefinitions[*].privileged",
    "containerDefinitions[*].user",
    "containerDefinitions[*].linuxParameters.capabilities",
    "containerDefinitions[*].linuxParameters.devices",
    "containerDefinitions[*].dockerSecurityOptions",
    "containerDefinitions[*].systemControls",
    "containerDefinitions[*].mountPoints",
];

fn default_admin_only() -> Vec<String> {
    DEFAULT_ADMIN_ONLY_FIELDS.map(str::to_string).to_vec()
}

/// The policy file: roles and teams by group, and the fields only admins may change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The role of a person in none of the `roles` groups; without it, such a person is
    /// refused.
    #[serde(default)]
    pub default_role: Option<Role>,
    #[serde(default)]
    pub roles: Vec<RoleRule>,
    #[serde(default)]
    pub teams: Vec<TeamRule>,
    #[serde(default = "default_admin_only")]
    pub admin_only_fields: Vec<String>,
    /// GPU budgets per team and cluster; a team without one on a cluster has no limit there.
    #[serde(default)]
    pub budgets: Vec<BudgetRule>,
}

impl Default for Policy {
    /// Everyone who signs in is a viewer; nobody is on a team.
    fn default() -> Self {
        Policy {
            default_role: Some(Role::Viewer),
            roles: Vec::new(),
            teams: Vec::new(),
            admin_only_fields: default_admin_only(),
            budgets: Vec::new(),
        }
    }
}

/// Why a request about a resource is refused, in words that name the rule and who could do it.
pub type Refusal = String;

/// Whether the person may do something, and why not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permission {
    pub allowed: bool,
    /// Why not, naming the rule and who could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Permission {
    pub fn of(decision: Result<(), Refusal>) -> Permission {
        match decision {
            Ok(()) => Permission {
                allowed: true,
                reason: None,
            },
            Err(reason) => Permission {
                allowed: false,
                reason: Some(reason),
            },
        }
    }
}

impl Policy {
    /// The role of a person in `groups`: the first rule that names one of them, else the
    /// default; `None` when the policy gives them none.
    pub fn role_for(&self, groups: &[String]) -> Option<Role> {
        self.roles
            .iter()
            .find(|rule| groups.contains(&rule.group))
            .map(|rule| rule.role)
            .or(self.default_role)
    }

    /// The teams of a person in `groups`, each once, in the policy's order.
    pub fn teams_for(&self, groups: &[String]) -> Vec<String> {
        let mut teams: Vec<String> = Vec::new();
        for rule in self
            .teams
            .iter()
            .filter(|rule| groups.contains(&rule.group))
        {
            if !teams.contains(&rule.team) {
                teams.push(rule.team.clone());
            }
        }
        teams
    }

    /// The groups that make someone an admin, for refusals that say who could.
    fn admins(&self) -> String {
        let groups: Vec<&str> = self
            .roles
            .iter()
            .filter(|r| r.role == Role::Admin)
            .map(|r| r.group.as_str())
            .collect();
        if groups.is_empty() {
            "an admin".into()
        } else {
            format!("an admin (group {})", groups.join(" or "))
        }
    }

    /// The groups of `team`, for refusals that say who could.
    fn members(&self, team: &str) -> String {
        let groups: Vec<&str> = self
            .teams
            .iter()
            .filter(|r| r.team == team)
            .map(|r| r.group.as_str())
            .collect();
        if groups.is_empty() {
            format!("a deployer of team {team}")
        } else {
            format!("a deployer of team {team} (group {})", groups.join(" or "))
        }
    }

    /// Whether `actor` may change what belongs to `owner` (a team tag, `None` for none):
    /// registering, deploying or rolling back. `what` names the action and the resource.
    pub fn may_change(
        &self,
        actor: &Actor,
        owner: Option<&str>,
        what: &str,
    ) -> Result<(), Refusal> {
        match actor.role {
            Role::Admin => Ok(()),
            Role::Viewer => Err(format!(
                "You are a viewer, and {what} needs the deployer or admin role: ask {}, or {}.",
                match owner {
                    Some(team) => self.members(team),
                    None => "an admin".into(),
                },
                self.admins()
            )),
            Role::Deployer => match owner {
                Some(team) if actor.on_team(team) => Ok(()),
                Some(team) => Err(format!(
                    "{what} belongs to team {team}, and you are on {}: ask {}, or {}.",
                    teams_in_words(&actor.teams),
                    self.members(team),
                    self.admins()
                )),
                None => Err(format!(
                    "{what} has no team tag, so only an admin may change it: ask {}, or tag it with your team.",
                    self.admins()
                )),
            },
        }
    }

    /// The budget of `team` on `cluster`, if the policy gives one.
    pub fn budget(&self, team: &str, cluster: &str) -> Option<&BudgetRule> {
        self.budgets
            .iter()
            .find(|b| b.team == team && b.cluster == cluster)
    }

    /// Whether `actor` may approve or reject the requests of `team` on `cluster`: an admin, or a
    /// member of one of the budget's approver groups.
    pub fn may_approve(&self, actor: &Actor, team: &str, cluster: &str) -> Result<(), Refusal> {
        if actor.role == Role::Admin {
            return Ok(());
        }
        let approvers: &[String] = self
            .budget(team, cluster)
            .map_or(&[], |b| b.approvers.as_slice());
        if approvers.iter().any(|group| actor.groups.contains(group)) {
            return Ok(());
        }
        Err(if approvers.is_empty() {
            format!(
                "Only an admin may approve team {team}'s requests on {cluster}: ask {}.",
                self.admins()
            )
        } else {
            format!(
                "Approving team {team}'s requests on {cluster} needs group {} or an admin; ask one of them, or {}.",
                approvers.join(" or "),
                self.admins()
            )
        })
    }

    /// Whether `actor` may see the masked values of what belongs to `owner`.
    pub fn may_reveal(&self, actor: &Actor, owner: Option<&str>) -> Result<(), Refusal> {
        if actor.role == Role::Admin || owner.is_some_and(|team| actor.on_team(team)) {
            return Ok(());
        }
        Err(match owner {
            Some(team) => format!(
                "Revealing masked values needs team {team} or an admin; you are on {}. Ask {}, or {}.",
                teams_in_words(&actor.teams),
                self.members(team),
                self.admins()
            ),
            None => format!(
                "Revealing masked values of a task definition without a team tag needs an admin: ask {}.",
                self.admins()
            ),
        })
    }

    /// Whether `actor` may make the changes of `diff`: the team tag `team_tag` and the
    /// admin-only fields are an admin's to change.
    pub fn may_edit(
        &self,
        actor: &Actor,
        diff: &[DiffEntry],
        team_tag: &str,
    ) -> Result<(), Refusal> {
        if actor.role == Role::Admin {
            return Ok(());
        }
        let tag = format!("tags[{team_tag}]");
        if diff
            .iter()
            .any(|e| e.path == tag || e.path.starts_with(&format!("{tag}.")))
        {
            return Err(format!(
                "The edit changes the team tag `{team_tag}`, which only an admin may change: ask {}.",
                self.admins()
            ));
        }
        let widened: Vec<&str> = self
            .admin_only_fields
            .iter()
            .filter(|field| diff.iter().any(|e| touches(e, field)))
            .map(String::as_str)
            .collect();
        if widened.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "The edit changes {}, which widen what the task may do on its host or in AWS; only an admin may change them: ask {}.",
                widened.join(", "),
                self.admins()
            ))
        }
    }
}

fn teams_in_words(teams: &[String]) -> String {
    if teams.is_empty() {
        "no team".into()
    } else {
        format!("team {}", teams.join(", "))
    }
}

/// A diff path with each list item's label made `[*]`: `containerDefinitions[model].user` →
/// `containerDefinitions[*].user`.
fn generic(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_label = false;
    for c in path.chars() {
        match (c, in_label) {
            ('[', _) => {
                in_label = true;
                out.push_str("[*]");
            }
            (']', true) => in_label = false,
            (_, true) => {}
            (c, false) => out.push(c),
        }
    }
    out
}

/// Whether the diff entry changes `field` or something below it. An entry above the field (a
/// container added whole) touches it when its new or old value holds the field.
fn touches(entry: &DiffEntry, field: &str) -> bool {
    let path = generic(&entry.path);
    if path == field
        || path.starts_with(&format!("{field}."))
        || path.starts_with(&format!("{field}["))
    {
        return true;
    }
    let Some(rest) = field
        .strip_prefix(&path)
        .and_then(|rest| rest.strip_prefix('.').or(rest.strip_prefix("[*].")))
    else {
        return false;
    };
    [&entry.before, &entry.after]
        .into_iter()
        .flatten()
        .filter_map(|json| serde_json::from_str::<serde_json::Value>(json).ok())
        .any(|value| holds(&value, rest))
}

/// Whether `value` has something at `rest` (`linuxParameters.capabilities`, `[*]` for any item).
fn holds(value: &serde_json::Value, rest: &str) -> bool {
    if rest.is_empty() {
        return !value.is_null() && *value != serde_json::Value::Bool(false);
    }
    if let Some(after) = rest.strip_prefix("[*]") {
        let after = after.strip_prefix('.').unwrap_or(after);
        return value
            .as_array()
            .is_some_and(|items| items.iter().any(|item| holds(item, after)));
    }
    let (key, after) = match rest.find(['.', '[']) {
        Some(at) => (
            &rest[..at],
            rest[at..].strip_prefix('.').unwrap_or(&rest[at..]),
        ),
        None => (rest, ""),
    };
    match value {
        serde_json::Value::Array(items) => items.iter().any(|item| holds(item, rest)),
        serde_json::Value::Object(map) => map.get(key).is_some_and(|v| holds(v, after)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{identity::AuthMode, task_definition::DiffChange};

    fn policy() -> Policy {
        Policy {
            default_role: Some(Role::Viewer),
            roles: vec![
                RoleRule {
                    group: "platform".into(),
                    role: Role::Admin,
                },
                RoleRule {
                    group: "ml".into(),
                    role: Role::Deployer,
                },
            ],
            teams: vec![
                TeamRule {
                    group: "search-eng".into(),
                    team: "search".into(),
                },
                TeamRule {
                    group: "vision-eng".into(),
                    team: "vision".into(),
                },
            ],
            ..Policy::default()
        }
    }

    fn actor(groups: &[&str]) -> Actor {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        let policy = policy();
        Actor {
            subject: "ana".into(),
            role: policy.role_for(&groups).unwrap_or_default(),
            teams: policy.teams_for(&groups),
            groups,
            auth: AuthMode::Proxy,
            ..Actor::default()
        }
    }

    fn entry(path: &str, after: Option<&str>) -> DiffEntry {
        DiffEntry {
            path: path.into(),
            change: DiffChange::Changed,
            before: None,
            after: after.map(str::to_string),
            gpu: false,
        }
    }

    #[test]
    fn the_first_matching_group_gives_the_role_and_every_group_its_team() {
        let policy = policy();
        let groups = |g: &[&str]| g.iter().map(|g| g.to_string()).collect::<Vec<_>>();
        assert_eq!(
            policy.role_for(&groups(&["ml", "platform"])),
            Some(Role::Admin)
        );
        assert_eq!(policy.role_for(&groups(&["ml"])), Some(Role::Deployer));
        assert_eq!(policy.role_for(&groups(&["sales"])), Some(Role::Viewer));
        let strict = Policy {
            default_role: None,
            ..policy.clone()
        };
        assert_eq!(strict.role_for(&groups(&["sales"])), None);
        assert_eq!(
            policy.teams_for(&groups(&["vision-eng", "search-eng", "vision-eng"])),
            ["search", "vision"]
        );
    }

    #[test]
    fn a_deployer_changes_only_their_teams_resources_and_a_viewer_nothing() {
        let policy = policy();
        let deployer = actor(&["ml", "search-eng"]);
        assert!(policy
            .may_change(&deployer, Some("search"), "embed")
            .is_ok());
        let other = policy
            .may_change(&deployer, Some("vision"), "Service prod/ocr")
            .expect_err("another team's");
        assert!(other.contains("belongs to team vision"), "{other}");
        assert!(
            other.contains("group vision-eng"),
            "says who could: {other}"
        );
        assert!(other.contains("group platform"), "{other}");
        assert!(policy.may_change(&deployer, None, "embed").is_err());
        let viewer = actor(&["search-eng"]);
        assert!(policy
            .may_change(&viewer, Some("search"), "embed")
            .expect_err("a viewer")
            .starts_with("You are a viewer"));
        assert!(policy
            .may_change(&actor(&["platform"]), None, "embed")
            .is_ok());
    }

    #[test]
    fn revealing_needs_the_owning_team_or_an_admin() {
        let policy = policy();
        assert!(policy
            .may_reveal(&actor(&["search-eng"]), Some("search"))
            .is_ok());
        assert!(policy
            .may_reveal(&actor(&["ml", "vision-eng"]), Some("search"))
            .is_err());
        assert!(policy.may_reveal(&actor(&["platform"]), None).is_ok());
    }

    #[test]
    fn the_team_tag_and_fields_that_widen_a_task_are_an_admins() {
        let policy = policy();
        let deployer = actor(&["ml", "search-eng"]);
        let gpu = entry(
            "containerDefinitions[model].resourceRequirements[0].sharingStrategy",
            Some("{}"),
        );
        assert!(policy
            .may_edit(&deployer, std::slice::from_ref(&gpu), "team")
            .is_ok());
        let tag = entry("tags[team].value", Some("\"vision\""));
        assert!(policy
            .may_edit(&deployer, &[gpu, tag], "team")
            .expect_err("the team tag")
            .contains("team tag `team`"));
        let privileged = entry("containerDefinitions[model].privileged", Some("true"));
        let refused = policy
            .may_edit(&deployer, std::slice::from_ref(&privileged), "team")
            .expect_err("privileged");
        assert!(
            refused.contains("containerDefinitions[*].privileged"),
            "{refused}"
        );
        assert!(policy
            .may_edit(&actor(&["platform"]), &[privileged], "team")
            .is_ok());
        let role = entry("taskRoleArn", Some("\"arn:aws:iam::1:role/x\""));
        assert!(policy.may_edit(&deployer, &[role], "team").is_err());
        let capabilities = entry(
            "containerDefinitions[model].linuxParameters.capabilities.add",
            Some("[\"SYS_ADMIN\"]"),
        );
        assert!(policy.may_edit(&deployer, &[capabilities], "team").is_err());
    }

    #[test]
    fn a_container_or_volume_added_whole_is_looked_into() {
        let policy = policy();
        let deployer = actor(&["ml", "search-eng"]);
        let plain = entry(
            "containerDefinitions[sidecar]",
            Some(r#"{"name": "sidecar", "image": "x", "privileged": false}"#),
        );
        assert!(policy.may_edit(&deployer, &[plain], "team").is_ok());
        let privileged = entry(
            "containerDefinitions[sidecar]",
            Some(r#"{"name": "sidecar", "image": "x", "privileged": true}"#),
        );
        assert!(policy.may_edit(&deployer, &[privileged], "team").is_err());
        let host = entry(
            "volumes[data]",
            Some(r#"{"name": "data", "host": {"sourcePath": "/"}}"#),
        );
        assert!(policy.may_edit(&deployer, &[host], "team").is_err());
        let caps = entry(
            "containerDefinitions",
            Some(r#"[{"name": "a", "linuxParameters": {"capabilities": {"add": ["NET_ADMIN"]}}}]"#),
        );
        assert!(policy.may_edit(&deployer, &[caps], "team").is_err());
        assert_eq!(
            generic("containerDefinitions[m].environment[A].value"),
            "containerDefinitions[*].environment[*].value"
        );
    }
}
