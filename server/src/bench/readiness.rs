//! `gpushare bench readiness`: what a flood of unauthenticated readiness probes costs the
//! account. A console on the embedded demo fleet, served on a loopback port as `gpushare serve`
//! serves it, gets `--rate` requests a second to `/readyz` for `--seconds`; the emulator's own
//! record says how many ECS and CloudWatch calls they became.

use std::{sync::Arc, time::Instant};

use anyhow::Context;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};

use super::{print_table, Row};
use crate::config::{BenchReadinessArgs, ServeArgs};

/// Calls of `operation` the emulator received between `before` and `after`.
fn delta(
    before: &std::collections::BTreeMap<String, u64>,
    after: &std::collections::BTreeMap<String, u64>,
    operation: &str,
) -> u64 {
    after.get(operation).copied().unwrap_or(0) - before.get(operation).copied().unwrap_or(0)
}

/// Probes `url` `total` times, `rate` a second, each on its own: the answered probes' times
/// (ms), their statuses counted, and the seconds it all took.
async fn flood(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Empty<axum::body::Bytes>>,
    url: &http::Uri,
    rate: u32,
    total: u32,
) -> (Vec<f64>, std::collections::BTreeMap<u16, u64>, f64) {
    let gap = std::time::Duration::from_secs_f64(1.0 / f64::from(rate));
    let started = Instant::now();
    let mut tick = tokio::time::interval(gap);
    let mut running = tokio::task::JoinSet::new();
    for _ in 0..total {
        tick.tick().await;
        let (client, url) = (client.clone(), url.clone());
        running.spawn(async move {
            let asked = Instant::now();
            let answer = client.get(url).await.ok()?;
            let status = answer.status();
            answer.into_body().collect().await.ok()?;
            Some((status, asked.elapsed().as_secs_f64() * 1000.0))
        });
    }
    let mut times = Vec::new();
    let mut statuses = std::collections::BTreeMap::<u16, u64>::new();
    while let Some(done) = running.join_next().await {
        if let Ok(Some((status, ms))) = done {
            *statuses.entry(status.as_u16()).or_default() += 1;
            times.push(ms);
        }
    }
    (times, statuses, started.elapsed().as_secs_f64())
}

/// `gpushare bench readiness`.
pub async fn readiness(args: BenchReadinessArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("gpushare-bench-ready-{}", std::process::id()));
    let serve = ServeArgs {
        site_root: std::env::var("GPUSHARE_SITE_ROOT")
            .map_or_else(|_| std::path::PathBuf::from("target/site"), Into::into),
        ..ServeArgs::default()
    };
    let (source, clients, emulator) = crate::connect_fleet_with_emulator(&serve.fleet).await?;
    let emulator = emulator.context("the embedded emulator")?;
    let audit = Arc::new(crate::audit::SqlAuditLog::open(None, &dir).await?);
    let state = crate::startup::start(&serve, source, clients, audit)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(crate::http::serve::serve(
        listener,
        crate::router(state),
        crate::http::serve::HEADER_READ_TIMEOUT,
        std::future::pending(),
    ));
    let client: Client<_, Empty<axum::body::Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let url: http::Uri = format!("http://{address}/readyz").parse()?;
    // The first probe, and the fleet's first read, before the flood.
    client.get(url.clone()).await?;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let before = emulator.received();
    let total = args.rate * args.seconds;
    let (mut times, statuses, seconds) = flood(&client, &url, args.rate, total).await;
    let after = emulator.received();
    times.sort_by(f64::total_cmp);
    let at = |p: f64| {
        times
            .get(((times.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let periods = (seconds / crate::readiness::PROBE_CACHE.as_secs_f64()).ceil();
    let every = |service: &str| -> u64 {
        after
            .keys()
            .filter(|k| k.strip_prefix(service).is_some_and(|k| k.starts_with(':')))
            .map(|k| delta(&before, &after, k))
            .sum()
    };
    let (ecs, cloudwatch) = (every("ecs"), every("cloudwatch"));
    print_table(
        "gpushare bench readiness — /readyz flooded, on the demo fleet",
        &[
            Row {
                what: "probes sent, answered (by status)".into(),
                value: format!("{total}, {} ({statuses:?})", times.len()),
            },
            Row {
                what: "rate achieved".into(),
                value: format!("{:.0} req/s over {seconds:.1} s", times.len() as f64 / seconds),
            },
            Row {
                what: "probe latency p50 / p99".into(),
                value: format!("{:.2} ms / {:.2} ms", at(0.5), at(0.99)),
            },
            Row {
                what: format!(
                    "ListClusters / ListMetrics the probes made ({periods:.0} cache periods of {} s)",
                    crate::readiness::PROBE_CACHE.as_secs()
                ),
                value: format!(
                    "{} / {}",
                    delta(&before, &after, "ecs:ListClusters"),
                    delta(&before, &after, "cloudwatch:ListMetrics")
                ),
            },
            Row {
                what: "every ECS / CloudWatch call meanwhile (the fleet's refreshes too)".into(),
                value: format!("{ecs} / {cloudwatch}"),
            },
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
