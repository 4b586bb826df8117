//! The policy file (`--policy policy.toml`): groups → roles, groups → teams, and the fields only
//! an admin may change. `policy.example.toml` at the top of the repository documents it.

use std::path::Path;

use app::model::policy::Policy;

/// Reads the policy file at `path`, or says what is wrong with it and where.
pub fn load(path: &Path) -> Result<Policy, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the policy file {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("the policy file {} is not valid: {e}", path.display()))
}

/// Reads a policy from TOML.
pub fn parse(text: &str) -> Result<Policy, String> {
    let policy: Policy = toml::from_str(text).map_err(|e| e.to_string())?;
    for rule in &policy.teams {
        if rule.team.trim().is_empty() || rule.group.trim().is_empty() {
            return Err("every [[teams]] entry needs a group and a team".into());
        }
    }
    for rule in &policy.roles {
        if rule.group.trim().is_empty() {
            return Err("every [[roles]] entry needs a group".into());
        }
    }
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::model::identity::Role;

    #[test]
    fn the_example_in_the_repository_is_valid() {
        let policy = parse(include_str!("../../../policy.example.toml")).expect("valid");
        assert_eq!(
            policy.role_for(&["platform-admins".into()]),
            Some(Role::Admin)
        );
        assert!(!policy.teams.is_empty());
        assert!(policy.admin_only_fields.iter().any(|f| f == "taskRoleArn"));
    }

    #[test]
    fn a_wrong_policy_says_where() {
        let error = parse("[[roles]]\ngroup = \"x\"\nrole = \"root\"\n").expect_err("no such role");
        assert!(error.contains("root"), "{error}");
        let error = parse("default_role = \"viewer\"\nrule = 1\n").expect_err("unknown key");
        assert!(error.contains("rule"), "{error}");
        let defaults = parse("").expect("empty is valid");
        assert_eq!(
            defaults.default_role, None,
            "an empty file gives nobody a role"
        );
        assert!(!defaults.admin_only_fields.is_empty());
    }
}
