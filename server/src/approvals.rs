//! The approval requests' store, in the audit log's database (SQLite or PostgreSQL). A decision
//! moves a request out of `pending` with one conditional UPDATE, so that of two approvers at the
//! same moment — on one replica or several — exactly one wins, and the change is sent once. A
//! unique index keeps one pending request per service and change, and the counts and sums of
//! what waits are made by the database, whatever their number.

use app::{
    model::{
        approval::{ApprovalRequest, ApprovalState},
        ServiceError,
    },
    service::{
        clock,
        ports::{ApprovalQuery, ApprovalStore, BoxFuture, Created, Decision, PendingCount},
    },
};
use sqlx::{any::AnyRow, Row};

use crate::audit::SqlAuditLog;

const COLUMNS: &str = "id, created_at, updated_at, state, body, decided_by, decided_by_email, decided_at, decision_note, detail, audit_id";

/// The parts of a request that never change after it is made, kept as JSON.
fn body_of(request: &ApprovalRequest) -> Result<String, ServiceError> {
    let fixed = ApprovalRequest {
        decided_by: None,
        decided_by_email: None,
        decided_at: None,
        decision_note: None,
        detail: None,
        audit_id: None,
        ..request.clone()
    };
    serde_json::to_string(&fixed)
        .map_err(|e| ServiceError::unavailable(format!("the request could not be written: {e}")))
}

fn request_of(row: &AnyRow) -> Result<ApprovalRequest, sqlx::Error> {
    let body: String = row.try_get("body")?;
    let mut request: ApprovalRequest = serde_json::from_str(&body).map_err(|e| {
        sqlx::Error::Decode(format!("an approval request is not readable: {e}").into())
    })?;
    let state: String = row.try_get("state")?;
    request.id = row.try_get("id")?;
    request.created_at = row.try_get("created_at")?;
    request.updated_at = row.try_get("updated_at")?;
    request.state = ApprovalState::parse(&state)
        .ok_or_else(|| sqlx::Error::Decode(format!("unknown approval state {state:?}").into()))?;
    request.decided_by = row.try_get("decided_by")?;
    request.decided_by_email = row.try_get("decided_by_email")?;
    request.decided_at = row.try_get("decided_at")?;
    request.decision_note = row.try_get("decision_note")?;
    request.detail = row.try_get("detail")?;
    request.audit_id = row.try_get("audit_id")?;
    Ok(request)
}

fn failed(error: sqlx::Error) -> ServiceError {
    ServiceError::unavailable(format!("the approvals database failed: {error}"))
}

fn now() -> String {
    clock::rfc3339_micros(chrono::Utc::now())
}

/// Whether a database error is a unique constraint's refusal.
fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|e| e.is_unique_violation())
}

