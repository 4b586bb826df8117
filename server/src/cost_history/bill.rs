//! The bill's side of the history: the minutes each EC2 instance was seen a day (written by the
//! recorder in the same transaction as the minute it claims, so replicas never count a minute
//! twice here either), and Cost Explorer's amortized cost of each instance and day with the
//! days read.

use std::collections::BTreeMap;

use app::model::{
    cost::{
        billed::{BilledLine, ReadDay, SeenDay, SeenSum},
        Lifecycle,
    },
    FleetSnapshot,
};
use sqlx::{Any, AnyPool, Row, Transaction};

use super::{placeholders, SqlCostHistory, BATCH};

/// One instance in a snapshot, as the bill knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenInstance {
    pub instance_id: String,
    pub cluster: String,
    pub instance_type: String,
    pub lifecycle: Option<Lifecycle>,
}

/// The instances of `snapshot` with an EC2 instance ID (every one the holdings count).
pub fn seen_instances(snapshot: &FleetSnapshot) -> Vec<SeenInstance> {
    snapshot
        .clusters
        .iter()
        .flat_map(|c| {
            c.instances.iter().map(|i| SeenInstance {
                instance_id: i.ec2_instance_id.clone(),
                cluster: c.name.clone(),
                instance_type: i.instance_type.clone(),
                lifecycle: i.lifecycle,
            })
        })
        .filter(|i| !i.instance_id.is_empty())
        .collect()
}

/// Adds `count` minutes on `day` to each of `seen`.
pub(super) async fn add_minutes(
    tx: &mut Transaction<'_, Any>,
    seen: &[SeenInstance],
    days: &BTreeMap<i64, u32>,
) -> Result<(), sqlx::Error> {
    for (day, count) in days {
        for chunk in seen.chunks(BATCH) {
            let sql = format!(
                "INSERT INTO cost_instance_days (day, instance_id, cluster, instance_type, lifecycle, minutes) VALUES {}
                 ON CONFLICT (day, instance_id) DO UPDATE SET minutes = cost_instance_days.minutes + excluded.minutes",
                placeholders(chunk.len(), 6)
            );
            let mut query = sqlx::query(&sql);
            for instance in chunk {
                query = query
                    .bind(*day)
                    .bind(instance.instance_id.clone())
                    .bind(instance.cluster.clone())
                    .bind(instance.instance_type.clone())
                    .bind(instance.lifecycle.map_or("", Lifecycle::as_str))
                    .bind(i64::from(*count));
            }
            query.execute(&mut **tx).await?;
        }
    }
    Ok(())
}

