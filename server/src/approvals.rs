//! The approval requests' store, in the audit log's database (SQLite or PostgreSQL). A decision
//! moves a request out of `pending` with one conditional UPDATE, so that of two approvers at the
//! same moment — on one replica or several — exactly one wins, and the change is sent once.

use app::{
    model::{
        approval::{ApprovalRequest, ApprovalState},
        ServiceError,
    },
    service::{
        clock,
        ports::{ApprovalStore, BoxFuture, Decision},
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

impl SqlAuditLog {
    async fn insert_request(&self, request: ApprovalRequest) -> Result<String, ServiceError> {
        let now = now();
        let request = ApprovalRequest {
            id: crate::audit::new_id(),
            created_at: now.clone(),
            updated_at: now,
            state: ApprovalState::Pending,
            ..request
        };
        let body = body_of(&request)?;
        sqlx::query(
            "INSERT INTO approvals (id, created_at, updated_at, state, team, cluster, service, requester, delta_mib, delta_whole_gpus, body, owner)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
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
        .execute(self.pool())
        .await
        .map_err(failed)?;
        Ok(request.id)
    }

    async fn select_requests(
        &self,
        state: Option<ApprovalState>,
    ) -> Result<Vec<ApprovalRequest>, sqlx::Error> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE ($1 IS NULL OR state = $1)
             ORDER BY created_at DESC, id DESC LIMIT 500"
        ))
        .bind(state.map(|s| s.as_str().to_string()))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(request_of).collect()
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
    fn create(&self, request: ApprovalRequest) -> BoxFuture<'_, Result<String, ServiceError>> {
        Box::pin(async move { self.insert_request(request).await })
    }

    fn list(
        &self,
        state: Option<ApprovalState>,
    ) -> BoxFuture<'_, Result<Vec<ApprovalRequest>, ServiceError>> {
        Box::pin(async move { self.select_requests(state).await.map_err(failed) })
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
