//! The audit log's store: SQLite in a file under the data directory by default, PostgreSQL
//! through `DATABASE_URL` for several replicas — one code path through sqlx's `Any` driver, the
//! migrations applied at start. Deploy locks live in the same database, so that of two deploys
//! of one service at the same moment exactly one is sent, whichever replica takes them.
//!
//! Each server process is a replica with its own id: the records it writes and the locks it
//! takes carry it, and it says it is alive every few seconds. A replica settles only its own
//! records and those of replicas that stopped saying so; it never touches another live
//! replica's records in flight or its locks.

mod migrations;

use std::{borrow::Cow, path::Path};

use anyhow::Context;
use app::{
    model::{
        audit::{
            AuditAction, AuditActor, AuditFilter, AuditIntent, AuditOutcome, AuditRecord, Lock,
            Outcome,
        },
        identity::{AuthMode, Role},
        ServiceError,
    },
    service::{
        clock,
        ports::{AuditStore, BoxFuture},
    },
};
use sqlx::{
    any::{AnyPoolOptions, AnyRow},
    migrate::{Migration, MigrationType, Migrator},
    AnyPool, Row,
};

use self::migrations::MIGRATIONS;

/// A replica that has not said it is alive for this long is gone: its records are settled and
/// its locks taken over by the others. Replicas say so every [`HEARTBEAT_SECONDS`].
pub const GONE_SECONDS: i64 = 90;

/// How often a replica says it is alive.
pub const HEARTBEAT_SECONDS: u64 = 20;

/// A deploy lock older than this whose replica is gone is taken over.
const LOCK_SECONDS: i64 = 300;

const COLUMNS: &str = "id, at, updated_at, actor, action, resource, from_revision, to_revision, diff, pre_check, description, outcome, request_id, deployment_id, detail, actor_email, actor_role, auth_mode, source, approved_by, approval_id, prior_deployments";

/// The audit log in SQLite or PostgreSQL.
#[derive(Clone)]
pub struct SqlAuditLog {
    pool: AnyPool,
    /// `sqlite` or `postgres`, for messages.
    pub backend: &'static str,
    /// This process's id among the replicas sharing the database.
    pub replica: String,
}

impl SqlAuditLog {
    /// Opens the database at `database_url` (`postgres://…`, `sqlite://…`), or else the SQLite
    /// file `gpushare.db` in `data_dir` (made if missing), and applies the migrations.
    pub async fn open(database_url: Option<&str>, data_dir: &Path) -> anyhow::Result<SqlAuditLog> {
        sqlx::any::install_default_drivers();
        let url = match database_url {
            Some(url) => url.to_string(),
            None => {
                std::fs::create_dir_all(data_dir).with_context(|| {
                    format!("cannot make the data directory {}", data_dir.display())
                })?;
                format!(
                    "sqlite://{}?mode=rwc",
                    data_dir.join("gpushare.db").display()
                )
            }
        };
        let backend = if url.starts_with("postgres") {
            "postgres"
        } else if url.starts_with("sqlite") {
            "sqlite"
        } else {
            anyhow::bail!("DATABASE_URL must start with postgres:// or sqlite://, not {url:?}");
        };
        let pool = AnyPoolOptions::new()
            // SQLite takes one writer at a time; more connections only wait on its lock.
            .max_connections(if backend == "sqlite" { 1 } else { 8 })
            // The one SQLite connection lives as long as the pool, keeping its pragmas.
            .idle_timeout(None)
            .max_lifetime(None)
            .connect(&url)
            .await
            .with_context(|| format!("cannot open the audit database ({backend})"))?;
        if backend == "sqlite" {
            // Write-ahead logging: readers do not block the writer, and a commit costs one sync
            // of the log rather than of the database.
            sqlx::raw_sql(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;",
            )
            .execute(&pool)
            .await
            .context("cannot set up the audit database (SQLite)")?;
        }
        let log = SqlAuditLog {
            pool,
            backend,
            replica: new_replica_id(),
        };
        log.migrate().await?;
        log.beat()
            .await
            .context("cannot write to the audit database's replicas")?;
        Ok(log)
    }

