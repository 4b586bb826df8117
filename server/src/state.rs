//! What every request handler can reach.

use std::{sync::Arc, time::Instant};

use axum::extract::FromRef;
use leptos::prelude::*;

use app::{model::FleetSource, ssr::console::ConsoleContext};

use crate::{
    aws::Clients,
    config::ServeArgs,
    fleet::{
        reader::FleetReader,
        store::{spawn_refresher, SnapshotStore},
        usage::UsageReader,
    },
    http::metrics::HttpMetrics,
    readiness::{CloudWatchReachable, EcsReachable, Readiness},
};

/// The server's shared state, cloned into every handler.
#[derive(Clone)]
pub struct AppState {
    /// Where the built site is and what its files are called.
    pub leptos_options: LeptosOptions,
    /// Facts about this server for the pages.
    pub console: ConsoleContext,
    /// Request counts and latencies for `/metrics`.
    pub metrics: Arc<HttpMetrics>,
    /// The ECS and CloudWatch clients.
    pub clients: Clients,
    /// The latest fleet snapshot, refreshed in the background.
    pub fleet: Arc<SnapshotStore>,
    /// `/api/v1/fleet` answers, serialized once per snapshot and filter.
    pub fleet_json: Arc<crate::http::fleet::FleetJsonCache>,
    /// The checks behind `/readyz`.
    pub readiness: Readiness,
    /// Largest request body, in bytes.
    pub body_limit: usize,
    /// How long a request may take.
    pub request_timeout: std::time::Duration,
    /// Deployments and their watches.
    pub deployer: Arc<crate::deployments::EcsDeployer>,
}

impl AppState {
    /// State for a server started with `args`, showing the fleet of `source` through `clients`.
    /// Starts the background refresh of the fleet snapshot, so it must run inside Tokio.
    pub fn new(
        args: &ServeArgs,
        source: FleetSource,
        clients: Clients,
        audit: Arc<dyn app::ssr::audit::AuditLog>,
    ) -> AppState {
        let fleet = Arc::new(SnapshotStore::new(std::time::Duration::from_secs(
            args.fleet.refresh_interval,
        )));
        let reader = Arc::new(
            FleetReader::new(clients.ecs.clone(), &args.fleet.team_tag, 16).with_usage(
                UsageReader::new(
                    clients.cloudwatch.clone(),
                    &args.fleet.usage_host_dimension,
                    crate::fleet::usage::CONCURRENCY,
                ),
            ),
        );
        spawn_refresher(&fleet, reader);
        let deployer = crate::deployments::EcsDeployer::new(
            clients.ecs.clone(),
            audit.clone(),
            fleet.clone(),
            crate::deployments::POLL,
        );
        let leptos_options = LeptosOptions::builder()
            .output_name("gpushare")
            .site_root(args.site_root.to_string_lossy().into_owned())
            .site_pkg_dir("pkg")
            .site_addr(args.listen)
            .env(leptos::config::Env::PROD)
            .build();
        AppState {
            readiness: Readiness::for_site(&args.site_root)
                .with(EcsReachable::new(clients.ecs.clone()))
                .with(CloudWatchReachable::new(clients.cloudwatch.clone())),
            leptos_options,
            console: ConsoleContext {
                version: env!("CARGO_PKG_VERSION"),
                started: Instant::now(),
                fleet_source: source,
                fleet: fleet.clone(),
                task_definitions: Arc::new(crate::task_definitions::EcsTaskDefinitions::new(
                    clients.ecs.clone(),
                    &args.fleet.team_tag,
                    fleet.clone(),
                )),
                audit,
                deployer: Arc::new(crate::deployments::SharedDeployer(deployer.clone())),
                activity: Arc::new(crate::activity::EcsActivity::new(
                    clients.ecs.clone(),
                    fleet.clone(),
                )),
            },
            deployer,
            clients,
            fleet,
            fleet_json: Arc::default(),
            metrics: Arc::new(HttpMetrics::default()),
            body_limit: usize::try_from(args.body_limit).unwrap_or(usize::MAX),
            request_timeout: std::time::Duration::from_secs(args.request_timeout),
        }
    }

    /// Provides the server's context to a page render or server function call.
    pub fn render_context(&self) -> impl Fn() + Clone + Send + Sync + 'static {
        let console = self.console.clone();
        move || provide_context(console.clone())
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}
