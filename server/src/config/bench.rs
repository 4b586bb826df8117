//! The options of `gpushare bench`: which part of the console each benchmark measures, and the
//! sizes and rates it runs at.

use super::*;

/// What `gpushare bench` measures.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The emulator: scenario build time and memory, a full walk of the fleet through the SDK
    /// at 0 and 40 ms of added latency, and DescribeContainerInstances throughput.
    Emulator(BenchEmulatorArgs),
    /// The fleet snapshot on an emulated fleet: wall time and calls at 0 and 40 ms of added
    /// latency against the fewest calls and the chain of dependent calls, a sequential boto3
    /// walk; the incremental refresh within ECS's API budget (polling, and following ECS's
    /// events through SQS); and a served console's memory, page render time and size, API
    /// throughput and time to hydrate.
    Fleet(BenchFleetArgs),
    /// The fit check of one task against the fleet snapshot, for MPS and whole-GPU requests.
    Fit(BenchEmulatorArgs),
    /// The capacity pre-check of a 60-task rollout (one that completes, one that stalls at the
    /// overlap, and that one on a Managed Instances provider, which launches what it needs)
    /// against the fleet snapshot.
    Precheck(BenchEmulatorArgs),
    /// Audit log writes per second on SQLite (or the database of DATABASE_URL).
    Audit(BenchAuditArgs),
    /// The task definition checks on the worst bodies the body limit lets through: time and
    /// memory of a validation request.
    Validate(BenchValidateArgs),
    /// What sign-in costs a request: the same console under each sign-in mode (none, proxy,
    /// alb, oidc), the time to work out who is asking and the fleet page's requests per second.
    Auth(BenchAuthArgs),
    /// The cost history: the recorder's cost per minute, its storage for a month of the
    /// scenario, a 30-day report's time, and the demo's start-up with its past replayed.
    Cost(BenchCostArgs),
    /// Team budgets with approval: the budget check's cost per deploy on the scenario, and the
    /// time from an approval to UpdateService answered and recorded.
    Approvals(BenchApprovalsArgs),
    /// What a flood of unauthenticated `/readyz` probes costs: the ECS and CloudWatch calls
    /// they become, and their latency.
    Readiness(BenchReadinessArgs),
    /// Generated input for every parser of outside input (query parameters, JSON bodies, task
    /// definitions, the policy and prices files, load balancer tokens, the OIDC login cookie,
    /// the emulator's wire protocols), for minutes:
    /// panics, 500s, refusals without a message or slower than 100 ms.
    Fuzz(BenchFuzzArgs),
    /// The console under faults on every AWS call, live-update streams, a steady rate of reads
    /// and writers of several teams at once, killed (SIGKILL) once mid-write and started again;
    /// then its audit log held against the emulator's record of the writes it received: lost,
    /// sent twice, missing or mislabelled records, panics, latency and memory.
    Soak(BenchSoakArgs),
    /// The console's own resident memory on an emulated fleet (the emulator in a process of its
    /// own): at the first snapshot, after rounds of page, fleet-JSON and cost reads, a while
    /// later, and at its peak; each split into heap and the binary's pages.
    Memory(BenchMemoryArgs),
}

/// Options of `gpushare bench memory`.
#[derive(Debug, Clone, Args)]
pub struct BenchMemoryArgs {
    /// The emulated fleet.
    #[arg(long, default_value = "large", value_parser = ["demo", "large"])]
    pub scenario: String,
    /// Rounds of reads: the fleet page, `/api/v1/fleet`, `/cost` and `/task-definitions` each.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Seconds to wait after the reads before measuring again.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub settle: u64,
}

/// Options of `gpushare bench soak`.
#[derive(Debug, Clone, Args)]
pub struct BenchSoakArgs {
    /// Minutes of load (the settling and the comparison come after).
    #[arg(long, default_value_t = 30.0, value_parser = soak_minutes)]
    pub minutes: f64,
    /// The emulated fleet.
    #[arg(long, default_value = "large", value_parser = ["demo", "large"])]
    pub scenario: String,
    /// Live-update streams held open, each by another person.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(0..=900))]
    pub streams: u32,
    /// Reads a second (pages and the JSON API).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub rate: u32,
    /// Kill the console halfway, mid-write, and start it again (`--kill false`: not).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub kill: bool,
    /// Seed of the scenario and of the readers' and writers' choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep the run's logs and data in the temporary directory even when it passes.
    #[arg(long)]
    pub keep: bool,
    /// Run the console under heaptrack: a heap profile of each of its lives is written beside
    /// its logs (`console-1.zst`, read with `heaptrack_print`), and the run's directory is kept.
    /// Needs heaptrack and a build that allocates with the system's allocator (`cargo build
    /// --release -p gpushare --features system-allocator`); the memory figures are then those
    /// of the profiled console, which answers more slowly.
    #[arg(long)]
    pub heap_profile: bool,
}