    /// The database, for the session store beside the log.
    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    async fn migrate(&self) -> anyhow::Result<()> {
        let migrations = MIGRATIONS
            .iter()
            .map(|(version, description, sql)| {
                Migration::new(
                    *version,
                    Cow::Borrowed(*description),
                    MigrationType::Simple,
                    Cow::Borrowed(*sql),
                    false,
                )
            })
            .collect::<Vec<_>>();
        let migrator = Migrator {
            migrations: Cow::Owned(migrations),
            ..Migrator::DEFAULT
        };
        migrator
            .run(&self.pool)
            .await
            .context("cannot apply the audit database's migrations")
    }

    /// Writes an intent; the new record's id.
    pub async fn insert(&self, intent: &AuditIntent) -> Result<String, sqlx::Error> {
        let id = new_id();
        let now = now();
        sqlx::query(&format!(
            "INSERT INTO audit_log ({COLUMNS}, owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)"
        ))
        .bind(&id)
        .bind(&now)
        .bind(&now)
        .bind(&intent.who.actor)
        .bind(intent.action.as_str())
        .bind(&intent.resource)
        .bind(intent.from_revision.clone())
        .bind(intent.to_revision.clone())
        .bind(&intent.diff)
        .bind(intent.pre_check.clone())
        .bind(intent.description.clone())
        .bind(Outcome::Pending.as_str())
        .bind(None::<String>)
        .bind(None::<String>)
        .bind(None::<String>)
        .bind(intent.who.actor_email.clone())
        .bind(intent.who.actor_role.map(|r| r.as_str().to_string()))
        .bind(intent.who.auth_mode.map(|m| m.as_str().to_string()))
        .bind(intent.who.source.clone())
        .bind(intent.approved_by.clone())
        .bind(intent.approval_id.clone())
        .bind(None::<String>)
        .bind(&self.replica)
        .execute(&self.pool)
        .await?;
        Ok(id)
    }

