//! The `gpushare` binary: parses the command line and runs the chosen command.

use clap::Parser;

use gpushare::config::{BenchCommand, Cli, Command};

/// The allocator: mimalloc gives freed memory back to the system. With glibc's, memory freed
/// after a burst of page renders stayed with the process — on `large` under load the console's
/// resident memory reached 950 MiB while its heap never held more than about 100 MiB.
/// `--features system-allocator` leaves the system's, for a heap profiler that intercepts malloc.
/// Either way the bytes held are counted, for `/metrics` (`gpushare_heap_live_bytes`).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: cap::Cap<mimalloc::MiMalloc> = cap::Cap::new(mimalloc::MiMalloc, usize::MAX);
#[cfg(feature = "system-allocator")]
#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    gpushare::heap::install(&ALLOCATOR);
    let cli = Cli::parse();
    gpushare::telemetry::init(cli.log_format, &cli.log_filter)?;
    match cli.command {
        Some(Command::Serve(args)) => gpushare::serve(*args).await,
        Some(Command::Emulate(args)) => gpushare::emulate(args).await,
        Some(Command::Bench(BenchCommand::Emulator(args))) => gpushare::bench::emulator(args).await,
        Some(Command::Bench(BenchCommand::Fleet(args))) => gpushare::bench::fleet(args).await,
        Some(Command::Bench(BenchCommand::Fit(args))) => gpushare::bench::fit(args).await,
        Some(Command::Bench(BenchCommand::Precheck(args))) => gpushare::bench::precheck(args).await,
        Some(Command::Bench(BenchCommand::Audit(args))) => gpushare::bench::audit(args).await,
        Some(Command::Bench(BenchCommand::Validate(args))) => gpushare::bench::validate(args).await,
        Some(Command::Bench(BenchCommand::Auth(args))) => gpushare::bench::auth(args).await,
        Some(Command::Bench(BenchCommand::Cost(args))) => gpushare::bench::cost(args).await,
        Some(Command::Bench(BenchCommand::Readiness(args))) => {
            gpushare::bench::readiness(args).await
        }
        Some(Command::Bench(BenchCommand::Approvals(args))) => {
            gpushare::bench::approvals(args).await
        }
        Some(Command::Bench(BenchCommand::Fuzz(args))) => gpushare::bench::fuzz(args).await,
        Some(Command::Bench(BenchCommand::Soak(args))) => gpushare::bench::soak(args).await,
        Some(Command::Bench(BenchCommand::Memory(args))) => gpushare::bench::memory(args).await,
        None => gpushare::serve(cli.serve).await,
    }
}
