//! The gpushare server: the HTTP router, its configuration, and what it talks to.

// The fleet page's view type is deep; its layout needs more than the default 128.
#![recursion_limit = "256"]

pub mod approvals;
pub mod audit;
pub mod auth;
pub mod aws;
pub mod bench;
pub mod config;
pub mod cost_explorer;
pub mod cost_history;
pub mod demo;
pub mod ecs;
pub mod error;
pub mod fleet;
pub mod fuzz;
pub mod heap;
pub mod http;
pub mod limits;
pub mod outbound;
pub mod people;
pub mod ports;
pub mod price_list;
pub mod prices;
pub mod readiness;
pub mod rollouts;
pub mod spot_prices;
pub mod startup;
pub mod telemetry;

use std::time::Duration;

use anyhow::Context;
use axum::{
    http::Method,
    routing::{get, MethodRouter},
    Router,
};
use leptos_axum::{generate_route_list, LeptosRoutes};

use app::{shell, App};
pub use http::state::AppState;

/// One endpoint of the JSON API (and the server's own paths): its method, path, handler, and
/// whether it changes anything.
pub struct ApiRoute {
    pub method: Method,
    pub path: &'static str,
    pub writes: bool,
    pub handler: MethodRouter<AppState>,
}

/// Every endpoint that is not a page or a server function. The router is built from this list,
/// and the access tests walk it, so a new endpoint is covered by them.
pub fn api_routes() -> Vec<ApiRoute> {
    let mut routes = vec![
        read("/healthz", get(http::health::healthz)),
        read("/readyz", get(http::health::readyz)),
        read("/metrics", get(http::metrics::render)),
        read("/api/v1/fleet", get(http::fleet::get_fleet)),
        read("/api/v1/fleet/events", get(http::fleet::fleet_events)),
    ];
    routes.extend(task_definition_routes());
    routes.extend([
        read("/api/v1/audit", get(http::audit::list)),
        read("/api/v1/cost", get(http::cost::report)),
        read("/api/v1/cost/plan", get(http::plan::plan)),
        read(
            "/api/v1/cost/reconciliation",
            get(http::reconciliation::reconciliation),
        ),
        read("/api/v1/cost/months", get(http::sealed::months)),
        read("/api/v1/cost/months/{month}", get(http::sealed::month)),
        write(
            "/api/v1/cost/months/{month}/reprice",
            axum::routing::post(http::sealed::reprice),
        ),
        read("/api/v1/capacity-providers", get(http::capacity::providers)),
        check(
            "/api/v1/clusters/{cluster}/capacity-providers/check",
            axum::routing::post(http::capacity::check_new),
        ),
        write(
            "/api/v1/clusters/{cluster}/capacity-providers",
            axum::routing::post(http::capacity::create),
        ),
        read(
            "/api/v1/clusters/{cluster}/events",
            get(http::activity::events),
        ),
        read(
            "/api/v1/clusters/{cluster}/stopped-tasks",
            get(http::activity::stopped_tasks),
        ),
    ]);
    routes.extend(service_routes());
    routes.extend([
        read("/api/v1/approvals", get(http::approvals::list)),
        read("/api/v1/approvals/{id}", get(http::approvals::one)),
        write(
            "/api/v1/approvals/{id}/{decision}",
            axum::routing::post(http::approvals::decide),
        ),
        read("/api/v1/budgets", get(http::approvals::budgets)),
        read(
            "/api/v1/deployments/{id}/events",
            get(http::services::deployment_events),
        ),
        // Signing in and out (`--auth oidc`; the other modes say how they sign people in).
        read("/auth/login", get(auth::routes::login)),
        read("/auth/callback", get(auth::routes::callback)),
        write("/auth/logout", axum::routing::post(auth::routes::logout)),
        read("/signed-out", get(auth::routes::signed_out)),
    ]);
    routes
}

/// A GET: it reads.
fn read(path: &'static str, handler: MethodRouter<AppState>) -> ApiRoute {
    ApiRoute {
        method: Method::GET,
        path,
        writes: false,
        handler,
    }
}

/// A POST that changes something.
fn write(path: &'static str, handler: MethodRouter<AppState>) -> ApiRoute {
    ApiRoute {
        method: Method::POST,
        path,
        writes: true,
        handler,
    }
}

