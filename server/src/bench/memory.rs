//! `gpushare bench memory`: the console's own resident memory on an emulated fleet. The emulator
//! runs as `gpushare emulate`, a process of its own, so that only the console is counted; the
//! console runs as `scripts/run.sh` starts it (freed memory given back at once).

use std::time::Duration;

use anyhow::Context as _;

use super::{
    mib, print_table,
    soak::{
        http::Http,
        load,
        procs::{free_port, purge_delay, status_bytes, wait_for, Emulator, PURGE_DELAY},
    },
    Row,
};
use crate::config::BenchMemoryArgs;

/// The pages and the API the reads go through, once each a round.
const READS: [&str; 4] = ["/", "/api/v1/fleet", "/cost", "/task-definitions"];

pub async fn memory(args: BenchMemoryArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("gpushare-bench-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let measured = measure(&args, &dir).await;
    // What the runs wrote is of no further use; a directory that will not go is left behind.
    std::fs::remove_dir_all(&dir).ok();
    let rows = measured?;
    print_table(
        &format!(
            "The console's own memory on `{}` (against `gpushare emulate`)",
            args.scenario
        ),
        &rows,
    );
    Ok(())
}

async fn measure(args: &BenchMemoryArgs, dir: &std::path::Path) -> anyhow::Result<Vec<Row>> {
    let http = Http::new();
    let emulator = Emulator::start(&http, &args.scenario, 1, dir).await?;
    let (mut console, base) = serve(&emulator.base, dir)?;
    let pid = console.id().context("the console exited at once")?;
    let ready = wait_for_snapshot(&http, &base).await?;
    let mut rows = vec![Row {
        what: "time to the first snapshot".into(),
        value: format!("{:.1} s", ready.as_secs_f64()),
    }];
    rows.push(point(&http, &base, pid, "at the first snapshot").await?);
    let mut busy = 0;
    for _ in 0..args.rounds {
        for path in READS {
            busy += read(&http, &base, path).await?;
        }
    }
    rows.push(Row {
        what: "reads answered 503 and asked again, as the page says to".into(),
        value: busy.to_string(),
    });
    let after = format!("after {} rounds of {}", args.rounds, READS.join(", "));
    rows.push(point(&http, &base, pid, &after).await?);
    tokio::time::sleep(Duration::from_secs(args.settle)).await;
    let later = format!("{} s later", args.settle);
    rows.push(point(&http, &base, pid, &later).await?);
    rows.push(Row {
        what: "peak (VmHWM)".into(),
        value: mib(status_bytes(pid, "VmHWM").context("no VmHWM")?),
    });
    console.kill().await.ok();
    Ok(rows)
}

/// Reads `path` until it answers 200: a `503` (the console's share of ECS's rate in use by the
/// fleet refresh, or busy) is asked again a second later, up to 60 times, as a person would.
/// Returns how many times it was asked again.
async fn read(http: &Http, base: &str, path: &str) -> anyhow::Result<u32> {
    for again in 0..60 {
        let answer = http.get(&format!("{base}{path}"), None).await?;
        match answer.status {
            200 => return Ok(again),
            503 => tokio::time::sleep(Duration::from_secs(1)).await,
            status => anyhow::bail!("GET {path} answered {status}"),
        }
    }
    anyhow::bail!("GET {path} answered 503 for a minute")
}

/// Resident memory now: in all, on the heap (`RssAnon`) and the binary's pages (`RssFile`), and
/// the heap the console says it holds (its `/metrics`).
async fn point(http: &Http, base: &str, pid: u32, when: &str) -> anyhow::Result<Row> {
    let read = |field| status_bytes(pid, field).with_context(|| format!("no {field}"));
    let metrics = http.get(&format!("{base}/metrics"), None).await?;
    let live = load::live_heap(&metrics.body).map_or_else(|| "not counted".into(), mib);
    Ok(Row {
        what: format!("resident {when} (heap pages + mapped files; heap held)"),
        value: format!(
            "{} ({} + {}; {live})",
            mib(read("VmRSS")?),
            mib(read("RssAnon")?),
            mib(read("RssFile")?)
        ),
    })
}

/// `gpushare serve` against `endpoint` on a free loopback port: the process and its address.
fn serve(endpoint: &str, dir: &std::path::Path) -> anyhow::Result<(tokio::process::Child, String)> {
    let address = format!("127.0.0.1:{}", free_port()?);
    let child = tokio::process::Command::new(std::env::current_exe()?)
        .args(["serve", "--endpoint-url", endpoint, "--listen", &address])
        .arg("--data-dir")
        .arg(dir)
        .env("AWS_ACCESS_KEY_ID", "emulator")
        .env("AWS_SECRET_ACCESS_KEY", "emulator")
        .env("AWS_REGION", "us-east-1")
        .env("GPUSHARE_LOG", "warn")
        .env(PURGE_DELAY, purge_delay())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start gpushare serve")?;
    Ok((child, format!("http://{address}")))
}

/// Waits for the console's first snapshot (a cluster that does not exist is then a 404).
async fn wait_for_snapshot(http: &Http, base: &str) -> anyhow::Result<Duration> {
    let url = format!("{base}/api/v1/fleet?cluster=nothing-here");
    wait_for(
        "the console's first fleet snapshot",
        Duration::from_secs(300),
        || async { http.get(&url, None).await.is_ok_and(|a| a.status == 404) },
    )
    .await
}
