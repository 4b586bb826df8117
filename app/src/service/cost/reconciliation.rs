//! The bill in the cost review: the books a recorded period is priced with, Cost Explorer's days
//! in, and a month's reconciliation of the console's figures with Cost Explorer's.

use chrono::{DateTime, Utc};

use crate::{
    model::{
        cost::{
            billed::{Bill, SETTLE_SECONDS, WINDOW_DAYS},
            range::{check_month, month_label, month_range},
            reconcile::reconcile,
            Books, CostReport, PriceBook, Range, Reconciliation, ReconciliationQuery,
        },
        ServiceError,
    },
    service::context::ServiceContext,
};

use super::sealing;

/// The prices of a recorded period over `[from, to)`: each day Cost Explorer was read for at the
/// bill, each sealed month at its seal, the rest at today's.
pub async fn books_for(
    context: &ServiceContext,
    from: i64,
    to: i64,
) -> Result<(Books, Bill), ServiceError> {
    let (books, mut bill) =
        futures::future::try_join(sealing::books(context), context.history.bill(from, to)).await?;
    bill.off = context.markets.cost_explorer_off();
    Ok((books.with_bill(&bill), bill))
}

/// `book` with a price, for each type it cannot price (a Capacity Block without a block rate),
/// from the latest of the last three days Cost Explorer billed it — for today's allocations.
pub async fn with_latest_bill(
    context: &ServiceContext,
    book: PriceBook,
) -> Result<PriceBook, ServiceError> {
    let today = Utc::now().timestamp().div_euclid(86_400) * 86_400;
    let bill = context.history.bill(today - 3 * 86_400, today).await?;
    if bill.read.is_empty() {
        return Ok(book);
    }
    Ok(Books::from(book).with_bill(&bill).current)
}

/// Says in `report` which of its days are at the bill, and when none are, why.
pub fn bill_notes(report: &mut CostReport, books: &Books, bill: &Bill, range: Range) {
    let mut day = range.from.div_euclid(86_400) * 86_400;
    let (mut billed, mut days) = (0, 0);
    while day < range.to {
        days += 1;
        if books.billed(day) {
            billed += 1;
        }
        day += 86_400;
    }
    if billed > 0 {
        report.notes.push(format!(
            "{billed} of the period's {days} days are priced at Cost Explorer's amortized cost of the instances the console saw (the bill, commitments and Capacity Blocks included); the others at list and price-file prices. /cost/reconciliation compares the two by day."
        ));
    } else if let Some(off) = &bill.off {
        report.notes.push(off.clone());
    } else {
        report.notes.push(format!(
            "These are list and price-file prices: Cost Explorer's figures for a day are read once it has been closed for {} hours, and reach back {WINDOW_DAYS} days only.",
            SETTLE_SECONDS / 3600
        ));
    }
}

/// The reconciliation of `query`'s month (this month when none is given), up to now.
pub async fn reconciliation(
    context: &ServiceContext,
    query: &ReconciliationQuery,
    now: DateTime<Utc>,
) -> Result<Reconciliation, ServiceError> {
    let month = match query.month.as_ref().filter(|m| !m.is_empty()) {
        Some(month) => {
            check_month(month).map_err(ServiceError::invalid)?;
            month.clone()
        }
        None => month_label(now.timestamp()),
    };
    let whole = month_range(&month).map_err(ServiceError::invalid)?;
    let end = whole
        .to
        .min(now.timestamp().div_euclid(86_400) * 86_400 + 86_400);
    if end <= whole.from {
        return Err(ServiceError::invalid(format!(
            "{month} has not begun: give a month up to this one ({})",
            month_label(now.timestamp())
        )));
    }
    let range = Range {
        from: whole.from,
        to: end,
    };
    let (recorded, seen, lines, (books, mut bill)) = futures::future::try_join4(
        context.history.recorded(range.from, range.to),
        context.history.seen(range.from, range.to),
        context.history.billed_lines(range.from, range.to),
        books_for(context, range.from, range.to),
    )
    .await?;
    // The detail the days are explained with; the read days' sums stay the store's, the ones the
    // books priced with.
    bill.seen = seen;
    bill.billed = lines;
    let off = bill.off.clone();
    let now = now.timestamp();
    let why_not = move |day: i64| -> String {
        if let Some(off) = &off {
            return off.clone();
        }
        if day + 86_400 + SETTLE_SECONDS > now {
            return format!(
                "List prices: Cost Explorer's figures for a day are read once it has been closed for {} hours (they change until then).",
                SETTLE_SECONDS / 3600
            );
        }
        format!(
            "List prices: Cost Explorer's resource-level data reaches back {WINDOW_DAYS} days only, and this day was not read while it was within reach (the console was not running, or Cost Explorer could not be read)."
        )
    };
    Ok(reconcile(&month, range, &recorded, &bill, &books, &why_not))
}

#[cfg(test)]
mod tests;
