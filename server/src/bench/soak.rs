//! `gpushare bench soak`: the console under faults and load together, killed once mid-write,
//! and its audit log held against what ECS received.
//!
//! `gpushare emulate` runs as its own process, so that it outlives the console, with faults on
//! every AWS call; `gpushare serve` runs against it behind a (pretended) sign-in proxy, with a
//! policy of six teams, each with a deployer, a lead who approves, and a GPU budget on one
//! cluster. While live-update streams stay open and reads come at a steady rate, the deployers
//! scale, register and deploy, roll back and restart their services, some hanging up
//! mid-request; the leads approve or reject what went past the budget. Halfway, the console is
//! killed (SIGKILL) while a write is in flight and started again on the same data. At the end
//! the faults stop, the audit log settles, and every record is held against the emulator's own
//! record of the writes it received.

pub(super) mod http;
mod ledger;
pub(super) mod load;
pub(super) mod procs;
mod report;
mod writers;

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use app::model::audit::AuditRecord;

use crate::config::BenchSoakArgs;
use http::{Http, Person};
use load::Shared;
use procs::{Console, Emulator};

use ledger::compare;

/// The teams of the soak's policy.
const TEAMS: [&str; 6] = ["search", "vision", "speech", "research", "ads", "platform"];

/// The cluster of `scenario` on which every team has a small GPU budget, so that scaling up
/// there asks for approval.
fn budget_cluster(scenario: &str) -> &'static str {
    if scenario == "demo" {
        "inference-prod"
    } else {
        "prod-c"
    }
}

/// The policy the console runs with.
fn policy(scenario: &str) -> String {
    let cluster = budget_cluster(scenario);
    let mut text = String::from(
        "[[roles]]\ngroup = \"soak-admins\"\nrole = \"admin\"\n\n\
         [[roles]]\ngroup = \"soak-deployers\"\nrole = \"deployer\"\n\n\
         [[roles]]\ngroup = \"soak-viewers\"\nrole = \"viewer\"\n",
    );
    for team in TEAMS {
        text.push_str(&format!(
            "\n[[teams]]\ngroup = \"{team}-eng\"\nteam = \"{team}\"\n\n\
             [[budgets]]\nteam = \"{team}\"\ncluster = \"{cluster}\"\n\
             gpu_memory = \"1 GiB\"\napprovers = [\"{team}-leads\"]\n"
        ));
    }
    text
}

/// The faults every AWS call meets during the run: 20 % throttled, 5 % server errors, 1 %
/// dropped connections (half before the call runs, half after it ran, the answer lost), and
/// 20–60 ms added.
pub fn faults() -> emulator::Faults {
    emulator::Faults {
        all: emulator::Fault {
            latency_ms: 20,
            jitter_ms: 40,
            throttle_rate: 0.20,
            error_rate: 0.05,
            drop_rate: 0.005,
            lost_answer_rate: 0.005,
        },
        ..emulator::Faults::default()
    }
}

/// Every ECS write the emulator received after `since`, appended to `into`; fails when the
/// emulator dropped some before they were read.
async fn collect_writes(
    emulator: &Emulator,
    http: &Http,
    into: &Mutex<Vec<emulator::WriteRecord>>,
) -> anyhow::Result<()> {
    let since = into
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .last()
        .map_or(0, |w| w.seq);
    let more = emulator.writes_since(http, since).await?;
    if let Some(first) = more.first() {
        anyhow::ensure!(
            first.seq == since + 1,
            "the emulator kept too few writes: {} to {} were not read",
            since + 1,
            first.seq - 1
        );
    }
    into.lock().unwrap_or_else(|p| p.into_inner()).extend(more);
    Ok(())
}

