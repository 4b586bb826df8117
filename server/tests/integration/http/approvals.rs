//! Team GPU budgets with approval through the HTTP surface, signed in through the proxy: an
//! over-budget deploy waits, an approver sends it as the requester's (audited with both), a
//! rejection or a withdrawal sends nothing, a request decided once, and an approval after the
//! fleet changed so that the pre-check stalls is refused with the reason.

use std::net::SocketAddr;

use axum::{
    body::Body,
    http::{header, Request, StatusCode},
    Router,
};

use super::support::{behind_proxy_with, emulator_address, get, post_json, send, signed_as, text};

/// Search may hold 64 GiB of GPU memory on inference-prod (the demo's embed-api and rerank hold
/// exactly that); its approvers are `search-leads`.
const POLICY: &str = r#"
default_role = "viewer"

[[roles]]
group = "platform"
role = "admin"

[[roles]]
group = "ml"
role = "deployer"

[[teams]]
group = "search-eng"
team = "search"

[[teams]]
group = "vision-eng"
team = "vision"

[[budgets]]
team = "search"
cluster = "inference-prod"
gpu_memory = "64 GiB"
monthly_cost = "$20,000"
approvers = ["search-leads"]
"#;

/// The people: a deployer of search, an approver of search, another team's deployer, an admin.
const ANA: (&str, &str) = ("ana", "ml,search-eng");
const CY: (&str, &str) = ("cy", "search-leads");
const BO: (&str, &str) = ("bo", "ml,vision-eng");
const ROOT: (&str, &str) = ("root", "platform");

async fn console() -> Router {
    behind_proxy_with(POLICY, SocketAddr::from(([127, 0, 0, 1], 41_000)), |args| {
        args.fleet.refresh_interval = 2;
    })
    .await
}

/// `request` as the proxy forwards it for `who`.
fn by(who: (&str, &str), request: Request<Body>) -> Request<Body> {
    signed_as(who.0, who.1, request)
}

async fn call(app: &Router, who: (&str, &str), request: Request<Body>) -> (StatusCode, String) {
    let response = send(app, by(who, request)).await;
    let status = response.status();
    (status, text(response).await)
}

async fn call_json(
    app: &Router,
    who: (&str, &str),
    request: Request<Body>,
) -> (StatusCode, serde_json::Value) {
    let (status, body) = call(app, who, request).await;
    let value = serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body));
    (status, value)
}

/// Waits for the first fleet snapshot.
async fn ready(app: &Router) {
    for _ in 0..200 {
        if call(app, ROOT, get("/api/v1/fleet")).await.0 == StatusCode::OK {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no fleet snapshot after 10 s");
}

const DEPLOY: &str = "/api/v1/services/inference-prod/embed-api/deploy";
const ASK: &str =
    r#"{"revision": 2, "expected_revision": 1, "description": "6 GiB for the longer context"}"#;

/// Registers embed-api:2 asking 6 GiB a task (2 GiB more × 8 tasks = 16 GiB past the budget).
async fn register_bigger(app: &Router) {
    let edit = r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 6144, "max_compute_percent": 50}}]}"#;
    let (status, body) = call(
        app,
        ANA,
        post_json("/api/v1/task-definitions/embed-api/1/register", edit),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "a registration holds nothing: {body}"
    );
}

/// Ana asks for the deploy; the request's id.
async fn ask(app: &Router) -> String {
    ask_for(app, ASK).await
}

