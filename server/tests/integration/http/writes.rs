//! Changes that survive the request: a deploy whose client goes away right after its intent is
//! written still runs to its end and is audited; a deploy or registration whose answer from ECS
//! is lost is recorded `unknown`, holds its lock, and is settled by asking ECS.

use std::time::{Duration, Instant};

use axum::{http::StatusCode, Router};
use tokio::io::AsyncWriteExt;

use super::support::*;

const EDIT: &str = r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 4096, "max_compute_percent": 40}}], "description": "cap at 40 %"}"#;
const DEPLOY: &str = "/api/v1/services/inference-prod/embed-api/deploy";

/// Registers embed-api:2, the revision the tests deploy.
async fn register_revision_2(app: &Router) {
    fleet_json(app, "").await;
    let response = send(
        app,
        post_json("/api/v1/task-definitions/embed-api/1/register", EDIT),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
}

/// Polls the audit log until `found` picks a record, at most `seconds`.
async fn wait_for_record(
    app: &Router,
    action: &str,
    seconds: u64,
    found: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let started = Instant::now();
    loop {
        let records = audit_records(app, action).await;
        if let Some(record) = records.iter().find(|r| found(r)) {
            return record.clone();
        }
        assert!(
            started.elapsed().as_secs() < seconds,
            "no such {action} record after {seconds} s: {records:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_deploy_runs_to_its_end_when_the_client_goes_away_after_its_intent() {
    // UpdateService takes 1.5 s: the client is long gone when ECS answers.
    let (app, _) = test_app_with_faults(false, vec!["UpdateService:latency=1500".into()]).await;
    register_revision_2(&app).await;
    let address = serve_on_loopback(app.clone()).await;
    let body = r#"{"revision": 2, "expected_revision": 1, "description": "left early"}"#;
    let mut client = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    let request = format!(
        "POST {DEPLOY} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    client.write_all(request.as_bytes()).await.expect("sent");
    // The intent is written; the client closes its connection before any answer.
    let pending = wait_for_record(&app, "deploy", 10, |r| r["outcome"] == "pending").await;
    client.shutdown().await.expect("closed");
    drop(client);
    let id = pending["id"].as_str().expect("an id").to_string();

    let sent = wait_for_record(&app, "deploy", 20, |r| {
        r["id"] == id.as_str() && r["outcome"] != "pending"
    })
    .await;
    assert!(
        ["in_progress", "succeeded"].contains(&sent["outcome"].as_str().unwrap_or_default()),
        "{sent}"
    );
    assert!(sent["deployment_id"].as_str().is_some(), "{sent}");
    assert_eq!(sent["description"], "left early");
    let state = deployment_result(&app, &id, 90).await;
    assert_eq!(state["result"], "succeeded", "{state}");
    assert_eq!(state["target"], "embed-api:2");
}

#[tokio::test]
async fn a_deploy_runs_to_its_end_when_the_request_times_out() {
    // The request may take 2 s (its reads before the intent are paced within the console's
    // share of ECS's rate, beside the refresher's); UpdateService takes 4 s.
    let (app, _) = test_app_configured(
        false,
        vec!["UpdateService:latency=4000".into()],
        None,
        |args| args.request_timeout = 2,
    )
    .await;
    register_revision_2(&app).await;
    let response = send(
        &app,
        post_json(DEPLOY, r#"{"revision": 2, "expected_revision": 1}"#),
    )
    .await;
    assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
    let record = wait_for_record(&app, "deploy", 20, |r| {
        r["outcome"] != "pending" && r["to_revision"] == "embed-api:2"
    })
    .await;
    assert!(
        ["in_progress", "succeeded"].contains(&record["outcome"].as_str().unwrap_or_default()),
        "{record}"
    );
    assert!(record["deployment_id"].as_str().is_some(), "{record}");
}

#[tokio::test]
async fn a_deploy_whose_answer_is_lost_is_unknown_until_ecs_is_asked() {
    // ECS carries UpdateService out and the answer never arrives.
    let (state, _) = test_state(false, vec!["UpdateService:lost=1".into()], None, |_| {}).await;
    let services = state.services.clone();
    let app = gpushare::router(state);
    register_revision_2(&app).await;
    let response = send(
        &app,
        post_json(DEPLOY, r#"{"revision": 2, "expected_revision": 1}"#),
    )
    .await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    let body = json(response).await;
    assert_eq!(body["error"]["code"], "no_answer", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not known"), "{message}");
    let record = wait_for_record(&app, "deploy", 5, |r| r["outcome"] == "unknown").await;
    let id = record["id"].as_str().expect("an id").to_string();

    // Until it is settled, the service takes no other deploy.
    let again = send(
        &app,
        post_json(DEPLOY, r#"{"revision": 1, "expected_revision": 2}"#),
    )
    .await;
    assert_eq!(
        again.status(),
        StatusCode::CONFLICT,
        "{}",
        text(again).await
    );

    // A reconcile asks ECS: it runs embed-api:2, so the deploy is in progress and watched.
    let settled = app::service::deployments::reconcile(&services, Duration::ZERO)
        .await
        .expect("reconciled");
    assert!(settled >= 1, "{settled}");
    let record = wait_for_record(&app, "deploy", 5, |r| r["id"] == id.as_str()).await;
    assert!(
        ["in_progress", "succeeded"].contains(&record["outcome"].as_str().unwrap_or_default()),
        "{record}"
    );
    assert!(
        record["detail"]
            .as_str()
            .is_some_and(|d| d.contains("ECS made deployment ecs-svc/")),
        "{record}"
    );
    let state = deployment_result(&app, &id, 90).await;
    assert_eq!(state["result"], "succeeded", "{state}");
}

#[tokio::test]
async fn a_restart_whose_answer_is_lost_is_its_deployment_whatever_ecs_clock_says() {
    // ECS's clock stands still at the fleet's start: every deployment it makes is dated before
    // the console's intent, so only what ECS had before the call tells the restart's.
    let (state, _) = test_state(false, vec!["UpdateService:lost=1".into()], None, |args| {
        args.fleet.emulator.clock_speed = 0.0;
    })
    .await;
    let services = state.services.clone();
    let app = gpushare::router(state);
    fleet_json(&app, "").await;
    let response = send(
        &app,
        post_json(
            "/api/v1/services/inference-prod/embed-api/restart",
            r#"{"expected_revision": 1}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    let record = wait_for_record(&app, "restart", 5, |r| r["outcome"] == "unknown").await;
    let id = record["id"].as_str().expect("an id").to_string();
    let prior: Vec<String> = serde_json::from_value(record["prior_deployments"].clone())
        .expect("the deployments ECS had are kept");
    assert!(!prior.is_empty(), "{record}");

    app::service::deployments::reconcile(&services, Duration::ZERO)
        .await
        .expect("reconciled");
    let record = wait_for_record(&app, "restart", 5, |r| r["id"] == id.as_str()).await;
    assert_eq!(record["outcome"], "in_progress", "{record}");
    let made = record["deployment_id"].as_str().expect("its deployment");
    assert!(!prior.iter().any(|p| p == made), "{record}");
}

/// A registration of embed-api sent while `fault` holds, which gets no answer it can believe:
/// reconciled with ECS; the router, the audit record's id (`unknown` until then) and the 504's
/// body.
async fn unanswered_registration(fault: &str) -> (Router, String, serde_json::Value) {
    let (state, _) = test_state(false, vec![fault.to_string()], None, |_| {}).await;
    let services = state.services.clone();
    let app = gpushare::router(state);
    fleet_json(&app, "").await;
    let response = send(
        &app,
        post_json("/api/v1/task-definitions/embed-api/1/register", EDIT),
    )
    .await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    let body = json(response).await;
    let record = wait_for_record(&app, "register", 5, |r| r["outcome"] == "unknown").await;
    let id = record["id"].as_str().expect("an id").to_string();
    app::service::deployments::reconcile(&services, Duration::ZERO)
        .await
        .expect("reconciled");
    (app, id, body)
}

#[tokio::test]
async fn a_registration_whose_answer_is_lost_is_found_by_its_audit_tag() {
    let (app, id, _) = unanswered_registration("RegisterTaskDefinition:lost=1").await;
    let record = wait_for_record(&app, "register", 5, |r| r["id"] == id.as_str()).await;
    assert_eq!(record["outcome"], "registered", "{record}");
    let revision = record["to_revision"].as_str().expect("the revision found");
    assert!(revision.starts_with("embed-api:"), "{revision}");
    let number = revision.trim_start_matches("embed-api:");
    let answer = json(
        send(
            &app,
            get(&format!("/api/v1/task-definitions/embed-api/{number}")),
        )
        .await,
    )
    .await;
    assert_eq!(answer["revision"]["audit_id"], id.as_str(), "{answer}");
}

#[tokio::test]
async fn a_server_error_on_register_is_unknown_until_ecs_shows_nothing_was_registered() {
    // ECS answers ServerException: the registration may or may not have happened.
    let (app, id, body) = unanswered_registration("RegisterTaskDefinition:error=1").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ServerException")),
        "{body}"
    );
    let record = wait_for_record(&app, "register", 5, |r| r["id"] == id.as_str()).await;
    assert_eq!(record["outcome"], "failed", "{record}");
    assert!(record["detail"]
        .as_str()
        .is_some_and(|d| d.contains("nothing was registered")));
}

#[tokio::test]
async fn a_restart_replaces_the_tasks_with_new_ones_of_the_same_revision() {
    let (app, emulator) = test_app_with_emulator().await;
    fleet_json(&app, "").await;
    let restart = "/api/v1/services/inference-prod/embed-api/restart";
    let before: Vec<String> = emulator.with_fleet(|fleet| {
        let cluster = &fleet.clusters["inference-prod"];
        cluster.services["embed-api"]
            .tasks
            .iter()
            .cloned()
            .collect()
    });
    assert!(!before.is_empty());
    // Bad bodies and a revision that does not run are refused, and nothing is sent.
    let response = send(&app, post_json(restart, r#"{"revision": 1}"#)).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response).await.contains("expected_revision"));
    // ECS is asked what runs before anything else is read: the service does not run revision 7
    // (there is none), and the answer says what it runs.
    let response = send(&app, post_json(restart, r#"{"expected_revision": 7}"#)).await;
    assert_eq!(
        response.status(),
        StatusCode::CONFLICT,
        "no revision 7 runs"
    );
    let message = json(response).await["error"]["message"].to_string();
    assert!(
        message.contains("now runs embed-api:") && message.contains("not embed-api:7"),
        "{message}"
    );
    let response = send(
        &app,
        post_json(
            "/api/v1/services/inference-prod/embed-api/deploy",
            r#"{"revision": 1, "expected_revision": 1, "restart": true}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    let response = send(
        &app,
        post_json(
            restart,
            r#"{"expected_revision": 1, "description": "pick up the moved tag"}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let answer = json(response).await;
    assert_eq!(answer["action"], "restart", "{answer}");
    let id = answer["audit_id"]
        .as_str()
        .expect("an audit id")
        .to_string();
    let state = deployment_result(&app, &id, 90).await;
    assert_eq!(state["result"], "succeeded", "{state}");
    // The same revision, and none of the tasks that ran before.
    let after: Vec<(String, String)> = emulator.with_fleet(|fleet| {
        let cluster = &fleet.clusters["inference-prod"];
        cluster.services["embed-api"]
            .tasks
            .iter()
            .filter_map(|arn| cluster.tasks.get(arn))
            .map(|t| (t.arn.clone(), t.task_definition_arn.clone()))
            .collect()
    });
    assert_eq!(after.len(), before.len());
    assert!(after
        .iter()
        .all(|(arn, td)| !before.contains(arn) && td.ends_with("embed-api:1")));
    let records = audit_records(&app, "restart").await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["to_revision"], "embed-api:1");
    assert_eq!(records[0]["description"], "pick up the moved tag");
}

/// Retiring a service against the emulator: the blast radius first (its GPUs and memory, as the
/// fleet holds them), the typed confirmation, then UpdateService to 0 and DeleteService — in
/// that order, as the emulator received them — and the service gone from the list and the
/// snapshot, its GPU memory free, one `retire` record.
#[tokio::test]
async fn a_retired_service_is_scaled_to_zero_deleted_and_its_gpus_freed() {
    let (app, emulator) = test_app_with_emulator_every(1).await;
    fleet_json(&app, "").await;
    let path = "/api/v1/clusters/inference-prod/services/embed-api/retire";
    let preview = json(send(&app, get(path)).await).await;
    let (_, fleet) = fleet_json(&app, "").await;
    let held: u64 = gpus(&fleet)
        .into_iter()
        .flat_map(|gpu| {
            let total = gpu["total_memory_mib"].as_u64().unwrap_or(0);
            gpu["containers"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|c| c["service"] == "embed-api")
                .map(move |c| c["memory_mib"].as_u64().unwrap_or(total))
        })
        .sum();
    assert!(held > 0);
    assert_eq!(preview["memory_mib"], held, "{preview}");
    assert_eq!(preview["allowed"], true, "{preview}");
    let desired = preview["desired"].as_u64().expect("a desired count");
    assert!(desired > 0);

    // A typo, a bad body and a stale count are refused, and nothing is sent.
    let response = send(&app, post_json(path, r#"{"confirm": "embed"}"#)).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response)
        .await
        .contains("type the service's name, embed-api"));
    let response = send(
        &app,
        post_json(path, r#"{"confirm": "embed-api", "force": true}"#),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let stale = format!(
        r#"{{"confirm": "embed-api", "expected_desired": {}}}"#,
        desired + 1
    );
    let response = send(&app, post_json(path, &stale)).await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert!(emulator
        .writes()
        .iter()
        .all(|w| w.operation != "DeleteService"));

    let body = format!(
        r#"{{"confirm": "embed-api", "expected_desired": {desired}, "description": "replaced by embed-v2"}}"#
    );
    let response = send(&app, post_json(path, &body)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer = json(response).await;
    assert_eq!(answer["scaled_to_zero"], true, "{answer}");
    let writes: Vec<(String, serde_json::Value)> = emulator
        .writes()
        .into_iter()
        .filter(|w| w.error.is_none())
        .map(|w| (w.operation, w.request))
        .collect();
    let n = writes.len();
    assert!(n >= 2, "{writes:?}");
    assert_eq!(writes[n - 2].0, "UpdateService");
    assert_eq!(writes[n - 2].1["desiredCount"], 0);
    assert_eq!(writes[n - 1].0, "DeleteService");
    assert_eq!(writes[n - 1].1["service"], "embed-api");
    assert_eq!(writes[n - 1].1["force"], false);

    // Once its tasks stop, its GPU memory is free; the list and the snapshot no longer have it.
    let mut gone = false;
    for _ in 0..200 {
        emulator.advance(5);
        let (live, status) = emulator.with_fleet(|fleet| {
            let cluster = &fleet.clusters["inference-prod"];
            let service = &cluster.services["embed-api"];
            (service.tasks.len(), service.status())
        });
        if live == 0 && status == "INACTIVE" {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(gone, "the retired service's tasks stopped");
    let mut listed = true;
    for _ in 0..100 {
        let services = json(send(&app, get("/api/v1/services?cluster=inference-prod")).await).await;
        listed = services
            .as_array()
            .is_some_and(|rows| rows.iter().any(|r| r["service"]["name"] == "embed-api"));
        if !listed {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(!listed, "embed-api is no longer listed after 10 snapshots");
    let records = audit_records(&app, "retire").await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["outcome"], "succeeded");
    assert_eq!(records[0]["description"], "replaced by embed-v2");
    assert!(records[0]["from_revision"]
        .as_str()
        .is_some_and(|f| f.ends_with(&format!(" × {desired}"))));
    // Retired once, not twice.
    let response = send(&app, post_json(path, &body)).await;
    assert_ne!(response.status(), StatusCode::OK);
}