    /// Writes an outcome; fields left `None` keep their value.
    pub async fn update(&self, id: &str, outcome: &AuditOutcome) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE audit_log SET outcome = $1, updated_at = $2,
                request_id = COALESCE($3, request_id),
                deployment_id = COALESCE($4, deployment_id),
                detail = COALESCE($5, detail),
                to_revision = COALESCE($6, to_revision),
                prior_deployments = COALESCE($7, prior_deployments)
             WHERE id = $8",
        )
        .bind(outcome.outcome.as_str())
        .bind(now())
        .bind(outcome.request_id.clone())
        .bind(outcome.deployment_id.clone())
        .bind(outcome.detail.clone())
        .bind(outcome.to_revision.clone())
        .bind(outcome.prior_deployments.as_ref().map(|ids| ids.join(" ")))
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The deploys, rollbacks and scales of `cluster`'s services written at or after `since`,
    /// oldest first. The resources are `cluster/service`, so they lie between `cluster/` and
    /// `cluster0` (`0` follows `/`), which the index on resource reads directly.
    pub async fn select_changes_since(
        &self,
        cluster: &str,
        since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<AuditRecord>, sqlx::Error> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM audit_log
             WHERE resource >= $1 AND resource < $2 AND at >= $3
               AND action IN ('deploy', 'rollback', 'scale')
             ORDER BY at LIMIT 10000"
        ))
        .bind(format!("{cluster}/"))
        .bind(format!("{cluster}0"))
        .bind(clock::rfc3339_micros(since))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record).collect()
    }

    /// The records matching `filter`, newest first.
    pub async fn select(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, sqlx::Error> {
        let action = filter.action.clone().filter(|a| !a.is_empty());
        let outcome = filter.outcome.clone().filter(|o| !o.is_empty());
        let resource = filter
            .resource
            .clone()
            .filter(|r| !r.is_empty())
            .map(|r| format!("%{}%", r.replace(['%', '_'], "")));
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM audit_log
             WHERE ($1 IS NULL OR action = $1)
               AND ($2 IS NULL OR outcome = $2)
               AND ($3 IS NULL OR resource LIKE $3)
             ORDER BY at DESC, id DESC
             LIMIT $4"
        ))
        .bind(action)
        .bind(outcome)
        .bind(resource)
        .bind(i64::from(filter.limit.unwrap_or(200)))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record).collect()
    }

    /// One record.
    pub async fn one(&self, id: &str) -> Result<Option<AuditRecord>, sqlx::Error> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM audit_log WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record).transpose()
    }

    /// The time `seconds` ago, as the database holds times.
    fn ago(seconds: i64) -> String {
        clock::rfc3339_micros(chrono::Utc::now() - chrono::Duration::seconds(seconds))
    }

    /// Takes the deploy lock of `resource` for record `id`: `false` when another record holds
    /// it. A lock is taken over only when it is old and its replica is gone.
    pub async fn take_lock(&self, resource: &str, id: &str) -> Result<bool, sqlx::Error> {
        sqlx::query(
            "DELETE FROM deploy_locks WHERE resource = $1 AND at < $2
               AND (owner IS NULL OR owner NOT IN (SELECT id FROM replicas WHERE seen_at >= $3))",
        )
        .bind(resource)
        .bind(Self::ago(LOCK_SECONDS))
        .bind(Self::ago(GONE_SECONDS))
        .execute(&self.pool)
        .await?;
        // ON CONFLICT DO NOTHING is the same in SQLite and PostgreSQL: the insert either takes
        // the lock or changes nothing.
        let done = sqlx::query(
            "INSERT INTO deploy_locks (resource, audit_id, at, owner) VALUES ($1, $2, $3, $4) ON CONFLICT (resource) DO NOTHING",
        )
        .bind(resource)
        .bind(id)
        .bind(now())
        .bind(&self.replica)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives back the deploy lock of `resource` that record `id` holds.
    pub async fn release_lock(&self, resource: &str, id: &str) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM deploy_locks WHERE resource = $1 AND audit_id = $2")
            .bind(resource)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Says this replica is alive.
    pub async fn beat(&self) -> Result<(), sqlx::Error> {
        let now = now();
        sqlx::query(
            "INSERT INTO replicas (id, started_at, seen_at) VALUES ($1, $2, $2)
             ON CONFLICT (id) DO UPDATE SET seen_at = $2",
        )
        .bind(&self.replica)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Says this replica has stopped, so that the others settle what it left at once.
    pub async fn leave(&self) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM replicas WHERE id = $1")
            .bind(&self.replica)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The records not settled that this replica may settle: its own, those with no owner
    /// (written before replicas had ids) and those of replicas gone. Oldest first.
    pub async fn select_unsettled(&self) -> Result<Vec<AuditRecord>, sqlx::Error> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM audit_log
             WHERE outcome IN ('pending', 'unknown', 'in_progress')
               AND (owner IS NULL OR owner = $1
                    OR owner NOT IN (SELECT id FROM replicas WHERE seen_at >= $2))
             ORDER BY at, id
             LIMIT 10000"
        ))
        .bind(&self.replica)
        .bind(Self::ago(GONE_SECONDS))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record).collect()
    }
}

fn text(row: &AnyRow, column: &str) -> Result<String, sqlx::Error> {
    row.try_get::<String, _>(column)
}

fn optional(row: &AnyRow, column: &str) -> Result<Option<String>, sqlx::Error> {
    row.try_get::<Option<String>, _>(column)
}

