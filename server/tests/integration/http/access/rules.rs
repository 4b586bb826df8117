//! The matrix's routes: every POST route of the console, from the router's own list of endpoints
//! and server functions, with its rule and a request that reaches its use case.

use super::*;

/// What a route is, for the matrix: a change of the `search` team's resources with a body that
/// passes the sign-in and reaches the use case, or a read any signed-in person may make.
pub(super) enum Rule {
    /// A change; its request for the `search` team's service or family.
    Change(fn() -> Request<Body>),
    /// A read (or a check) through POST.
    Read(fn() -> Request<Body>),
    /// Open to anyone: it can only end the caller's own session.
    Anyone(fn() -> Request<Body>),
    /// A decision about an approval request: anyone signed in reaches the use case, which
    /// decides by the request's team (its approvers, or its requester for a withdrawal) — tested
    /// request by request in `http::approvals`. Here the request does not exist: 404, not 403.
    Decide(fn() -> Request<Body>),
    /// Admins only (a capacity provider launches instances the whole account pays for).
    Admin(fn() -> Request<Body>),
}

/// Every POST route of the console and its rule. A POST route missing here fails the matrix.
pub(super) fn rules() -> Vec<(&'static str, Rule)> {
    vec![
        ("/auth/logout", Rule::Anyone(|| form("/auth/logout", ""))),
        (
            "/api/v1/task-definitions/{family}/{revision}/register",
            Rule::Change(|| {
                post_json(
                    "/api/v1/task-definitions/embed-api/1/register",
                    r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "mps", "memory_mib": 4096, "max_compute_percent": 50}}]}"#,
                )
            }),
        ),
        (
            "/api/v1/services/{cluster}/{service}/deploy",
            Rule::Change(|| {
                post_json(
                    "/api/v1/services/inference-prod/embed-api/deploy",
                    r#"{"revision": 1, "expected_revision": 1}"#,
                )
            }),
        ),
        (
            "/api/v1/services/{cluster}/{service}/rollback",
            Rule::Change(|| {
                post_json(
                    "/api/v1/services/inference-prod/embed-api/rollback",
                    r#"{"revision": 1, "expected_revision": 2}"#,
                )
            }),
        ),
        (
            "/api/v1/services/{cluster}/{service}/restart",
            Rule::Change(|| {
                post_json(
                    "/api/v1/services/inference-prod/embed-api/restart",
                    r#"{"expected_revision": 1}"#,
                )
            }),
        ),
        (
            "/api/restart_service",
            Rule::Change(|| {
                form(
                    "/api/restart_service",
                    "cluster=inference-prod&service=embed-api&request[expected_revision]=1",
                )
            }),
        ),
        (
            "/api/v1/services/{cluster}/{service}/scale",
            Rule::Change(|| {
                post_json(
                    "/api/v1/services/inference-prod/embed-api/scale",
                    r#"{"desired": 8, "expected_desired": 8}"#,
                )
            }),
        ),
        (
            "/api/v1/clusters/{cluster}/services",
            // The name of a service that exists: refused after the authorization.
            Rule::Change(|| {
                post_json(
                    "/api/v1/clusters/inference-prod/services",
                    r#"{"serviceName": "embed-api", "taskDefinition": "embed-api:1", "desiredCount": 1, "tags": [{"key": "team", "value": "search"}]}"#,
                )
            }),
        ),
        (
            "/api/create_new_service",
            Rule::Change(|| {
                form(
                    "/api/create_new_service",
                    "cluster=inference-prod&form[create]=%7B%22serviceName%22%3A%22embed-api%22%2C%22taskDefinition%22%3A%22embed-api%3A1%22%2C%22desiredCount%22%3A1%2C%22tags%22%3A%5B%7B%22key%22%3A%22team%22%2C%22value%22%3A%22search%22%7D%5D%7D",
                )
            }),
        ),
        (
            "/api/v1/clusters/{cluster}/services/{service}/retire",
            // A count no one saw: refused after the authorization, so nothing is retired.
            Rule::Change(|| {
                post_json(
                    "/api/v1/clusters/inference-prod/services/embed-api/retire",
                    r#"{"confirm": "embed-api", "expected_desired": 999}"#,
                )
            }),
        ),
        (
            "/api/retire_service",
            Rule::Change(|| {
                form(
                    "/api/retire_service",
                    "cluster=inference-prod&service=embed-api&request[confirm]=embed-api&request[expected_desired]=999",
                )
            }),
        ),
        (
            "/api/scale_service",
            Rule::Change(|| {
                form(
                    "/api/scale_service",
                    "cluster=inference-prod&service=embed-api&request[desired]=8&request[expected_desired]=8",
                )
            }),
        ),
        (
            "/api/deploy_service",
            Rule::Change(|| {
                form(
                    "/api/deploy_service",
                    "cluster=inference-prod&service=embed-api&request[revision]=1&request[expected_revision]=1",
                )
            }),
        ),
        (
            "/api/register_gpu_edit",
            Rule::Change(|| {
                form(
                    "/api/register_gpu_edit",
                    "family=embed-api&revision=1&edits[0][container]=embed-api&edits[0][kind]=mps&edits[0][memory_mib]=4096&edits[0][compute_percent]=50&description=",
                )
            }),
        ),
        (
            "/api/register_task_definition_json",
            Rule::Change(|| {
                form(
                    "/api/register_task_definition_json",
                    "family=embed-api&revision=1&text=%7B%7D&description=",
                )
            }),
        ),
        (
            "/api/v1/task-definitions/{family}/{revision}/check",
            Rule::Change(|| {
                post_json(
                    "/api/v1/task-definitions/embed-api/1/check",
                    r#"{"edits": [{"container": "embed-api", "gpu": {"kind": "none"}}]}"#,
                )
            }),
        ),
        (
            "/api/v1/task-definitions/validate",
            Rule::Read(|| post_json("/api/v1/task-definitions/validate", "{}")),
        ),
        (
            "/api/v1/cost/months/{month}/reprice",
            // No month is sealed here: refused as not found after the authorization.
            Rule::Admin(|| {
                post_json(
                    "/api/v1/cost/months/2026-10/reprice",
                    r#"{"reason": "the Savings Plan rate was wrong"}"#,
                )
            }),
        ),
        (
            "/api/v1/clusters/{cluster}/capacity-providers",
            // A name ECS refuses: refused after the authorization, so nothing is created.
            Rule::Admin(|| {
                post_json(
                    "/api/v1/clusters/inference-prod/capacity-providers",
                    r#"{"name": "aws-gpu", "autoScalingGroupProvider": {"autoScalingGroupArn": "arn:aws:autoscaling:us-east-1:1:autoScalingGroup:x:autoScalingGroupName/none"}}"#,
                )
            }),
        ),
        (
            "/api/v1/clusters/{cluster}/capacity-providers/check",
            Rule::Admin(|| {
                post_json(
                    "/api/v1/clusters/inference-prod/capacity-providers/check",
                    r#"{"name": "aws-gpu", "autoScalingGroupProvider": {"autoScalingGroupArn": "arn:aws:autoscaling:us-east-1:1:autoScalingGroup:x:autoScalingGroupName/none"}}"#,
                )
            }),
        ),
        (
            "/api/check_provider",
            Rule::Admin(|| {
                form(
                    "/api/check_provider",
                    "cluster=inference-prod&form[create]=%7B%7D",
                )
            }),
        ),
        (
            "/api/create_provider",
            Rule::Admin(|| {
                form(
                    "/api/create_provider",
                    "cluster=inference-prod&form[create]=%7B%7D",
                )
            }),
        ),
        (
            "/api/v1/clusters/{cluster}/services/check",
            Rule::Read(|| {
                post_json(
                    "/api/v1/clusters/inference-prod/services/check",
                    r#"{"serviceName": "embed-api", "taskDefinition": "embed-api:1", "desiredCount": 1}"#,
                )
            }),
        ),
        (
            "/api/check_new_service",
            Rule::Read(|| {
                form(
                    "/api/check_new_service",
                    "cluster=inference-prod&form[create]=%7B%7D",
                )
            }),
        ),
        (
            "/api/v1/task-definitions/fit-check",
            Rule::Read(|| post_json("/api/v1/task-definitions/fit-check", "{}")),
        ),
        (
            "/api/console_status",
            Rule::Read(|| form("/api/console_status", "")),
        ),
        (
            "/api/list_clusters",
            Rule::Read(|| form("/api/list_clusters", "")),
        ),
        (
            "/api/list_capacity",
            Rule::Read(|| form("/api/list_capacity", "")),
        ),
        (
            "/api/fleet_overview",
            Rule::Read(|| form("/api/fleet_overview", "query[colour]=memory")),
        ),
        (
            "/api/fleet_heatmap",
            Rule::Read(|| form("/api/fleet_heatmap", "query[colour]=memory")),
        ),
        (
            "/api/gpu_detail",
            Rule::Read(|| form("/api/gpu_detail", "key=nope")),
        ),
        (
            "/api/task_definition_families",
            Rule::Read(|| form("/api/task_definition_families", "")),
        ),
        (
            "/api/task_definition_family",
            Rule::Read(|| form("/api/task_definition_family", "family=embed-api")),
        ),
        (
            "/api/task_definition_revision",
            Rule::Read(|| {
                form(
                    "/api/task_definition_revision",
                    "family=embed-api&revision=1&reveal=false",
                )
            }),
        ),
        (
            "/api/compare_task_definitions",
            Rule::Read(|| {
                form(
                    "/api/compare_task_definitions",
                    "family=embed-api&from=1&to=1&reveal=false",
                )
            }),
        ),
        (
            "/api/check_gpu_edit",
            Rule::Change(|| {
                form(
                    "/api/check_gpu_edit",
                    "family=embed-api&revision=1&edits[0][container]=embed-api&edits[0][kind]=none&reveal=false",
                )
            }),
        ),
        (
            "/api/check_task_definition_json",
            Rule::Change(|| {
                form(
                    "/api/check_task_definition_json",
                    "family=embed-api&revision=1&text=%7B%7D&reveal=false",
                )
            }),
        ),
        (
            "/api/list_services",
            Rule::Read(|| form("/api/list_services", "")),
        ),
        (
            "/api/pre_check_rollout",
            Rule::Read(|| {
                form(
                    "/api/pre_check_rollout",
                    "cluster=inference-prod&service=embed-api",
                )
            }),
        ),
        (
            "/api/retire_preview",
            Rule::Read(|| {
                form(
                    "/api/retire_preview",
                    "cluster=inference-prod&service=embed-api",
                )
            }),
        ),
        (
            "/api/deployment_state",
            Rule::Read(|| form("/api/deployment_state", "id=nope")),
        ),
        (
            "/api/cluster_events",
            Rule::Read(|| form("/api/cluster_events", "cluster=inference-prod")),
        ),
        (
            "/api/cluster_stopped_tasks",
            Rule::Read(|| form("/api/cluster_stopped_tasks", "cluster=inference-prod")),
        ),
        (
            "/api/list_audit",
            Rule::Read(|| form("/api/list_audit", "")),
        ),
        (
            "/api/cost_months",
            Rule::Read(|| form("/api/cost_months", "")),
        ),
        (
            "/api/cost_reconciliation",
            Rule::Read(|| form("/api/cost_reconciliation", "")),
        ),
        (
            "/api/reprice_month",
            // No month is sealed here: refused as not found after the authorization.
            Rule::Admin(|| form("/api/reprice_month", "month=2026-10&reason=rates")),
        ),
        (
            "/api/cost_report",
            Rule::Read(|| form("/api/cost_report", "query[group]=team")),
        ),
        (
            "/api/consolidation_plan",
            Rule::Read(|| form("/api/consolidation_plan", "query[spare_percent]=10")),
        ),
        (
            "/api/v1/approvals/{id}/{decision}",
            Rule::Decide(|| post_json("/api/v1/approvals/nope-1/approve", r#"{"note": "ok"}"#)),
        ),
        (
            "/api/decide_approval",
            Rule::Decide(|| form("/api/decide_approval", "id=nope-1&decision=approve&note=")),
        ),
        (
            "/api/list_approvals",
            Rule::Read(|| form("/api/list_approvals", "")),
        ),
        (
            "/api/approval",
            Rule::Read(|| form("/api/approval", "id=nope-1")),
        ),
        (
            "/api/team_budgets",
            Rule::Read(|| form("/api/team_budgets", "")),
        ),
        (
            "/api/approvals_waiting",
            Rule::Read(|| form("/api/approvals_waiting", "")),
        ),
    ]
}

/// Every route that answers POST: the JSON API's and the server functions'.
pub(super) fn post_routes() -> Vec<String> {
    let mut routes: Vec<String> = gpushare::api_routes()
        .into_iter()
        .filter(|r| r.method != Method::GET)
        .map(|r| r.path.to_string())
        .collect();
    routes.extend(
        leptos::server_fn::axum::server_fn_paths()
            .filter(|(_, method)| *method == Method::POST)
            .map(|(path, _)| path.to_string()),
    );
    routes.sort();
    routes
}
