#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use chrono::TimeZone;

use super::*;
use crate::{
    model::{
        audit::AuditRecord,
        cost::{holdings, Period, PriceBook},
    },
    service::{cost::report, fake::Fake},
};

fn admin() -> Actor {
    Fake::admin()
}

/// The first second of last month and of this one.
fn months() -> (i64, i64) {
    let this = month_start(Utc::now().timestamp());
    (month_start(this - 1), this)
}

/// Two hours of today's fleet recorded on the 3rd of last month, and one hour of this month.
fn fake_with_last_month() -> Arc<Fake> {
    let fake = Fake::new();
    let snapshot = fake.context().fleet.state().snapshot.unwrap();
    let per_hour = holdings::of_snapshot(&snapshot, 1.0);
    let (last, this) = months();
    let mut history: Vec<(i64, crate::model::cost::Holdings)> = (0..120)
        .map(|m| (last + 2 * 86_400 + m * 60, per_hour.clone()))
        .collect();
    history.extend((0..60).map(|m| (this + m * 60, per_hour.clone())));
    *fake.history.lock().unwrap() = history;
    fake
}

/// The context with every price times `factor`, as a new price file would make it.
fn repriced(fake: &Arc<Fake>, factor: f64) -> ServiceContext {
    let mut context = fake.context();
    let mut book = PriceBook::builtin("us-east-1");
    for price in &mut book.prices {
        price.usd_per_hour *= factor;
    }
    context.prices = Arc::new(book);
    context
}

fn last_month() -> CostQuery {
    CostQuery {
        period: Period::LastMonth,
        group: Grouping::Team,
        ..CostQuery::default()
    }
}

fn reprices(fake: &Fake) -> Vec<AuditRecord> {
    fake.records()
        .into_iter()
        .filter(|r| r.action == AuditAction::Reprice)
        .collect()
}

/// Last month is sealed once, ten minutes after it closed, and this month is not; a new price
/// file then changes this month's report and leaves last month's as it was.
#[tokio::test]
async fn a_closed_month_is_sealed_once_and_keeps_its_figures_when_prices_change() {
    let fake = fake_with_last_month();
    let context = fake.context();
    let (_, this) = months();
    let early = Utc.timestamp_opt(this + 300, 0).unwrap();
    if Utc::now() > early {
        // Five minutes after the month closed: too soon to seal.
        assert!(seal_closed_months(&context, early)
            .await
            .unwrap()
            .is_empty());
    }
    let before = report(&context, &last_month()).await.unwrap();
    assert!(before.total_cents > 0);
    assert!(before.sealed.is_empty());
    let now = Utc::now().max(Utc.timestamp_opt(this + 601, 0).unwrap());
    let sealed = seal_closed_months(&context, now).await.unwrap();
    assert_eq!(sealed, vec![month_label(months().0)]);
    assert!(seal_closed_months(&context, now).await.unwrap().is_empty());
    let seals = list(&context).await.unwrap();
    assert_eq!(seals.len(), 1);
    assert_eq!(seals[0].version, 1);
    assert_eq!(seals[0].sealed_by, SEALED_BY_CONSOLE);
    assert_eq!(seals[0].total_cents, before.total_cents);
    assert!((seals[0].recorded_hours - 2.0).abs() < 1e-9);

    let dearer = repriced(&fake, 2.0);
    let after = report(&dearer, &last_month()).await.unwrap();
    assert_eq!(after.total_cents, before.total_cents);
    assert_eq!(after.rows, before.rows);
    assert_eq!(after.sealed.len(), 1);
    assert!(
        after.notes.iter().any(|n| n.contains("is sealed")),
        "{:?}",
        after.notes
    );
    let this_month = CostQuery {
        period: Period::ThisMonth,
        ..last_month()
    };
    let now_cheap = report(&context, &this_month).await.unwrap();
    let now_dear = report(&dearer, &this_month).await.unwrap();
    assert!(
        (now_dear.total_cents - 2 * now_cheap.total_cents).abs() <= 1,
        "{} vs {}",
        now_dear.total_cents,
        now_cheap.total_cents
    );
}

