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

mod http;
mod ledger;
mod load;
mod procs;
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

use super::{mib, print_table, Row};
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

/// The `p`th percentile of sorted `times`.
fn percentile(times: &[f64], p: f64) -> f64 {
    if times.is_empty() {
        return 0.0;
    }
    times[((times.len() as f64 - 1.0) * p).round() as usize]
}

fn p50_p99(times: &mut [f64]) -> String {
    times.sort_by(f64::total_cmp);
    format!(
        "{:.1} ms / {:.1} ms ({} answers)",
        percentile(times, 0.5),
        percentile(times, 0.99),
        times.len()
    )
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
    let dir = std::env::temp_dir().join(format!("gpushare-soak-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("data"))?;
    std::fs::write(dir.join("policy.toml"), policy(&args.scenario))?;
    let result = run(&args, &dir).await;
    match &result {
        Ok(()) if !args.keep => {
            let _ = std::fs::remove_dir_all(&dir);
        }
        _ => eprintln!("the soak's logs and data are in {}", dir.display()),
    }
    result
}

async fn run(args: &BenchSoakArgs, dir: &std::path::Path) -> anyhow::Result<()> {
    let length = Duration::from_secs_f64(args.minutes * 60.0);
    let http = Http::new();
    let emulator = Emulator::start(&http, &args.scenario, args.seed, dir).await?;
    let (mut console, first_snapshot) = Console::start(&http, &emulator.base, dir).await?;
    let services = services(&http, &console.base).await?;
    emulator.set_faults(&http, &faults()).await?;

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
    let reads = Arc::new(Mutex::new(load::Reads::default()));
    let streams = Arc::new(load::Streams::default());
    let writes = Arc::new(Mutex::new(writers::Writes::default()));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let lives = Arc::new(AtomicU32::new(1));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let received = Arc::new(Mutex::new(Vec::new()));

    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(load::readers(
        shared.clone(),
        args.rate,
        args.seed,
        reads.clone(),
    ));
    for n in 0..args.streams {
        tasks.spawn(load::stream(shared.clone(), n, streams.clone()));
    }
    tasks.spawn(load::memory(shared.clone(), lives.clone(), samples.clone()));
    for (t, team) in TEAMS.iter().enumerate() {
        let writer = || writers::Writer {
            shared: shared.clone(),
            writes: writes.clone(),
            in_flight: in_flight.clone(),
        };
        tasks.spawn(writer().deployer(team.to_string(), args.seed + t as u64 * 2 + 1));
        tasks.spawn(writer().lead(team.to_string(), args.seed + t as u64 * 2 + 2));
    }
    // The emulator's record of writes, read as it goes (it keeps the latest few thousand).
    let polling = {
        let (http, received, mut stopped) = (http.clone(), received.clone(), shared.stop.clone());
        let base = emulator.base.clone();
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
    };

    // Halfway: killed while a write is in flight, and started again.
    let started = shared.started;
    tokio::time::sleep(length / 2).await;
    let mut restart = None;
    if args.kill {
        let waiting = Instant::now();
        while in_flight.load(Ordering::SeqCst) == 0 && waiting.elapsed() < Duration::from_secs(30) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let mid_write = in_flight.load(Ordering::SeqCst) > 0;
        shared.down.store(true, Ordering::SeqCst);
        console.kill().await?;
        let took = console.restart(&http).await?;
        shared.pid.store(console.pid, Ordering::SeqCst);
        lives.store(console.lives, Ordering::SeqCst);
        shared.down.store(false, Ordering::SeqCst);
        restart = Some((started.elapsed().as_secs_f64(), took, mid_write));
    }
    let rest = length.saturating_sub(started.elapsed());
    tokio::time::sleep(rest).await;
    let _ = stop.send(true);
    let ran_for = started.elapsed();
    // Reads still in flight are left to finish on their own; the tasks end at once.
    while tokio::time::timeout(Duration::from_secs(60), tasks.join_next())
        .await
        .ok()
        .flatten()
        .is_some()
    {}
    polling.await??;

    // The faults stop; the audit log settles by asking ECS.
    emulator
        .set_faults(&http, &emulator::Faults::default())
        .await?;
    let (records, settling) = settled_log(&http, &console.base).await?;
    collect_writes(&emulator, &http, &received).await?;
    let received = std::mem::take(&mut *received.lock().unwrap_or_else(|p| p.into_inner()));
    let ledger = compare(&records, &received);
    let alive = console.running();
    let panics = console.panics();

    let mut reads = std::mem::take(&mut *reads.lock().unwrap_or_else(|p| p.into_inner()));
    let writes = std::mem::take(&mut *writes.lock().unwrap_or_else(|p| p.into_inner()));
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|p| p.into_inner()));
    let server_errors: u64 = reads.statuses.range(500..).map(|(_, n)| n).sum();
    let answered: u64 = reads.statuses.values().sum();
    let secs = ran_for.as_secs_f64();
    let memory = |life: u32| {
        let of: Vec<u64> = samples
            .iter()
            .filter(|s| s.1 == life)
            .map(|s| s.2)
            .collect();
        match (of.first(), of.iter().max(), of.last()) {
            (Some(a), Some(b), Some(c)) => format!("{} / {} / {}", mib(*a), mib(*b), mib(*c)),
            _ => "not sampled".into(),
        }
    };
    let mut rows = vec![
        Row {
            what: "run".into(),
            value: format!(
                "{:.1} min on `{}`, {} live-update streams, {} reads/s asked, 6 teams (a deployer and a lead each)",
                secs / 60.0,
                args.scenario,
                args.streams,
                args.rate
            ),
        },
        Row {
            what: "faults on every AWS call".into(),
            value: "20 % throttled, 5 % server errors, 0.5 % dropped before and 0.5 % after the call ran, +20–60 ms".into(),
        },
        Row {
            what: "console's first snapshot".into(),
            value: format!("{:.1} s", first_snapshot.as_secs_f64()),
        },
        Row {
            what: "reads answered (rate achieved)".into(),
            value: format!(
                "{answered} ({:.0}/s); {} shed as the console fell behind, {} during the restart",
                answered as f64 / secs,
                reads.shed,
                reads.during_restart
            ),
        },
        Row {
            what: "reads by status".into(),
            value: format!("{:?}", reads.statuses),
        },
        Row {
            what: "reads with no answer; 5xx (console up); of them 500 or without a reason".into(),
            value: format!("{}; {server_errors}; {}", reads.failed, reads.internal),
        },
        Row {
            what: "pages p50 / p99 under faults".into(),
            value: p50_p99(&mut reads.pages),
        },
        Row {
            what: "JSON API p50 / p99 under faults".into(),
            value: p50_p99(&mut reads.api),
        },
        Row {
            what: "live-update streams: opened, events, dropped (by the restart)".into(),
            value: format!(
                "{}, {}, {} ({}); open at the end {}; refused {:?}",
                streams.opened.load(Ordering::Relaxed),
                streams.events.load(Ordering::Relaxed),
                streams.dropped.load(Ordering::Relaxed),
                streams.dropped_by_restart.load(Ordering::Relaxed),
                streams.open_at_end.load(Ordering::Relaxed),
                streams.refused.lock().unwrap_or_else(|p| p.into_inner())
            ),
        },
        Row {
            what: "writes asked (hung up on purpose, no answer)".into(),
            value: format!("{} ({}, {})", writes.total(), writes.hung_up, writes.no_answer),
        },
        Row {
            what: "writes by action and status".into(),
            value: format!("{:?}", writes.answers),
        },
        Row {
            what: "killed (SIGKILL) at, mid-write, back after".into(),
            value: match restart {
                Some((at, took, mid)) => format!(
                    "{:.0} s, {}, {:.1} s",
                    at,
                    if mid { "yes" } else { "no write was in flight" },
                    took.as_secs_f64()
                ),
                None => "not killed (--kill off)".into(),
            },
        },
        Row {
            what: "ECS writes received: ran, refused by ECS, answer lost".into(),
            value: format!(
                "{}, {}, {}",
                ledger.writes_run, ledger.writes_refused, ledger.answers_lost
            ),
        },
        Row {
            what: "audit records that send to ECS; settled after".into(),
            value: format!("{}; {:.1} s", ledger.records, settling.as_secs_f64()),
        },
        Row {
            what: "lost / sent twice / records missing / wrong outcome / unsettled".into(),
            value: format!(
                "{} / {} / {} / {} / {}",
                ledger.lost,
                ledger.sent_twice,
                ledger.missing_records,
                ledger.wrong_outcome,
                ledger.unsettled
            ),
        },
        Row {
            what: "panics".into(),
            value: panics.len().to_string(),
        },
        Row {
            what: "console memory, first life: start / peak / end".into(),
            value: memory(1),
        },
        Row {
            what: "console memory, after the restart: start / peak / end".into(),
            value: memory(2),
        },
    ];
    if !alive {
        rows.push(Row {
            what: "the console".into(),
            value: "EXITED before the end".into(),
        });
    }
    print_table(
        "gpushare bench soak — faults, load, writers and a kill",
        &rows,
    );
    let mut kinds: Vec<Row> = reads
        .times
        .iter_mut()
        .map(|(kind, times)| Row {
            what: (*kind).to_string(),
            value: p50_p99(times),
        })
        .collect();
    kinds.sort_by(|a, b| a.what.cmp(&b.what));
    print_table("reads by kind: p50 / p99", &kinds);
    for line in ledger
        .examples
        .iter()
        .chain(&panics)
        .chain(&reads.errors)
        .chain(&writes.errors)
    {
        println!("  - {line}");
    }
    anyhow::ensure!(
        ledger.clean(),
        "the audit log and ECS's record disagree: {} lost, {} sent twice, {} records missing, {} with the wrong outcome, {} unsettled",
        ledger.lost,
        ledger.sent_twice,
        ledger.missing_records,
        ledger.wrong_outcome,
        ledger.unsettled
    );
    anyhow::ensure!(
        panics.is_empty(),
        "the console panicked {} times",
        panics.len()
    );
    anyhow::ensure!(alive, "the console exited before the end of the run");
    anyhow::ensure!(
        reads.internal == 0,
        "{} reads were answered 500, or 5xx without saying why, while the console was up",
        reads.internal
    );
    Ok(())
}
