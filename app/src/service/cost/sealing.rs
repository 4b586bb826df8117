//! Sealed months: each closed month (UTC) with history is sealed at the prices of the day it is
//! sealed, once, so its figures stay as the cost review saw them; re-pricing one is an admin's
//! action, audited, that seals it again as a new version and says what changed.

use chrono::{DateTime, Utc};

use crate::{
    model::{
        audit::{AuditAction, AuditIntent, AuditOutcome, Outcome},
        cost::{
            history::price_recorded,
            sealed::{check_month, compare, month_label, month_range, month_start},
            Books, CostQuery, CostReport, Grouping, MonthsQuery, MonthsView, Recorded, Repricing,
            SealedMonth, Sealing,
        },
        identity::{Actor, Role},
        ServiceError,
    },
    service::context::ServiceContext,
};

/// How long after a month closes it is sealed: the recorder still adds a minute up to five
/// minutes late (a snapshot up to five minutes old is recorded), so the month's last minutes
/// are in before its seal.
pub const SEAL_AFTER_SECONDS: i64 = 600;

/// Who seals a month as it closes.
pub const SEALED_BY_CONSOLE: &str = "the console";

/// The longest reason a re-pricing takes, in characters.
pub const REASON_LIMIT: usize = 500;

/// Today's prices, and each sealed month's.
pub async fn books(context: &ServiceContext) -> Result<Books, ServiceError> {
    Ok(Books::new(
        super::book(context),
        context.history.sealed().await?,
    ))
}

/// The report a seal keeps as its total: by team, memory split, idle as a row.
fn seal_query() -> CostQuery {
    CostQuery {
        group: Grouping::Team,
        ..CostQuery::default()
    }
}

/// Seals, at today's prices, each month that closed at least [`SEAL_AFTER_SECONDS`] before
/// `now`, lies within the history kept, has recorded minutes and has no seal yet. Nothing while
/// the emulator's past is replayed into the history (the replay still writes those months), nor
/// before the spot market and the Price List have been asked once since the start (a month is not
/// sealed at the offline fallback's prices because the console has just started). Returns the
/// months sealed.
pub async fn seal_closed_months(
    context: &ServiceContext,
    now: DateTime<Utc>,
) -> Result<Vec<String>, ServiceError> {
    if context.history.replaying().is_some() || !context.markets.asked() {
        return Ok(Vec::new());
    }
    let books = books(context).await?;
    let open = month_start(now.timestamp() - SEAL_AFTER_SECONDS);
    let oldest = now.timestamp() - i64::from(context.history.retention_days()) * 86_400;
    let mut month = month_start(oldest);
    let mut sealed = Vec::new();
    while month < open {
        let label = month_label(month);
        let range = month_range(&label).map_err(ServiceError::internal)?;
        month = range.to;
        if books.sealed(&label).is_some() {
            continue;
        }
        let recorded = context.history.recorded(range.from, range.to).await?;
        if recorded.minutes.values().all(|m| *m == 0) {
            continue;
        }
        let report = price_recorded(&recorded, &books.current.clone().into(), &seal_query());
        let seal = SealedMonth {
            sealing: Sealing {
                month: label.clone(),
                version: 1,
                sealed_at: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                sealed_by: SEALED_BY_CONSOLE.to_string(),
                reason: String::new(),
                audit_id: None,
                total_cents: report.total_cents,
                recorded_hours: recorded.recorded_hours(),
            },
            book: books.current.clone(),
        };
        if context.history.seal(seal).await? {
            sealed.push(label);
        }
    }
    Ok(sealed)
}

/// The seals kept, every version, newest month first.
pub async fn list(context: &ServiceContext) -> Result<Vec<Sealing>, ServiceError> {
    let mut sealed: Vec<Sealing> = context
        .history
        .sealed()
        .await?
        .into_iter()
        .map(|m| m.sealing)
        .collect();
    sealed.sort_by(|a, b| (&b.month, b.version).cmp(&(&a.month, a.version)));
    Ok(sealed)
}

/// The sealed months' page: every seal, and `query`'s month at today's prices.
pub async fn view(
    context: &ServiceContext,
    actor: &Actor,
    query: &MonthsQuery,
) -> Result<MonthsView, ServiceError> {
    let repricing = match &query.month {
        Some(month) => Some(preview(context, month).await?),
        None => None,
    };
    let may_reprice = actor.role == Role::Admin;
    Ok(MonthsView {
        seals: list(context).await?,
        repricing,
        may_reprice,
        why_not: (!may_reprice).then(|| {
            format!(
                "Re-pricing a closed month needs the admin role: ask {}.",
                context.policy.admins()
            )
        }),
    })
}

