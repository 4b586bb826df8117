//! The allocation history behind cost reports over past periods: what the fleet held, summed
//! per hour and per (cluster, instance type, lifecycle, kind, team, service), in the console's
//! database beside the audit log (SQLite by default, PostgreSQL with `DATABASE_URL`).
//!
//! The recorder adds one minute at a time. Each minute is claimed once in `cost_minutes` in the
//! same transaction that adds it, so several replicas recording the same fleet into one
//! database never count a minute twice (the second insert of a claimed minute does nothing,
//! and PostgreSQL makes it wait for the first to commit). Storage grows with hours × keys,
//! never with snapshots: a key's row for an hour is updated in place.

use std::{
    collections::{BTreeMap, HashSet},
    sync::{Mutex, RwLock},
};

use app::{
    model::{
        cost::{
            Amounts, HoldingKey, HoldingKind, Holdings, Lifecycle, Recorded, SealedMonth, Sealing,
        },
        ServiceError,
    },
    service::ports::{BoxFuture, CostHistory},
};
use sqlx::{AnyPool, Row};

pub mod bill;

/// How many days of history are kept by default.
pub const RETENTION_DAYS: u32 = 400;

/// Rows per INSERT statement (each binds 13 values).
const BATCH: usize = 100;

/// The history in SQL.
pub struct SqlCostHistory {
    pool: AnyPool,
    replica: String,
    retention_days: u32,
    /// Key ids this process knows are stored.
    known: Mutex<HashSet<i64>>,
    /// While the emulator's past is replayed: how far it has got.
    replay: RwLock<Option<String>>,
}

