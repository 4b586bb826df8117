//! `gpushare bench fleet`: the fleet snapshot against the fewest calls and a boto3 walk, and
//! the console served on that fleet.

use std::time::{Duration, Instant};

use super::{mib, print_table, Row};
use crate::config::BenchFleetArgs;
use anyhow::Context;

/// `gpushare bench fleet`: the fleet snapshot on an emulated fleet at 0 and 40 ms of added
/// latency per call, against the fewest calls and the longest chain of dependent calls, and
/// against a sequential boto3 script; then a `gpushare serve` process on that fleet: its memory,
/// the fleet page's render time and size, `/api/v1/fleet` throughput and the time to hydrate.
pub async fn fleet(args: BenchFleetArgs) -> anyhow::Result<()> {
    let part = |name: &str| args.only.as_deref().is_none_or(|only| only == name);
    let args = args.emulator;
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
    let latencies: &[u64] = if part("reads") { &[0, 40] } else { &[] };
    for &latency in latencies {
        let mut faults = emulator::Faults::default();
        faults.all.latency_ms = latency;
        // The dependent-call bound assumes ECS answers every call: no throttling here.
        faults.rate_limits = Some(false);
        em.set_faults(faults).map_err(anyhow::Error::msg)?;
        let (more, ours) = snapshot_reads(&clients, concurrency, latency, &minimum, chain).await?;
        rows.extend(more);
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
    if part("refresh") {
        match super::refresh::rows(&em, &endpoint, crate::aws::DEFAULT_ECS_API_SHARE).await {
            Ok(more) => rows.extend(more),
            Err(error) => rows.push(Row {
                what: "the refresh within ECS's API budget".into(),
                value: format!("not measured: {error:#}"),
            }),
        }
    }
    em.set_faults(emulator::Faults {
        rate_limits: Some(false),
        ..emulator::Faults::default()
    })
    .map_err(anyhow::Error::msg)?;

    if part("server") {
        match served(&endpoint, args.seconds).await {
            Ok(more) => rows.extend(more),
            Err(error) => rows.push(Row {
                what: "the console as a server process".into(),
                value: format!("not measured: {error:#}"),
            }),
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

/// Two full reads of the fleet at `latency` ms: a row each, and the first read's time.
async fn snapshot_reads(
    clients: &crate::aws::Clients,
    concurrency: usize,
    latency: u64,
    minimum: &Fewest,
    chain: usize,
) -> anyhow::Result<(Vec<Row>, Duration)> {
    let reader = crate::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", concurrency)
        .with_usage(crate::fleet::usage::UsageReader::new(
            clients.cloudwatch.clone(),
            "host",
            crate::fleet::usage::CONCURRENCY,
        ))
        .with_ec2(crate::fleet::ec2::Ec2Reader::new(clients.ec2.clone()));
    let mut rows = Vec::new();
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
    Ok((rows, first.unwrap_or_default()))
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
    let encoding = if gzip {
        vec![("accept-encoding", "gzip".to_string())]
    } else {
        Vec::new()
    };
    http_get_headers(address, path, &encoding).await
}

/// The status of a GET of `path` with `headers`.
pub(crate) async fn http_get_with(
    address: &str,
    path: &str,
    headers: &[(&str, String)],
) -> anyhow::Result<u16> {
    Ok(http_get_headers(address, path, headers).await?.0)
}

async fn http_get_headers(
    address: &str,
    path: &str,
    headers: &[(&str, String)],
) -> anyhow::Result<(u16, Vec<u8>, Duration)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let started = Instant::now();
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n{extra}\r\n").as_bytes())
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
    // A data directory of its own: the one in the working directory holds whatever history
    // other runs recorded there (a month of the demo's makes the cost report several times
    // slower), and the bench should not add to it.
    let dir = std::env::temp_dir().join(format!("gpushare-bench-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let measured = serve_and_measure(endpoint, seconds, &dir).await;
    // A directory that will not go is left behind.
    std::fs::remove_dir_all(&dir).ok();
    measured
}

/// [`served`] with the server's data in `dir`.
async fn serve_and_measure(
    endpoint: &str,
    seconds: u64,
    dir: &std::path::Path,
) -> anyhow::Result<Vec<Row>> {
    let (mut child, pid, address) = serve(endpoint, dir).await?;
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

    page_renders(&address, &mut rows).await?;
    fleet_throughput(&address, seconds, &mut rows).await?;
    in_the_browser(&address, &mut rows).await;
    // The server is stopped on drop too; a kill that fails leaves nothing to say.
    child.kill().await.ok();
    Ok(rows)
}

/// `gpushare serve` on a free port against `endpoint` with its data in `dir`, once its first
/// snapshot is there: the process, its id and its address.
async fn serve(
    endpoint: &str,
    dir: &std::path::Path,
) -> anyhow::Result<(tokio::process::Child, u32, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let address = format!("127.0.0.1:{port}");
    let child = tokio::process::Command::new(std::env::current_exe()?)
        // The whole of ECS's rates (the emulator enforces none here): a quick first read.
        .args([
            "serve",
            "--endpoint-url",
            endpoint,
            "--listen",
            &address,
            "--ecs-api-share",
            "100",
        ])
        .arg("--data-dir")
        .arg(dir)
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
    Ok((child, pid, address))
}

/// Server render times of the fleet and cost pages and the cost API, and the fleet page's size.
async fn page_renders(address: &str, rows: &mut Vec<Row>) -> anyhow::Result<()> {
    let mut times = Vec::new();
    let mut raw = 0;
    for _ in 0..100 {
        let (status, body, elapsed) = http_get(address, "/", false).await?;
        anyhow::ensure!(status == 200, "GET / answered {status}");
        raw = body.len();
        times.push(elapsed);
    }
    times.sort();
    let (_, gzipped, _) = http_get(address, "/", true).await?;
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
        (
            "/cost page server render, 100 requests",
            "/cost?group=service",
        ),
        (
            "/api/v1/cost by service, 100 requests",
            "/api/v1/cost?group=service",
        ),
    ] {
        let mut times = Vec::new();
        for _ in 0..100 {
            let (status, _, elapsed) = http_get(address, path, false).await?;
            anyhow::ensure!(status == 200, "GET {path} answered {status}");
            times.push(elapsed);
        }
        times.sort();
        rows.push(Row {
            what: what.into(),
            value: format!(
                "p50 {:.1} ms, p95 {:.1} ms",
                times[49].as_secs_f64() * 1000.0,
                times[94].as_secs_f64() * 1000.0
            ),
        });
    }

    Ok(())
}

/// Requests a second the fleet API serves under `wrk`, whole and filtered.
async fn fleet_throughput(address: &str, seconds: u64, rows: &mut Vec<Row>) -> anyhow::Result<()> {
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
        let (_, body, _) = http_get(address, path, false).await?;
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

    Ok(())
}

/// What headless Chromium measures: navigation to hydrated, and GPUs visible without scrolling.
async fn in_the_browser(address: &str, rows: &mut Vec<Row>) {
    let root = std::env::var("GPUSHARE_ROOT").unwrap_or_else(|_| ".".into());
    let url = format!("http://{address}");
    rows.push(Row {
        what: "navigation to hydrated in headless Chromium, 5 loads".into(),
        value: node_tool(&root, &url, &["tools/hydrate-time.js", "/", "5"])
            .await
            .map(|result| {
                format!(
                    "median {} ms, max {} ms",
                    result["median_ms"], result["max_ms"]
                )
            })
            .unwrap_or_else(|why| format!("not measured: {why}")),
    });
    rows.push(Row {
        what: "GPUs visible without scrolling at 1,440 × 900 in headless Chromium".into(),
        value: node_tool(&root, &url, &["tools/visible-gpus.js", "/"])
            .await
            .map(|result| {
                format!(
                    "{} of {} (smallest cell {} px, heatmap from {} px down)",
                    result["visible"], result["cells"], result["smallest_px"], result["svg_top_px"]
                )
            })
            .unwrap_or_else(|why| format!("not measured: {why}")),
    });
}

/// Runs one of `end2end/tools` (under `root`) against the console at `url`: the JSON line it
/// prints, or why there is none.
async fn node_tool(root: &str, url: &str, args: &[&str]) -> Result<serde_json::Value, String> {
    let out = tokio::process::Command::new("node")
        .args(args)
        .current_dir(std::path::Path::new(root).join("end2end"))
        .env("GPUSHARE_URL", url)
        .output()
        .await
        .map_err(|error| format!("node: {error}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or_default()
            .to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|error| format!("its output: {error}"))
}

/// `wrk` against `url` for `seconds`: its requests per second.
async fn wrk(url: &str, seconds: u64) -> anyhow::Result<String> {
    wrk_with(url, seconds, &[]).await
}

/// `wrk` against `url` for `seconds`, each request with `headers`: its requests per second.
pub(crate) async fn wrk_with(
    url: &str,
    seconds: u64,
    headers: &[(&str, String)],
) -> anyhow::Result<String> {
    let mut command = tokio::process::Command::new("wrk");
    command.args(["-t2", "-c32", &format!("-d{seconds}s")]);
    for (name, value) in headers {
        command.arg("-H").arg(format!("{name}: {value}"));
    }
    let out = command.arg(url).output().await.context("cannot run wrk")?;
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
