//! `gpushare bench`: measured figures, printed as a table. Benchmarks, not tests; none of this
//! is on the path of a request.

mod approvals;
mod audit;
mod auth;
mod cost;
mod emulator;
mod fit;
mod fleet;
mod fuzz;
mod memory;
mod precheck;
mod readiness;
mod refresh;
mod soak;
mod validate;

pub use approvals::approvals;
pub use audit::audit;
pub use auth::auth;
pub use cost::cost;
pub use emulator::emulator;
pub use fit::fit;
pub use fleet::fleet;
pub use fuzz::fuzz;
pub use memory::memory;
pub use precheck::precheck;
pub use readiness::readiness;
pub use soak::soak;
pub use validate::validate;

use anyhow::Context;

/// One row of a results table.
pub(crate) struct Row {
    pub(crate) what: String,
    pub(crate) value: String,
}

pub(crate) fn print_table(title: &str, rows: &[Row]) {
    let width = rows.iter().map(|r| r.what.len()).max().unwrap_or(0).max(6);
    println!("\n{title}\n");
    println!("| {:width$} | value |", "figure");
    println!("|{}|-------|", "-".repeat(width + 2));
    for row in rows {
        println!("| {:width$} | {} |", row.what, row.value);
    }
}

pub use crate::heap::resident_bytes;

pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A fleet snapshot of the scenario, read through the SDK from an emulator serving it.
pub(crate) async fn scenario_snapshot(name: &str) -> anyhow::Result<app::model::FleetSnapshot> {
    let scenario = ::emulator::Scenario::parse(name).context("unknown scenario")?;
    let fleet = tokio::task::spawn_blocking(move || scenario.build(1, chrono::Utc::now())).await?;
    let faults = ::emulator::Faults {
        rate_limits: Some(false),
        ..::emulator::Faults::default()
    };
    let em = ::emulator::Emulator::new(fleet, scenario.name(), 1.0, faults);
    let (_, clients) = crate::serve_emulator(&em).await?;
    crate::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", 16)
        .read()
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// The use cases' context over an emulated `scenario` served on a loopback port, its fleet
/// snapshot read once, its audit database in a fresh temporary directory (returned, for the
/// caller to remove).
pub(crate) async fn scenario_context(
    name: &str,
    what: &str,
) -> anyhow::Result<(app::service::ServiceContext, std::path::PathBuf)> {
    let scenario = ::emulator::Scenario::parse(name).context("unknown scenario")?;
    let fleet = tokio::task::spawn_blocking(move || scenario.build(1, chrono::Utc::now())).await?;
    let faults = ::emulator::Faults {
        rate_limits: Some(false),
        ..::emulator::Faults::default()
    };
    let emulator = ::emulator::Emulator::new(fleet, scenario.name(), 1.0, faults);
    let (_, clients) = crate::serve_emulator(&emulator).await?;
    let snapshot = crate::fleet::reader::FleetReader::new(clients.ecs.clone(), "team", 16)
        .with_ec2(crate::fleet::ec2::Ec2Reader::new(clients.ec2.clone()))
        .read()
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let store = std::sync::Arc::new(crate::fleet::store::SnapshotStore::new(
        std::time::Duration::from_secs(15),
    ));
    store.store(snapshot, chrono::Utc::now());
    let dir = std::env::temp_dir().join(format!(
        "gpushare-bench-{what}-{}-{name}",
        std::process::id()
    ));
    let audit = std::sync::Arc::new(crate::audit::SqlAuditLog::open(None, &dir).await?);
    let source = app::model::FleetSource::Emulator {
        endpoint: "embedded".to_string(),
        scenario: scenario.name().to_string(),
    };
    let context = crate::ports::service_context(
        &clients,
        crate::ports::Settings::defaults(source, &clients.region),
        crate::ports::Stores {
            fleet: store,
            history: std::sync::Arc::new(crate::cost_history::SqlCostHistory::new(
                &audit,
                crate::cost_history::RETENTION_DAYS,
            )),
            audit,
            markets: std::sync::Arc::new(app::service::ports::NoMarkets),
            reads: Default::default(),
        },
    );
    Ok((context, dir))
}
