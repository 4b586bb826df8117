//! `gpushare bench`: measured figures, printed as a table. Benchmarks, not tests.

use std::time::{Duration, Instant};

use anyhow::Context;
use aws_sdk_ecs::error::DisplayErrorContext;
use futures::{stream, StreamExt, TryStreamExt};

use crate::{aws, config::BenchEmulatorArgs};

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

/// What a full walk of the fleet found and cost.
#[derive(Debug, Default)]
pub struct Walk {
    pub calls: usize,
    pub clusters: usize,
    pub instances: usize,
    pub gpus: usize,
    pub services: usize,
    pub tasks: usize,
    pub task_definitions: usize,
}

/// Lists and describes everything, describes batched at the API limits, independent calls
/// `concurrency` at a time.
pub async fn walk_fleet(ecs: &aws_sdk_ecs::Client, concurrency: usize) -> anyhow::Result<Walk> {
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("{e}");
    let mut walk = Walk::default();
    let mut clusters = Vec::new();
    let mut token = None;
    loop {
        let page = ecs
            .list_clusters()
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| err(&DisplayErrorContext(e)))?;
        walk.calls += 1;
        clusters.extend(page.cluster_arns().iter().cloned());
        token = page.next_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    walk.clusters = clusters.len();
    for cluster in &clusters {
        // Instances, services and tasks of a cluster are listed one after the other (the lists
        // are paged), then described concurrently in batches.
        let (instances, calls) = list_all(|t| {
            let ecs = ecs.clone();
            let cluster = cluster.clone();
            async move {
                let out = ecs
                    .list_container_instances()
                    .cluster(cluster)
                    .max_results(100)
                    .set_next_token(t)
                    .send()
                    .await
                    .map_err(|e| err(&DisplayErrorContext(e)))?;
                Ok((
                    out.container_instance_arns().to_vec(),
                    out.next_token().map(str::to_string),
                ))
            }
        })
        .await?;
        walk.calls += calls;
        let (services, calls) = list_all(|t| {
            let ecs = ecs.clone();
            let cluster = cluster.clone();
            async move {
                let out = ecs
                    .list_services()
                    .cluster(cluster)
                    .max_results(100)
                    .set_next_token(t)
                    .send()
                    .await
                    .map_err(|e| err(&DisplayErrorContext(e)))?;
                Ok((
                    out.service_arns().to_vec(),
                    out.next_token().map(str::to_string),
                ))
            }
        })
        .await?;
        walk.calls += calls;
        let (tasks, calls) = list_all(|t| {
            let ecs = ecs.clone();
            let cluster = cluster.clone();
            async move {
                let out = ecs
                    .list_tasks()
                    .cluster(cluster)
                    .max_results(100)
                    .set_next_token(t)
                    .send()
                    .await
                    .map_err(|e| err(&DisplayErrorContext(e)))?;
                Ok((
                    out.task_arns().to_vec(),
                    out.next_token().map(str::to_string),
                ))
            }
        })
        .await?;
        walk.calls += calls;

        let gpus: Vec<usize> = stream::iter(instances.chunks(100).map(|batch| {
            let ecs = ecs.clone();
            let cluster = cluster.clone();
            let batch = batch.to_vec();
            async move {
                let out = ecs
                    .describe_container_instances()
                    .cluster(cluster)
                    .set_container_instances(Some(batch))
                    .send()
                    .await
                    .map_err(|e| err(&DisplayErrorContext(e)))?;
                Ok::<_, anyhow::Error>(
                    out.container_instances()
                        .iter()
                        .map(|i| i.gpu_devices().len())
                        .sum::<usize>(),
                )
            }
        }))
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
        walk.calls += instances.len().div_ceil(100);
        walk.gpus += gpus.iter().sum::<usize>();
        walk.instances += instances.len();

        let _: Vec<()> = stream::iter(services.chunks(10).map(|batch| {
            let ecs = ecs.clone();
            let cluster = cluster.clone();
            let batch = batch.to_vec();
            async move {
                ecs.describe_services()
                    .cluster(cluster)
                    .set_services(Some(batch))
                    .send()
                    .await
                    .map_err(|e| err(&DisplayErrorContext(e)))?;
                Ok::<_, anyhow::Error>(())
            }
        }))
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
        walk.calls += services.len().div_ceil(10);
        walk.services += services.len();

        let definitions: Vec<Vec<String>> = stream::iter(tasks.chunks(100).map(|batch| {
            let ecs = ecs.clone();
            let cluster = cluster.clone();
            let batch = batch.to_vec();
            async move {
                let out = ecs
                    .describe_tasks()
                    .cluster(cluster)
                    .set_tasks(Some(batch))
                    .send()
                    .await
                    .map_err(|e| err(&DisplayErrorContext(e)))?;
                Ok::<_, anyhow::Error>(
                    out.tasks()
                        .iter()
                        .filter_map(|t| t.task_definition_arn().map(str::to_string))
                        .collect(),
                )
            }
        }))
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
        walk.calls += tasks.len().div_ceil(100);
        walk.tasks += tasks.len();

        let mut unique: Vec<String> = definitions.into_iter().flatten().collect();
        unique.sort();
        unique.dedup();
        let _: Vec<()> = stream::iter(unique.iter().cloned().map(|arn| {
            let ecs = ecs.clone();
            async move {
                ecs.describe_task_definition()
                    .task_definition(arn)
                    .send()
                    .await
                    .map_err(|e| err(&DisplayErrorContext(e)))?;
                Ok::<_, anyhow::Error>(())
            }
        }))
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
        walk.calls += unique.len();
        walk.task_definitions += unique.len();
    }
    Ok(walk)
}

/// Follows `nextToken` to the end; returns the items and the number of calls.
async fn list_all<F, Fut>(mut call: F) -> anyhow::Result<(Vec<String>, usize)>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<(Vec<String>, Option<String>)>>,
{
    let mut items = Vec::new();
    let mut token = None;
    let mut calls = 0;
    loop {
        let (page, next) = call(token).await?;
        calls += 1;
        items.extend(page);
        token = next;
        if token.is_none() {
            return Ok((items, calls));
        }
    }
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
    let address = em
        .clone()
        .spawn(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .await?;
    let clients = aws::Clients::new(&aws::Target::Emulator {
        endpoint: format!("http://{address}"),
    })
    .await;

    for latency in [0_u64, 40] {
        let mut faults = emulator::Faults::default();
        faults.all.latency_ms = latency;
        em.set_faults(faults).map_err(anyhow::Error::msg)?;
        let started = Instant::now();
        let walk = walk_fleet(&clients.ecs, concurrency).await?;
        let elapsed = started.elapsed();
        rows.push(Row {
            what: format!(
                "full SDK walk, {latency} ms added latency, {} in flight",
                args.concurrency
            ),
            value: format!(
                "{:.2} s, {} calls ({} instances, {} GPUs, {} tasks, {} task definitions)",
                elapsed.as_secs_f64(),
                walk.calls,
                walk.instances,
                walk.gpus,
                walk.tasks,
                walk.task_definitions
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
    let address = em
        .clone()
        .spawn(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .await?;
    let clients = aws::Clients::new(&aws::Target::Emulator {
        endpoint: format!("http://{address}"),
    })
    .await;
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
