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

/// `gpushare bench fleet`: the fleet snapshot on an emulated fleet at 0 and 40 ms of added
/// latency per call, against the fewest calls and the longest chain of dependent calls, and
/// against a sequential boto3 script; then a `gpushare serve` process on that fleet: its memory,
/// the fleet page's render time and size, `/api/v1/fleet` throughput and the time to hydrate.
pub async fn fleet(args: BenchEmulatorArgs) -> anyhow::Result<()> {
    let scenario = emulator::Scenario::parse(&args.scenario).context("unknown scenario")?;
    let fleet = tokio::task::spawn_blocking(move || scenario.build(1, chrono::Utc::now())).await?;
    let (minimum, chain) = fewest_calls(&fleet);
    let em = emulator::Emulator::new(fleet, scenario.name(), 1.0, emulator::Faults::default());
    let (endpoint, clients) = crate::serve_emulator(&em).await?;
    let concurrency = usize::try_from(args.concurrency).unwrap_or(16);
    let mut rows = vec![Row {
        what: "fewest calls for a full snapshot (ECS + CloudWatch)".into(),
        value: format!(
            "{} ({} ECS + {} CloudWatch)",
            minimum.ecs + minimum.cloudwatch,
            minimum.ecs,
            minimum.cloudwatch
        ),
    }];
    for latency in [0_u64, 40] {
        let mut faults = emulator::Faults::default();
        faults.all.latency_ms = latency;
        em.set_faults(faults).map_err(anyhow::Error::msg)?;
        let reader =
            crate::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", concurrency)
                .with_usage(crate::fleet::usage::UsageReader::new(
                    clients.cloudwatch.clone(),
                    "host",
                    crate::fleet::usage::CONCURRENCY,
                ));
        let mut first = None;
        for pass in ["first", "second (task definitions and metric list cached)"] {
            let started = Instant::now();
            let snapshot = reader.read().await.map_err(|e| anyhow::anyhow!("{e}"))?;
            let elapsed = started.elapsed();
            if let Some(error) = &snapshot.usage_error {
                anyhow::bail!("usage could not be read: {error}");
            }
            first.get_or_insert(elapsed);
            let calls = snapshot.api_calls + snapshot.cloudwatch_calls;
            let mut value = format!(
                "{:.2} s, {calls} calls ({} ECS + {} CloudWatch; {:.2}× the fewest)",
                elapsed.as_secs_f64(),
                snapshot.api_calls,
                snapshot.cloudwatch_calls,
                f64::from(calls) / (minimum.ecs + minimum.cloudwatch) as f64
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
        let ours = first.unwrap_or_default();
        rows.push(Row {
            what: format!("sequential boto3 script, {latency} ms added latency"),
            value: match boto3_walk(&endpoint).await {
                Ok((seconds, calls)) => format!(
                    "{seconds:.2} s, {calls} calls; gpushare is {:.1}× faster",
                    seconds / ours.as_secs_f64().max(1e-9)
                ),
                Err(error) => format!("not measured: {error:#}"),
            },
        });
    }
    em.set_faults(emulator::Faults::default())
        .map_err(anyhow::Error::msg)?;

    match served(&endpoint, args.seconds).await {
        Ok(more) => rows.extend(more),
        Err(error) => rows.push(Row {
            what: "the console as a server process".into(),
            value: format!("not measured: {error:#}"),
        }),
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

/// The fewest calls a full snapshot can take.
struct Fewest {
    ecs: usize,
    cloudwatch: usize,
}

/// The fewest calls, and the longest chain of calls that must follow one another: ListClusters,
/// a cluster's ListTasks pages one after the other, the last page's DescribeTasks, then
/// DescribeTaskDefinition. (CloudWatch's chain, ListMetrics pages then GetMetricData, runs beside
/// it and is shorter.)
fn fewest_calls(fleet: &emulator::model::Fleet) -> (Fewest, usize) {
    let pages = |n: usize, per: usize| n.div_ceil(per).max(1);
    let mut ecs = 1;
    let mut chain = 0;
    let mut definitions = std::collections::HashSet::new();
    let mut reporting = 0;
    for cluster in fleet.clusters.values() {
        let instances = cluster.instances.len();
        let tasks: Vec<_> = cluster.tasks.values().filter(|t| t.is_live()).collect();
        let services = cluster.services.len();
        ecs += pages(instances, 100) + instances.div_ceil(100);
        ecs += pages(tasks.len(), 100) + tasks.len().div_ceil(100);
        ecs += pages(services, 100) + services.div_ceil(10);
        definitions.extend(tasks.iter().map(|t| t.task_definition_arn.clone()));
        chain = chain.max(pages(tasks.len(), 100).max(pages(instances, 100)) + 1);
        reporting += cluster
            .instances
            .iter()
            .filter(|i| i.cloudwatch_agent)
            .map(|i| i.gpus.len())
            .sum::<usize>();
    }
    let cloudwatch = pages(reporting, 500) + (2 * reporting).div_ceil(500);
    let ecs_chain = 1 + chain + 1;
    let cloudwatch_chain = pages(reporting, 500) + 1;
    (
        Fewest {
            ecs: ecs + definitions.len(),
            cloudwatch,
        },
        ecs_chain.max(cloudwatch_chain),
    )
}

/// Runs `bench/boto3_walk.py` against the emulator: seconds and calls.
async fn boto3_walk(endpoint: &str) -> anyhow::Result<(f64, u64)> {
    let python = std::env::var("GPUSHARE_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = std::env::var("GPUSHARE_ROOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_default()
        .join("bench/boto3_walk.py");
    let output = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(endpoint)
        .output()
        .await
        .with_context(|| format!("cannot run {python} {}", script.display()))?;
    anyhow::ensure!(
        output.status.success(),
        "{python} {} failed: {}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .last()
            .unwrap_or_default()
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    Ok((
        result["seconds"].as_f64().unwrap_or(0.0),
        result["calls"].as_u64().unwrap_or(0),
    ))
}

/// A GET over HTTP/1.0 (no chunking, the connection closes): status, body, time to the end.
async fn http_get(
    address: &str,
    path: &str,
    gzip: bool,
) -> anyhow::Result<(u16, Vec<u8>, Duration)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let started = Instant::now();
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let encoding = if gzip {
        "Accept-Encoding: gzip\r\n"
    } else {
        ""
    };
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n{encoding}\r\n").as_bytes())
        .await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let elapsed = started.elapsed();
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of headers")?;
    let status = std::str::from_utf8(&response[..split])?
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, response[split + 4..].to_vec(), elapsed))
}

/// Starts `gpushare serve` on `endpoint` and measures it as a user would meet it.
async fn served(endpoint: &str, seconds: u64) -> anyhow::Result<Vec<Row>> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let address = format!("127.0.0.1:{port}");
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args(["serve", "--endpoint-url", endpoint, "--listen", &address])
        .env("AWS_ACCESS_KEY_ID", "emulator")
        .env("AWS_SECRET_ACCESS_KEY", "emulator")
        .env("AWS_REGION", "us-east-1")
        .env("GPUSHARE_LOG", "warn")
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("cannot start gpushare serve")?;
    let pid = child.id().context("the server exited at once")?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok((200, _, _)) =
            http_get(&address, "/api/v1/fleet?cluster=nothing-here", false).await
        {
            break;
        }
        if let Ok((404, _, _)) =
            http_get(&address, "/api/v1/fleet?cluster=nothing-here", false).await
        {
            break; // The snapshot is there: it says which clusters exist.
        }
        anyhow::ensure!(Instant::now() < deadline, "no fleet snapshot after 120 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut rows = Vec::new();
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .context("no VmRSS")?;
    rows.push(Row {
        what: "server resident memory holding the snapshot".into(),
        value: mib(rss * 1024),
    });

    let mut times = Vec::new();
    let mut raw = 0;
    for _ in 0..100 {
        let (status, body, elapsed) = http_get(&address, "/", false).await?;
        anyhow::ensure!(status == 200, "GET / answered {status}");
        raw = body.len();
        times.push(elapsed);
    }
    times.sort();
    let (_, gzipped, _) = http_get(&address, "/", true).await?;
    rows.push(Row {
        what: "fleet page server render, 100 requests".into(),
        value: format!(
            "p50 {:.1} ms, p95 {:.1} ms",
            times[49].as_secs_f64() * 1000.0,
            times[94].as_secs_f64() * 1000.0
        ),
    });
    rows.push(Row {
        what: "fleet page HTML".into(),
        value: format!(
            "{:.1} KB raw, {:.1} KB gzip",
            raw as f64 / 1000.0,
            gzipped.len() as f64 / 1000.0
        ),
    });

    for (what, path) in [
        ("the whole fleet", "/api/v1/fleet"),
        (
            "one cluster's p5.48xlarge",
            "/api/v1/fleet?cluster=prod-a&instance_type=p5.48xlarge",
        ),
        (
            "one cluster's dedicated GPUs",
            "/api/v1/fleet?cluster=batch&mode=DEDICATED",
        ),
    ] {
        let (_, body, _) = http_get(&address, path, false).await?;
        rows.push(Row {
            what: format!(
                "/api/v1/fleet req/s, {what} ({:.0} KB), wrk 2 threads 32 connections",
                body.len() as f64 / 1000.0
            ),
            value: wrk(&format!("http://{address}{path}"), seconds)
                .await
                .unwrap_or_else(|error| format!("not measured: {error:#}")),
        });
    }

    let root = std::env::var("GPUSHARE_ROOT").unwrap_or_else(|_| ".".into());
    let hydrate = tokio::process::Command::new("node")
        .args(["tools/hydrate-time.js", "/", "5"])
        .current_dir(std::path::Path::new(&root).join("end2end"))
        .env("GPUSHARE_URL", format!("http://{address}"))
        .output()
        .await;
    rows.push(Row {
        what: "navigation to hydrated in headless Chromium, 5 loads".into(),
        value: match hydrate {
            Ok(out) if out.status.success() => {
                let result: serde_json::Value =
                    serde_json::from_slice(&out.stdout).unwrap_or_default();
                format!(
                    "median {} ms, max {} ms",
                    result["median_ms"], result["max_ms"]
                )
            }
            Ok(out) => format!(
                "not measured: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            ),
            Err(error) => format!("not measured: node: {error}"),
        },
    });
    let _ = child.kill().await;
    Ok(rows)
}

/// `wrk` against `url` for `seconds`: its requests per second.
async fn wrk(url: &str, seconds: u64) -> anyhow::Result<String> {
    let out = tokio::process::Command::new("wrk")
        .args(["-t2", "-c32", &format!("-d{seconds}s"), url])
        .output()
        .await
        .context("cannot run wrk")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rate = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .context("wrk printed no rate")?
        .trim()
        .to_string();
    let errors = text
        .lines()
        .find(|l| l.contains("Non-2xx"))
        .map(|l| format!(" ({})", l.trim()))
        .unwrap_or_default();
    Ok(format!("{rate}{errors}"))
}

/// A fleet snapshot of the scenario, read through the SDK from an emulator serving it.
async fn scenario_snapshot(name: &str) -> anyhow::Result<app::model::FleetSnapshot> {
    let scenario = emulator::Scenario::parse(name).context("unknown scenario")?;
    let fleet = tokio::task::spawn_blocking(move || scenario.build(1, chrono::Utc::now())).await?;
    let em = emulator::Emulator::new(fleet, scenario.name(), 1.0, emulator::Faults::default());
    let (_, clients) = crate::serve_emulator(&em).await?;
    crate::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", 16)
        .read()
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// `gpushare bench fit`: the fit check of one task against the snapshot of an emulated fleet.
pub async fn fit(args: BenchEmulatorArgs) -> anyhow::Result<()> {
    let snapshot = scenario_snapshot(&args.scenario).await?;
    let gpus = snapshot.gpu_count();
    let mut rows = Vec::new();
    for (what, request) in [
        (
            "MPS 8 GiB, whole fleet",
            placement::GpuRequest::Mps(vec![8_192]),
        ),
        (
            "MPS 2 × 10 GiB, whole fleet",
            placement::GpuRequest::Mps(vec![10_240, 10_240]),
        ),
        (
            "2 whole GPUs, whole fleet",
            placement::GpuRequest::Whole(vec![2]),
        ),
        (
            "MPS 200 GiB (never fits), whole fleet",
            placement::GpuRequest::Mps(vec![204_800]),
        ),
    ] {
        let mut times = Vec::with_capacity(200);
        let mut report = app::model::fit::FitReport::default();
        for _ in 0..200 {
            let started = Instant::now();
            report = app::model::fit::fit_check(&snapshot, None, &request);
            times.push(started.elapsed());
        }
        times.sort();
        rows.push(Row {
            what: what.into(),
            value: format!(
                "p50 {:.2} ms, p95 {:.2} ms ({} instances can take one; {} more would fit)",
                times[99].as_secs_f64() * 1000.0,
                times[189].as_secs_f64() * 1000.0,
                report.placeable_instances,
                report.more_tasks
            ),
        });
    }
    print_table(
        &format!(
            "gpushare bench fit — scenario {}, {gpus} GPUs, 200 runs each",
            args.scenario
        ),
        &rows,
    );
    Ok(())
}

/// `gpushare bench precheck`: the capacity pre-check of a 60-task rollout on the scenario's
/// fleet, for 60 tasks of the service with the most GPU tasks — one rollout with 1.5 times the
/// memory, and one that asks a whole GPU's memory (which stalls when the fleet lacks room, and
/// then searches for what would let it through).
pub async fn precheck(args: BenchEmulatorArgs) -> anyhow::Result<()> {
    use app::model::rollout::{pre_check, Cluster, RolloutPlan, Verdict};
    use placement::GpuRequest;

    let snapshot = scenario_snapshot(&args.scenario).await?;
    // The service with the most MPS containers, and the memory one of them asks.
    let mut counts: std::collections::BTreeMap<(String, String), (u32, u32, u32)> =
        Default::default();
    for cluster in &snapshot.clusters {
        let largest = cluster
            .instances
            .iter()
            .flat_map(|i| i.gpus.iter())
            .map(|g| g.total_memory_mib)
            .max()
            .unwrap_or(0);
        for container in cluster
            .instances
            .iter()
            .flat_map(|i| i.gpus.iter())
            .flat_map(|g| g.containers.iter())
        {
            if let (Some(service), Some(memory)) = (&container.service, container.memory_mib) {
                let entry = counts
                    .entry((cluster.name.clone(), service.clone()))
                    .or_insert((0, memory, largest));
                entry.0 += 1;
            }
        }
    }
    let ((cluster, service), (tasks, memory, largest)) = counts
        .into_iter()
        .max_by_key(|(_, (count, _, _))| *count)
        .context("the scenario has no service on MPS GPUs")?;
    // A 60-task service: 60 of its tasks are the old ones, the others' GPUs stay busy.
    let layout = Cluster::of(&snapshot, &cluster, &service)
        .context("the cluster")?
        .with_service_tasks(60);
    let base = RolloutPlan {
        cluster: cluster.clone(),
        service: service.clone(),
        desired: 60,
        running: 60,
        maximum_percent: 200,
        minimum_healthy_percent: 100,
        old: GpuRequest::Mps(vec![memory]),
        new: GpuRequest::Mps(vec![memory + memory / 2]),
    };
    // One more task than the cluster has empty GPUs, each asking a whole GPU's memory: the
    // overlap cannot fit, and the pre-check searches for what would let it through.
    let empty_gpus = snapshot
        .clusters
        .iter()
        .filter(|c| c.name == cluster)
        .flat_map(|c| c.instances.iter())
        .flat_map(|i| i.gpus.iter())
        .filter(|g| g.containers.is_empty() && g.total_memory_mib >= largest)
        .count() as u32;
    let stalling = RolloutPlan {
        desired: empty_gpus + 1,
        new: GpuRequest::Mps(vec![largest]),
        ..base.clone()
    };
    let mut rows = Vec::new();
    for (what, plan) in [
        (
            format!("60 tasks, MPS {memory} → {} MiB", memory + memory / 2),
            base,
        ),
        (
            format!(
                "{} tasks, MPS {memory} → {largest} MiB ({empty_gpus} empty GPUs)",
                empty_gpus + 1
            ),
            stalling,
        ),
    ] {
        let mut times = Vec::with_capacity(50);
        let mut check = None;
        for _ in 0..50 {
            let started = Instant::now();
            check = Some(pre_check(&layout, &plan));
            times.push(started.elapsed());
        }
        times.sort();
        let check = check.context("ran")?;
        let verdict = match &check.verdict {
            Verdict::Completes => format!(
                "completes in {} {}",
                check.steps.len(),
                if check.steps.len() == 1 {
                    "step"
                } else {
                    "steps"
                }
            ),
            Verdict::Stalls { step, .. } => format!(
                "stalls at step {step}; {} suggestions found",
                check.suggestions.len()
            ),
            Verdict::Never { .. } => "never fits".into(),
        };
        rows.push(Row {
            what,
            value: format!(
                "p50 {:.2} ms, p95 {:.2} ms ({verdict})",
                times[24].as_secs_f64() * 1000.0,
                times[47].as_secs_f64() * 1000.0,
            ),
        });
    }
    print_table(
        &format!(
            "gpushare bench precheck — scenario {}, service {cluster}/{service} ({tasks} MPS tasks in the snapshot), 50 runs each",
            args.scenario
        ),
        &rows,
    );
    Ok(())
}

/// `gpushare bench audit`: audit log writes per second — intents, then outcomes — on SQLite in
/// a temporary data directory (or the database of `DATABASE_URL`), one after another as the
/// server writes them.
pub async fn audit(args: crate::config::BenchAuditArgs) -> anyhow::Result<()> {
    use app::model::audit::{AuditAction, AuditIntent, AuditOutcome};
    let dir = std::env::temp_dir().join(format!("gpushare-bench-audit-{}", std::process::id()));
    let log = crate::audit::SqlAuditLog::open(args.database_url.as_deref(), &dir).await?;
    let intent = AuditIntent {
        actor: "local".into(),
        action: AuditAction::Deploy,
        resource: "inference-prod/embed-api".into(),
        from_revision: Some("embed-api:1".into()),
        to_revision: Some("embed-api:2".into()),
        diff: r#"[{"path":"containerDefinitions[embed-api].resourceRequirements[0].sharingStrategy.nvidiaMps.maxComputePercent","change":"changed","before":"50","after":"40","gpu":true}]"#.into(),
        pre_check: Some("completes".into()),
        description: Some("bench".into()),
    };
    let started = Instant::now();
    let mut ids = Vec::with_capacity(args.records as usize);
    for _ in 0..args.records {
        ids.push(log.insert(&intent).await?);
    }
    let inserts = started.elapsed();
    let started = Instant::now();
    for id in &ids {
        log.update(
            id,
            &AuditOutcome {
                outcome: "succeeded".into(),
                request_id: Some("bench".into()),
                ..AuditOutcome::default()
            },
        )
        .await?;
    }
    let updates = started.elapsed();
    let per_second = |d: Duration| f64::from(args.records) / d.as_secs_f64();
    print_table(
        &format!(
            "gpushare bench audit — {} records on {}",
            args.records, log.backend
        ),
        &[
            Row {
                what: "intents written (INSERT), one after another".into(),
                value: format!("{:.0} per second", per_second(inserts)),
            },
            Row {
                what: "outcomes written (UPDATE), one after another".into(),
                value: format!("{:.0} per second", per_second(updates)),
            },
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
