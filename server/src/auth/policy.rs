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
    for (index, budget) in policy.budgets.iter().enumerate() {
        let which = format!(
            "[[budgets]] entry {} (team {:?}, cluster {:?})",
            index + 1,
            budget.team,
            budget.cluster
        );
        if budget.team.trim().is_empty() || budget.cluster.trim().is_empty() {
            return Err(format!("{which} needs a team and a cluster"));
        }
        if !policy.teams.iter().any(|t| t.team == budget.team) {
            let known: Vec<&str> = policy.teams.iter().map(|t| t.team.as_str()).collect();
            return Err(format!(
                "{which}: no group maps to team {:?}, so nobody could deploy for it or be held to the budget; add a [[teams]] entry for it{}",
                budget.team,
                if known.is_empty() {
                    String::new()
                } else {
                    format!(" (teams mapped now: {})", known.join(", "))
                }
            ));
        }
        if policy.budgets[..index]
            .iter()
            .any(|b| b.team == budget.team && b.cluster == budget.cluster)
        {
            return Err(format!(
                "{which}: team {:?} already has a budget on cluster {:?}; keep one",
                budget.team, budget.cluster
            ));
        }
        if budget.approvers.iter().any(|g| g.trim().is_empty()) {
            return Err(format!("{which}: an approver group is empty"));
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

    const TEAMS: &str = "[[teams]]\ngroup = \"search-eng\"\nteam = \"search\"\n";

    #[test]
    fn budgets_read_their_units_and_name_a_mapped_team() {
        let policy = parse(&format!(
            "{TEAMS}[[budgets]]\nteam = \"search\"\ncluster = \"prod\"\ngpu_memory = \"128 GiB\"\nwhole_gpus = 2\nmonthly_cost = \"$20,000\"\napprovers = [\"search-leads\"]\n"
        ))
        .expect("valid");
        let budget = policy.budget("search", "prod").expect("a budget");
        assert_eq!(budget.gpu_memory_mib, 128 * 1024);
        assert_eq!(budget.whole_gpus, Some(2));
        assert_eq!(budget.monthly_cost_cents, Some(2_000_000));
        assert_eq!(budget.approvers, ["search-leads"]);
        assert!(policy.budget("search", "dev").is_none());

        let unit = parse(&format!(
            "{TEAMS}[[budgets]]\nteam = \"search\"\ncluster = \"prod\"\ngpu_memory = \"128 GB\"\n"
        ))
        .expect_err("GB is ambiguous");
        assert!(
            unit.contains("ambiguous") && unit.contains("gpu_memory"),
            "{unit}"
        );
        let unmapped = parse(&format!(
            "{TEAMS}[[budgets]]\nteam = \"vision\"\ncluster = \"prod\"\ngpu_memory = 1024\n"
        ))
        .expect_err("no group maps to vision");
        assert!(
            unmapped.contains("no group maps to team \"vision\""),
            "{unmapped}"
        );
        assert!(
            unmapped.contains("search"),
            "names the teams there are: {unmapped}"
        );
        let twice = parse(&format!(
            "{TEAMS}[[budgets]]\nteam = \"search\"\ncluster = \"prod\"\ngpu_memory = 1024\n[[budgets]]\nteam = \"search\"\ncluster = \"prod\"\ngpu_memory = 2048\n"
        ))
        .expect_err("two budgets");
        assert!(twice.contains("already has a budget"), "{twice}");
        let cost = parse(&format!(
            "{TEAMS}[[budgets]]\nteam = \"search\"\ncluster = \"prod\"\ngpu_memory = 1024\nmonthly_cost = \"lots\"\n"
        ))
        .expect_err("a cost that does not parse");
        assert!(cost.contains("monthly cost"), "{cost}");
    }
}
