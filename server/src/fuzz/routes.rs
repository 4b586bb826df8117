//! What the console is fed: its GET routes and pages with the parameters each reads, its POST
//! routes with the fields their bodies take, and a task definition's field names.

/// The console's GET routes with the parameters each reads.
pub(super) const API_ROUTES: [(&str, &[&str]); 17] = [
    (
        "/api/v1/fleet",
        &[
            "cluster",
            "mode",
            "colour",
            "group",
            "order",
            "zoom",
            "gpu",
            "team",
            "service",
            "q",
            "instance_type",
        ],
    ),
    (
        "/api/v1/audit",
        &[
            "action", "resource", "outcome", "who", "limit", "format", "before",
        ],
    ),
    (
        "/api/v1/cost",
        &[
            "period", "from", "to", "group", "span", "idle", "sort", "cluster", "format", "detail",
        ],
    ),
    ("/api/v1/cost/plan", &["cluster", "spare", "format"]),
    ("/api/v1/cost/reconciliation", &["month", "format"]),
    ("/api/v1/cost/months", &[]),
    ("/api/v1/cost/months/2026-10", &[]),
    ("/api/v1/capacity-providers", &["cluster"]),
    (
        "/api/v1/clusters/inference-prod/events",
        &["q", "since", "limit", "service", "kind"],
    ),
    (
        "/api/v1/clusters/inference-prod/stopped-tasks",
        &["q", "limit", "service"],
    ),
    ("/api/v1/approvals", &["state", "team", "cluster", "page"]),
    ("/api/v1/services", &["cluster"]),
    (
        "/api/v1/services/inference-prod/embed-api/pre-check",
        &["revision"],
    ),
    ("/api/v1/task-definitions", &["status", "team", "q", "page"]),
    ("/api/v1/task-definitions/embed-api", &["status", "page"]),
    (
        "/api/v1/task-definitions/embed-api/compare",
        &["from", "to", "reveal"],
    ),
    (
        "/api/v1/task-definitions/embed-api/1",
        &["reveal", "format"],
    ),
];

/// The pages with the parameters each reads.
pub(super) const PAGES: [(&str, &[&str]); 12] = [
    (
        "/",
        &[
            "cluster", "mode", "colour", "group", "order", "zoom", "gpu", "team", "service", "q",
        ],
    ),
    ("/audit", &["action", "resource", "outcome", "limit"]),
    ("/approvals", &["state", "team", "cluster", "page"]),
    (
        "/cost",
        &[
            "period", "from", "to", "group", "span", "idle", "sort", "cluster", "detail",
        ],
    ),
    ("/cost/plan", &["cluster", "spare"]),
    ("/cost/months", &["month"]),
    ("/cost/reconciliation", &["month"]),
    ("/clusters/inference-prod/events", &["q", "since", "limit"]),
    ("/deployments", &["cluster"]),
    ("/deployments/new", &["cluster", "family"]),
    ("/task-definitions/embed-api/compare", &["from", "to"]),
    ("/capacity", &["cluster"]),
];

/// The console's POST routes (writes and checks) with the fields their bodies and queries take.
pub(super) const WRITES: [(&str, &[&str]); 11] = [
    (
        "/api/v1/services/inference-prod/embed-api/deploy",
        &["revision", "expected_revision", "force", "description"],
    ),
    (
        "/api/v1/services/inference-prod/embed-api/rollback",
        &["revision", "expected_revision", "force", "description"],
    ),
    (
        "/api/v1/services/inference-prod/embed-api/restart",
        &["expected_revision", "force", "description"],
    ),
    (
        "/api/v1/services/inference-prod/embed-api/scale",
        &[
            "desired",
            "expected_desired",
            "expected_revision",
            "description",
        ],
    ),
    (
        "/api/v1/clusters/inference-prod/services/check",
        &[
            "serviceName",
            "taskDefinition",
            "desiredCount",
            "launchType",
            "capacityProviderStrategy",
            "networkConfiguration",
            "tags",
            "loadBalancers",
            "deploymentConfiguration",
            "cluster",
        ],
    ),
    (
        "/api/v1/clusters/inference-prod/capacity-providers/check",
        &[
            "name",
            "managedInstancesProvider",
            "autoScalingGroupProvider",
            "cluster",
            "tags",
            "instanceLaunchTemplate",
            "instanceRequirements",
        ],
    ),
    (
        "/api/v1/clusters/inference-prod/services/embed-api/retire",
        &["confirm", "expected_desired", "description"],
    ),
    ("/api/v1/approvals/x/approve", &["note"]),
    ("/api/v1/cost/months/2026-10/reprice", &["reason"]),
    (
        "/api/v1/task-definitions/fit-check",
        &["family", "containerDefinitions", "cpu", "memory"],
    ),
    (
        "/api/v1/task-definitions/validate",
        &["family", "containerDefinitions", "requiresCompatibilities"],
    ),
];

/// The field names of a task definition, for mutations.
pub(super) const TASK_FIELDS: [&str; 16] = [
    "family",
    "containerDefinitions",
    "name",
    "image",
    "cpu",
    "memory",
    "resourceRequirements",
    "type",
    "value",
    "environment",
    "gpuSharing",
    "nvidiaMps",
    "tags",
    "key",
    "networkMode",
    "requiresCompatibilities",
];