/// The whole audit log, once nothing in it is `pending` or `unknown` any more (or after three
/// minutes, as it is then).
async fn settled_log(http: &Http, base: &str) -> anyhow::Result<(Vec<AuditRecord>, Duration)> {
    let admin = Person::new("soak-admin", "soak-admins");
    let started = Instant::now();
    loop {
        let answer = http
            .get(&format!("{base}/api/v1/audit?limit=10000"), Some(&admin))
            .await?;
        anyhow::ensure!(
            answer.status == 200,
            "/api/v1/audit answered {}",
            answer.status
        );
        let records: Vec<AuditRecord> =
            serde_json::from_slice(&answer.body).context("the audit log's JSON")?;
        let unsettled = records.iter().any(|r| {
            matches!(
                r.outcome,
                app::model::audit::Outcome::Pending | app::model::audit::Outcome::Unknown
            )
        });
        if !unsettled || started.elapsed() > Duration::from_secs(180) {
            return Ok((records, started.elapsed()));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// The fleet's services: (cluster, service, family, team).
async fn services(
    http: &Http,
    base: &str,
) -> anyhow::Result<Vec<(String, String, String, String)>> {
    let admin = Person::new("soak-admin", "soak-admins");
    let answer = http
        .get(&format!("{base}/api/v1/services"), Some(&admin))
        .await?;
    anyhow::ensure!(
        answer.status == 200,
        "/api/v1/services answered {}",
        answer.status
    );
    let all: serde_json::Value = serde_json::from_slice(&answer.body)?;
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let found: Vec<_> = all
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                text(&s["cluster"]),
                text(&s["service"]["name"]),
                text(&s["family"]),
                text(&s["service"]["team"]),
            )
        })
        .filter(|s| !s.2.is_empty())
        .collect();
    anyhow::ensure!(!found.is_empty(), "the fleet has no services to act on");
    Ok(found)
}

