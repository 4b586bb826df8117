//! Who may do what, and from where: sign-in through a trusted proxy, the authorization matrix
//! of every state-changing route (built from the router's own list of endpoints and server
//! functions) × {anonymous, signed in but in no group, viewer, deployer of the owning team,
//! deployer of another team, admin, a deployer whose role was taken away since they asked for
//! a change}, reveals, refusals in the audit log, and requests from another site.

use std::net::SocketAddr;

use axum::{
    body::Body,
    http::{header, Method, Request, StatusCode},
    Router,
};

use super::support::*;

mod rules;

use self::rules::{post_routes, rules, Rule};

/// The policy the tests sign in under (the team rules' tests too).
pub(super) const POLICY: &str = r#"
[[roles]]
group = "platform"
role = "admin"

[[roles]]
group = "ml"
role = "deployer"

[[roles]]
group = "readers"
role = "viewer"

[[budgets]]
team = "search"
cluster = "inference-prod"
gpu_memory = "64 GiB"
approvers = ["search-leads"]

[[teams]]
group = "search-eng"
team = "search"

[[teams]]
group = "vision-eng"
team = "vision"
"#;

/// The proxy's address, and one the console does not trust.
const PROXY: ([u8; 4], u16) = ([127, 0, 0, 1], 41_000);
const STRANGER: ([u8; 4], u16) = ([192, 0, 2, 9], 41_000);

/// A console behind the sign-in proxy at [`PROXY`], reached from `peer`.
async fn behind_proxy(peer: ([u8; 4], u16)) -> Router {
    behind_proxy_with(POLICY, SocketAddr::from(peer), |_| {}).await
}

/// The people of the matrix: who they are to the proxy, and what they may do to the `search`
/// team's service `inference-prod/embed-api` and family `embed-api`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    Anonymous,
    /// Signed in at the provider, in no group the policy names: no role, so no way in.
    NoGroup,
    Viewer,
    OwningDeployer,
    OtherDeployer,
    Admin,
    /// A deployer of the owning team when they asked for a change; the provider has since taken
    /// the deployer group away (they read, as a viewer).
    RoleRemoved,
}

impl Who {
    const ALL: [Who; 7] = [
        Who::Anonymous,
        Who::NoGroup,
        Who::Viewer,
        Who::OwningDeployer,
        Who::OtherDeployer,
        Who::Admin,
        Who::RoleRemoved,
    ];

    /// `(user, groups)` as the proxy passes them.
    fn identity(self) -> Option<(&'static str, &'static str)> {
        match self {
            Who::Anonymous => None,
            Who::NoGroup => Some(("nobody", "")),
            Who::Viewer => Some(("vic", "readers,search-eng")),
            Who::OwningDeployer => Some(("ana", "ml,search-eng")),
            Who::OtherDeployer => Some(("bo", "ml,vision-eng")),
            Who::Admin => Some(("root", "platform")),
            Who::RoleRemoved => Some(("dee", "readers,search-eng")),
        }
    }

    fn may_change(self) -> bool {
        matches!(self, Who::OwningDeployer | Who::Admin)
    }

    fn may_read(self) -> bool {
        !matches!(self, Who::Anonymous | Who::NoGroup)
    }
}

/// A request as the proxy forwards it for `who`.
fn signed(who: Who, request: Request<Body>) -> Request<Body> {
    match who.identity() {
        Some((user, groups)) => signed_as(user, groups, request),
        None => request,
    }
}

fn form(path: &str, body: &str) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

/// Whether an answer is a refusal of who is asking: 401 or 403. A server function's
/// `forbidden` error must come with its 403 too, not the framework's 500.
async fn refused(response: axum::response::Response) -> (bool, StatusCode, String) {
    let status = response.status();
    let body = text(response).await;
    let forbidden = status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN;
    if body.contains(r#""kind":"forbidden""#) {
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "a refusal answered {status}: {body}"
        );
    }
    (forbidden, status, body)
}

/// Dee, a deployer of search when asking, asks for a scale-up past search's budget; the id of
/// the request that waits.
async fn dee_asks_while_a_deployer(app: &Router) -> String {
    let asked = json(
        send(
            app,
            signed_as(
                "dee",
                "ml,search-eng",
                post_json(
                    "/api/v1/services/inference-prod/embed-api/scale",
                    r#"{"desired": 9, "expected_desired": 8, "description": "launch"}"#,
                ),
            ),
        )
        .await,
    )
    .await;
    asked["approval"]
        .as_str()
        .unwrap_or_else(|| panic!("the scale waits for approval: {asked}"))
        .to_string()
}

