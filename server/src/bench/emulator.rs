//! `gpushare bench emulator`: the emulator on its own.

use std::time::{Duration, Instant};

use anyhow::Context;
use aws_sdk_ecs::error::DisplayErrorContext;
use futures::{stream, StreamExt, TryStreamExt};

use super::{mib, print_table, resident_bytes, Row};
use crate::config::BenchEmulatorArgs;

/// `gpushare bench emulator`: scenario build time and memory, a full SDK walk at 0 and 40 ms of
/// latency, and DescribeContainerInstances throughput.
pub async fn emulator(args: BenchEmulatorArgs) -> anyhow::Result<()> {
    let concurrency = usize::try_from(args.concurrency).unwrap_or(16);
    let mut rows = Vec::new();
    let before = resident_bytes().unwrap_or(0);
    let started = Instant::now();
    let scenario = emulator::Scenario::parse(&args.scenario).context("unknown scenario")?;
    let fleet = tokio::task::spawn_blocking(move || scenario.build(1, chrono::Utc::now())).await?;
    let built = started.elapsed();
    let after = resident_bytes().unwrap_or(0);
    rows.push(Row {
        what: format!("build `{}` scenario", args.scenario),
        value: format!("{:.2} s", built.as_secs_f64()),
    });
    rows.push(Row {
        what: "resident memory added by the scenario".into(),
        value: mib(after.saturating_sub(before)),
    });

    // Throughput, not ECS's throttling: the rate limits are off here.
    let no_limits = emulator::Faults {
        rate_limits: Some(false),
        ..emulator::Faults::default()
    };
    let em = emulator::Emulator::new(fleet, scenario.name(), 1.0, no_limits.clone());
    let status = em.status();
    rows.push(Row {
        what: "fleet".into(),
        value: format!(
            "{} clusters, {} instances, {} GPUs, {} services, {} tasks",
            status.clusters, status.container_instances, status.gpus, status.services, status.tasks
        ),
    });
    let (_, clients) = crate::serve_emulator(&em).await?;

    for latency in [0_u64, 40] {
        let mut faults = no_limits.clone();
        faults.all.latency_ms = latency;
        em.set_faults(faults).map_err(anyhow::Error::msg)?;
        // The console's own full read: every list and describe, task definitions included.
        let reader =
            crate::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", concurrency);
        let started = Instant::now();
        let snapshot = reader.read().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let elapsed = started.elapsed();
        let instances: usize = snapshot.clusters.iter().map(|c| c.instances.len()).sum();
        let gpus = snapshot.gpu_count();
        rows.push(Row {
            what: format!("full SDK read, {latency} ms added latency, {concurrency} in flight"),
            value: format!(
                "{:.2} s, {} calls ({instances} instances, {gpus} GPUs)",
                elapsed.as_secs_f64(),
                snapshot.api_calls
            ),
        });
    }
    em.set_faults(no_limits).map_err(anyhow::Error::msg)?;

    rows.extend(describe_throughput(&em, &clients.ecs, concurrency, args.seconds).await?);
    print_table(
        &format!("gpushare bench emulator — scenario {}", args.scenario),
        &rows,
    );
    Ok(())
}

/// Throughput: DescribeContainerInstances of 100 ARNs of the largest cluster from
/// `concurrency` callers for `seconds`.
async fn describe_throughput(
    em: &emulator::Emulator,
    ecs: &aws_sdk_ecs::Client,
    concurrency: usize,
    seconds: u64,
) -> anyhow::Result<Option<Row>> {
    let cluster = em.with_fleet(|f| {
        f.clusters
            .values()
            .max_by_key(|c| c.instances.len())
            .map(|c| {
                (
                    c.name.clone(),
                    c.instances
                        .iter()
                        .take(100)
                        .map(|i| i.arn.clone())
                        .collect::<Vec<_>>(),
                )
            })
    });
    let Some((cluster, arns)) = cluster else {
        return Ok(None);
    };
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let counts: Vec<usize> = stream::iter(0..concurrency)
        .map(|_| {
            let ecs = ecs.clone();
            let cluster = cluster.clone();
            let arns = arns.clone();
            async move {
                let mut done = 0;
                while Instant::now() < deadline {
                    ecs.describe_container_instances()
                        .cluster(&cluster)
                        .set_container_instances(Some(arns.clone()))
                        .send()
                        .await
                        .map_err(|e| anyhow::anyhow!("{}", DisplayErrorContext(e)))?;
                    done += 1;
                }
                Ok::<_, anyhow::Error>(done)
            }
        })
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
    let total: usize = counts.iter().sum();
    Ok(Some(Row {
        what: format!("DescribeContainerInstances (100 ARNs), {concurrency} callers"),
        value: format!(
            "{:.0} requests/s ({total} in {:.1} s)",
            total as f64 / started.elapsed().as_secs_f64(),
            started.elapsed().as_secs_f64()
        ),
    }))
}