/// A key's id: a stable 63-bit hash of its fields, the same on every replica and backend.
fn key_id(key: &HoldingKey) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for field in [
        key.cluster.as_str(),
        key.instance_type.as_str(),
        key.lifecycle.map_or("", Lifecycle::as_str),
        key.kind.as_str(),
        key.team.as_str(),
        key.service.as_str(),
    ] {
        for byte in field.bytes().chain([0x1f]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    i64::try_from(hash >> 1).unwrap_or(i64::MAX)
}

/// `($1, $2), ($3, $4)` for `rows` rows of `columns` values.
fn placeholders(rows: usize, columns: usize) -> String {
    (0..rows)
        .map(|row| {
            let values: Vec<String> = (1..=columns)
                .map(|column| format!("${}", row * columns + column))
                .collect();
            format!("({})", values.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn failed(what: &str) -> impl Fn(sqlx::Error) -> ServiceError + '_ {
    move |error| {
        ServiceError::unavailable(format!(
            "the allocation history could not be {what}: {error}"
        ))
    }
}

impl SqlCostHistory {
    /// The history in the audit log's database (its migrations made the tables).
    pub fn new(audit: &crate::audit::SqlAuditLog, retention_days: u32) -> SqlCostHistory {
        SqlCostHistory {
            pool: audit.pool().clone(),
            replica: audit.replica.clone(),
            retention_days: retention_days.max(1),
            known: Mutex::default(),
            replay: RwLock::default(),
        }
    }

    /// Says how far the replay of the emulator's past has got, or that it is done.
    pub fn set_replaying(&self, progress: Option<String>) {
        *self.replay.write().unwrap_or_else(|p| p.into_inner()) = progress;
    }

    async fn store_keys(&self, holdings: &Holdings) -> Result<(), sqlx::Error> {
        let new: Vec<(i64, &HoldingKey)> = {
            let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            holdings
                .keys()
                .map(|k| (key_id(k), k))
                .filter(|(id, _)| !known.contains(id))
                .collect()
        };
        for chunk in new.chunks(BATCH) {
            let sql = format!(
                "INSERT INTO cost_keys (id, cluster, instance_type, lifecycle, kind, team, service) VALUES {} ON CONFLICT (id) DO NOTHING",
                placeholders(chunk.len(), 7)
            );
            let mut query = sqlx::query(&sql);
            for (id, key) in chunk {
                query = query
                    .bind(*id)
                    .bind(key.cluster.clone())
                    .bind(key.instance_type.clone())
                    .bind(key.lifecycle.map_or("", Lifecycle::as_str))
                    .bind(key.kind.as_str())
                    .bind(key.team.clone())
                    .bind(key.service.clone());
            }
            query.execute(&self.pool).await?;
        }
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.extend(new.into_iter().map(|(id, _)| id));
        Ok(())
    }

    /// Adds `per_hour` (what the fleet held, for one hour) for each minute of `minutes` (Unix
    /// minutes) that no replica has recorded yet. Returns how many minutes this call added.
    pub async fn record(
        &self,
        per_hour: &Holdings,
        minutes: std::ops::Range<i64>,
    ) -> Result<u32, sqlx::Error> {
        self.record_seen(per_hour, &[], minutes).await
    }

    /// As [`record`](Self::record), and adds the minutes to each instance of `seen` (the bill's
    /// side: which EC2 instances the console saw, for how long, each day).
    pub async fn record_seen(
        &self,
        per_hour: &Holdings,
        seen: &[bill::SeenInstance],
        minutes: std::ops::Range<i64>,
    ) -> Result<u32, sqlx::Error> {
        if minutes.is_empty() {
            return Ok(0);
        }
        self.store_keys(per_hour).await?;
        let mut tx = self.pool.begin().await?;
        let claimed = self.claim(&mut tx, minutes).await?;
        // The minutes per hour and per day: each adds to its hour's rows and its day's.
        let mut hours: BTreeMap<i64, u32> = BTreeMap::new();
        let mut days: BTreeMap<i64, u32> = BTreeMap::new();
        for minute in &claimed {
            *hours.entry(minute.div_euclid(60) * 3600).or_default() += 1;
            *days.entry(minute.div_euclid(1440) * 86_400).or_default() += 1;
        }
        let rows: Vec<(i64, &Amounts)> = per_hour.iter().map(|(k, a)| (key_id(k), a)).collect();
        for (table, column, spans) in [
            ("cost_hours", "hour", hours),
            ("cost_days", "day", days.clone()),
        ] {
            for (at, count) in spans {
                let factor = f64::from(count) / 60.0;
                for chunk in rows.chunks(BATCH) {
                    let sql = format!(
                        "INSERT INTO {table} ({column}, key_id, instance_hours, gpu_hours, memory_mib_hours, whole_gpu_hours, usage_gpu_hours, unused_gpu_hours, cpu_hours, host_memory_mib_hours, managed_instance_hours, max_rule_gpu_hours, estimated_unused_gpu_hours) VALUES {}
                         ON CONFLICT ({column}, key_id) DO UPDATE SET
                            instance_hours = {table}.instance_hours + excluded.instance_hours,
                            gpu_hours = {table}.gpu_hours + excluded.gpu_hours,
                            memory_mib_hours = {table}.memory_mib_hours + excluded.memory_mib_hours,
                            whole_gpu_hours = {table}.whole_gpu_hours + excluded.whole_gpu_hours,
                            usage_gpu_hours = {table}.usage_gpu_hours + excluded.usage_gpu_hours,
                            unused_gpu_hours = {table}.unused_gpu_hours + excluded.unused_gpu_hours,
                            cpu_hours = {table}.cpu_hours + excluded.cpu_hours,
                            host_memory_mib_hours = {table}.host_memory_mib_hours + excluded.host_memory_mib_hours,
                            managed_instance_hours = {table}.managed_instance_hours + excluded.managed_instance_hours,
                            max_rule_gpu_hours = {table}.max_rule_gpu_hours + excluded.max_rule_gpu_hours,
                            estimated_unused_gpu_hours = {table}.estimated_unused_gpu_hours + excluded.estimated_unused_gpu_hours",
                        placeholders(chunk.len(), 13)
                    );
                    let mut query = sqlx::query(&sql);
                    for (id, amounts) in chunk {
                        let a = amounts.scaled(factor);
                        query = query
                            .bind(at)
                            .bind(*id)
                            .bind(a.instance_hours)
                            .bind(a.gpu_hours)
                            .bind(a.memory_mib_hours)
                            .bind(a.whole_gpu_hours)
                            .bind(a.usage_gpu_hours)
                            .bind(a.unused_gpu_hours)
                            .bind(a.cpu_hours)
                            .bind(a.host_memory_mib_hours)
                            .bind(a.managed_instance_hours)
                            .bind(a.max_rule_gpu_hours)
                            .bind(a.estimated_unused_gpu_hours);
                    }
                    query.execute(&mut *tx).await?;
                }
            }
        }
        bill::add_minutes(&mut tx, seen, &days).await?;
        tx.commit().await?;
        Ok(u32::try_from(claimed.len()).unwrap_or(u32::MAX))
    }

    /// Claims each of `minutes` no replica has claimed yet; the minutes claimed.
    async fn claim(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        minutes: std::ops::Range<i64>,
    ) -> Result<Vec<i64>, sqlx::Error> {
        let all: Vec<i64> = minutes.collect();
        let mut claimed = Vec::new();
        for chunk in all.chunks(BATCH * 4) {
            let sql = format!(
                "INSERT INTO cost_minutes (minute, replica) VALUES {} ON CONFLICT (minute) DO NOTHING RETURNING minute",
                placeholders(chunk.len(), 2)
            );
            let mut query = sqlx::query(&sql);
            for minute in chunk {
                query = query.bind(*minute).bind(self.replica.clone());
            }
            for row in query.fetch_all(&mut **tx).await? {
                claimed.push(row.try_get::<i64, _>(0)?);
            }
        }
        Ok(claimed)
    }

    /// Forgets what is older than the retention.
    pub async fn prune(&self, now: i64) -> Result<(), sqlx::Error> {
        let oldest = now - i64::from(self.retention_days) * 86_400;
        sqlx::query("DELETE FROM cost_hours WHERE hour < $1")
            .bind(oldest.div_euclid(3600) * 3600)
            .execute(&self.pool)
            .await?;
        sqlx::query("DELETE FROM cost_days WHERE day < $1")
            .bind(oldest.div_euclid(86_400) * 86_400)
            .execute(&self.pool)
            .await?;
        sqlx::query("DELETE FROM cost_minutes WHERE minute < $1")
            .bind(oldest.div_euclid(60))
            .execute(&self.pool)
            .await?;
        self.prune_bill(oldest.div_euclid(86_400) * 86_400).await?;
        // A seal goes with the last of its month's history.
        let month = app::model::cost::sealed::month_label(oldest);
        sqlx::query("DELETE FROM cost_sealed_months WHERE month < $1")
            .bind(month)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Every sealed month's every version.
    pub async fn select_sealed(&self) -> Result<Vec<SealedMonth>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT month, version, sealed_at, sealed_by, reason, audit_id, total_cents, recorded_hours, book FROM cost_sealed_months ORDER BY month, version",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut sealed = Vec::with_capacity(rows.len());
        for row in rows {
            let month: String = row.try_get(0)?;
            let book: String = row.try_get(8)?;
            let Ok(book) = serde_json::from_str(&book) else {
                tracing::warn!(%month, "a sealed month's prices do not read; its report uses today's prices");
                continue;
            };
            sealed.push(SealedMonth {
                sealing: Sealing {
                    month,
                    version: u32::try_from(row.try_get::<i64, _>(1)?).unwrap_or(u32::MAX),
                    sealed_at: row.try_get(2)?,
                    sealed_by: row.try_get(3)?,
                    reason: row.try_get(4)?,
                    audit_id: row.try_get(5)?,
                    total_cents: row.try_get(6)?,
                    recorded_hours: row.try_get(7)?,
                },
                book,
            });
        }
        Ok(sealed)
    }

    /// Stores a seal unless its month already has that version; whether it was stored.
    pub async fn insert_sealed(&self, month: &SealedMonth) -> Result<bool, sqlx::Error> {
        let s = &month.sealing;
        let book = serde_json::to_string(&month.book)
            .map_err(|error| sqlx::Error::Encode(Box::new(error)))?;
        let stored = sqlx::query(
            "INSERT INTO cost_sealed_months (month, version, sealed_at, sealed_by, reason, audit_id, total_cents, recorded_hours, book) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (month, version) DO NOTHING",
        )
        .bind(s.month.clone())
        .bind(i64::from(s.version))
        .bind(s.sealed_at.clone())
        .bind(s.sealed_by.clone())
        .bind(s.reason.clone())
        .bind(s.audit_id.clone())
        .bind(s.total_cents)
        .bind(s.recorded_hours)
        .bind(book)
        .execute(&self.pool)
        .await?;
        Ok(stored.rows_affected() == 1)
    }

    /// What was recorded over `[from, to)` (Unix seconds): whole days from the daily rows,
    /// the hours at either end from the hourly ones.
    pub async fn select(&self, from: i64, to: i64) -> Result<Recorded, sqlx::Error> {
        let from = from.div_euclid(3600) * 3600;
        let first_day = (from + 86_399).div_euclid(86_400) * 86_400;
        let last_day = to.div_euclid(86_400) * 86_400;
        let mut recorded = Recorded::default();
        if first_day < last_day {
            self.add_rows(&mut recorded, "cost_days", "day", first_day, last_day)
                .await?;
            self.add_rows(&mut recorded, "cost_hours", "hour", from, first_day)
                .await?;
            self.add_rows(&mut recorded, "cost_hours", "hour", last_day, to)
                .await?;
        } else {
            self.add_rows(&mut recorded, "cost_hours", "hour", from, to)
                .await?;
        }
        let minutes = sqlx::query(
            "SELECT (minute / 1440) * 86400 AS day, COUNT(*) FROM cost_minutes
             WHERE minute >= $1 AND minute < $2 GROUP BY (minute / 1440) * 86400",
        )
        .bind(from.div_euclid(60))
        .bind(to.div_euclid(60))
        .fetch_all(&self.pool)
        .await?;
        for row in minutes {
            let count: i64 = row.try_get(1)?;
            recorded
                .minutes
                .insert(row.try_get(0)?, u32::try_from(count).unwrap_or(u32::MAX));
        }
        recorded.first = sqlx::query("SELECT MIN(minute) FROM cost_minutes")
            .fetch_one(&self.pool)
            .await?
            .try_get::<Option<i64>, _>(0)?
            .map(|minute| minute * 60);
        Ok(recorded)
    }

    /// Adds the rows of `table` whose `column` is in `[from, to)`, summed per UTC day.
    async fn add_rows(
        &self,
        recorded: &mut Recorded,
        table: &str,
        column: &str,
        from: i64,
        to: i64,
    ) -> Result<(), sqlx::Error> {
        if from >= to {
            return Ok(());
        }
        let rows = sqlx::query(&format!(
            "SELECT (h.{column} / 86400) * 86400 AS day, k.cluster, k.instance_type, k.lifecycle, k.kind, k.team, k.service,
                SUM(h.instance_hours), SUM(h.gpu_hours), SUM(h.memory_mib_hours), SUM(h.whole_gpu_hours),
                SUM(h.usage_gpu_hours), SUM(h.unused_gpu_hours), SUM(h.cpu_hours), SUM(h.host_memory_mib_hours), SUM(h.managed_instance_hours),
                SUM(COALESCE(h.max_rule_gpu_hours, h.gpu_hours)),
                SUM(CASE WHEN h.max_rule_gpu_hours IS NULL THEN h.gpu_hours ELSE 0.0 END),
                SUM(COALESCE(h.estimated_unused_gpu_hours, h.unused_gpu_hours))
             FROM {table} h JOIN cost_keys k ON k.id = h.key_id
             WHERE h.{column} >= $1 AND h.{column} < $2
             GROUP BY (h.{column} / 86400) * 86400, k.cluster, k.instance_type, k.lifecycle, k.kind, k.team, k.service"
        ))
        .bind(from)
        .bind(to)
        .fetch_all(&self.pool)
        .await?;
        for row in rows {
            let Some(kind) = HoldingKind::parse(&row.try_get::<String, _>(4)?) else {
                continue;
            };
            let key = HoldingKey {
                cluster: row.try_get(1)?,
                instance_type: row.try_get(2)?,
                lifecycle: Lifecycle::parse(&row.try_get::<String, _>(3)?),
                kind,
                team: row.try_get(5)?,
                service: row.try_get(6)?,
            };
            let amounts = Amounts {
                instance_hours: row.try_get(7)?,
                gpu_hours: row.try_get(8)?,
                memory_mib_hours: row.try_get(9)?,
                whole_gpu_hours: row.try_get(10)?,
                usage_gpu_hours: row.try_get(11)?,
                unused_gpu_hours: row.try_get(12)?,
                cpu_hours: row.try_get(13)?,
                host_memory_mib_hours: row.try_get(14)?,
                managed_instance_hours: row.try_get(15)?,
                max_rule_gpu_hours: row.try_get(16)?,
                max_rule_unknown_gpu_hours: row.try_get(17)?,
                estimated_unused_gpu_hours: row.try_get(18)?,
            };
            recorded
                .days
                .entry(row.try_get::<i64, _>(0)?)
                .or_default()
                .entry(key)
                .or_default()
                .add(&amounts);
        }
        Ok(())
    }

    /// The history's size in bytes: its three tables on PostgreSQL; on SQLite the whole
    /// database after a checkpoint (the audit log shares the file, so measure where it is
    /// empty).
    pub async fn storage_bytes(&self, backend: &str) -> Result<i64, sqlx::Error> {
        if backend == "postgres" {
            let row = sqlx::query(
                "SELECT CAST(pg_total_relation_size('cost_hours') + pg_total_relation_size('cost_days') + pg_total_relation_size('cost_keys') + pg_total_relation_size('cost_minutes') AS BIGINT)",
            )
            .fetch_one(&self.pool)
            .await?;
            return row.try_get(0);
        }
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await?;
        let pages: i64 = sqlx::query("PRAGMA page_count")
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?;
        let size: i64 = sqlx::query("PRAGMA page_size")
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?;
        Ok(pages * size)
    }
}

impl CostHistory for SqlCostHistory {
    fn recorded(&self, from: i64, to: i64) -> BoxFuture<'_, Result<Recorded, ServiceError>> {
        Box::pin(async move { self.select(from, to).await.map_err(failed("read")) })
    }

    fn retention_days(&self) -> u32 {
        self.retention_days
    }

    fn replaying(&self) -> Option<String> {
        self.replay
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn sealed(&self) -> BoxFuture<'_, Result<Vec<SealedMonth>, ServiceError>> {
        Box::pin(async move {
            self.select_sealed()
                .await
                .map_err(failed("read (its sealed months)"))
        })
    }

    fn bill(
        &self,
        from: i64,
        to: i64,
    ) -> BoxFuture<'_, Result<app::model::cost::billed::Bill, ServiceError>> {
        Box::pin(async move {
            let (read, sums) = self
                .select_bill_sums(from, to)
                .await
                .map_err(failed("read (Cost Explorer's days)"))?;
            Ok(app::model::cost::billed::Bill {
                read,
                sums: app::model::cost::billed::grouped(sums),
                ..Default::default()
            })
        })
    }

    fn seen(
        &self,
        from: i64,
        to: i64,
    ) -> BoxFuture<'_, Result<Vec<app::model::cost::billed::SeenDay>, ServiceError>> {
        Box::pin(async move {
            self.select_seen(from, to)
                .await
                .map_err(failed("read (the instances seen)"))
        })
    }

    fn billed_lines(
        &self,
        from: i64,
        to: i64,
    ) -> BoxFuture<'_, Result<Vec<app::model::cost::billed::BilledLine>, ServiceError>> {
        Box::pin(async move {
            self.select_lines(from, to)
                .await
                .map_err(failed("read (Cost Explorer's lines)"))
        })
    }

    fn seal(&self, month: SealedMonth) -> BoxFuture<'_, Result<bool, ServiceError>> {
        Box::pin(async move {
            self.insert_sealed(&month)
                .await
                .map_err(failed("written (a sealed month)"))
        })
    }
}

mod tasks;
pub use tasks::{replay, replay_in_steps, spawn_recorder, spawn_sealer, REPLAY_STEP_MINUTES};