/// A POST that changes nothing: it checks or computes.
fn check(path: &'static str, handler: MethodRouter<AppState>) -> ApiRoute {
    ApiRoute {
        method: Method::POST,
        path,
        writes: false,
        handler,
    }
}

/// Task definitions: families, revisions, comparisons, checks and registration.
fn task_definition_routes() -> Vec<ApiRoute> {
    use axum::routing::post;
    use http::task_definitions as td;
    vec![
        read("/api/v1/task-definitions", get(td::list_families)),
        read("/api/v1/task-definitions/{family}", get(td::get_family)),
        read(
            "/api/v1/task-definitions/{family}/compare",
            get(td::compare),
        ),
        read(
            "/api/v1/task-definitions/{family}/{revision}",
            get(td::get_revision),
        ),
        check(
            "/api/v1/task-definitions/{family}/{revision}/check",
            post(td::check_edit),
        ),
        write(
            "/api/v1/task-definitions/{family}/{revision}/register",
            post(td::register_edit),
        ),
        check("/api/v1/task-definitions/validate", post(td::validate)),
        check("/api/v1/task-definitions/fit-check", post(td::fit_check)),
    ]
}

/// Services: the list, the pre-check, deploys, rollbacks, scaling and deployments.
fn service_routes() -> Vec<ApiRoute> {
    use axum::routing::post;
    vec![
        read("/api/v1/services", get(http::services::list)),
        read(
            "/api/v1/services/{cluster}/{service}/pre-check",
            get(http::services::pre_check),
        ),
        write(
            "/api/v1/services/{cluster}/{service}/deploy",
            post(http::services::deploy),
        ),
        write(
            "/api/v1/services/{cluster}/{service}/rollback",
            post(http::services::rollback),
        ),
        write(
            "/api/v1/services/{cluster}/{service}/restart",
            post(http::services::restart),
        ),
        write(
            "/api/v1/services/{cluster}/{service}/scale",
            post(http::services::scale),
        ),
        check(
            "/api/v1/clusters/{cluster}/services/check",
            post(http::services::check_new),
        ),
        write(
            "/api/v1/clusters/{cluster}/services",
            post(http::services::create),
        ),
        read(
            "/api/v1/clusters/{cluster}/services/{service}/retire",
            get(http::services::retire_preview),
        ),
        write(
            "/api/v1/clusters/{cluster}/services/{service}/retire",
            post(http::services::retire),
        ),
        read("/api/v1/deployments/{id}", get(http::services::deployment)),
    ]
}

/// The console's whole HTTP surface: pages, server functions, the JSON API, health, metrics and
/// static files.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let context = state.render_context();
    let shell_options = state.leptos_options.clone();

    let mut router = Router::new();
    for route in api_routes() {
        router = router.route(route.path, route.handler);
    }
    let router = router
        .route(
            "/api/v1/{*path}",
            axum::routing::any(http::api::unknown_endpoint),
        )
        // Open without sign-in: what is not a sign-in route or a built file is a bare 404.
        .route(
            "/auth/{*path}",
            axum::routing::any(http::api::bare_not_found),
        )
        .nest_service(
            "/pkg",
            http::site::pkg_files(
                &std::path::Path::new(state.leptos_options.site_root.as_ref()).join("pkg"),
            )
            .not_found_service(axum::routing::any(http::api::bare_not_found).with_state(())),
        )
        .leptos_routes_with_context(&state, routes, context.clone(), {
            let options = shell_options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            AppState,
            _,
        >(context, shell));
    http::with_layers(router, &state).with_state(state)
}

/// Builds the emulator the flags describe (a large scenario takes a few seconds), as it stood
/// `past_days` days ago when it is to replay its past.
pub async fn build_emulator(
    args: &config::EmulatorArgs,
    past_days: u32,
) -> anyhow::Result<emulator::Emulator> {
    let faults = args.faults().map_err(anyhow::Error::msg)?;
    let scenario = emulator::Scenario::parse(&args.scenario)
        .with_context(|| format!("unknown scenario {:?}", args.scenario))?;
    let seed = args.seed;
    // The clock counts from when the fleet's time was read, so that it does not lag the wall
    // clock by the build (seconds on `large`): a reconcile compares ECS's times with its own.
    let started = std::time::Instant::now();
    let fleet = tokio::task::spawn_blocking(move || {
        scenario.build_with_past(seed, chrono::Utc::now(), past_days)
    })
    .await
    .context("building the scenario failed")?;
    let emulator =
        emulator::Emulator::since(fleet, scenario.name(), args.clock_speed, faults, started);
    if args.emulator_events == "on" {
        emulator.enable_events_queue();
    }
    Ok(emulator)
}

