//! The composition root: from the flags, the AWS clients and the audit store, everything the
//! server runs on is built here once — sign-in, the policy, the prices, the fleet reader and its
//! snapshot, the cost history, spot prices, the use cases' context and the HTTP edge's state —
//! and the background tasks are started: the fleet refresher (and ECS's event feed), the cost
//! recorder, the spot price reader and, on the demo, its first requests (`demo.rs`). Nothing below imports this module.

use std::{sync::Arc, time::Duration};

use leptos::prelude::LeptosOptions;

use app::model::{policy::Policy, FleetSource};

use crate::{
    audit::SqlAuditLog,
    auth,
    aws::Clients,
    config::ServeArgs,
    cost_history::{spawn_recorder, SqlCostHistory},
    ecs::ReadCache,
    fleet::{
        ec2::Ec2Reader,
        events::EventFeed,
        reader::FleetReader,
        store::{spawn_refresher, SnapshotStore},
        usage::{UsageReader, CONCURRENCY as USAGE_CONCURRENCY},
    },
    http::{
        admission::{self, Admission},
        metrics::{Costs, HttpMetrics},
        origin::OriginGuard,
        state::AppState,
        streams::StreamLimits,
    },
    ports::AwsMarkets,
    ports::{service_context, Settings, Stores},
    price_list::ListPrices,
    readiness::{Cached, CloudWatchReachable, EcsReachable, HistoryReplay, Readiness, PROBE_CACHE},
    spot_prices::SpotPrices,
};

/// ECS list and describe calls the fleet reader has in flight at once.
const READ_CONCURRENCY: usize = 16;

/// Builds the server for `args`, showing the fleet of `source` through `clients` and keeping
/// its records in `audit`, and starts its background tasks (so it must run inside Tokio); or
/// says why the server must not start with these flags (no sign-in on a network address, a
/// policy or prices file that does not read).
pub fn start(
    args: &ServeArgs,
    source: FleetSource,
    clients: Clients,
    audit: Arc<SqlAuditLog>,
) -> anyhow::Result<AppState> {
    let access = &args.access;
    let authenticator =
        auth::from_flags(access, args.listen, &audit).map_err(anyhow::Error::msg)?;
    let demo = crate::demo::applies(args, &source);
    let settings = settings(args, source, &clients)?;
    let fleet = Arc::new(SnapshotStore::new(Duration::from_secs(
        args.fleet.refresh_interval,
    )));
    let reader = Arc::new(fleet_reader(args, &clients));
    spawn_refresher(&fleet, reader.clone());
    let history = Arc::new(SqlCostHistory::new(&audit, args.cost_retention_days));
    spawn_recorder(history.clone(), fleet.clone());
    let markets = markets(args, &clients, &settings, &fleet, &history, &audit);
    let reads = Arc::new(ReadCache::default());
    let costs = Arc::new(Costs {
        calls: clients.calls.clone(),
        budget: clients.budget.clone(),
        store: fleet.clone(),
        reader,
        reads: reads.clone(),
    });
    let services = service_context(
        &clients,
        settings,
        Stores {
            fleet,
            audit,
            history: history.clone(),
            markets: Arc::new(markets),
            reads,
        },
    );
    if demo {
        crate::demo::spawn(services.clone(), history.clone());
    }
    Ok(AppState {
        leptos_options: site(args),
        authenticator: Arc::new(authenticator),
        origin: Arc::new(OriginGuard::new(
            args.listen,
            access.public_url.as_deref(),
            &access.allowed_hosts,
        )),
        streams: Arc::new(StreamLimits::new(
            args.max_streams_per_client,
            args.max_streams,
        )),
        admission: Arc::new(Admission::new(
            args.max_reads_in_flight
                .unwrap_or(admission::cores() * admission::IN_FLIGHT_PER_CORE),
            args.max_aws_reads_in_flight
                .unwrap_or(admission::cores() * admission::AWS_IN_FLIGHT_PER_CORE),
            args.max_reads_waiting,
        )),
        readiness: readiness(args, &clients, &history),
        services,
        fleet_json: Arc::default(),
        metrics: Arc::new(HttpMetrics::default()),
        costs,
        history,
        body_limit: usize::try_from(args.body_limit).unwrap_or(usize::MAX),
        request_timeout: Duration::from_secs(args.request_timeout),
    })
}

