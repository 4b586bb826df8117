//! The history's background work: the recorder (a minute at a time), the sealer of closed
//! months, and the replay of the emulator's past.

use std::sync::Arc;

use app::{model::cost::holdings, service::ports::CostHistory};

use super::{bill, SqlCostHistory};

/// Records the latest snapshot every minute, for the minutes since the last record (at most
/// five, when a tick ran late); a snapshot older than five minutes is not recorded, and the
/// minutes it would have stood for stay unrecorded, which the reports say. Prunes daily.
pub fn spawn_recorder(
    history: Arc<SqlCostHistory>,
    store: Arc<crate::fleet::store::SnapshotStore>,
) {
    tokio::spawn(async move {
        let mut last: Option<i64> = None;
        let mut pruned = 0;
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if history.replaying().is_some() {
                continue;
            }
            let now = chrono::Utc::now();
            let minute = now.timestamp().div_euclid(60);
            let state = store.state();
            let (Some(snapshot), Some(taken_at)) = (state.snapshot, state.taken_at) else {
                continue;
            };
            if (now - taken_at).num_seconds() > 300 {
                continue;
            }
            let from = last.map_or(minute, |l| (l + 1).max(minute - 4));
            let per_hour = holdings::of_snapshot(&snapshot, 1.0);
            let seen = bill::seen_instances(&snapshot);
            match history
                .record_seen(&per_hour, &seen, from..minute + 1)
                .await
            {
                Ok(_) => last = Some(minute),
                Err(error) => {
                    tracing::warn!(%error, "the allocation history could not be written; the minute stays unrecorded");
                }
            }
            if now.timestamp() - pruned > 86_400 {
                pruned = now.timestamp();
                if let Err(error) = history.prune(pruned).await {
                    tracing::warn!(%error, "old allocation history could not be pruned");
                }
            }
        }
    });
}

/// Seals each closed month at today's prices, ten minutes after it closes, checking every five
/// minutes — and every five seconds while the emulator's past is replayed or the markets have
/// not been asked yet, so that a month is sealed as soon as both are done (never before). Start
/// it after the replay, so that its first look sees the replay under way.
pub fn spawn_sealer(context: app::service::context::ServiceContext) {
    tokio::spawn(async move {
        loop {
            if context.history.replaying().is_some() || !context.markets.asked() {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                continue;
            }
            match app::service::cost::sealing::seal_closed_months(&context, chrono::Utc::now())
                .await
            {
                Ok(months) => {
                    for month in months {
                        tracing::info!(%month, "the month closed: its cost is sealed at today's prices");
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "closed months could not be sealed; trying again in five minutes");
                }
            }
            tokio::time::sleep(std::time::Duration::from_secs(300)).await;
        }
    });
}

/// How much simulated time one step of the replay records.
pub const REPLAY_STEP_MINUTES: i64 = 15;

/// Replays the emulator's past into the history: from the emulator's time (built days back) to
/// `until`, moves its clock a step at a time, reads the fleet through the SDK as the refresher
/// does (usage included, read up to the emulator's time), and records each step with the
/// same recorder the live console uses. Says how far it has got until done.
pub async fn replay(
    emulator: emulator::Emulator,
    reader: crate::fleet::reader::FleetReader,
    history: Arc<SqlCostHistory>,
    until: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<u32> {
    replay_in_steps(emulator, reader, history, until, REPLAY_STEP_MINUTES).await
}

/// [`replay`] with a step of `step_minutes` (a coarser one reads the fleet fewer times).
pub async fn replay_in_steps(
    emulator: emulator::Emulator,
    reader: crate::fleet::reader::FleetReader,
    history: Arc<SqlCostHistory>,
    until: chrono::DateTime<chrono::Utc>,
    step_minutes: i64,
) -> anyhow::Result<u32> {
    let step = step_minutes.max(1) * 60;
    let begin = emulator.now().timestamp().div_euclid(step) * step + step;
    let end = until.timestamp().div_euclid(60) * 60;
    let total_days = ((end - begin) as f64 / 86_400.0).ceil().max(1.0);
    let clock = emulator.clone();
    let reader = reader.with_clock(Arc::new(move || clock.now()));
    let mut recorded = 0;
    let mut at = begin;
    while at < end {
        let day = ((at - begin) as f64 / 86_400.0).floor() + 1.0;
        history.set_replaying(Some(format!(
            "replaying the emulator's past into the cost history: day {day:.0} of {total_days:.0}"
        )));
        if let Some(to) = chrono::DateTime::from_timestamp(at, 0) {
            emulator.advance_to(to);
        }
        let refresh = reader
            .refresh()
            .await
            .map_err(|error| anyhow::anyhow!("reading the emulator's past failed: {error}"))?;
        let per_hour = holdings::of_snapshot(&refresh.snapshot, 1.0);
        let seen = bill::seen_instances(&refresh.snapshot);
        let to = (at + step).min(end);
        recorded += history
            .record_seen(&per_hour, &seen, at / 60..to / 60)
            .await?;
        at += step;
    }
    history.set_replaying(None);
    Ok(recorded)
}