fn record(row: &AnyRow) -> Result<AuditRecord, sqlx::Error> {
    let action = text(row, "action")?;
    let outcome = text(row, "outcome")?;
    let role = optional(row, "actor_role")?;
    let auth = optional(row, "auth_mode")?;
    Ok(AuditRecord {
        id: text(row, "id")?,
        at: text(row, "at")?,
        updated_at: text(row, "updated_at")?,
        who: AuditActor {
            actor: text(row, "actor")?,
            actor_email: optional(row, "actor_email")?,
            actor_role: role.as_deref().and_then(Role::parse),
            auth_mode: auth.as_deref().and_then(AuthMode::parse),
            source: optional(row, "source")?,
        },
        action: AuditAction::parse(&action).ok_or_else(|| {
            sqlx::Error::Decode(format!("unknown audit action {action:?}").into())
        })?,
        resource: text(row, "resource")?,
        from_revision: optional(row, "from_revision")?,
        to_revision: optional(row, "to_revision")?,
        diff: text(row, "diff")?,
        pre_check: optional(row, "pre_check")?,
        description: optional(row, "description")?,
        outcome: Outcome::parse(&outcome).ok_or_else(|| {
            sqlx::Error::Decode(format!("unknown audit outcome {outcome:?}").into())
        })?,
        request_id: optional(row, "request_id")?,
        deployment_id: optional(row, "deployment_id")?,
        detail: optional(row, "detail")?,
        approved_by: optional(row, "approved_by")?,
        approval_id: optional(row, "approval_id")?,
        // Deployment IDs (`ecs-svc/…`) hold no spaces.
        prior_deployments: optional(row, "prior_deployments")?
            .map(|ids| ids.split_whitespace().map(str::to_string).collect()),
    })
}

/// Now, RFC 3339 with microseconds in UTC, so that text order is time order.
fn now() -> String {
    clock::rfc3339_micros(chrono::Utc::now())
}

/// A replica id: the host, the process and randomness, so that a restart is a new replica.
fn new_replica_id() -> String {
    use rand::Rng;
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    format!(
        "{host}-{}-{:06x}",
        std::process::id(),
        rand::rng().random::<u32>() & 0xff_ffff
    )
}

/// A record id: the time and randomness, sortable and unique across replicas.
pub(crate) fn new_id() -> String {
    use rand::Rng;
    format!(
        "{}-{:08x}",
        chrono::Utc::now().format("%Y%m%d%H%M%S%6f"),
        rand::rng().random::<u32>()
    )
}

/// A failure of the audit database, as the use cases hear it.
fn failed(error: sqlx::Error) -> ServiceError {
    ServiceError::unavailable(format!("the audit database failed: {error}"))
}

impl AuditStore for SqlAuditLog {
    fn begin(&self, intent: AuditIntent) -> BoxFuture<'_, Result<String, ServiceError>> {
        Box::pin(async move { self.insert(&intent).await.map_err(failed) })
    }

    fn finish(&self, id: String, outcome: AuditOutcome) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move { self.update(&id, &outcome).await.map_err(failed) })
    }

    fn list(&self, filter: AuditFilter) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>> {
        Box::pin(async move { self.select(&filter).await.map_err(failed) })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<AuditRecord>, ServiceError>> {
        Box::pin(async move { self.one(&id).await.map_err(failed) })
    }

    fn lock(&self, lock: Lock, id: String) -> BoxFuture<'_, Result<bool, ServiceError>> {
        Box::pin(async move { self.take_lock(&lock.key(), &id).await.map_err(failed) })
    }

    fn unlock(&self, lock: Lock, id: String) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move { self.release_lock(&lock.key(), &id).await.map_err(failed) })
    }

    fn heartbeat(&self) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move { self.beat().await.map_err(failed) })
    }

    fn unsettled(&self) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>> {
        Box::pin(async move { self.select_unsettled().await.map_err(failed) })
    }

    fn changes_since(
        &self,
        cluster: String,
        since: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'_, Result<Vec<AuditRecord>, ServiceError>> {
        Box::pin(async move {
            self.select_changes_since(&cluster, since)
                .await
                .map_err(failed)
        })
    }
}
