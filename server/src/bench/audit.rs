//! `gpushare bench audit`: audit log writes per second.

use std::time::{Duration, Instant};

use super::{print_table, Row};

/// `gpushare bench audit`: audit log writes per second — intents, then outcomes — on SQLite in
/// a temporary data directory (or the database of `DATABASE_URL`), one after another as the
/// server writes them.
pub async fn audit(args: crate::config::BenchAuditArgs) -> anyhow::Result<()> {
    use app::model::audit::{AuditAction, AuditIntent, AuditOutcome};
    let dir = std::env::temp_dir().join(format!("gpushare-bench-audit-{}", std::process::id()));
    let log = crate::audit::SqlAuditLog::open(args.database_url.as_deref(), &dir).await?;
    let intent = AuditIntent {
        from_revision: Some("embed-api:1".into()),
        to_revision: Some("embed-api:2".into()),
        diff: r#"[{"path":"containerDefinitions[embed-api].resourceRequirements[0].sharingStrategy.nvidiaMps.maxComputePercent","change":"changed","before":"50","after":"40","gpu":true}]"#.into(),
        pre_check: Some("completes".into()),
        description: Some("bench".into()),
        ..AuditIntent::by(
            &app::model::identity::Actor::local(),
            AuditAction::Deploy,
            "inference-prod/embed-api",
        )
    };
    let started = Instant::now();
    let mut ids = Vec::with_capacity(args.records as usize);
    for _ in 0..args.records {
        ids.push(log.insert(&intent).await?);
    }
    let inserts = started.elapsed();
    let started = Instant::now();
    for id in &ids {
        log.update(
            id,
            &AuditOutcome {
                outcome: app::model::audit::Outcome::Succeeded,
                request_id: Some("bench".into()),
                ..AuditOutcome::default()
            },
        )
        .await?;
    }
    let updates = started.elapsed();
    let per_second = |d: Duration| f64::from(args.records) / d.as_secs_f64();
    print_table(
        &format!(
            "gpushare bench audit — {} records on {}",
            args.records, log.backend
        ),
        &[
            Row {
                what: "intents written (INSERT), one after another".into(),
                value: format!("{:.0} per second", per_second(inserts)),
            },
            Row {
                what: "outcomes written (UPDATE), one after another".into(),
                value: format!("{:.0} per second", per_second(updates)),
            },
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
