//! The gpushare server: the HTTP router, its configuration, and what it talks to.

pub mod audit;
pub mod aws;
pub mod bench;
pub mod config;
pub mod ecs;
pub mod error;
pub mod fleet;
pub mod http;
pub mod ports;
pub mod readiness;
pub mod rollouts;
pub mod telemetry;

use std::time::Duration;

use anyhow::Context;
use axum::{routing::get, Router};
use leptos_axum::{generate_route_list, LeptosRoutes};

use app::{shell, App};
pub use http::state::AppState;

/// The console's whole HTTP surface: pages, server functions, health, metrics and static files.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let context = state.render_context();
    let shell_options = state.leptos_options.clone();

    let router = Router::new()
        .route("/healthz", get(http::health::healthz))
        .route("/readyz", get(http::health::readyz))
        .route("/metrics", get(http::metrics::render))
        .route("/api/v1/fleet", get(http::fleet::get_fleet))
        .route("/api/v1/fleet/events", get(http::fleet::fleet_events))
        .route(
            "/api/v1/task-definitions",
            get(http::task_definitions::list_families),
        )
        .route(
            "/api/v1/task-definitions/{family}",
            get(http::task_definitions::get_family),
        )
        .route(
            "/api/v1/task-definitions/{family}/compare",
            get(http::task_definitions::compare),
        )
        .route(
            "/api/v1/task-definitions/{family}/{revision}",
            get(http::task_definitions::get_revision),
        )
        .route(
            "/api/v1/task-definitions/{family}/{revision}/check",
            axum::routing::post(http::task_definitions::check_edit),
        )
        .route(
            "/api/v1/task-definitions/{family}/{revision}/register",
            axum::routing::post(http::task_definitions::register_edit),
        )
        .route("/api/v1/audit", get(http::audit::list))
        .route(
            "/api/v1/clusters/{cluster}/events",
            get(http::activity::events),
        )
        .route(
            "/api/v1/clusters/{cluster}/stopped-tasks",
            get(http::activity::stopped_tasks),
        )
        .route("/api/v1/services", get(http::services::list))
        .route(
            "/api/v1/services/{cluster}/{service}/deploy",
            axum::routing::post(http::services::deploy),
        )
        .route(
            "/api/v1/services/{cluster}/{service}/rollback",
            axum::routing::post(http::services::rollback),
        )
        .route("/api/v1/deployments/{id}", get(http::services::deployment))
        .route(
            "/api/v1/deployments/{id}/events",
            get(http::services::deployment_events),
        )
        .route(
            "/api/v1/services/{cluster}/{service}/pre-check",
            get(http::services::pre_check),
        )
        .route(
            "/api/v1/task-definitions/validate",
            axum::routing::post(http::task_definitions::validate),
        )
        .route(
            "/api/v1/task-definitions/fit-check",
            axum::routing::post(http::task_definitions::fit_check),
        )
        .route(
            "/api/v1/{*path}",
            axum::routing::any(http::api::unknown_endpoint),
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

/// Builds the emulator the flags describe (a large scenario takes a few seconds).
pub async fn build_emulator(args: &config::EmulatorArgs) -> anyhow::Result<emulator::Emulator> {
    let faults = args.faults().map_err(anyhow::Error::msg)?;
    let scenario = emulator::Scenario::parse(&args.scenario)
        .with_context(|| format!("unknown scenario {:?}", args.scenario))?;
    let seed = args.seed;
    let fleet = tokio::task::spawn_blocking(move || scenario.build(seed, chrono::Utc::now()))
        .await
        .context("building the scenario failed")?;
    Ok(emulator::Emulator::new(
        fleet,
        scenario.name(),
        args.clock_speed,
        faults,
    ))
}

/// Where the console's fleet comes from: AWS as the flags say, or an embedded emulator started
/// on a free loopback port.
pub async fn connect_fleet(
    fleet: &config::FleetArgs,
) -> anyhow::Result<(app::model::FleetSource, aws::Clients)> {
    if fleet.uses_aws() {
        let target = aws::Target::Aws {
            region: fleet.region.clone(),
            profile: fleet.profile.clone(),
            endpoint_url: fleet.endpoint_url.clone(),
        };
        let clients = aws::Clients::new(&target).await;
        let source = app::model::FleetSource::Aws {
            region: clients.region.clone(),
        };
        return Ok((source, clients));
    }
    let emulator = build_emulator(&fleet.emulator).await?;
    let (endpoint, clients) = serve_emulator(&emulator).await?;
    tracing::info!(%endpoint, scenario = %fleet.emulator.scenario, "embedded emulator started");
    let source = app::model::FleetSource::Emulator {
        endpoint,
        scenario: fleet.emulator.scenario.clone(),
    };
    Ok((source, clients))
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
    let emulator = build_emulator(&args.emulator).await?;
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
    let (source, clients) = connect_fleet(&args.fleet).await?;
    let audit = audit::SqlAuditLog::open(args.database_url.as_deref(), &args.data_dir).await?;
    tracing::info!(backend = audit.backend, "audit log open");
    let state = AppState::new(&args, source, clients, std::sync::Arc::new(audit));
    let services = state.services.clone();
    tokio::spawn(async move {
        match app::service::deployments::reconcile(&services).await {
            Ok(0) => {}
            Ok(settled) => tracing::info!(settled, "audit records reconciled with ECS"),
            Err(error) => tracing::warn!(%error, "the audit log could not be reconciled"),
        }
    });
    let listener = bind(args.listen).await?;
    tracing::info!(
        address = %args.listen,
        site_root = %args.site_root.display(),
        "gpushare is serving on http://{}",
        args.listen
    );
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .context("the HTTP server stopped with an error")?;
    Ok(())
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
