//! `gpushare bench fuzz`: generated input for every parser of outside input, for minutes, on a
//! console over its embedded demo fleet and on the emulator's own wire protocols. Prints, per
//! target, the cases run, how many were refused, how many went wrong (a panic, a 500, a refusal
//! without a message, a refusal slower than 100 ms) with the first of them, and the slowest
//! refusal.

use std::{sync::Arc, time::Duration};

use anyhow::Context;

use super::{print_table, Row};
use crate::{
    config::{BenchFuzzArgs, ServeArgs},
    fuzz::{Fuzzer, Target, REFUSAL_LIMIT},
};

/// `gpushare bench fuzz`.
pub async fn fuzz(args: BenchFuzzArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("gpushare-bench-fuzz-{}", std::process::id()));
    let serve = ServeArgs {
        site_root: dir.join("site"),
        ..ServeArgs::default()
    };
    std::fs::create_dir_all(dir.join("site/pkg"))?;
    let (source, clients, emulator) = crate::connect_fleet_with_emulator(&serve.fleet).await?;
    let emulator = emulator.context("the embedded emulator")?;
    let audit = Arc::new(crate::audit::SqlAuditLog::open(None, &dir).await?);
    let state = crate::startup::start(&serve, source, clients, audit)?;
    let mut fuzzer = Fuzzer::new(crate::router(state), emulator.router(), args.seed).await;
    let each = Duration::from_secs_f64(args.minutes * 60.0 / Target::ALL.len() as f64);
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let (mut cases, mut failed) = (0, 0);
    for target in Target::ALL {
        let tally = fuzzer.run_for(target, each).await;
        cases += tally.cases;
        failed += tally.failed;
        rows.push(Row {
            what: target.name().into(),
            value: format!(
                "{} cases, {} refused, {} wrong; slowest refusal {:.1} ms",
                tally.cases,
                tally.refused,
                tally.failed,
                tally.slowest_refusal.as_secs_f64() * 1000.0
            ),
        });
        failures.extend(
            tally
                .failures
                .iter()
                .map(|f| format!("{}: {f}", target.name())),
        );
    }
    rows.push(Row {
        what: "in all".into(),
        value: format!(
            "{cases} cases in {:.1} min, {failed} wrong (a panic, a 500, a refusal without a message or slower than {} ms)",
            args.minutes,
            REFUSAL_LIMIT.as_millis()
        ),
    });
    print_table(
        &format!("gpushare bench fuzz — generated input, seed {}", args.seed),
        &rows,
    );
    for failure in &failures {
        println!("- {failure}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    if failed > 0 {
        anyhow::bail!("{failed} generated inputs went wrong; the first are listed above");
    }
    Ok(())
}
