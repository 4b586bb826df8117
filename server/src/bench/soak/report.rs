//! The soak's figures as tables, and whether it passed.

use std::{sync::atomic::Ordering, sync::Arc, time::Duration};

use super::{ledger::Ledger, load, writers};
use crate::bench::{mib, print_table, Row};

/// The console's kill and restart.
pub struct Restart {
    /// Seconds into the run.
    pub at: f64,
    /// Until it served again (its first snapshot).
    pub took: Duration,
    /// Whether a write was in flight.
    pub mid_write: bool,
}

/// What the run found.
pub struct Found {
    pub scenario: String,
    pub streams_asked: u32,
    pub rate: u32,
    pub ran_for: Duration,
    pub first_snapshot: Duration,
    pub restart: Option<Restart>,
    pub ledger: Ledger,
    pub settling: Duration,
    pub alive: bool,
    pub panics: Vec<String>,
    pub reads: load::Reads,
    pub streams: Arc<load::Streams>,
    pub writes: writers::Writes,
    /// The console's memory, every second.
    pub samples: Vec<load::Sample>,
    pub aws: AwsCalls,
}

/// The AWS calls the emulator received while the faults were on, and the faults it injected.
#[derive(Default)]
pub struct AwsCalls {
    /// `service:Operation` → attempts.
    pub received: std::collections::BTreeMap<String, u64>,
    /// Fault kind → attempts that met it.
    pub injected: std::collections::BTreeMap<String, u64>,
}

impl AwsCalls {
    /// What changed from `start` to `end`.
    pub fn between(start: &emulator::Status, end: &emulator::Status) -> AwsCalls {
        let delta = |a: &std::collections::BTreeMap<String, u64>,
                     b: &std::collections::BTreeMap<String, u64>| {
            b.iter()
                .map(|(k, n)| (k.clone(), n - a.get(k).copied().unwrap_or(0).min(*n)))
                .filter(|(_, n)| *n > 0)
                .collect()
        };
        AwsCalls {
            received: delta(&start.received, &end.received),
            injected: delta(&start.injected, &end.injected),
        }
    }