/// `gpushare bench soak`.
pub async fn soak(args: BenchSoakArgs) -> anyhow::Result<()> {
    if args.heap_profile {
        can_profile_heap()?;
    }
    let dir = std::env::temp_dir().join(format!("gpushare-soak-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("data"))?;
    std::fs::write(dir.join("policy.toml"), policy(&args.scenario))?;
    let result = run(&args, &dir).await;
    match &result {
        Ok(()) if !args.keep && !args.heap_profile => {
            let _ = std::fs::remove_dir_all(&dir);
        }
        _ => eprintln!("the soak's logs and data are in {}", dir.display()),
    }
    result
}

/// Whether this binary and machine can run the console under heaptrack.
fn can_profile_heap() -> anyhow::Result<()> {
    anyhow::ensure!(
        cfg!(feature = "system-allocator"),
        "--heap-profile needs a build that allocates with the system's allocator, whose calls \
         heaptrack sees: cargo build --release -p gpushare --features system-allocator"
    );
    let found = std::process::Command::new("heaptrack")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    anyhow::ensure!(
        found,
        "--heap-profile runs the console under heaptrack, which is not installed here \
         (Debian: apt-get install heaptrack)"
    );
    Ok(())
}

/// What `tally` holds, taken out of it.
fn taken<T: Default>(tally: &Mutex<T>) -> T {
    std::mem::take(&mut *tally.lock().unwrap_or_else(|p| p.into_inner()))
}

/// What the run's parts count, shared with them.
struct Tallies {
    reads: Arc<Mutex<load::Reads>>,
    streams: Arc<load::Streams>,
    writes: Arc<Mutex<writers::Writes>>,
    /// The console's memory, every second.
    samples: Arc<Mutex<Vec<load::Sample>>>,
    /// The console's life (1, then 2 after the restart).
    lives: Arc<AtomicU32>,
    /// Writes in flight now, for the kill to land mid-write.
    in_flight: Arc<AtomicUsize>,
    /// The emulator's record of the ECS writes, read as the run goes.
    received: Arc<Mutex<Vec<emulator::WriteRecord>>>,
}

impl Tallies {
    fn new() -> Tallies {
        Tallies {
            reads: Arc::default(),
            streams: Arc::default(),
            writes: Arc::default(),
            samples: Arc::default(),
            lives: Arc::new(AtomicU32::new(1)),
            in_flight: Arc::default(),
            received: Arc::default(),
        }
    }
}

/// The readers, the streams, the memory sampler and the writers, until the run stops.
fn spawn_load(
    shared: &Arc<Shared>,
    args: &BenchSoakArgs,
    tallies: &Tallies,
) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(load::readers(
        shared.clone(),
        args.rate,
        args.seed,
        tallies.reads.clone(),
    ));
    for n in 0..args.streams {
        tasks.spawn(load::stream(shared.clone(), n, tallies.streams.clone()));
    }
    tasks.spawn(load::memory(
        shared.clone(),
        tallies.lives.clone(),
        tallies.samples.clone(),
    ));
    for (t, team) in TEAMS.iter().enumerate() {
        let writer = || writers::Writer {
            shared: shared.clone(),
            writes: tallies.writes.clone(),
            in_flight: tallies.in_flight.clone(),
        };
        tasks.spawn(writer().deployer(team.to_string(), args.seed + t as u64 * 2 + 1));
        tasks.spawn(writer().lead(team.to_string(), args.seed + t as u64 * 2 + 2));
    }
    tasks
}

/// Reads the emulator's record of writes every two seconds until the run stops (it keeps only
/// the latest few thousand); fails when some were dropped before they were read.
fn poll_writes(
    base: String,
    http: Http,
    tallies: &Tallies,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    let received = tallies.received.clone();
    tokio::spawn(async move {
        let emulator = Emulator::reading(base);
        loop {
            if let Err(error) = collect_writes(&emulator, &http, &received).await {
                if error.to_string().contains("too few") {
                    return Err(error);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                _ = stopped.changed() => return Ok(()),
            }
        }
    })
}

/// Kills the console (SIGKILL) while a write is in flight (waiting up to 30 s for one) and
/// starts it again: when, how long until it served again, and whether a write was in flight.
async fn kill_mid_write(
    console: &mut Console,
    shared: &Shared,
    tallies: &Tallies,
    http: &Http,
) -> anyhow::Result<report::Restart> {
    let waiting = Instant::now();
    while tallies.in_flight.load(Ordering::SeqCst) == 0
        && waiting.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let mid_write = tallies.in_flight.load(Ordering::SeqCst) > 0;
    shared.down.store(true, Ordering::SeqCst);
    let at = shared.started.elapsed().as_secs_f64();
    console.kill().await?;
    let took = console.restart(http).await?;
    shared.pid.store(console.pid, Ordering::SeqCst);
    tallies.lives.store(console.lives, Ordering::SeqCst);
    shared.down.store(false, Ordering::SeqCst);
    Ok(report::Restart {
        at,
        took,
        mid_write,
    })
}

async fn run(args: &BenchSoakArgs, dir: &std::path::Path) -> anyhow::Result<()> {
    let length = Duration::from_secs_f64(args.minutes * 60.0);
    let http = Http::new();
    let emulator = Emulator::start(&http, &args.scenario, args.seed, dir).await?;
    let (mut console, first_snapshot) =
        Console::start(&http, &emulator.base, dir, args.heap_profile).await?;
    let services = services(&http, &console.base).await?;
    emulator.set_faults(&http, &faults()).await?;
    let at_start = emulator.status(&http).await?;

    let (stop, stopped) = tokio::sync::watch::channel(false);
    let shared = Arc::new(Shared {
        http: http.clone(),
        base: console.base.clone(),
        stop: stopped,
        down: AtomicBool::new(false),
        pid: AtomicU32::new(console.pid),
        services,
        started: Instant::now(),
    });
    let tallies = Tallies::new();
    let mut tasks = spawn_load(&shared, args, &tallies);
    let polling = poll_writes(
        emulator.base.clone(),
        http.clone(),
        &tallies,
        shared.stop.clone(),
    );
    tokio::time::sleep(length / 2).await;
    let restart = match args.kill {
        true => Some(kill_mid_write(&mut console, &shared, &tallies, &http).await?),
        false => None,
    };
    tokio::time::sleep(length.saturating_sub(shared.started.elapsed())).await;
    let _ = stop.send(true);
    let ran_for = shared.started.elapsed();
    // Reads still in flight are left to finish on their own; the tasks end at once.
    while tokio::time::timeout(Duration::from_secs(60), tasks.join_next())
        .await
        .ok()
        .flatten()
        .is_some()
    {}
    polling.await??;

    let at_end = emulator.status(&http).await?;
    // The faults stop; the audit log settles by asking ECS.
    emulator
        .set_faults(&http, &emulator::Faults::default())
        .await?;
    let (records, settling) = settled_log(&http, &console.base).await?;
    collect_writes(&emulator, &http, &tallies.received).await?;
    let received: Vec<emulator::WriteRecord> = taken(&*tallies.received);
    // Kept beside the logs and the audit database, to trace what the ledger finds.
    std::fs::write(dir.join("writes.json"), serde_json::to_vec(&received)?)?;
    let mut found = report::Found {
        scenario: args.scenario.clone(),
        streams_asked: args.streams,
        rate: args.rate,
        ran_for,
        first_snapshot,
        restart,
        ledger: compare(&records, &received),
        settling,
        alive: console.running(),
        panics: console.panics(),
        reads: taken(&*tallies.reads),
        streams: tallies.streams,
        writes: taken(&*tallies.writes),
        samples: taken(&*tallies.samples),
        aws: report::AwsCalls::between(&at_start, &at_end),
    };
    report::print(&mut found);
    for profile in console.stop_profiled().await? {
        println!("heap profile: {} (heaptrack_print)", profile.display());
    }
    report::verdict(&found)
}