impl SqlCostHistory {
    /// The pool, for the Cost Explorer reader beside the history.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The days of `[from, to)` Cost Explorer was read for, and on those days what the console
    /// saw summed per instance type and lifecycle with what Cost Explorer billed for those
    /// instances: a few hundred rows where the instances' own are thousands a day.
    pub async fn select_bill_sums(
        &self,
        from: i64,
        to: i64,
    ) -> Result<(Vec<ReadDay>, Vec<SeenSum>), sqlx::Error> {
        let read = self.select_read(from, to).await?;
        let sums = self
            .between(
                "SELECT s.day, s.instance_type, s.lifecycle, COUNT(*), CAST(SUM(s.minutes) AS BIGINT),
                        SUM(COALESCE(l.usd, 0.0)), COUNT(l.usd)
                 FROM cost_instance_days s
                 LEFT JOIN cost_explorer_lines l ON l.day = s.day AND l.resource_id = s.instance_id
                 WHERE s.day >= $1 AND s.day < $2 AND s.minutes > 0
                   AND s.day IN (SELECT day FROM cost_explorer_days)
                 GROUP BY s.day, s.instance_type, s.lifecycle",
                from,
                to,
            )
            .await?
            .into_iter()
            .map(|row| {
                let count = |at: usize| -> Result<usize, sqlx::Error> {
                    Ok(usize::try_from(row.try_get::<i64, _>(at)?).unwrap_or(0))
                };
                Ok(SeenSum {
                    day: row.try_get(0)?,
                    instance_type: row.try_get(1)?,
                    lifecycle: Lifecycle::parse(&row.try_get::<String, _>(2)?),
                    instances: count(3)?,
                    minutes: u64::try_from(row.try_get::<i64, _>(4)?).unwrap_or(0),
                    usd: row.try_get(5)?,
                    listed: count(6)?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()?;
        Ok((read, sums))
    }

    /// The days of `[from, to)` Cost Explorer was read for.
    async fn select_read(&self, from: i64, to: i64) -> Result<Vec<ReadDay>, sqlx::Error> {
        self.between(
            "SELECT day, read_at, calls FROM cost_explorer_days WHERE day >= $1 AND day < $2 ORDER BY day",
            from,
            to,
        )
        .await?
        .into_iter()
        .map(|row| {
            Ok(ReadDay {
                day: row.try_get(0)?,
                read_at: row.try_get(1)?,
                calls: u32::try_from(row.try_get::<i64, _>(2)?).unwrap_or(u32::MAX),
            })
        })
        .collect()
    }

    /// Cost Explorer's lines for the days of `[from, to)`.
    pub async fn select_lines(&self, from: i64, to: i64) -> Result<Vec<BilledLine>, sqlx::Error> {
        self.between(
            "SELECT day, resource_id, usd FROM cost_explorer_lines WHERE day >= $1 AND day < $2",
            from,
            to,
        )
        .await?
        .into_iter()
        .map(|row| {
            Ok(BilledLine {
                day: row.try_get(0)?,
                resource_id: row.try_get(1)?,
                usd: row.try_get(2)?,
            })
        })
        .collect()
    }

    /// What the console saw of each instance on the days of `[from, to)`.
    pub async fn select_seen(&self, from: i64, to: i64) -> Result<Vec<SeenDay>, sqlx::Error> {
        self.between(
            "SELECT day, instance_id, cluster, instance_type, lifecycle, minutes FROM cost_instance_days WHERE day >= $1 AND day < $2",
            from,
            to,
        )
        .await?
        .into_iter()
        .map(|row| {
            Ok(SeenDay {
                day: row.try_get(0)?,
                instance_id: row.try_get(1)?,
                cluster: row.try_get(2)?,
                instance_type: row.try_get(3)?,
                lifecycle: Lifecycle::parse(&row.try_get::<String, _>(4)?),
                minutes: u32::try_from(row.try_get::<i64, _>(5)?).unwrap_or(u32::MAX),
            })
        })
        .collect()
    }

    /// The rows `sql` selects for days in `[from, to)` (bound as `$1` and `$2`).
    async fn between(
        &self,
        sql: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<sqlx::any::AnyRow>, sqlx::Error> {
        sqlx::query(sql)
            .bind(from)
            .bind(to)
            .fetch_all(&self.pool)
            .await
    }

    /// The days Cost Explorer was read for.
    pub async fn read_days(&self) -> Result<Vec<i64>, sqlx::Error> {
        sqlx::query("SELECT day FROM cost_explorer_days ORDER BY day")
            .fetch_all(&self.pool)
            .await?
            .into_iter()
            .map(|row| row.try_get(0))
            .collect()
    }

    /// The first day anything was recorded, when any.
    pub async fn first_day(&self) -> Result<Option<i64>, sqlx::Error> {
        let row = sqlx::query("SELECT MIN(minute) FROM cost_minutes")
            .fetch_one(&self.pool)
            .await?;
        Ok(row
            .try_get::<Option<i64>, _>(0)?
            .map(|m| (m * 60).div_euclid(86_400) * 86_400))
    }

    /// Stores Cost Explorer's lines of `day`, read at `read_at` in `calls` requests, once: a
    /// day already stored (another replica read it) is left as it is. Whether it was stored.
    pub async fn store_billed(
        &self,
        day: i64,
        lines: &BTreeMap<String, f64>,
        read_at: i64,
        calls: u32,
    ) -> Result<bool, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let stored = sqlx::query(
            "INSERT INTO cost_explorer_days (day, read_at, calls) VALUES ($1, $2, $3) ON CONFLICT (day) DO NOTHING",
        )
        .bind(day)
        .bind(read_at)
        .bind(i64::from(calls))
        .execute(&mut *tx)
        .await?;
        if stored.rows_affected() == 0 {
            return Ok(false);
        }
        let lines: Vec<(&String, &f64)> = lines.iter().collect();
        for chunk in lines.chunks(BATCH) {
            let sql = format!(
                "INSERT INTO cost_explorer_lines (day, resource_id, usd) VALUES {}",
                placeholders(chunk.len(), 3)
            );
            let mut query = sqlx::query(&sql);
            for (id, usd) in chunk {
                query = query.bind(day).bind((*id).clone()).bind(**usd);
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Forgets the bill's rows older than `oldest_day`.
    pub(super) async fn prune_bill(&self, oldest_day: i64) -> Result<(), sqlx::Error> {
        for table in [
            "cost_instance_days",
            "cost_explorer_lines",
            "cost_explorer_days",
        ] {
            sqlx::query(&format!("DELETE FROM {table} WHERE day < $1"))
                .bind(oldest_day)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }
}
