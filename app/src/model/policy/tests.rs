//! Unit tests of the `policy` module.

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
