//! Who may do what: the policy file's groups → roles and groups → teams, the fields only an
//! admin may change, and the rules that decide a registration, a deploy and a reveal. Every
//! refusal says which rule refused and who could do it instead.

use serde::{Deserialize, Serialize};

use crate::model::{
    budget::BudgetRule,
    identity::{Actor, Refusal, Role},
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

/// The fields of a task definition that widen what a task may do on its host or in AWS, or
/// reach other teams' data: only an admin may change them. A path names a field as the diff
/// does, `[*]` for any item of a list (`containerDefinitions[*].privileged`); a path covers
/// everything below it. Secrets, environment files and private registry credentials read what
/// the execution role can read, which is every team's in an account that shares one;
/// `volumesFrom` mounts another container's volumes; EFS and FSx volumes mount file systems by
/// id.
pub const DEFAULT_ADMIN_ONLY_FIELDS: [&str; 21] = [
    "taskRoleArn",
    "executionRoleArn",
    "networkMode",
    "pidMode",
    "ipcMode",
    "volumes[*].host",
    "volumes[*].dockerVolumeConfiguration",
    "volumes[*].efsVolumeConfiguration",
    "volumes[*].fsxWindowsFileServerVolumeConfiguration",
    "containerDefinitions[*].privileged",
    "containerDefinitions[*].user",
    "containerDefinitions[*].linuxParameters.capabilities",
    "containerDefinitions[*].linuxParameters.devices",
    "containerDefinitions[*].dockerSecurityOptions",
    "containerDefinitions[*].systemControls",
    "containerDefinitions[*].mountPoints",
    "containerDefinitions[*].volumesFrom",
    "containerDefinitions[*].secrets",
    "containerDefinitions[*].environmentFiles",
    "containerDefinitions[*].repositoryCredentials",
    "containerDefinitions[*].logConfiguration.secretOptions",
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
    /// The `NVIDIA_*` and `CUDA_MPS_*` environment variables an edit may set (exact names, or
    /// prefixes ending in `*`); any other such variable an edit sets or changes is refused, for
    /// admins too.
    #[serde(default)]
    pub allowed_gpu_variables: Vec<String>,
}

impl Default for Policy {
    /// Nobody who signs in is let in (no default role), nobody is on a team: a console with a
    /// sign-in needs a policy file, and without one only the local administrator of `--auth
    /// none` uses it.
    fn default() -> Self {
        Policy {
            default_role: None,
            roles: Vec::new(),
            teams: Vec::new(),
            admin_only_fields: default_admin_only(),
            budgets: Vec::new(),
            allowed_gpu_variables: Vec::new(),
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
    pub fn admins(&self) -> String {
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
    pub fn members(&self, team: &str) -> String {
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

    /// Whether `actor` may make the changes of `diff` to a family that belongs to `owner` now,
    /// the edit's result naming `result_team` in its team tag (`team_tag`): the team tag and the
    /// admin-only fields are an admin's to change. The team is compared as the two requests
    /// name it, not through the diff, so that a `tags` list dropped whole or a repeated key
    /// cannot move a family to another team unseen.
    pub fn may_edit(
        &self,
        actor: &Actor,
        diff: &[DiffEntry],
        (owner, result_team): (Option<&str>, Option<&str>),
        team_tag: &str,
    ) -> Result<(), Refusal> {
        if actor.role == Role::Admin {
            return Ok(());
        }
        if owner != result_team {
            let said = |team: Option<&str>| {
                team.map_or_else(|| "no team".to_string(), |t| format!("team {t}"))
            };
            return Err(format!(
                "The edit changes the team tag `{team_tag}` from {} to {} (the family belongs to {} now), and only an admin may change it: keep the tag as it is, or ask {}.",
                said(owner),
                said(result_team),
                said(owner),
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

    /// Why the GPU-steering environment variables an edit sets (`(container, name)`) are
    /// refused, or `None` when the policy allows each of them.
    pub fn gpu_variables_refused(&self, set: &[(String, String)]) -> Option<String> {
        let refused: Vec<String> = set
            .iter()
            .filter(|(_, name)| {
                !crate::model::task_definition::allowed_by(name, &self.allowed_gpu_variables)
            })
            .map(|(container, name)| format!("{name} (container {container})"))
            .collect();
        (!refused.is_empty()).then(|| {
            format!(
                "The edit sets {}: NVIDIA_* and CUDA_MPS_* variables steer what a container sees of the GPUs and of the MPS daemon, and ECS sets the ones GPU sharing needs. Remove them, or ask an admin to allow them in the policy file (allowed_gpu_variables).",
                refused.join(", ")
            )
        })
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
mod tests;