    /// The table of calls by operation, the most first.
    fn rows(&self) -> Vec<Row> {
        let mut calls: Vec<(&String, &u64)> = self.received.iter().collect();
        calls.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        calls
            .into_iter()
            .map(|(call, n)| row(call, n.to_string()))
            .collect()
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

fn row(what: &str, value: String) -> Row {
    Row {
        what: what.to_string(),
        value,
    }
}

/// Reads, streams and writes.
fn traffic(found: &mut Found) -> Vec<Row> {
    let secs = found.ran_for.as_secs_f64();
    let reads = &mut found.reads;
    let answered: u64 = reads.statuses.values().sum();
    let server_errors: u64 = reads.statuses.range(500..).map(|(_, n)| n).sum();
    let streams = &found.streams;
    let count = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed);
    vec![
        row("run", format!(
            "{:.1} min on `{}`, {} live-update streams, {} reads/s asked, 6 teams (a deployer and a lead each)",
            secs / 60.0, found.scenario, found.streams_asked, found.rate
        )),
        row("faults on every AWS call", "20 % throttled, 5 % server errors, 0.5 % dropped before and 0.5 % after the call ran, +20–60 ms".into()),
        row("AWS calls received while the faults were on; faults injected", format!(
            "{}; {}",
            found.aws.received.values().sum::<u64>(),
            found.aws.injected.iter().map(|(kind, n)| format!("{kind} {n}")).collect::<Vec<_>>().join(", ")
        )),
        row("console's first snapshot", format!("{:.1} s", found.first_snapshot.as_secs_f64())),
        row("reads answered (rate achieved)", format!(
            "{answered} ({:.0}/s); {} shed as the console fell behind, {} during the restart",
            answered as f64 / secs, reads.shed, reads.during_restart
        )),
        row("of them refused at once as busy (503, Retry-After)", format!(
            "{} ({:.0}/s); answered in full {:.0}/s",
            reads.busy, reads.busy as f64 / secs, (answered - reads.busy.min(answered)) as f64 / secs
        )),
        row("reads by status", format!("{:?}", reads.statuses)),
        row(
            "reads with no answer; 5xx (console up); of them 500 or without a reason",
            format!("{}; {server_errors}; {}", reads.failed, reads.internal),
        ),
        row("pages p50 / p99 under faults", p50_p99(&mut reads.pages)),
        row("JSON API p50 / p99 under faults", p50_p99(&mut reads.api)),
        row("live-update streams: opened, events, dropped (by the restart)", format!(
            "{}, {}, {} ({}); open at the end {}; refused {:?}",
            count(&streams.opened), count(&streams.events), count(&streams.dropped),
            count(&streams.dropped_by_restart), count(&streams.open_at_end),
            streams.refused.lock().unwrap_or_else(|p| p.into_inner())
        )),
        row("writes asked (hung up on purpose, no answer)", format!(
            "{} ({}, {})", found.writes.total(), found.writes.hung_up, found.writes.no_answer
        )),
        row("writes by action and status", format!("{:?}", found.writes.answers)),
    ]
}

/// What one memory figure is read from a sample: the resident set, or the live heap.
type Figure = fn(&load::Sample) -> Option<u64>;

const RESIDENT: Figure = |sample| Some(sample.resident);
const HEAP: Figure = |sample| sample.heap;

/// A memory figure in life `life`: at its start, its peak and its end.
fn memory_span(samples: &[load::Sample], life: u32, figure: Figure) -> String {
    let of: Vec<u64> = samples
        .iter()
        .filter(|s| s.life == life)
        .filter_map(figure)
        .collect();
    match (of.first(), of.iter().max(), of.last()) {
        (Some(a), Some(b), Some(c)) => format!("{} / {} / {}", mib(*a), mib(*b), mib(*c)),
        _ => "not sampled".into(),
    }
}

/// A memory figure in life `life` over time: the median of the samples in each sixth of it, so
/// that growth shows apart from the step up when the load starts.
fn memory_over_time(samples: &[load::Sample], life: u32, figure: Figure) -> String {
    let of: Vec<(f64, u64)> = samples
        .iter()
        .filter(|s| s.life == life)
        .filter_map(|s| Some((s.at, figure(s)?)))
        .collect();
    let (Some(first), Some(last)) = (of.first(), of.last()) else {
        return "not sampled".into();
    };
    let span = (last.0 - first.0).max(f64::EPSILON);
    let mut sixths: Vec<String> = Vec::new();
    for n in 0..6 {
        let (from, to) = (n as f64 / 6.0, (n + 1) as f64 / 6.0);
        let mut window: Vec<u64> = of
            .iter()
            .filter(|(at, _)| {
                let part = (at - first.0) / span;
                part >= from && (part < to || (n == 5 && part <= 1.0))
            })
            .map(|(_, bytes)| *bytes)
            .collect();
        window.sort_unstable();
        if let Some(median) = window.get(window.len() / 2) {
            sixths.push(mib(*median));
        }
    }
    sixths.join(", ")
}

/// The console's memory in each life: resident, and the heap it holds.
fn memory_rows(samples: &[load::Sample]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (life, which) in [(1, "first life"), (2, "after the restart")] {
        for (figure, what) in [(RESIDENT, "resident"), (HEAP, "live heap")] {
            rows.push(row(
                &format!("console memory, {which}, {what}: start / peak / end"),
                memory_span(samples, life, figure),
            ));
            rows.push(row(
                &format!("console memory, {which}, {what}: median of each sixth"),
                memory_over_time(samples, life, figure),
            ));
        }
    }
    rows
}

/// The kill, the ledger, panics and memory.
fn outcome(found: &Found) -> Vec<Row> {
    let ledger = &found.ledger;
    let mut rows = vec![
        row(
            "killed (SIGKILL) at, mid-write, back after",
            match &found.restart {
                Some(r) => format!(
                    "{:.0} s, {}, {:.1} s",
                    r.at,
                    if r.mid_write {
                        "yes"
                    } else {
                        "no write was in flight"
                    },
                    r.took.as_secs_f64()
                ),
                None => "not killed (--kill false)".into(),
            },
        ),
        row(
            "ECS writes received: ran, refused by ECS, answer lost",
            format!(
                "{}, {}, {}",
                ledger.writes_run, ledger.writes_refused, ledger.answers_lost
            ),
        ),
        row(
            "audit records that send to ECS; settled after",
            format!("{}; {:.1} s", ledger.records, found.settling.as_secs_f64()),
        ),
        row(
            "lost / sent twice / records missing / wrong outcome / unsettled",
            format!(
                "{} / {} / {} / {} / {}",
                ledger.lost,
                ledger.sent_twice,
                ledger.missing_records,
                ledger.wrong_outcome,
                ledger.unsettled
            ),
        ),
        row("panics", found.panics.len().to_string()),
    ];
    rows.extend(memory_rows(&found.samples));
    if !found.alive {
        rows.push(row("the console", "EXITED before the end".into()));
    }
    rows
}

/// Prints the tables, then what went wrong, with examples.
pub fn print(found: &mut Found) {
    let mut rows = traffic(found);
    rows.extend(outcome(found));
    print_table(
        "gpushare bench soak — faults, load, writers and a kill",
        &rows,
    );
    let mut kinds: Vec<Row> = found
        .reads
        .times
        .iter_mut()
        .map(|(kind, times)| row(kind, p50_p99(times)))
        .collect();
    kinds.sort_by(|a, b| a.what.cmp(&b.what));
    print_table("reads by kind: p50 / p99", &kinds);
    print_table(
        "AWS calls the emulator received while the faults were on, by operation",
        &found.aws.rows(),
    );
    let mut reasons: Vec<(&String, &u64)> = found.reads.reasons.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let reasons: Vec<Row> = reasons
        .into_iter()
        .map(|(why, n)| row(why, n.to_string()))
        .collect();
    if !reasons.is_empty() {
        print_table("reads answered 5xx, by the reason given", &reasons);
    }
    for line in found
        .ledger
        .examples
        .iter()
        .chain(&found.panics)
        .chain(&found.reads.errors)
        .chain(&found.writes.errors)
    {
        println!("  - {line}");
    }
}

/// Fails on any write lost, sent twice or audited wrongly, any panic or 500, and the console
/// exiting.
pub fn verdict(found: &Found) -> anyhow::Result<()> {
    let ledger = &found.ledger;
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
        found.panics.is_empty(),
        "the console panicked {} times",
        found.panics.len()
    );
    anyhow::ensure!(found.alive, "the console exited before the end of the run");
    anyhow::ensure!(
        found.reads.internal == 0,
        "{} reads were answered 500, or 5xx without saying why, while the console was up",
        found.reads.internal
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{load, memory_over_time, memory_span, HEAP, RESIDENT};

    #[test]
    fn memory_over_time_gives_each_sixths_median_of_one_life() {
        const MIB: u64 = 1024 * 1024;
        // Life 1: a minute whose resident set climbs 1 MiB every 10 s while the heap stays at
        // 50 MiB, unread for the first 10 s; life 2 has one sample.
        let mut samples: Vec<load::Sample> = (0u32..60)
            .map(|s| load::Sample {
                at: f64::from(s),
                life: 1,
                resident: (100 + u64::from(s / 10)) * MIB,
                heap: (s >= 10).then_some(50 * MIB),
            })
            .collect();
        samples.push(load::Sample {
            at: 70.0,
            life: 2,
            resident: 80 * MIB,
            heap: None,
        });
        assert_eq!(
            memory_over_time(&samples, 1, RESIDENT),
            "100.0 MiB, 101.0 MiB, 102.0 MiB, 103.0 MiB, 104.0 MiB, 105.0 MiB"
        );
        assert_eq!(
            memory_over_time(&samples, 1, HEAP),
            "50.0 MiB, 50.0 MiB, 50.0 MiB, 50.0 MiB, 50.0 MiB, 50.0 MiB"
        );
        assert_eq!(
            memory_span(&samples, 1, RESIDENT),
            "100.0 MiB / 105.0 MiB / 105.0 MiB"
        );
        assert_eq!(memory_over_time(&samples, 2, RESIDENT), "80.0 MiB");
        assert_eq!(memory_over_time(&samples, 2, HEAP), "not sampled");
        assert_eq!(memory_over_time(&samples, 3, RESIDENT), "not sampled");
    }
}