/// Where the console's fleet comes from: AWS as the flags say, or an embedded emulator started
/// on a free loopback port.
pub async fn connect_fleet(
    fleet: &config::FleetArgs,
) -> anyhow::Result<(app::model::FleetSource, aws::Clients)> {
    let (source, clients, _) = connect_fleet_with_emulator(fleet).await?;
    Ok((source, clients))
}

/// As [`connect_fleet`], with the embedded emulator when there is one (built back in time by
/// `--history-days` when its scenario has a past to replay).
pub async fn connect_fleet_with_emulator(
    fleet: &config::FleetArgs,
) -> anyhow::Result<(
    app::model::FleetSource,
    aws::Clients,
    Option<emulator::Emulator>,
)> {
    if fleet.uses_aws() {
        let target = aws::Target::Aws {
            region: fleet.region.clone(),
            profile: fleet.profile.clone(),
            endpoint_url: fleet.endpoint_url.clone(),
        };
        let mut clients = aws::Clients::with_share(&target, fleet.ecs_api_share).await;
        clients.events_queue_url = fleet.events_queue_url.clone();
        let source = app::model::FleetSource::Aws {
            region: clients.region.clone(),
        };
        return Ok((source, clients, None));
    }
    let emulator = build_emulator(&fleet.emulator, fleet.emulator.past_days()).await?;
    let (endpoint, _) = serve_emulator(&emulator).await?;
    let mut clients = aws::Clients::with_share(
        &aws::Target::Emulator {
            endpoint: endpoint.clone(),
        },
        fleet.ecs_api_share,
    )
    .await;
    clients.events_queue_url = fleet.events_queue_url.clone().or_else(|| {
        emulator
            .events_queue()
            .map(|queue| format!("{endpoint}{}", queue.path()))
    });
    tracing::info!(%endpoint, scenario = %fleet.emulator.scenario, "embedded emulator started");
    let source = app::model::FleetSource::Emulator {
        endpoint,
        scenario: fleet.emulator.scenario.clone(),
    };
    Ok((source, clients, Some(emulator)))
}

/// Serves `emulator` on a free loopback port; returns its endpoint and SDK clients for it.
pub async fn serve_emulator(
    emulator: &emulator::Emulator,
) -> anyhow::Result<(String, aws::Clients)> {
    let address = emulator
        .clone()
        .spawn(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .context("cannot start the embedded emulator on a loopback port")?;
    let endpoint = format!("http://{address}");
    let clients = aws::Clients::new(&aws::Target::Emulator {
        endpoint: endpoint.clone(),
    })
    .await;
    Ok((endpoint, clients))
}

/// Runs the emulator alone until Ctrl-C or SIGTERM.
pub async fn emulate(args: config::EmulateArgs) -> anyhow::Result<()> {
    let emulator = build_emulator(&args.emulator, 0).await?;
    let listener = bind(args.listen).await?;
    let status = emulator.status();
    tracing::info!(
        address = %args.listen,
        scenario = %status.scenario,
        clusters = status.clusters,
        gpus = status.gpus,
        tasks = status.tasks,
        "the emulator is serving ECS and CloudWatch on http://{}",
        args.listen
    );
    tokio::select! {
        result = emulator.serve(listener) => result.context("the emulator stopped with an error")?,
        () = shutdown_signal() => {},
    }
    Ok(())
}

/// Runs the console's HTTP server until Ctrl-C or SIGTERM.
pub async fn serve(args: config::ServeArgs) -> anyhow::Result<()> {
    let (source, clients, emulator) = connect_fleet_with_emulator(&args.fleet).await?;
    let audit = audit::SqlAuditLog::open(args.database_url.as_deref(), &args.data_dir).await?;
    tracing::info!(backend = audit.backend, replica = %audit.replica, "audit log open");
    let state = startup::start(
        &args,
        source,
        clients.clone(),
        std::sync::Arc::new(audit.clone()),
    )?;
    if let Some(emulator) = emulator.filter(|_| args.fleet.emulator.past_days() > 0) {
        spawn_replay(emulator, &clients, &args.fleet, state.history.clone());
    }
    cost_history::spawn_sealer(state.services.clone());
    // What earlier runs left unsettled is listed before any request can start a change.
    let backlog = app::service::deployments::unsettled(&state.services, std::time::Duration::ZERO)
        .await
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "the audit log could not be read for records to reconcile");
            Vec::new()
        });
    spawn_reconciler(
        state.services.clone(),
        backlog,
        std::time::Duration::from_secs(args.reconcile_interval),
    );
    let listener = bind(args.listen).await?;
    let auth = state.authenticator.mode();
    tracing::info!(
        address = %args.listen,
        site_root = %args.site_root.display(),
        auth = auth.as_str(),
        "gpushare is serving on http://{}",
        args.listen
    );
    if args.access.insecure_no_auth && auth == app::model::identity::AuthMode::None {
        tracing::warn!(address = %args.listen, "serving a network address without sign-in: everyone who reaches it is an admin");
    }
    http::panics::log_panics();
    // The peer's address reaches the sign-in, which trusts a proxy by it.
    http::serve::serve(
        listener,
        router(state),
        Duration::from_secs(args.header_read_timeout),
        shutdown_signal(),
    )
    .await
    .context("the HTTP server stopped with an error")?;
    // The other replicas may settle at once whatever this one leaves.
    if let Err(error) = audit.leave().await {
        tracing::warn!(%error, "could not tell the audit database that this replica stopped");
    }
    Ok(())
}

