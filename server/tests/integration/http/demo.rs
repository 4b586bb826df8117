//! The demo with its policy: on the embedded `demo` fleet with no --policy and no sign-in, the
//! console runs the demo's teams and budgets, and its teams' members have made requests through
//! the use cases — one waits, one was approved and sent, one was approved after its service
//! changed and refused — which the local admin sees on /approvals; a second start adds none.

use std::time::{Duration, Instant};

use super::support::{get, json, send, test_state};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_starts_with_its_teams_budgets_and_requests_in_every_state() {
    let (state, _site) = test_state(true, Vec::new(), None, |args| {
        args.access.demo_policy = "on".into();
        args.fleet.refresh_interval = 1;
    })
    .await;
    let services = state.services.clone();
    let app = gpushare::router(state);
    let started = Instant::now();
    let (requests, seen) = loop {
        let seen = json(send(&app, get("/api/v1/approvals")).await).await;
        let requests = seen["requests"].as_array().cloned().unwrap_or_default();
        let settled = requests
            .iter()
            .filter(|r| r["request"]["state"] != "sending")
            .count();
        if requests.len() == 3 && settled == 3 {
            break (requests, seen);
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the demo's three requests, settled, within 90 s; /api/v1/approvals said {seen:#}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let of = |state: &str| {
        requests
            .iter()
            .find(|r| r["request"]["state"] == state)
            .unwrap_or_else(|| panic!("a {state} request in {seen:#}"))
            .clone()
    };
    let waiting = of("pending");
    assert_eq!(waiting["request"]["service"], "embed-api");
    assert_eq!(waiting["request"]["requester"]["email"], "ben@example.com");
    assert_eq!(waiting["request"]["scale"]["desired"], 12);
    assert_eq!(
        waiting["may_decide"], true,
        "the local user is an admin and decides"
    );
    let sent = of("sent");
    assert_eq!(sent["request"]["service"], "ocr");
    assert_eq!(sent["request"]["decided_by_email"], "dev@example.com");
    let refused = of("refused");
    assert_eq!(refused["request"]["service"], "asr-stream");
    let why = refused["request"]["detail"].as_str().unwrap_or_default();
    assert!(why.contains("nothing was sent"), "{why}");
    // The teams' budgets, each from the demo's policy.
    let budgets = seen["budgets"].as_array().cloned().unwrap_or_default();
    let teams: Vec<&str> = budgets.iter().filter_map(|b| b["team"].as_str()).collect();
    assert_eq!(teams, ["research", "search", "speech", "vision"]);
    // The request waiting changed nothing: embed-api still runs 8 tasks.
    let listed = json(send(&app, get("/api/v1/services?cluster=inference-prod")).await).await;
    let desired = |name: &str| {
        listed
            .as_array()
            .and_then(|all| all.iter().find(|s| s["service"]["name"] == name))
            .map(|s| s["service"]["desired"].clone())
            .unwrap_or_else(|| panic!("{name} in {listed:#}"))
    };
    assert_eq!(desired("embed-api"), 8);
    // The audit log has each step, as the people who took it.
    let audit = json(send(&app, get("/api/v1/audit?action=request")).await).await;
    let askers: Vec<&str> = audit
        .as_array()
        .map(|all| all.iter().filter_map(|r| r["actor"].as_str()).collect())
        .unwrap_or_default();
    for who in ["ben@example.com", "cleo@example.com", "eli@example.com"] {
        assert!(askers.contains(&who), "{who} asked: {audit:#}");
    }
    // Started again on the same audit log, the demo adds nothing.
    assert_eq!(
        gpushare::demo::seed(&services)
            .await
            .map_err(|e| e.to_string()),
        Ok(0)
    );
}