/// What AWS says things cost — the spot market, the Price List, Cost Explorer — each read in
/// the background from now on.
fn markets(
    args: &ServeArgs,
    clients: &Clients,
    settings: &Settings,
    fleet: &Arc<SnapshotStore>,
    history: &Arc<SqlCostHistory>,
    audit: &SqlAuditLog,
) -> AwsMarkets {
    let spot = Arc::new(SpotPrices::new(clients.ec2.clone()));
    crate::spot_prices::spawn(spot.clone(), fleet.clone());
    let list = Arc::new(ListPrices::new(
        clients.pricing.clone(),
        &settings.prices.region,
        audit,
    ));
    crate::price_list::spawn(list.clone(), fleet.clone());
    let cost_explorer = Arc::new(crate::cost_explorer::CostExplorer::new(
        clients.cost_explorer.clone(),
        history.clone(),
        args.no_cost_explorer,
    ));
    crate::cost_explorer::spawn(cost_explorer.clone());
    AwsMarkets {
        spot,
        list,
        cost_explorer,
    }
}

/// What the use cases are told, from the flags: the policy file read, the prices of the region
/// (or the prices file) with the CPU and memory share.
fn settings(args: &ServeArgs, source: FleetSource, clients: &Clients) -> anyhow::Result<Settings> {
    let policy = match &args.access.policy {
        Some(path) => auth::policy::load(path).map_err(anyhow::Error::msg)?,
        None if crate::demo::applies(args, &source) => {
            crate::demo::policy().map_err(anyhow::Error::msg)?
        }
        None => Policy::default(),
    };
    let prices = crate::prices::book(&clients.region, args.prices.as_deref())
        .and_then(|book| book.with_host_share(args.cost_host_share))
        .map_err(anyhow::Error::msg)?;
    Ok(Settings {
        source,
        team_tag: args.fleet.team_tag.clone(),
        policy,
        prices,
        contention_threshold: args.fleet.contention_threshold,
    })
}

/// The fleet reader: ECS through the budget, CloudWatch usage, EC2's instance facts, full reads
/// as often as asked, and ECS's events when a queue is set (its feed started here).
fn fleet_reader(args: &ServeArgs, clients: &Clients) -> FleetReader {
    let reader = FleetReader::new(clients.ecs.clone(), &args.fleet.team_tag, READ_CONCURRENCY)
        .with_usage(UsageReader::new(
            clients.cloudwatch.clone(),
            &args.fleet.usage_host_dimension,
            USAGE_CONCURRENCY,
        ))
        .with_ec2(Ec2Reader::new(clients.ec2.clone()))
        .with_budget(clients.budget.clone())
        .with_full_read_every(Duration::from_secs(args.fleet.full_read_interval));
    match &clients.events_queue_url {
        Some(url) => {
            let feed = Arc::new(EventFeed::new(clients.sqs.clone(), url));
            crate::fleet::events::spawn(&feed);
            tracing::info!(queue = %url, "following ECS's events through the SQS queue");
            reader.with_events(feed)
        }
        None => reader,
    }
}

/// The checks behind `/readyz`: the site's files, ECS and CloudWatch reachable (each answer
/// kept a few seconds), and the history's replay finished.
fn readiness(args: &ServeArgs, clients: &Clients, history: &Arc<SqlCostHistory>) -> Readiness {
    Readiness::for_site(&args.site_root)
        .with(Cached::new(
            EcsReachable::new(clients.ecs.clone()),
            PROBE_CACHE,
        ))
        .with(Cached::new(
            CloudWatchReachable::new(clients.cloudwatch.clone()),
            PROBE_CACHE,
        ))
        .with(HistoryReplay(history.clone()))
}

/// Where the built site is and what its files are called.
fn site(args: &ServeArgs) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name("gpushare")
        .site_root(args.site_root.to_string_lossy().into_owned())
        .site_pkg_dir("pkg")
        .site_addr(args.listen)
        .env(leptos::config::Env::PROD)
        .build()
}
