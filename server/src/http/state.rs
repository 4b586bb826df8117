//! What every request handler can reach: the use cases' context, and what the HTTP edge itself
//! keeps (the site, metrics, readiness, limits, the fleet API's serialized answers).

use std::sync::Arc;

use axum::extract::FromRef;
use leptos::prelude::*;

use app::{
    model::{policy::Policy, FleetSource},
    service::ServiceContext,
};

use super::{
    fleet_cache::FleetJsonCache,
    metrics::{Costs, HttpMetrics, MetricsPage},
    origin::OriginGuard,
    streams::StreamLimits,
};
use crate::{
    audit::SqlAuditLog,
    auth::{self, Authenticator},
    aws::Clients,
    config::ServeArgs,
    fleet::{
        reader::FleetReader,
        store::{spawn_refresher, SnapshotStore},
        usage::UsageReader,
    },
    ports::service_context,
    readiness::{Cached, CloudWatchReachable, EcsReachable, Readiness, PROBE_CACHE},
};

/// The server's shared state, cloned into every handler.
#[derive(Clone)]
pub struct AppState {
    /// Where the built site is and what its files are called.
    pub leptos_options: LeptosOptions,
    /// The use cases' context: the server's facts and its ports to ECS and the audit log.
    pub services: ServiceContext,
    /// Request counts and latencies for `/metrics`.
    pub metrics: Arc<HttpMetrics>,
    /// `/api/v1/fleet` answers, serialized once per snapshot and filter.
    pub fleet_json: Arc<FleetJsonCache>,
    /// The checks behind `/readyz`.
    pub readiness: Readiness,
    /// Largest request body, in bytes.
    pub body_limit: usize,
    /// How long a request may take.
    pub request_timeout: std::time::Duration,
    /// Who is asking, worked out for every request.
    pub authenticator: Arc<Authenticator>,
    /// The console's own origin and hosts.
    pub origin: Arc<OriginGuard>,
    /// The live-update streams open, by client.
    pub streams: Arc<StreamLimits>,
    /// What reading the fleet costs, for `/metrics`: the AWS calls, the budget, the refresher
    /// and the full reads' checks.
    pub costs: Arc<Costs>,
    /// The allocation history the cost review reads and the recorder writes.
    pub history: Arc<crate::cost_history::SqlCostHistory>,
}

impl AppState {
    /// State for a server started with `args`, showing the fleet of `source` through `clients`,
    /// or why the server must not start with them (no sign-in on a network address, a policy
    /// file that does not read). Starts the background refresh of the fleet snapshot, so it must
    /// run inside Tokio.
    pub fn new(
        args: &ServeArgs,
        source: FleetSource,
        clients: Clients,
        audit: Arc<SqlAuditLog>,
    ) -> anyhow::Result<AppState> {
        let access = &args.access;
        let authenticator =
            auth::from_flags(access, args.listen, &audit).map_err(anyhow::Error::msg)?;
        let policy = match &access.policy {
            Some(path) => auth::policy::load(path).map_err(anyhow::Error::msg)?,
            None => Policy::default(),
        };
        let prices = crate::prices::book(&clients.region, args.prices.as_deref())
            .and_then(|book| book.with_host_share(args.cost_host_share))
            .map_err(anyhow::Error::msg)?;
        let origin = OriginGuard::new(
            args.listen,
            access.public_url.as_deref(),
            &access.allowed_hosts,
        );
        let fleet = Arc::new(SnapshotStore::new(std::time::Duration::from_secs(
            args.fleet.refresh_interval,
        )));
        let mut reader = FleetReader::new(clients.ecs.clone(), &args.fleet.team_tag, 16)
            .with_usage(UsageReader::new(
                clients.cloudwatch.clone(),
                &args.fleet.usage_host_dimension,
                crate::fleet::usage::CONCURRENCY,
            ))
            .with_ec2(crate::fleet::ec2::Ec2Reader::new(clients.ec2.clone()))
            .with_budget(clients.budget.clone())
            .with_full_read_every(std::time::Duration::from_secs(
                args.fleet.full_read_interval,
            ));
        if let Some(url) = &clients.events_queue_url {
            let feed = Arc::new(crate::fleet::events::EventFeed::new(
                clients.sqs.clone(),
                url,
            ));
            crate::fleet::events::spawn(&feed);
            tracing::info!(queue = %url, "following ECS's events through the SQS queue");
            reader = reader.with_events(feed);
        }
        let reader = Arc::new(reader);
        spawn_refresher(&fleet, reader.clone());
        let costs = Arc::new(Costs {
            calls: clients.calls.clone(),
            budget: clients.budget.clone(),
            store: fleet.clone(),
            reader,
        });
        let history = Arc::new(crate::cost_history::SqlCostHistory::new(
            &audit,
            args.cost_retention_days,
        ));
        crate::cost_history::spawn_recorder(history.clone(), fleet.clone());
        let spot = Arc::new(crate::spot_prices::SpotPrices::new(clients.ec2.clone()));
        crate::spot_prices::spawn(spot.clone(), fleet.clone());
        let mut services = service_context(&clients, &args.fleet.team_tag, fleet, audit, source);
        services.policy = Arc::new(policy);
        services.contention_threshold = args.fleet.contention_threshold;
        services.prices = Arc::new(prices);
        services.history = history.clone();
        services.spot = spot;
        let leptos_options = LeptosOptions::builder()
            .output_name("gpushare")
            .site_root(args.site_root.to_string_lossy().into_owned())
            .site_pkg_dir("pkg")
            .site_addr(args.listen)
            .env(leptos::config::Env::PROD)
            .build();
        Ok(AppState {
            authenticator: Arc::new(authenticator),
            origin: Arc::new(origin),
            streams: Arc::new(StreamLimits::new(
                args.max_streams_per_client,
                args.max_streams,
            )),
            readiness: Readiness::for_site(&args.site_root)
                .with(Cached::new(
                    EcsReachable::new(clients.ecs.clone()),
                    PROBE_CACHE,
                ))
                .with(Cached::new(
                    CloudWatchReachable::new(clients.cloudwatch.clone()),
                    PROBE_CACHE,
                ))
                .with(crate::readiness::HistoryReplay(history.clone())),
            leptos_options,
            services,
            fleet_json: Arc::default(),
            metrics: Arc::new(HttpMetrics::default()),
            costs,
            history,
            body_limit: usize::try_from(args.body_limit).unwrap_or(usize::MAX),
            request_timeout: std::time::Duration::from_secs(args.request_timeout),
        })
    }

    /// Provides the use cases' context to a page render or server function call.
    pub fn render_context(&self) -> impl Fn() + Clone + Send + Sync + 'static {
        let services = self.services.clone();
        move || provide_context(services.clone())
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl FromRef<AppState> for auth::SignIn {
    fn from_ref(state: &AppState) -> Self {
        auth::SignIn {
            authenticator: state.authenticator.clone(),
            services: state.services.clone(),
        }
    }
}

impl FromRef<AppState> for Arc<OriginGuard> {
    fn from_ref(state: &AppState) -> Self {
        state.origin.clone()
    }
}

impl FromRef<AppState> for Arc<HttpMetrics> {
    fn from_ref(state: &AppState) -> Self {
        state.metrics.clone()
    }
}

impl FromRef<AppState> for MetricsPage {
    fn from_ref(state: &AppState) -> Self {
        MetricsPage {
            metrics: state.metrics.clone(),
            costs: state.costs.clone(),
            version: state.services.version,
            started: state.services.started,
        }
    }
}
