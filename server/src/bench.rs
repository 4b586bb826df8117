//! `gpushare bench`: measured figures, printed as a table. Benchmarks, not tests.

use std::time::{Duration, Instant};

use anyhow::Context;
use aws_sdk_ecs::error::DisplayErrorContext;
use futures::{stream, StreamExt, TryStreamExt};

use crate::config::BenchEmulatorArgs;

/// One row of a results table.
struct Row {
    what: String,
    value: String,
}

fn print_table(title: &str, rows: &[Row]) {
    let width = rows.iter().map(|r| r.what.len()).max().unwrap_or(0).max(6);
    println!("\n{title}\n");
    println!("| {:width$} | value |", "figure");
    println!("|{}|-------|", "-".repeat(width + 2));
    for row in rows {
        println!("| {:width$} | {} |", row.what, row.value);
    }
}

/// Resident memory of this process, in bytes (Linux).
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

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

    let em = emulator::Emulator::new(fleet, scenario.name(), 1.0, emulator::Faults::default());
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
        let mut faults = emulator::Faults::default();
        faults.all.latency_ms = latency;
        em.set_faults(faults).map_err(anyhow::Error::msg)?;
        // The console's own full read: every list and describe, task definitions included.
        let reader =
            crate::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", concurrency);
        let started = Instant::now();
        let snapshot = reader.read().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let elapsed = started.elapsed();
        let instances: usize = snapshot.clusters.iter().map(|c| c.instances.len()).sum();
        let gpus: usize = snapshot
            .clusters
            .iter()
            .flat_map(|c| c.instances.iter())
            .map(|i| i.gpus.len())
            .sum();
        rows.push(Row {
            what: format!("full SDK read, {latency} ms added latency, {concurrency} in flight"),
            value: format!(
                "{:.2} s, {} calls ({instances} instances, {gpus} GPUs)",
                elapsed.as_secs_f64(),
                snapshot.api_calls
            ),
        });
    }
    em.set_faults(emulator::Faults::default())
        .map_err(anyhow::Error::msg)?;

    // Throughput: DescribeContainerInstances of 100 ARNs from `concurrency` callers.
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
    if let Some((cluster, arns)) = cluster {
        let deadline = Instant::now() + Duration::from_secs(args.seconds);
        let started = Instant::now();
        let counts: Vec<usize> = stream::iter(0..concurrency)
            .map(|_| {
                let ecs = clients.ecs.clone();
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
        rows.push(Row {
            what: format!(
                "DescribeContainerInstances (100 ARNs), {} callers",
                args.concurrency
            ),
            value: format!(
                "{:.0} requests/s ({total} in {:.1} s)",
                total as f64 / started.elapsed().as_secs_f64(),
                started.elapsed().as_secs_f64()
            ),
        });
    }
    print_table(
        &format!("gpushare bench emulator — scenario {}", args.scenario),
        &rows,
    );
    Ok(())
}

/// `gpushare bench fleet`: the fleet snapshot on an emulated fleet, at 0 and 40 ms of added
/// latency per call, against the fewest calls and the longest chain of dependent calls.
pub async fn fleet(args: BenchEmulatorArgs) -> anyhow::Result<()> {
    let scenario = emulator::Scenario::parse(&args.scenario).context("unknown scenario")?;
    let fleet = tokio::task::spawn_blocking(move || scenario.build(1, chrono::Utc::now())).await?;
    // The fewest calls, and the longest chain: ListClusters, then a cluster's ListTasks pages one
    // after the other, the last page's DescribeTasks, then DescribeTaskDefinition.
    let (minimum, chain) = {
        let pages = |n: usize, per: usize| n.div_ceil(per).max(1);
        let mut minimum = 1;
        let mut chain = 0;
        let mut definitions = std::collections::HashSet::new();
        for cluster in fleet.clusters.values() {
            let instances = cluster.instances.len();
            let tasks: Vec<_> = cluster.tasks.values().filter(|t| t.is_live()).collect();
            let services = cluster.services.len();
            minimum += pages(instances, 100) + instances.div_ceil(100);
            minimum += pages(tasks.len(), 100) + tasks.len().div_ceil(100);
            minimum += pages(services, 100) + services.div_ceil(10);
            definitions.extend(tasks.iter().map(|t| t.task_definition_arn.clone()));
            chain = chain.max(pages(tasks.len(), 100).max(pages(instances, 100)) + 1);
        }
        (minimum + definitions.len(), 1 + chain + 1)
    };
    let em = emulator::Emulator::new(fleet, scenario.name(), 1.0, emulator::Faults::default());
    let (_, clients) = crate::serve_emulator(&em).await?;
    let concurrency = usize::try_from(args.concurrency).unwrap_or(16);
    let mut rows = vec![Row {
        what: "fewest ECS calls for a full snapshot".into(),
        value: minimum.to_string(),
    }];
    for latency in [0_u64, 40] {
        let mut faults = emulator::Faults::default();
        faults.all.latency_ms = latency;
        em.set_faults(faults).map_err(anyhow::Error::msg)?;
        let reader =
            crate::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", concurrency);
        for pass in ["first", "second (task definitions cached)"] {
            let started = Instant::now();
            let snapshot = reader.read().await.map_err(|e| anyhow::anyhow!("{e}"))?;
            let elapsed = started.elapsed();
            let mut value = format!(
                "{:.2} s, {} calls ({:.2}× the fewest)",
                elapsed.as_secs_f64(),
                snapshot.api_calls,
                f64::from(snapshot.api_calls) / minimum as f64
            );
            if latency > 0 {
                let bound = chain as f64 * latency as f64 / 1000.0;
                value.push_str(&format!(
                    "; bound {chain} dependent calls × {latency} ms = {bound:.2} s, ratio {:.2}",
                    elapsed.as_secs_f64() / bound
                ));
            }
            rows.push(Row {
                what: format!("snapshot, {latency} ms added latency, {pass} read"),
                value,
            });
        }
    }
    print_table(
        &format!(
            "gpushare bench fleet — scenario {}, {} in flight",
            args.scenario, concurrency
        ),
        &rows,
    );
    Ok(())
}