#[tokio::test]
async fn every_post_route_has_a_rule_and_every_change_is_authorized() {
    let app = behind_proxy(PROXY).await;
    fleet_json_signed(&app).await;
    let deed = dee_asks_while_a_deployer(&app).await;
    let rules = rules();
    let ruled: Vec<&str> = rules.iter().map(|(path, _)| *path).collect();
    let unruled: Vec<String> = post_routes()
        .into_iter()
        .filter(|path| !ruled.contains(&path.as_str()))
        .collect();
    assert!(
        unruled.is_empty(),
        "POST routes without a rule in the access matrix: {unruled:?}"
    );
    let mut cells = 0;
    for (path, rule) in &rules {
        for who in Who::ALL {
            let (request, may) = match rule {
                Rule::Change(request) => (request(), who.may_change()),
                Rule::Admin(request) => (request(), who == Who::Admin),
                Rule::Read(request) | Rule::Decide(request) => (request(), who.may_read()),
                Rule::Anyone(request) => (request(), true),
            };
            let (was_refused, status, body) = refused(send(&app, signed(who, request)).await).await;
            assert_eq!(
                was_refused, !may,
                "{path} as {who:?}: answered {status} {body}"
            );
            if who == Who::Anonymous && !matches!(rule, Rule::Anyone(_)) {
                assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: {body}");
            }
            if who == Who::NoGroup && !matches!(rule, Rule::Anyone(_)) {
                assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
                assert!(body.contains("has a role"), "{path}: {body}");
            }
            cells += 1;
        }
    }
    assert_eq!(cells, rules.len() * Who::ALL.len());
    println!(
        "the access matrix: {} routes × {} identities = {cells} cells",
        rules.len(),
        Who::ALL.len()
    );
    // Dee's request, asked as a deployer, is approved now that the role is gone: it is not sent
    // as theirs.
    let approved = send(
        &app,
        signed(
            Who::Admin,
            post_json(
                &format!("/api/v1/approvals/{deed}/approve"),
                r#"{"note": "ok"}"#,
            ),
        ),
    )
    .await;
    let (status, body) = (approved.status(), text(approved).await);
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body.contains("nothing was sent") && body.contains("viewer"),
        "{body}"
    );
    let scales = json(
        send(
            &app,
            signed(
                Who::Admin,
                get("/api/v1/audit?action=scale&resource=inference-prod/embed-api"),
            ),
        )
        .await,
    )
    .await;
    assert!(
        scales
            .as_array()
            .is_some_and(|records| records.iter().all(|r| r["outcome"] == "refused")),
        "no scale was sent: {scales}"
    );
    // Refusals that reached a use case are in the audit log, with who and from where.
    let log = json(
        send(
            &app,
            signed(Who::Admin, get("/api/v1/audit?outcome=refused")),
        )
        .await,
    )
    .await;
    let records = log.as_array().expect("records");
    let bo = records
        .iter()
        .find(|r| r["actor"] == "bo" && r["resource"] == "inference-prod/embed-api")
        .unwrap_or_else(|| panic!("the other team's deploy is audited: {log}"));
    assert_eq!(bo["actor_role"], "deployer");
    assert_eq!(bo["auth_mode"], "proxy");
    assert_eq!(bo["source"], "127.0.0.1");
    // Where people acted from is for admins: a viewer reads the log without it.
    let read = json(
        send(
            &app,
            signed(Who::Viewer, get("/api/v1/audit?outcome=refused")),
        )
        .await,
    )
    .await;
    assert!(
        read.as_array().is_some_and(
            |records| !records.is_empty() && records.iter().all(|r| r["source"].is_null())
        ),
        "{read}"
    );
    assert!(bo["detail"]
        .as_str()
        .is_some_and(|d| d.contains("belongs to team search")));
}

