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

    /// The family belongs to search before and after the edit.
    const SEARCH: (Option<&str>, Option<&str>) = (Some("search"), Some("search"));

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
            .may_edit(&deployer, std::slice::from_ref(&gpu), SEARCH, "team")
            .is_ok());
        let moved = policy
            .may_edit(
                &deployer,
                std::slice::from_ref(&gpu),
                (Some("search"), Some("vision")),
                "team",
            )
            .expect_err("the team tag");
        assert!(
            moved.contains("team tag `team` from team search to team vision"),
            "{moved}"
        );
        // A tags list dropped whole, or a key given twice, names another team or none.
        for result in [None, Some("search, vision")] {
            assert!(policy
                .may_edit(&deployer, &[], (Some("search"), result), "team")
                .is_err());
        }
        assert!(policy
            .may_edit(&actor(&["platform"]), &[], (Some("search"), None), "team")
            .is_ok());
        let privileged = entry("containerDefinitions[model].privileged", Some("true"));
        let refused = policy
            .may_edit(&deployer, std::slice::from_ref(&privileged), SEARCH, "team")
            .expect_err("privileged");
        assert!(
            refused.contains("containerDefinitions[*].privileged"),
            "{refused}"
        );
        assert!(policy
            .may_edit(&actor(&["platform"]), &[privileged], SEARCH, "team")
            .is_ok());
        let role = entry("taskRoleArn", Some("\"arn:aws:iam::1:role/x\""));
        assert!(policy.may_edit(&deployer, &[role], SEARCH, "team").is_err());
        let capabilities = entry(
            "containerDefinitions[model].linuxParameters.capabilities.add",
            Some("[\"SYS_ADMIN\"]"),
        );
        assert!(policy
            .may_edit(&deployer, &[capabilities], SEARCH, "team")
            .is_err());
    }

    #[test]
    fn a_container_or_volume_added_whole_is_looked_into() {
        let policy = policy();
        let deployer = actor(&["ml", "search-eng"]);
        let plain = entry(
            "containerDefinitions[sidecar]",
            Some(r#"{"name": "sidecar", "image": "x", "privileged": false}"#),
        );
        assert!(policy.may_edit(&deployer, &[plain], SEARCH, "team").is_ok());
        let privileged = entry(
            "containerDefinitions[sidecar]",
            Some(r#"{"name": "sidecar", "image": "x", "privileged": true}"#),
        );
        assert!(policy
            .may_edit(&deployer, &[privileged], SEARCH, "team")
            .is_err());
        let host = entry(
            "volumes[data]",
            Some(r#"{"name": "data", "host": {"sourcePath": "/"}}"#),
        );
        assert!(policy.may_edit(&deployer, &[host], SEARCH, "team").is_err());
        let caps = entry(
            "containerDefinitions",
            Some(r#"[{"name": "a", "linuxParameters": {"capabilities": {"add": ["NET_ADMIN"]}}}]"#),
        );
        assert!(policy.may_edit(&deployer, &[caps], SEARCH, "team").is_err());
        assert_eq!(
            generic("containerDefinitions[m].environment[A].value"),
            "containerDefinitions[*].environment[*].value"
        );
    }

    #[test]
    fn fields_that_reach_other_teams_data_are_an_admins() {
        let policy = policy();
        let deployer = actor(&["ml", "search-eng"]);
        for (path, after) in [
            (
                "containerDefinitions[model].secrets[DB]",
                r#"{"name": "DB", "valueFrom": "arn:aws:secretsmanager:us-east-1:1:secret:vision-db"}"#,
            ),
            (
                "containerDefinitions[model].environmentFiles[0]",
                r#"{"type": "s3", "value": "arn:aws:s3:::vision/env"}"#,
            ),
            (
                "containerDefinitions[model].repositoryCredentials.credentialsParameter",
                r#""arn:aws:secretsmanager:us-east-1:1:secret:registry""#,
            ),
            (
                "containerDefinitions[model].logConfiguration.secretOptions[token]",
                r#"{"name": "token", "valueFrom": "x"}"#,
            ),
            (
                "containerDefinitions[model].volumesFrom[0]",
                r#"{"sourceContainer": "other"}"#,
            ),
            (
                "volumes[data].efsVolumeConfiguration",
                r#"{"fileSystemId": "fs-1"}"#,
            ),
            (
                "volumes[data].fsxWindowsFileServerVolumeConfiguration",
                r#"{"fileSystemId": "fs-2"}"#,
            ),
        ] {
            let refused = policy
                .may_edit(&deployer, &[entry(path, Some(after))], SEARCH, "team")
                .expect_err(path);
            assert!(refused.contains("only an admin"), "{path}: {refused}");
        }
        // A sidecar added whole with a secret is looked into too.
        let sidecar = entry(
            "containerDefinitions[sidecar]",
            Some(r#"{"name": "sidecar", "secrets": [{"name": "K", "valueFrom": "x"}]}"#),
        );
        assert!(policy
            .may_edit(&deployer, &[sidecar], SEARCH, "team")
            .is_err());
    }

    #[test]
    fn gpu_variables_are_refused_unless_the_policy_names_them() {
        let set = vec![("model".to_string(), "NVIDIA_VISIBLE_DEVICES".to_string())];
        let refused = policy().gpu_variables_refused(&set).expect("refused");
        assert!(
            refused.contains("NVIDIA_VISIBLE_DEVICES (container model)"),
            "{refused}"
        );
        assert!(refused.contains("allowed_gpu_variables"), "{refused}");
        let allowing = Policy {
            allowed_gpu_variables: vec!["NVIDIA_*".into()],
            ..policy()
        };
        assert_eq!(allowing.gpu_variables_refused(&set), None);
        assert_eq!(policy().gpu_variables_refused(&[]), None);
    }
}