/// Replays the emulator's past into the cost history in the background; readiness says so
/// until it is done.
fn spawn_replay(
    emulator: emulator::Emulator,
    clients: &aws::Clients,
    fleet: &config::FleetArgs,
    history: std::sync::Arc<cost_history::SqlCostHistory>,
) {
    let reader = fleet::reader::FleetReader::new(clients.ecs.clone(), &fleet.team_tag, 16)
        .with_usage(fleet::usage::UsageReader::new(
            clients.cloudwatch.clone(),
            &fleet.usage_host_dimension,
            fleet::usage::CONCURRENCY,
        ))
        .with_ec2(fleet::ec2::Ec2Reader::new(clients.ec2.clone()));
    let days = fleet.emulator.past_days();
    history.set_replaying(Some(format!(
        "replaying the emulator's past into the cost history: day 1 of {days}"
    )));
    tokio::spawn(async move {
        let started = std::time::Instant::now();
        match cost_history::replay(emulator, reader, history.clone(), chrono::Utc::now()).await {
            Ok(minutes) => tracing::info!(
                days,
                minutes,
                seconds = started.elapsed().as_secs_f64(),
                "the emulator's past is in the cost history"
            ),
            Err(error) => {
                history.set_replaying(None);
                tracing::warn!(%error, "the emulator's past could not be replayed; the cost history starts now");
            }
        }
    });
}

/// Settles `backlog` (what earlier runs left), then says every few seconds that this replica is
/// alive and reconciles the audit log with ECS every `interval`.
pub fn spawn_reconciler(
    services: app::service::ServiceContext,
    backlog: Vec<app::model::audit::AuditRecord>,
    interval: std::time::Duration,
) {
    use app::service::deployments::{reconcile, settle_all, GRACE};
    let report = |result: Result<u32, app::model::ServiceError>| match result {
        Ok(0) => {}
        Ok(settled) => tracing::info!(settled, "audit records reconciled with ECS"),
        Err(error) => tracing::warn!(%error, "the audit log could not be reconciled"),
    };
    tokio::spawn(async move {
        report(settle_all(&services, backlog).await);
        let beat = std::time::Duration::from_secs(audit::HEARTBEAT_SECONDS);
        let mut last = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(beat.min(interval)).await;
            if let Err(error) = services.audit.heartbeat().await {
                tracing::warn!(%error, "could not tell the audit database this replica is alive");
            }
            if last.elapsed() >= interval {
                last = tokio::time::Instant::now();
                report(reconcile(&services, GRACE).await);
            }
        }
    });
}

/// Binds a listening socket, with an error that says what to check.
async fn bind(address: std::net::SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}; is another server using it?"))
}

/// Resolves on Ctrl-C or SIGTERM, so that requests in flight can finish.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down; finishing requests in flight");
    // Give open connections a moment; axum waits for them itself.
    tokio::time::sleep(Duration::from_millis(10)).await;
}