/// Waits for the first snapshot, signed in as an admin.
async fn fleet_json_signed(app: &Router) {
    let mut last = String::new();
    for _ in 0..100 {
        let response = send(app, signed(Who::Admin, get("/api/v1/fleet"))).await;
        if response.status() == StatusCode::OK {
            return;
        }
        last = format!("{} {}", response.status(), text(response).await);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no fleet snapshot after 5 s: {last}");
}

#[tokio::test]
async fn pages_and_reads_need_a_sign_in_and_reveals_the_owning_team() {
    let app = behind_proxy(PROXY).await;
    fleet_json_signed(&app).await;
    let page = send(
        &app,
        Request::get("/")
            .header(header::ACCEPT, "text/html")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(page.status(), StatusCode::UNAUTHORIZED);
    assert!(text(page).await.contains("sign-in proxy"));
    let api = send(&app, get("/api/v1/fleet")).await;
    assert_eq!(api.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(json(api).await["error"]["code"], "unauthenticated");
    assert_eq!(send(&app, get("/healthz")).await.status(), StatusCode::OK);
    let page = send(&app, signed(Who::Viewer, get("/deployments"))).await;
    assert_eq!(page.status(), StatusCode::OK);
    let status = json(
        send(
            &app,
            signed(Who::OwningDeployer, form("/api/console_status", "")),
        )
        .await,
    )
    .await;
    assert_eq!(status["actor"]["subject"], "ana");
    assert_eq!(status["actor"]["role"], "deployer");
    assert_eq!(status["actor"]["teams"][0], "search");
    let reveal = "/api/v1/task-definitions/embed-api/1?reveal=true";
    assert_eq!(
        send(&app, signed(Who::Viewer, get(reveal))).await.status(),
        StatusCode::OK,
        "the owning team sees"
    );
    let other = send(&app, signed(Who::OtherDeployer, get(reveal))).await;
    assert_eq!(other.status(), StatusCode::FORBIDDEN);
    assert!(text(other).await.contains("needs team search"));
    let masked = json(
        send(
            &app,
            signed(
                Who::OtherDeployer,
                get("/api/v1/task-definitions/embed-api/1"),
            ),
        )
        .await,
    )
    .await;
    assert!(masked["masked_values"].as_u64().is_some(), "{masked}");
    let check = json(
        send(
            &app,
            signed(
                Who::OtherDeployer,
                get("/api/v1/services/inference-prod/embed-api/pre-check"),
            ),
        )
        .await,
    )
    .await;
    assert_eq!(
        check["deploy"]["allowed"], false,
        "the page knows before trying"
    );
    assert!(check["deploy"]["reason"]
        .as_str()
        .is_some_and(|r| r.contains("team search")));
}

#[tokio::test]
async fn identity_headers_from_anywhere_but_the_proxy_are_refused() {
    let app = behind_proxy(STRANGER).await;
    let forged = send(&app, signed(Who::Admin, get("/api/v1/services"))).await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert!(text(forged).await.contains("not a trusted sign-in proxy"));
    let plain = send(&app, get("/api/v1/services")).await;
    assert_eq!(plain.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn changes_from_another_site_are_refused() {
    let (app, _) = test_app(false).await;
    for (_, rule) in rules() {
        let (Rule::Change(request) | Rule::Anyone(request) | Rule::Decide(request)) = rule else {
            continue;
        };
        let mut forged = request();
        let path = forged.uri().path().to_string();
        forged
            .headers_mut()
            .insert(header::HOST, "127.0.0.1:3000".parse().expect("a host"));
        forged.headers_mut().insert(
            header::ORIGIN,
            "https://evil.example".parse().expect("an origin"),
        );
        let response = send(&app, forged).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{path}");
        // A sandboxed frame's post carries `Origin: null`.
        let mut sandboxed = request();
        sandboxed
            .headers_mut()
            .insert(header::ORIGIN, "null".parse().expect("an origin"));
        assert_eq!(
            send(&app, sandboxed).await.status(),
            StatusCode::FORBIDDEN,
            "{path}"
        );
        let mut cross_site = request();
        cross_site
            .headers_mut()
            .insert("sec-fetch-site", "cross-site".parse().expect("a value"));
        assert_eq!(
            send(&app, cross_site).await.status(),
            StatusCode::FORBIDDEN,
            "{path}"
        );
        if path.starts_with("/api/v1/") {
            let mut plain = request();
            plain
                .headers_mut()
                .insert(header::CONTENT_TYPE, "text/plain".parse().expect("a type"));
            assert_eq!(
                send(&app, plain).await.status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{path}"
            );
        }
    }
    let rebound = send(
        &app,
        Request::get("/")
            .header(header::HOST, "attacker.example:3000")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(
        rebound.status(),
        StatusCode::FORBIDDEN,
        "a rebound host name"
    );
}

#[tokio::test]
async fn an_identity_header_given_twice_is_refused() {
    let app = behind_proxy(PROXY).await;
    fleet_json_signed(&app).await;
    // A proxy that appends rather than replaces passes the person's own header beside its own.
    for (name, value) in [
        ("x-forwarded-groups", "platform"),
        ("x-forwarded-user", "root"),
        ("x-forwarded-email", "root@example.com"),
    ] {
        let mut request = signed(Who::Viewer, get("/api/v1/services"));
        request
            .headers_mut()
            .append(name, value.parse().expect("a value"));
        let response = send(&app, request).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{name}");
        assert!(text(response).await.contains("more than once"), "{name}");
    }
    assert_eq!(
        send(&app, signed(Who::Viewer, get("/api/v1/services")))
            .await
            .status(),
        StatusCode::OK
    );
}