/// Re-pricing: only admins, only with a reason, only a sealed month; it shows what changes,
/// seals the next version at today's prices, and leaves one `reprice` audit record.
#[tokio::test]
async fn only_an_admin_reprices_a_sealed_month_with_a_reason_and_it_is_audited() {
    let fake = fake_with_last_month();
    let context = fake.context();
    let (last, this) = months();
    let month = month_label(last);
    let now = Utc::now().max(Utc.timestamp_opt(this + 601, 0).unwrap());
    seal_closed_months(&context, now).await.unwrap();
    let dearer = repriced(&fake, 1.5);

    let error = reprice(&dearer, &Fake::deployer(), &month, "new rates")
        .await
        .unwrap_err();
    assert_eq!(error.status(), 403, "{error}");
    for reason in ["", "   ", &"x".repeat(REASON_LIMIT + 1)] {
        let error = reprice(&dearer, &admin(), &month, reason)
            .await
            .unwrap_err();
        assert_eq!(error.status(), 400, "{error}");
    }
    let error = preview(&dearer, &month_label(this)).await.unwrap_err();
    assert_eq!(error.status(), 404, "{error}");
    assert!(error.to_string().contains("not sealed"), "{error}");
    let error = preview(&dearer, "2026-13").await.unwrap_err();
    assert_eq!(error.status(), 400, "{error}");
    assert!(reprices(&fake).is_empty());

    let shown = preview(&dearer, &month).await.unwrap();
    assert!(!shown.applied);
    let done = reprice(&dearer, &admin(), &month, "the Savings Plan rate was wrong")
        .await
        .unwrap();
    assert!(done.applied);
    assert_eq!(done.rows, shown.rows);
    assert_eq!((done.from_version, done.to_version), (1, 2));
    assert!(
        (done.after_total_cents as f64 - done.before_total_cents as f64 * 1.5).abs() <= 1.0,
        "{done:?}"
    );
    let records = reprices(&fake);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Succeeded);
    assert_eq!(records[0].resource, format!("cost/{month}"));
    assert_eq!(
        records[0].description.as_deref(),
        Some("the Savings Plan rate was wrong")
    );
    assert_eq!(done.audit_id.as_deref(), Some(records[0].id.as_str()));
    // The month now reports at the new version's prices, whatever today's are.
    let report_now = report(&context, &last_month()).await.unwrap();
    assert_eq!(report_now.total_cents, done.after_total_cents);
    assert_eq!(report_now.sealed[0].version, 2);
    assert_eq!(report_now.sealed[0].sealed_by, "root@example.com");
    // Nothing left to change: the preview at the same prices is empty.
    let again = preview(&dearer, &month).await.unwrap();
    assert!(
        again.rows.is_empty() && again.prices.is_empty(),
        "{again:?}"
    );
}

/// A `reprice` record left pending settles by whether its seal was stored.
#[tokio::test]
async fn a_pending_repricing_settles_by_whether_its_seal_was_stored() {
    let fake = fake_with_last_month();
    let context = fake.context();
    let stored = context
        .audit
        .begin(AuditIntent::by(
            &admin(),
            AuditAction::Reprice,
            "cost/2026-10",
        ))
        .await
        .unwrap();
    let lost = context
        .audit
        .begin(AuditIntent::by(
            &admin(),
            AuditAction::Reprice,
            "cost/2026-10",
        ))
        .await
        .unwrap();
    let mut seal = SealedMonth::default();
    seal.sealing.month = "2026-10".into();
    seal.sealing.version = 2;
    seal.sealing.audit_id = Some(stored.clone());
    assert!(context.history.seal(seal.clone()).await.unwrap());
    assert!(!context.history.seal(seal).await.unwrap());
    let settled = crate::service::deployments::reconcile(&context, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert!(settled >= 2, "{settled}");
    let records = reprices(&fake);
    let outcome = |id: &str| records.iter().find(|r| r.id == id).unwrap().outcome;
    assert_eq!(outcome(&stored), Outcome::Succeeded);
    assert_eq!(outcome(&lost), Outcome::Refused);
}