impl SqlAuditLog {
    /// The pending request for `key`'s change of `cluster/service`, if one waits.
    async fn waiting_for(
        &self,
        cluster: &str,
        service: &str,
        key: &str,
    ) -> Result<Option<String>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT id FROM approvals WHERE cluster = $1 AND service = $2 AND change_key = $3 AND state = 'pending'",
        )
        .bind(cluster)
        .bind(service)
        .bind(key)
        .fetch_optional(self.pool())
        .await?;
        row.map(|row| row.try_get("id")).transpose()
    }

    async fn insert_request(&self, request: ApprovalRequest) -> Result<Created, ServiceError> {
        let key = request.change_key();
        if let Some(id) = self
            .waiting_for(&request.cluster, &request.service, &key)
            .await
            .map_err(failed)?
        {
            return Ok(Created { id, existing: true });
        }
        let now = now();
        let request = ApprovalRequest {
            id: crate::audit::new_id(),
            created_at: now.clone(),
            updated_at: now,
            state: ApprovalState::Pending,
            ..request
        };
        let body = body_of(&request)?;
        let inserted = sqlx::query(
            "INSERT INTO approvals (id, created_at, updated_at, state, team, cluster, service, requester, delta_mib, delta_whole_gpus, body, owner, change_key)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(&request.id)
        .bind(&request.created_at)
        .bind(&request.updated_at)
        .bind(request.state.as_str())
        .bind(&request.team)
        .bind(&request.cluster)
        .bind(&request.service)
        .bind(&request.requester.subject)
        .bind(request.delta.memory_mib)
        .bind(request.delta.whole_gpus)
        .bind(body)
        .bind(&self.replica)
        .bind(&key)
        .execute(self.pool())
        .await;
        match inserted {
            Ok(_) => Ok(Created {
                id: request.id,
                existing: false,
            }),
            // Another replica kept the same change a moment ago: that one waits.
            Err(error) if is_unique_violation(&error) => self
                .waiting_for(&request.cluster, &request.service, &key)
                .await
                .map_err(failed)?
                .map(|id| Created { id, existing: true })
                .ok_or_else(|| failed(error)),
            Err(error) => Err(failed(error)),
        }
    }

    async fn select_requests(
        &self,
        query: &ApprovalQuery,
    ) -> Result<(Vec<ApprovalRequest>, u64), sqlx::Error> {
        const FILTER: &str = "($1 IS NULL OR state = $1) AND ($2 IS NULL OR team = $2) AND ($3 IS NULL OR cluster = $3)";
        let state = query.state.map(|s| s.as_str().to_string());
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE {FILTER}
             ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5"
        ))
        .bind(state.clone())
        .bind(query.team.clone())
        .bind(query.cluster.clone())
        .bind(i64::from(query.limit.max(1)))
        .bind(i64::from(query.offset))
        .fetch_all(self.pool())
        .await?;
        let total: i64 = sqlx::query(&format!(
            "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM approvals WHERE {FILTER}"
        ))
        .bind(state)
        .bind(query.team.clone())
        .bind(query.cluster.clone())
        .fetch_one(self.pool())
        .await?
        .try_get("n")?;
        let requests = rows.iter().map(request_of).collect::<Result<_, _>>()?;
        Ok((requests, u64::try_from(total).unwrap_or(0)))
    }

    async fn count_pending(
        &self,
        subject: &str,
        except: Option<&str>,
    ) -> Result<Vec<PendingCount>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT team, cluster, CAST(CASE WHEN requester = $1 THEN 1 ELSE 0 END AS BIGINT) AS own,
                    CAST(COUNT(*) AS BIGINT) AS n,
                    CAST(SUM(CASE WHEN delta_mib > 0 THEN delta_mib ELSE 0 END) AS BIGINT) AS mib,
                    CAST(SUM(CASE WHEN delta_whole_gpus > 0 THEN delta_whole_gpus ELSE 0 END) AS BIGINT) AS whole
             FROM approvals
             WHERE state = 'pending' AND ($2 IS NULL OR cluster || '/' || service <> $2)
             GROUP BY team, cluster, CASE WHEN requester = $1 THEN 1 ELSE 0 END",
        )
        .bind(subject)
        .bind(except)
        .fetch_all(self.pool())
        .await?;
        let number = |row: &AnyRow, column: &str| -> Result<u64, sqlx::Error> {
            // Cast to BIGINT above: PostgreSQL's SUM of BIGINTs is a NUMERIC.
            let value: Option<i64> = row.try_get(column)?;
            Ok(u64::try_from(value.unwrap_or(0)).unwrap_or(0))
        };
        rows.iter()
            .map(|row| {
                let own: i64 = row.try_get("own")?;
                Ok(PendingCount {
                    team: row.try_get("team")?,
                    cluster: row.try_get("cluster")?,
                    own: own == 1,
                    count: number(row, "n")?,
                    memory_mib: number(row, "mib")?,
                    whole_gpus: number(row, "whole")?,
                })
            })
            .collect()
    }

    async fn one_request(&self, id: &str) -> Result<Option<ApprovalRequest>, sqlx::Error> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM approvals WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(request_of).transpose()
    }

    async fn decide_request(&self, id: &str, decision: &Decision) -> Result<bool, sqlx::Error> {
        let now = now();
        let done = sqlx::query(
            "UPDATE approvals SET state = $1, updated_at = $2, decided_by = $3,
                decided_by_email = $4, decided_at = $2, decision_note = $5, owner = $6
             WHERE id = $7 AND state = 'pending'",
        )
        .bind(decision.to.as_str())
        .bind(&now)
        .bind(&decision.by)
        .bind(decision.by_email.clone())
        .bind(decision.note.clone())
        .bind(&self.replica)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn settle_request(
        &self,
        id: &str,
        state: ApprovalState,
        detail: &str,
        audit_id: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE approvals SET state = $1, updated_at = $2, detail = $3, audit_id = $4
             WHERE id = $5 AND state = 'sending'",
        )
        .bind(state.as_str())
        .bind(now())
        .bind(detail)
        .bind(audit_id)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

impl ApprovalStore for SqlAuditLog {
    fn create(&self, request: ApprovalRequest) -> BoxFuture<'_, Result<Created, ServiceError>> {
        Box::pin(async move { self.insert_request(request).await })
    }

    fn list(
        &self,
        query: ApprovalQuery,
    ) -> BoxFuture<'_, Result<(Vec<ApprovalRequest>, u64), ServiceError>> {
        Box::pin(async move { self.select_requests(&query).await.map_err(failed) })
    }

    fn pending_counts(
        &self,
        subject: String,
        except: Option<String>,
    ) -> BoxFuture<'_, Result<Vec<PendingCount>, ServiceError>> {
        Box::pin(async move {
            self.count_pending(&subject, except.as_deref())
                .await
                .map_err(failed)
        })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Option<ApprovalRequest>, ServiceError>> {
        Box::pin(async move { self.one_request(&id).await.map_err(failed) })
    }

    fn decide(&self, id: String, decision: Decision) -> BoxFuture<'_, Result<bool, ServiceError>> {
        Box::pin(async move { self.decide_request(&id, &decision).await.map_err(failed) })
    }

    fn settle(
        &self,
        id: String,
        state: ApprovalState,
        detail: String,
        audit_id: Option<String>,
    ) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            self.settle_request(&id, state, &detail, audit_id.as_deref())
                .await
                .map_err(failed)
        })
    }
}