/// Month `month` at its seal and at today's prices, with its seal and what was recorded.
async fn both(
    context: &ServiceContext,
    month: &str,
) -> Result<(SealedMonth, CostReport, CostReport, Recorded), ServiceError> {
    check_month(month).map_err(ServiceError::invalid)?;
    let books = books(context).await?;
    let Some(seal) = books.sealed(month).cloned() else {
        return Err(ServiceError::not_found(format!(
            "{month} is not sealed: a month is sealed {} minutes after it closes (UTC) when the history holds any of it, and until then its report is at today's prices; GET /api/v1/cost/months lists the sealed ones",
            SEAL_AFTER_SECONDS / 60
        )));
    };
    let range = month_range(month).map_err(ServiceError::invalid)?;
    let recorded = context.history.recorded(range.from, range.to).await?;
    let query = seal_query();
    let before = price_recorded(&recorded, &seal.book.clone().into(), &query);
    let after = price_recorded(&recorded, &books.current.clone().into(), &query);
    Ok((seal, before, after, recorded))
}

/// What re-pricing `month` at today's prices would change, by team and by price.
pub async fn preview(context: &ServiceContext, month: &str) -> Result<Repricing, ServiceError> {
    let (seal, before, after, _) = both(context, month).await?;
    Ok(compare(month, seal.sealing.version, &before, &after))
}

/// Who may re-price (admins), and the reason, trimmed: given, and not too long.
fn admitted<'a>(
    context: &ServiceContext,
    actor: &Actor,
    reason: &'a str,
) -> Result<&'a str, ServiceError> {
    if actor.role != Role::Admin {
        return Err(ServiceError::forbidden(format!(
            "Re-pricing a closed month needs the admin role (it changes figures a cost review has seen): ask {}.",
            context.policy.admins()
        )));
    }
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(ServiceError::invalid(
            "say why the month is re-priced (reason): it is kept with the new prices and in the audit log",
        ));
    }
    if reason.chars().count() > REASON_LIMIT {
        return Err(ServiceError::invalid(format!(
            "the reason has {} characters; at most {REASON_LIMIT} are kept: shorten it",
            reason.chars().count()
        )));
    }
    Ok(reason)
}

/// Re-prices closed month `month` at today's prices (admins): seals it again as the next
/// version, in one audit record (`reprice`) that keeps the reason and what changed. Refused when
/// another re-pricing stored that version first.
pub async fn reprice(
    context: &ServiceContext,
    actor: &Actor,
    month: &str,
    reason: &str,
) -> Result<Repricing, ServiceError> {
    let reason = admitted(context, actor, reason)?;
    let (seal, before, after, recorded) = both(context, month).await?;
    let mut change = compare(month, seal.sealing.version, &before, &after);
    let intent = AuditIntent {
        description: Some(reason.to_string()),
        from_revision: Some(format!("v{}", change.from_version)),
        to_revision: Some(format!("v{}", change.to_version)),
        diff: serde_json::to_string(&change).unwrap_or_default(),
        ..AuditIntent::by(actor, AuditAction::Reprice, format!("cost/{month}"))
    };
    let id = context.audit.begin(intent).await?;
    let next = SealedMonth {
        sealing: Sealing {
            month: month.to_string(),
            version: change.to_version,
            sealed_at: crate::service::clock::now(),
            sealed_by: actor.email.clone().unwrap_or_else(|| actor.subject.clone()),
            reason: reason.to_string(),
            audit_id: Some(id.clone()),
            total_cents: after.total_cents,
            recorded_hours: recorded.recorded_hours(),
        },
        book: super::book(context),
    };
    let stored = context.history.seal(next).await;
    let (outcome, detail, result) = match stored {
        Ok(true) => (Outcome::Succeeded, None, Ok(())),
        Ok(false) => {
            let error = ServiceError::conflict(format!(
                "{month} was re-priced by someone else first (version {} is stored): look at it again before re-pricing",
                change.to_version
            ));
            (
                Outcome::Refused,
                Some(error.message().to_string()),
                Err(error),
            )
        }
        Err(error) => (
            Outcome::Refused,
            Some(format!("the new prices were not stored: {error}")),
            Err(error),
        ),
    };
    context
        .audit
        .finish(
            id.clone(),
            AuditOutcome {
                outcome,
                detail,
                ..AuditOutcome::default()
            },
        )
        .await?;
    result?;
    change.applied = true;
    change.audit_id = Some(id);
    Ok(change)
}

/// Settles a `reprice` record left pending (the server stopped between its writes): succeeded
/// when its seal is stored, refused when not.
pub async fn settle(context: &ServiceContext, id: String) -> Result<bool, ServiceError> {
    let stored = context
        .history
        .sealed()
        .await?
        .iter()
        .any(|m| m.sealing.audit_id.as_deref() == Some(id.as_str()));
    let outcome = if stored {
        AuditOutcome {
            outcome: Outcome::Succeeded,
            ..AuditOutcome::default()
        }
    } else {
        AuditOutcome {
            outcome: Outcome::Refused,
            detail: Some(
                "the console stopped before the new prices were stored: the month keeps its seal"
                    .to_string(),
            ),
            ..AuditOutcome::default()
        }
    };
    context.audit.finish(id, outcome).await?;
    Ok(true)
}

#[cfg(test)]
mod tests;
