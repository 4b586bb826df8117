//! Deployments: the services, the capacity pre-check, deploys and rollbacks with their checks,
//! locks and audit records (on SQLite and PostgreSQL), and rollouts watched to their end.

use axum::{
    http::{header, StatusCode},
    Router,
};

use super::support::*;
use crate::support::Postgres;

#[tokio::test]
async fn services_are_listed_with_their_rollout_and_configuration() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let response = send(&app, get("/api/v1/services")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let rows = json(response).await;
    let embed = rows
        .as_array()
        .expect("a list")
        .iter()
        .find(|r| r["cluster"] == "inference-prod" && r["service"]["name"] == "embed-api")
        .unwrap_or_else(|| panic!("embed-api: {rows}"));
    assert_eq!(embed["family"], "embed-api");
    assert_eq!(embed["revision"], 1);
    assert!(
        embed["service"]["desired"].as_u64().unwrap_or(0) > 0,
        "{embed}"
    );
    assert!(
        embed["service"]["maximum_percent"].as_u64().is_some(),
        "{embed}"
    );
    assert!(
        embed["gpu"][0]
            .as_str()
            .unwrap_or_default()
            .contains("MPS 4096 MiB"),
        "{embed}"
    );

    let one = json(send(&app, get("/api/v1/services?cluster=ml-dev")).await).await;
    assert!(one
        .as_array()
        .expect("list")
        .iter()
        .all(|r| r["cluster"] == "ml-dev"));
    assert_eq!(
        send(&app, get("/api/v1/services?cluster=nope"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        send(&app, get("/api/v1/services?zone=a")).await.status(),
        StatusCode::BAD_REQUEST
    );

    let page = text(send(&app, get("/deployments")).await).await;
    assert!(page.contains(r#"data-testid="service-table""#), "{page}");
    assert!(page.contains(r#"href="/deployments/inference-prod/embed-api""#));
}

#[tokio::test]
async fn a_rollout_is_pre_checked_on_the_fleet() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let pre_check = "/api/v1/services/inference-prod/embed-api/pre-check";
    let response = send(&app, get(pre_check)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let check = json(response).await;
    assert_eq!(check["target"]["revision"], 1);
    assert!(check["comparison"].is_null(), "the running revision");
    assert_eq!(
        check["rollout"]["verdict"]["verdict"], "completes",
        "{check}"
    );

    // A revision that asks for more GPU memory than any GPU has never fits.
    let huge =
        r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 200000}}]}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", huge),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let check = json(send(&app, get(&format!("{pre_check}?revision=2"))).await).await;
    assert_eq!(check["rollout"]["verdict"]["verdict"], "never", "{check}");
    assert_eq!(check["comparison"]["gpu"][0]["container"], "embed-api");
    let check = json(send(&app, get(&format!("{pre_check}?revision=embed-api:2"))).await).await;
    assert_eq!(check["target"]["revision"], 2);

    for (path, status) in [
        (
            format!("{pre_check}?revision=other:1"),
            StatusCode::BAD_REQUEST,
        ),
        (format!("{pre_check}?revision=0"), StatusCode::BAD_REQUEST),
        (format!("{pre_check}?revision=9"), StatusCode::NOT_FOUND),
        (format!("{pre_check}?rev=1"), StatusCode::BAD_REQUEST),
        (
            "/api/v1/services/inference-prod/nope/pre-check".to_string(),
            StatusCode::NOT_FOUND,
        ),
        (
            "/api/v1/services/nope/embed-api/pre-check".to_string(),
            StatusCode::NOT_FOUND,
        ),
    ] {
        let response = send(&app, get(&path)).await;
        assert_eq!(response.status(), status, "{path}");
    }

    let page = text(
        send(
            &app,
            get("/deployments/inference-prod/embed-api?revision=2"),
        )
        .await,
    )
    .await;
    assert!(page.contains(r#"data-verdict="never""#), "{page}");
    let response = send(
        &app,
        get("/deployments/inference-prod/embed-api?revision=x"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_deploy_rolls_out_and_is_audited_and_a_second_at_once_is_refused() {
    let (app, _) = test_app(false).await;
    deploy_race_and_rollback(&app).await;
}

/// The deploy paths with their audit records, on a PostgreSQL audit log as several replicas
/// would share: a deploy that succeeds, the race, a rollback, a forced deploy the circuit
/// breaker rolls back, and one whose tasks exit.
#[tokio::test]
async fn deploys_and_rollbacks_are_audited_on_postgresql() {
    let server = Postgres::start();
    let (app, _) = test_app_on(false, Vec::new(), Some(server.url())).await;
    deploy_race_and_rollback(&app).await;
    let (app, _) = test_app_on(false, Vec::new(), Some(server.url())).await;
    unplaceable_deploy_rolled_back(&app).await;
    let (app, _) = test_app_on(false, Vec::new(), Some(server.url())).await;
    super::activity::exiting_tasks_rolled_back(&app).await;
    let log = json(send(&app, get("/api/v1/audit?resource=embed-api")).await).await;
    let outcomes: Vec<&str> = log
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r["outcome"].as_str())
        .collect();
    for outcome in ["succeeded", "refused", "rolled_back"] {
        assert!(outcomes.contains(&outcome), "{outcome}: {log}");
    }
    assert!(!outcomes.contains(&"pending"), "{log}");
}

/// A deploy rolls out and is audited, a second at the same moment is refused, and a rollback
/// goes through the same checks.
async fn deploy_race_and_rollback(app: &Router) {
    let app = app.clone();
    fleet_json(&app, "").await;
    let edit = r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 4096, "max_compute_percent": 40}}], "description": "cap at 40 %"}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let deploy = "/api/v1/services/inference-prod/embed-api/deploy";

    // The revision the user saw must be the one running.
    let response = send(
        &app,
        post_json(deploy, r#"{"revision": 2, "expected_revision": 7}"#),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert!(text(response).await.contains("now runs embed-api:1"));

    // Two deploys at the same moment: exactly one is sent.
    let body = r#"{"revision": 2, "expected_revision": 1, "description": "roll out the cap"}"#;
    let (a, b) = tokio::join!(
        send(&app, post_json(deploy, body)),
        send(&app, post_json(deploy, body))
    );
    let mut statuses = [a.status(), b.status()];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::ACCEPTED, StatusCode::CONFLICT]);
    let accepted = if a.status() == StatusCode::ACCEPTED {
        a
    } else {
        b
    };
    let answer = json(accepted).await;
    let id = answer["audit_id"]
        .as_str()
        .expect("an audit id")
        .to_string();
    assert!(answer["deployment_id"].as_str().is_some(), "{answer}");
    assert_eq!(answer["action"], "deploy");

    let state = deployment_result(&app, &id, 90).await;
    assert_eq!(state["result"], "succeeded", "{state}");
    assert_eq!(state["progress"], 1.0);
    // The new tasks, each on a GPU the fleet snapshot names.
    let tasks = state["tasks"].as_array().expect("tasks");
    assert_eq!(
        tasks.len() as u64,
        state["live"]["desired"].as_u64().expect("desired"),
        "{state}"
    );
    for task in tasks {
        assert_eq!(task["task_definition"], "embed-api:2");
        assert!(
            task["instance"]
                .as_str()
                .is_some_and(|i| i.starts_with("i-")),
            "{task}"
        );
        let gpu = &task["containers"][0]["gpus"][0];
        assert!(
            gpu["uuid"].as_str().is_some_and(|u| !u.is_empty()),
            "{task}"
        );
        assert!(gpu["index"].as_u64().is_some(), "{task}");
    }
    // The watch page and the event stream show the same end.
    let page = text(send(&app, get(&format!("/rollouts/{id}"))).await).await;
    assert!(page.contains(r#"data-result="succeeded""#), "{page}");
    let response = send(&app, get(&format!("/api/v1/deployments/{id}/events"))).await;
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    let stream = text(response).await;
    assert!(
        stream.starts_with("data: {") && stream.contains(r#""result":"succeeded""#),
        "{stream}"
    );
    assert_eq!(
        send(&app, get("/rollouts/nope")).await.status(),
        StatusCode::NOT_FOUND
    );
    let log = json(send(&app, get("/api/v1/audit?action=deploy")).await).await;
    let records = log.as_array().expect("records");
    let sent: Vec<_> = records.iter().filter(|r| r["id"] == id.as_str()).collect();
    assert_eq!(sent[0]["outcome"], "succeeded", "{log}");
    assert_eq!(sent[0]["pre_check"], "completes");
    assert!(sent[0]["request_id"]
        .as_str()
        .is_some_and(|r| !r.is_empty()));
    assert!(
        records.iter().any(|r| r["outcome"] == "refused"),
        "the loser is audited too: {log}"
    );

    // A rollback to revision 1 goes through the same checks.
    let response = send(
        &app,
        post_json(
            "/api/v1/services/inference-prod/embed-api/rollback",
            r#"{"revision": 3, "expected_revision": 2}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = send(
        &app,
        post_json(
            "/api/v1/services/inference-prod/embed-api/rollback",
            r#"{"revision": 1, "expected_revision": 2}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let answer = json(response).await;
    assert_eq!(answer["action"], "rollback");

    for (body, status) in [
        ("{", StatusCode::BAD_REQUEST),
        (r#"{"revision": 1}"#, StatusCode::BAD_REQUEST),
        (
            r#"{"revision": 1, "expected_revision": 1, "colour": 1}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"revision": 99, "expected_revision": 1}"#,
            StatusCode::NOT_FOUND,
        ),
        (
            r#"{"revision": "other:2", "expected_revision": 1}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            r#"{"revision": "embed-api:99", "expected_revision": "embed-api:1"}"#,
            StatusCode::NOT_FOUND,
        ),
    ] {
        let response = send(&app, post_json(deploy, body)).await;
        assert_eq!(response.status(), status, "{body}");
    }
    assert_eq!(
        send(&app, get("/api/v1/deployments/nope")).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_deploy_that_cannot_place_is_refused_then_forced_and_reported_as_rolled_back() {
    let (app, _) = test_app(false).await;
    unplaceable_deploy_rolled_back(&app).await;
}

/// A deploy the pre-check refuses, forced, and reported as rolled back.
async fn unplaceable_deploy_rolled_back(app: &Router) {
    let app = app.clone();
    fleet_json(&app, "").await;
    let huge =
        r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 200000}}]}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", huge),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let deploy = "/api/v1/services/inference-prod/embed-api/deploy";
    let response = send(
        &app,
        post_json(deploy, r#"{"revision": 2, "expected_revision": 1}"#),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let refusal = json(response).await;
    assert_eq!(refusal["error"]["code"], "pre_check");
    assert_eq!(
        refusal["pre_check"]["verdict"]["verdict"], "never",
        "{refusal}"
    );

    let response = send(
        &app,
        post_json(
            deploy,
            r#"{"revision": 2, "expected_revision": 1, "force": true}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let id = json(response).await["audit_id"]
        .as_str()
        .expect("id")
        .to_string();
    let state = deployment_result(&app, &id, 120).await;
    assert_eq!(
        state["result"], "rolled_back",
        "reported as a failure: {state}"
    );
    assert!(
        state["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("circuit breaker"),
        "{state}"
    );
    let log = json(send(&app, get("/api/v1/audit?action=deploy")).await).await;
    assert_eq!(log[0]["outcome"], "rolled_back");
    assert!(log[0]["pre_check"]
        .as_str()
        .unwrap_or_default()
        .contains("deployed anyway"));
}

#[tokio::test]
async fn a_watch_keeps_going_while_ecs_throttles() {
    let (app, _) = test_app(false).await;
    fleet_json(&app, "").await;
    let edit = r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 4096, "max_compute_percent": 30}}]}"#;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", edit),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    // From now on most DescribeServices calls are throttled, more than the SDK's retries absorb.
    set_emulator_faults(
        &app,
        r#"{"default": {}, "operations": {"DescribeServices": {"throttle_rate": 0.7}}}"#,
    )
    .await;
    let mut sent = None;
    for _ in 0..20 {
        let response = send(
            &app,
            post_json(
                "/api/v1/services/inference-prod/embed-api/deploy",
                r#"{"revision": 2, "expected_revision": 1}"#,
            ),
        )
        .await;
        if response.status() == StatusCode::ACCEPTED {
            sent = Some(json(response).await);
            break;
        }
        assert_eq!(
            response.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "throttled, not refused"
        );
    }
    let answer = sent.expect("one deploy got through the throttling");
    let id = answer["audit_id"].as_str().expect("id").to_string();
    let state = deployment_result(&app, &id, 120).await;
    assert_eq!(state["result"], "succeeded", "{state}");
}