fn soak_minutes(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(m) if m > 0.0 && m <= 24.0 * 60.0 => Ok(m),
        _ => Err(format!(
            "{value:?} is not a length; give minutes above 0 and at most 1440, e.g. 30 or 0.5"
        )),
    }
}

/// Options of `gpushare bench fuzz`.
#[derive(Debug, Clone, Args)]
pub struct BenchFuzzArgs {
    /// Minutes in all, shared among the targets.
    #[arg(long, default_value_t = 10.0)]
    pub minutes: f64,
    /// The generator's seed: the same seed generates the same inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Options of `gpushare bench readiness`.
#[derive(Debug, Clone, Args)]
pub struct BenchReadinessArgs {
    /// Probes a second.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    pub rate: u32,
    /// Seconds of the flood.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=600))]
    pub seconds: u32,
}

/// Options of `gpushare bench approvals`.
#[derive(Debug, Clone, Args)]
pub struct BenchApprovalsArgs {
    /// The scenario whose budget checks are timed.
    #[arg(long, default_value = "large", value_parser = ["demo", "large"])]
    pub scenario: String,
    /// Budget checks timed, and approvals sent (on the demo).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rounds: u32,
    /// Approvals sent and timed (each a request, its approval and a rollback).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub approvals: u32,
}

/// Options of `gpushare bench cost`.
#[derive(Debug, Clone, Args)]
pub struct BenchCostArgs {
    /// The scenario whose allocations are recorded.
    #[arg(long, default_value = "large", value_parser = ["demo", "large", "empty"])]
    pub scenario: String,
    /// Days of history to write.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=400))]
    pub days: u32,
    /// Reports timed.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Days of the demo's past replayed for the start-up figure.
    #[arg(long, default_value_t = 14, value_parser = clap::value_parser!(u32).range(1..=60))]
    pub replay_days: u32,
    /// Measure this database instead of SQLite in a temporary directory.
    #[arg(long, env = "DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,
}

/// Options of `gpushare bench auth`.
#[derive(Debug, Clone, Args)]
pub struct BenchAuthArgs {
    /// The scenario to serve.
    #[arg(long, default_value = "demo", value_parser = ["demo", "large", "empty"])]
    pub scenario: String,
    /// Seconds of each mode's `wrk` run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub seconds: u64,
    /// How many times each mode works out who is asking, in process.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub rounds: u32,
}

/// Options of `gpushare bench validate`.
#[derive(Debug, Clone, Args)]
pub struct BenchValidateArgs {
    /// The body limit, and the size of the worst bodies.
    #[arg(long, default_value_t = 1024 * 1024, value_parser = clap::value_parser!(u64).range(4096..=64 * 1024 * 1024))]
    pub bytes: u64,
}

/// Options of `gpushare bench audit`.
#[derive(Debug, Clone, Args)]
pub struct BenchAuditArgs {
    /// Records to write.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub records: u32,
    /// Measure this database instead of SQLite in a temporary directory.
    #[arg(long, env = "DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,
}

/// Options of `gpushare bench emulator`.
#[derive(Debug, Clone, Args)]
pub struct BenchEmulatorArgs {
    /// The scenario to measure.
    #[arg(long, default_value = "large", value_parser = ["demo", "large", "empty"])]
    pub scenario: String,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub concurrency: u64,
    /// Seconds of the throughput run.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub seconds: u64,
}

/// Options of `gpushare bench fleet`.
#[derive(Debug, Clone, Args)]
pub struct BenchFleetArgs {
    #[command(flatten)]
    pub emulator: BenchEmulatorArgs,
    /// Measure one part only: `reads` (full snapshots and the boto3 walk), `refresh` (the
    /// incremental refresh within ECS's API budget) or `server` (the served console).
    #[arg(long, value_parser = ["reads", "refresh", "server"])]
    pub only: Option<String>,
}
