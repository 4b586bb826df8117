//! Team ownership and privileged fields, as a determined deployer would try to get around them,
//! through the router behind a sign-in proxy: the team tag dropped whole or given twice, an old
//! revision of a family that has moved to another team, fields that reach other teams' data, the
//! variables that steer the GPUs, and what people outside the owning team see of a revision.

use std::net::SocketAddr;

use axum::{
    body::Body,
    http::{Request, StatusCode},
    Router,
};
use serde_json::{json, Value};

use super::{access::POLICY, support::*};

const ANA: (&str, &str) = ("ana", "ml,search-eng");
const BO: (&str, &str) = ("bo", "ml,vision-eng");
const VIC: (&str, &str) = ("vic", "readers");
const ROOT: (&str, &str) = ("root", "platform");

async fn console_with(policy: &str) -> Router {
    let app = behind_proxy_with(policy, SocketAddr::from(([127, 0, 0, 1], 41_000)), |_| {}).await;
    for _ in 0..200 {
        if send(&app, by(ROOT, get("/api/v1/fleet"))).await.status() == StatusCode::OK {
            return app;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no fleet snapshot after 10 s");
}

fn by(who: (&str, &str), request: Request<Body>) -> Request<Body> {
    signed_as(who.0, who.1, request)
}

async fn call(app: &Router, who: (&str, &str), request: Request<Body>) -> (StatusCode, Value) {
    let response = send(app, by(who, request)).await;
    let status = response.status();
    let body = text(response).await;
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

/// The JSON of `family:revision`, as `who` sees it.
async fn source(app: &Router, who: (&str, &str), family: &str, revision: u32) -> Value {
    let (status, answer) = call(
        app,
        who,
        get(&format!("/api/v1/task-definitions/{family}/{revision}")),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer["task_definition"].clone()
}

/// `who` registers `task` as an edit of `family:revision`.
async fn register(
    app: &Router,
    who: (&str, &str),
    family: &str,
    revision: u32,
    task: &Value,
) -> (StatusCode, Value) {
    let body = json!({"task_definition": task, "description": "rules"}).to_string();
    call(
        app,
        who,
        post_json(
            &format!("/api/v1/task-definitions/{family}/{revision}/register"),
            &body,
        ),
    )
    .await
}

fn refused_because(answer: &Value, why: &str) -> bool {
    answer.to_string().contains(why)
}

#[tokio::test]
async fn the_team_tag_cannot_be_dropped_whole_or_given_twice() {
    let app = console_with(POLICY).await;
    let task = source(&app, ANA, "embed-api", 1).await;
    assert!(refused_because(&task["tags"], "search"), "{task}");

    let mut untagged = task.clone();
    untagged.as_object_mut().expect("an object").remove("tags");
    untagged["containerDefinitions"][0]["cpu"] = json!(512);
    let (status, answer) = register(&app, ANA, "embed-api", 1, &untagged).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert!(
        refused_because(&answer, "team tag `team` from team search to no team"),
        "{answer}"
    );

    let mut twice = task.clone();
    twice["tags"] = json!([{"key": "team", "value": "search"}, {"key": "team", "value": "vision"}]);
    let (status, answer) = register(&app, ANA, "embed-api", 1, &twice).await;
    assert_ne!(status, StatusCode::CREATED, "{answer}");
    assert!(refused_because(&answer, "given more than once"), "{answer}");

    // The check says so before anyone registers.
    let body = json!({"task_definition": untagged}).to_string();
    let (status, check) = call(
        &app,
        ANA,
        post_json("/api/v1/task-definitions/embed-api/1/check", &body),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{check}");
    assert_eq!(check["register"]["allowed"], false, "{check}");
    // Nothing was registered.
    let (_, family) = call(&app, ROOT, get("/api/v1/task-definitions/embed-api")).await;
    assert_eq!(
        family["revisions"].as_array().map(Vec::len),
        Some(1),
        "{family}"
    );
}

#[tokio::test]
async fn a_family_is_changed_by_its_team_as_it_is_now_whichever_revision_is_named() {
    let app = console_with(POLICY).await;
    // An admin gives embed-api to vision.
    let mut moved = source(&app, ROOT, "embed-api", 1).await;
    moved["tags"] = json!([{"key": "team", "value": "vision"}]);
    let (status, answer) = register(&app, ROOT, "embed-api", 1, &moved).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    // Its old revision still says search; that does not make it search's to publish.
    let mut old = source(&app, ANA, "embed-api", 1).await;
    old["containerDefinitions"][0]["cpu"] = json!(512);
    let (status, answer) = register(&app, ANA, "embed-api", 1, &old).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert!(
        refused_because(&answer, "belongs to team vision"),
        "{answer}"
    );
    // Vision may change it, but not by publishing the old revision's tag back.
    let (status, answer) = register(&app, BO, "embed-api", 1, &old).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert!(
        refused_because(&answer, "from team vision to team search"),
        "{answer}"
    );
    let mut kept = old.clone();
    kept["tags"] = json!([{"key": "team", "value": "vision"}]);
    let (status, answer) = register(&app, BO, "embed-api", 1, &kept).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

#[tokio::test]
async fn fields_that_reach_other_teams_data_are_an_admins() {
    let app = console_with(POLICY).await;
    let task = source(&app, ANA, "embed-api", 1).await;
    for (field, value) in [
        (
            "secrets",
            json!([{"name": "DB", "valueFrom": "arn:aws:secretsmanager:us-east-1:123456789012:secret:vision-db"}]),
        ),
        (
            "environmentFiles",
            json!([{"type": "s3", "value": "arn:aws:s3:::vision-bucket/prod.env"}]),
        ),
        (
            "repositoryCredentials",
            json!({"credentialsParameter": "arn:aws:secretsmanager:us-east-1:123456789012:secret:registry"}),
        ),
        ("volumesFrom", json!([{"sourceContainer": "embed-api"}])),
    ] {
        let mut widened = task.clone();
        widened["containerDefinitions"][0][field] = value;
        let (status, answer) = register(&app, ANA, "embed-api", 1, &widened).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{field}: {answer}");
        assert!(
            refused_because(&answer, "only an admin"),
            "{field}: {answer}"
        );
    }
    let mut secret = task.clone();
    secret["containerDefinitions"][0]["secrets"] = json!([{"name": "DB", "valueFrom": "arn:aws:secretsmanager:us-east-1:123456789012:secret:search-db"}]);
    let (status, answer) = register(&app, ROOT, "embed-api", 1, &secret).await;
    assert_eq!(status, StatusCode::CREATED, "an admin may: {answer}");
}

#[tokio::test]
async fn gpu_variables_are_refused_unless_the_policy_allows_them() {
    let app = console_with(POLICY).await;
    let task = source(&app, ROOT, "embed-api", 1).await;
    let mut steering = task.clone();
    steering["containerDefinitions"][0]["environment"] = json!([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}, {"name": "LOG_LEVEL", "value": "info"}]);
    for who in [ANA, ROOT] {
        let (status, answer) = register(&app, who, "embed-api", 1, &steering).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}: {answer}",
            who.0
        );
        assert!(
            refused_because(&answer, "NVIDIA_VISIBLE_DEVICES (container embed-api)"),
            "{answer}"
        );
    }
    let allowing = console_with(&format!(
        "allowed_gpu_variables = [\"NVIDIA_VISIBLE_DEVICES\"]\n{POLICY}"
    ))
    .await;
    let (status, answer) = register(&allowing, ANA, "embed-api", 1, &steering).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

#[tokio::test]
async fn outside_the_team_no_value_shows_and_no_edit_is_checked() {
    let app = console_with(POLICY).await;
    let mut task = source(&app, ROOT, "embed-api", 1).await;
    task["containerDefinitions"][0]["environment"] = json!([
        {"name": "DB_PASS", "value": "hunter2"},
        {"name": "UPSTREAM", "value": "https://svc:s3cret@upstream.internal/v1"},
        {"name": "LOG_LEVEL", "value": "debug"}
    ]);
    task["containerDefinitions"][0]["logConfiguration"] = json!({"logDriver": "splunk", "options": {
        "splunk-token": "tok-123", "splunk-url": "https://splunk.internal:8088"}});
    let (status, answer) = register(&app, ROOT, "embed-api", 1, &task).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");

    // The owning team sees plain values, and no secret a list of names would miss.
    let theirs = source(&app, ANA, "embed-api", 2).await.to_string();
    for secret in ["hunter2", "s3cret", "tok-123"] {
        assert!(!theirs.contains(secret), "{secret}: {theirs}");
    }
    assert!(
        theirs.contains("debug") && theirs.contains("splunk.internal"),
        "{theirs}"
    );
    // Another team's deployer and a viewer see no value at all.
    for who in [BO, VIC] {
        let shown = source(&app, who, "embed-api", 2).await.to_string();
        for value in ["hunter2", "s3cret", "tok-123", "debug", "splunk.internal"] {
            assert!(!shown.contains(value), "{} sees {value}: {shown}", who.0);
        }
        // Nor confirm a guess by checking an edit: the diff would be empty.
        let mut guess = source(&app, ROOT, "embed-api", 2).await;
        guess["containerDefinitions"][0]["environment"][0]["value"] = json!("hunter2");
        let body = json!({"task_definition": guess}).to_string();
        let (status, answer) = call(
            &app,
            who,
            post_json("/api/v1/task-definitions/embed-api/2/check", &body),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{}: {answer}", who.0);
    }
    // The comparison of two revisions shows another team that something changed, not what.
    let (_, compared) = call(
        &app,
        BO,
        get("/api/v1/task-definitions/embed-api/compare?from=1&to=2"),
    )
    .await;
    assert!(!compared.to_string().contains("debug"), "{compared}");
    // The audit log, read by every team, keeps no value either.
    let (_, log) = call(&app, VIC, get("/api/v1/audit?action=register")).await;
    for value in ["hunter2", "debug", "tok-123"] {
        assert!(!log.to_string().contains(value), "{value}: {log}");
    }
}