/// Ana asks for the deploy `body`; the request's id.
async fn ask_for(app: &Router, body: &str) -> String {
    let (status, answer) = call_json(app, ANA, post_json(DEPLOY, body)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert!(answer["deployment_id"].is_null(), "nothing sent: {answer}");
    answer["approval"]
        .as_str()
        .unwrap_or_else(|| panic!("a request: {answer}"))
        .to_string()
}

fn decide(id: &str, what: &str, note: &str) -> Request<Body> {
    post_json(
        &format!("/api/v1/approvals/{id}/{what}"),
        &serde_json::json!({ "note": note }).to_string(),
    )
}

async fn records(app: &Router, action: &str) -> Vec<serde_json::Value> {
    let (_, log) = call_json(app, ROOT, get(&format!("/api/v1/audit?action={action}"))).await;
    log.as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn an_over_budget_deploy_waits_and_an_approver_sends_it_as_the_requesters() {
    let app = console().await;
    ready(&app).await;
    let (status, budgets) = call_json(&app, ANA, get("/api/v1/budgets")).await;
    assert_eq!(status, StatusCode::OK);
    let search = &budgets[0];
    assert_eq!(
        (search["team"].as_str(), search["cluster"].as_str()),
        (Some("search"), Some("inference-prod"))
    );
    assert_eq!(
        search["held_mib"],
        64 * 1024,
        "8 × 4 GiB + 4 × 8 GiB: {search}"
    );
    register_bigger(&app).await;

    // The pre-check says so before anyone sends anything.
    let (_, check) = call_json(
        &app,
        ANA,
        get("/api/v1/services/inference-prod/embed-api/pre-check?revision=2"),
    )
    .await;
    assert_eq!(check["budget"]["over"], true, "{check}");
    assert_eq!(
        check["budget"]["arithmetic"],
        "search holds 64 GiB of 64 GiB on inference-prod; this deploy adds 16 GiB, to 80 GiB: 16 GiB past the budget."
    );

    let id = ask(&app).await;
    assert!(records(&app, "deploy").await.is_empty(), "no deploy yet");
    let asked = &records(&app, "request").await[0];
    assert_eq!(asked["actor"], "ana");
    assert_eq!(asked["approval_id"], id.as_str());

    // Who may decide, and the count in the header.
    let (_, list) = call_json(&app, CY, get("/api/v1/approvals?state=pending")).await;
    let item = &list["requests"][0];
    assert_eq!(item["request"]["id"], id.as_str());
    assert_eq!(item["may_decide"], true);
    assert_eq!(list["budgets"][0]["pending_mib"], 16 * 1024);
    let (_, other) = call_json(&app, BO, get(&format!("/api/v1/approvals/{id}"))).await;
    assert_eq!(other["may_decide"], false);
    let (_, page) = call(&app, CY, get("/approvals")).await;
    assert!(
        page.contains(r#"data-testid="approvals-waiting""#),
        "the header counts the request for its approver"
    );
    assert!(page.contains(r#"data-testid="budget-row""#), "{page}");

    // Not theirs to decide: refused, audited, nothing sent.
    let (status, body) = call(&app, BO, decide(&id, "approve", "")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("search-leads"), "says who may: {body}");
    let (status, _) = call(&app, ANA, decide(&id, "approve", "")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "not one's own request");

    let (status, done) = call_json(&app, CY, decide(&id, "approve", "ok for the launch")).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["state"], "sent", "{done}");
    let sent_as = done["audit_id"]
        .as_str()
        .expect("the deploy's record")
        .to_string();
    let deploys = records(&app, "deploy").await;
    assert_eq!(deploys.len(), 1);
    assert_eq!(deploys[0]["id"], sent_as.as_str());
    assert_eq!(deploys[0]["actor"], "ana", "sent as the requester's");
    assert_eq!(deploys[0]["approved_by"], "cy");
    assert_eq!(deploys[0]["approval_id"], id.as_str());
    assert_eq!(deploys[0]["to_revision"], "embed-api:2");
    let approvals = records(&app, "approve").await;
    let approval = approvals
        .iter()
        .find(|r| r["outcome"] == "recorded")
        .expect("the approval is audited");
    assert_eq!(approval["actor"], "cy");
    assert_eq!(approval["description"], "ok for the launch");
    let (status, _) = call(&app, ROOT, get(&format!("/api/v1/deployments/{sent_as}"))).await;
    assert_eq!(status, StatusCode::OK, "the rollout is watched");

    // Decided once.
    let (status, body) = call(&app, ROOT, decide(&id, "approve", "")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("already decided by cy@example.com"), "{body}");
    let (_, page) = call(&app, ANA, get(&format!("/approvals/{id}"))).await;
    assert!(page.contains(r#"data-state="sent""#), "{page}");
    assert!(page.contains(r#"data-testid="approval-watch""#), "{page}");
}

#[tokio::test]
async fn rejected_and_withdrawn_requests_send_nothing_and_a_stale_approval_says_why() {
    let app = console().await;
    ready(&app).await;
    register_bigger(&app).await;

    let rejected = ask(&app).await;
    let (status, body) =
        call_json(&app, CY, decide(&rejected, "reject", "use the spare pool")).await;
    assert_eq!(
        (status, body["state"].as_str()),
        (StatusCode::OK, Some("rejected"))
    );
    let (status, _) = call(&app, CY, decide(&rejected, "approve", "")).await;
    assert_eq!(status, StatusCode::CONFLICT);

    let withdrawn = ask(&app).await;
    let (status, _) = call(&app, CY, decide(&withdrawn, "withdraw", "")).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "only the requester withdraws"
    );
    let (status, body) = call_json(&app, ANA, decide(&withdrawn, "withdraw", "")).await;
    assert_eq!(
        (status, body["state"].as_str()),
        (StatusCode::OK, Some("withdrawn"))
    );

    // Bad input: a clear error, nothing decided.
    let (status, body) = call(
        &app,
        CY,
        post_json(
            &format!("/api/v1/approvals/{withdrawn}/approve"),
            "{\"nite\": 1}",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("note"), "{body}");
    let (status, _) = call(&app, CY, decide("no-such-1", "approve", "")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(&app, CY, get("/api/v1/approvals?state=open")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // The revision is deregistered after the request: the approval says so and sends nothing.
    register_bigger(&app).await;
    let gone = ask_for(
        &app,
        r#"{"revision": 3, "expected_revision": 1, "description": "the same, again"}"#,
    )
    .await;
    ecs_of(&app)
        .await
        .deregister_task_definition()
        .task_definition("embed-api:3")
        .send()
        .await
        .expect("deregistered");
    let (status, body) = call(&app, CY, decide(&gone, "approve", "")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // The console says so when it knows; else ECS refuses UpdateService, and it says that.
    assert!(
        body.contains("INACTIVE") || body.contains("TaskDefinition not found: embed-api:3"),
        "says why: {body}"
    );
    let (_, request) = call_json(&app, ANA, get(&format!("/api/v1/approvals/{gone}"))).await;
    assert_eq!(request["request"]["state"], "refused", "{request}");

    // The fleet fills up after the request: the pre-check now stalls, and the approval is
    // refused with the reason; nothing is sent.
    let stale = ask(&app).await;
    fill_inference_prod(&app).await;
    let (status, body) = call(&app, CY, decide(&stale, "approve", "")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("nothing was sent"), "{body}");
    assert!(body.contains("pre-check"), "says why: {body}");
    let (_, request) = call_json(&app, ANA, get(&format!("/api/v1/approvals/{stale}"))).await;
    assert_eq!(request["request"]["state"], "refused", "{request}");
    let deploys = records(&app, "deploy").await;
    assert!(
        deploys.iter().all(|r| r["outcome"] == "refused"),
        "nothing was ever sent: {deploys:?}"
    );
}

/// Drains every instance of inference-prod through ECS itself, and waits until the console's
/// pre-check of embed-api:2 no longer completes.
async fn fill_inference_prod(app: &Router) {
    let ecs = ecs_of(app).await;
    let instances = ecs
        .list_container_instances()
        .cluster("inference-prod")
        .send()
        .await
        .expect("listed")
        .container_instance_arns()
        .to_vec();
    assert!(!instances.is_empty());
    for batch in instances.chunks(10) {
        ecs.update_container_instances_state()
            .cluster("inference-prod")
            .set_container_instances(Some(batch.to_vec()))
            .status(aws_sdk_ecs::types::ContainerInstanceStatus::Draining)
            .send()
            .await
            .expect("drained");
    }
    let pre_check = "/api/v1/services/inference-prod/embed-api/pre-check?revision=2";
    let mut last = serde_json::Value::Null;
    for _ in 0..240 {
        let (_, check) = call_json(app, ANA, get(pre_check)).await;
        if check["rollout"]["verdict"]["verdict"] != "completes" {
            return;
        }
        last = check;
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    panic!("the pre-check still completes after a minute: {last}");
}

#[tokio::test]
async fn scaling_past_the_budget_waits_for_approval_and_scaling_down_does_not() {
    let app = console().await;
    ready(&app).await;
    let scale = "/api/v1/services/inference-prod/embed-api/scale";
    let (status, body) = call(&app, ANA, post_json(scale, r#"{"desired": "many"}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("expected_desired"),
        "says what to send: {body}"
    );

    // 8 → 12 tasks of 4 GiB: 16 GiB past the budget.
    let (status, asked) = call_json(
        &app,
        ANA,
        post_json(
            scale,
            r#"{"desired": 12, "expected_desired": 8, "description": "launch"}"#,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{asked}");
    let id = asked["approval"].as_str().expect("a request").to_string();
    let (_, item) = call_json(&app, CY, get(&format!("/api/v1/approvals/{id}"))).await;
    assert!(
        item["request"]["arithmetic"]
            .as_str()
            .is_some_and(|a| a.contains("scaling up from 8 to 12 tasks adds 16 GiB")),
        "{item}"
    );
    assert!(records(&app, "scale").await.is_empty(), "nothing sent yet");
    let (status, done) = call_json(&app, CY, decide(&id, "approve", "")).await;
    assert_eq!(
        (status, done["state"].as_str()),
        (StatusCode::OK, Some("sent")),
        "{done}"
    );
    let scaled = records(&app, "scale").await;
    assert_eq!(scaled.len(), 1);
    assert_eq!(scaled[0]["outcome"], "succeeded");
    assert_eq!(scaled[0]["actor"], "ana");
    assert_eq!(scaled[0]["approved_by"], "cy");
    assert_eq!(scaled[0]["to_revision"], "embed-api:1 × 12");

    // Down again frees memory: sent at once, whatever the budget.
    let (status, answer) = call_json(
        &app,
        ANA,
        post_json(scale, r#"{"desired": 6, "expected_desired": 12}"#),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer["approval"].is_null());
    assert_eq!(records(&app, "scale").await.len(), 2);
}

/// An ECS client of the console's embedded emulator, to change the fleet behind its back.
async fn ecs_of(app: &Router) -> aws_sdk_ecs::Client {
    let status = Request::post("/api/console_status")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::empty())
        .expect("request");
    let address = emulator_address(app, by(ROOT, status)).await;
    gpushare::aws::Clients::new(&gpushare::aws::Target::Emulator {
        endpoint: format!("http://{address}"),
    })
    .await
    .ecs
}

#[tokio::test]
async fn the_cost_review_burns_each_teams_monthly_budget() {
    let app = console().await;
    ready(&app).await;
    let (status, report) = call_json(&app, ROOT, get("/api/v1/cost?period=now&group=team")).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    let burn = &report["budgets"][0];
    assert_eq!(burn["team"], "search", "{report}");
    assert_eq!(burn["cluster"], "inference-prod");
    assert_eq!(burn["monthly_cents"], 2_000_000);
    assert!(
        burn["forecast_cents"].as_i64().is_some_and(|f| f >= 0),
        "{burn}"
    );
    let (_, page) = call(&app, ROOT, get("/cost?group=team")).await;
    assert!(page.contains(r#"data-testid="cost-budgets""#), "{page}");
    assert!(page.contains(r#"data-testid="budget-burn" data-team="search""#));
    // A cluster without budgets has none to show.
    let (_, other) = call_json(&app, ROOT, get("/api/v1/cost?period=now&cluster=ml-dev")).await;
    assert_eq!(other["budgets"], serde_json::json!([]), "{other}");
}

/// [`POLICY`] with search's budget on inference-prod at `budget`, behind a console whose fleet
/// snapshot is read once and not again for ten minutes: every step below is judged between two
/// refreshes.
async fn console_between_refreshes(budget: &str) -> Router {
    let policy = POLICY.replace(
        "gpu_memory = \"64 GiB\"",
        &format!("gpu_memory = \"{budget}\""),
    );
    behind_proxy_with(
        &policy,
        SocketAddr::from(([127, 0, 0, 1], 41_000)),
        |args| {
            args.fleet.refresh_interval = 600;
        },
    )
    .await
}

const SCALE: &str = "/api/v1/services/inference-prod/embed-api/scale";

fn scale_to(desired: u32, expected: u32) -> Request<Body> {
    post_json(
        SCALE,
        &serde_json::json!({"desired": desired, "expected_desired": expected}).to_string(),
    )
}

#[tokio::test]
async fn steps_sent_between_two_refreshes_add_up() {
    // Search holds 64 GiB (embed-api: 8 tasks of 4 GiB; rerank: 4 of 8 GiB) of 72 GiB.
    let app = console_between_refreshes("72 GiB").await;
    ready(&app).await;
    for (to, from) in [(9, 8), (10, 9)] {
        let (status, answer) = call_json(&app, ANA, scale_to(to, from)).await;
        assert_eq!(status, StatusCode::OK, "{from} → {to} fits: {answer}");
        assert!(answer["approval"].is_null(), "{answer}");
    }
    // The snapshot still says 8 tasks; what was sent says 10, and one more is 76 GiB.
    let (status, answer) = call_json(&app, ANA, scale_to(11, 10)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let id = answer["approval"].as_str().expect("a request").to_string();
    let (_, item) = call_json(&app, CY, get(&format!("/api/v1/approvals/{id}"))).await;
    assert!(
        item["request"]["arithmetic"]
            .as_str()
            .is_some_and(|a| a.contains("search holds 72 GiB of 72 GiB") && a.contains("to 76 GiB")),
        "{item}"
    );
    let (_, budgets) = call_json(&app, ANA, get("/api/v1/budgets")).await;
    let embed = budgets[0]["services"]
        .as_array()
        .and_then(|s| s.iter().find(|h| h["service"] == "embed-api"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (embed["desired"].as_u64(), embed["counts_sent"].as_bool()),
        (Some(10), Some(true)),
        "{budgets}"
    );
    assert_eq!(
        records(&app, "scale").await.len(),
        2,
        "two sent, one waiting"
    );
}

#[tokio::test]
async fn changes_of_two_services_sent_at_once_are_judged_one_after_the_other() {
    // 64 GiB of 72: embed-api + 4 GiB fits, rerank + 8 GiB fits, not both.
    let app = console_between_refreshes("72 GiB").await;
    ready(&app).await;
    let embed = call_json(&app, ANA, scale_to(9, 8));
    let rerank = call_json(
        &app,
        ANA,
        post_json(
            "/api/v1/services/inference-prod/rerank/scale",
            r#"{"desired": 5, "expected_desired": 4}"#,
        ),
    );
    let ((a, embed), (b, rerank)) = tokio::join!(embed, rerank);
    let sent = [&embed, &rerank]
        .iter()
        .filter(|answer| answer["approval"].is_null())
        .count();
    assert_eq!(sent, 1, "one sent, one waiting: {a} {embed} / {b} {rerank}");
    assert!([a, b].contains(&StatusCode::ACCEPTED), "{a} {b}");
}

#[tokio::test]
async fn a_scale_request_is_bound_to_the_revision_it_counted() {
    let app = console().await;
    ready(&app).await;
    let (status, asked) = call_json(&app, ANA, scale_to(12, 8)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{asked}");
    let id = asked["approval"].as_str().expect("a request").to_string();
    let (_, item) = call_json(&app, CY, get(&format!("/api/v1/approvals/{id}"))).await;
    assert_eq!(
        item["request"]["scale"]["expected_revision"], "embed-api:1",
        "{item}"
    );
    // Meanwhile an admin rolls out a revision of 2 GiB a task (it frees memory: sent at once).
    let edit = r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 2048, "max_compute_percent": 50}}]}"#;
    let (status, body) = call(
        &app,
        ROOT,
        post_json("/api/v1/task-definitions/embed-api/1/register", edit),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = call(
        &app,
        ROOT,
        post_json(
            "/api/v1/services/inference-prod/embed-api/deploy",
            r#"{"revision": 2, "expected_revision": 1, "force": true}"#,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    // The approval would scale other tasks than the ones it was shown: nothing is sent.
    let (status, body) = call(&app, CY, decide(&id, "approve", "")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("now runs embed-api:2"), "{body}");
    assert!(records(&app, "scale")
        .await
        .iter()
        .all(|r| r["outcome"] == "refused"));
}

#[tokio::test]
async fn one_request_per_change_and_a_bounded_number_per_team() {
    let app = console().await;
    ready(&app).await;
    register_bigger(&app).await;
    let first = ask(&app).await;
    let (status, again) = call_json(&app, ANA, post_json(DEPLOY, ASK)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    assert_eq!(again["approval"], first.as_str(), "the same request");
    assert_eq!(again["already_asked"], true);
    assert_eq!(records(&app, "request").await.len(), 1, "asked once");
    // Distinct changes wait side by side, up to twenty for the team on the cluster.
    for desired in 9..28 {
        let (status, answer) = call_json(&app, ANA, scale_to(desired, 8)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{desired}: {answer}");
    }
    let (status, body) = call(&app, ANA, scale_to(40, 8)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("already has 20 requests waiting"), "{body}");
    // The approvers still see every one of them, counted whole.
    let (_, list) = call_json(&app, CY, get("/api/v1/approvals?state=pending")).await;
    assert_eq!(list["total"], 20, "{list}");
    assert_eq!(list["budgets"][0]["pending_requests"], 20);
    let (status, _) = call(&app, CY, get("/api/v1/approvals?page=0")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
