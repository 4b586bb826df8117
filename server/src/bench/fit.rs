//! `gpushare bench fit`: the fit check of one task on an emulated fleet's snapshot.

use std::time::Instant;

use super::{print_table, scenario_snapshot, Row};
use crate::config::BenchEmulatorArgs;

/// `gpushare bench fit`: the fit check of one task against the snapshot of an emulated fleet.
pub async fn fit(args: BenchEmulatorArgs) -> anyhow::Result<()> {
    let snapshot = scenario_snapshot(&args.scenario).await?;
    let gpus = snapshot.gpu_count();
    let mut rows = Vec::new();
    // One task's CPU and memory besides its GPUs, as the scenarios' services ask.
    let needs = placement::resources::Needs {
        cpu: 1_024,
        memory_mib: 4_096,
        ..Default::default()
    };
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
            report = app::model::fit::fit_check(&snapshot, None, &request, &needs);
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
