//! `GET /api/v1/audit`: the audit log, filtered, as JSON or CSV.

use axum::{
    extract::{rejection::QueryRejection, Extension, Query, State},
    http::header,
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;

use app::{
    model::{
        audit::{to_csv, AuditFilter},
        identity::Actor,
    },
    service::audit,
};

use crate::{error::AppError, http::api::parameters, http::state::AppState};

/// The filter, and `format=csv` for a CSV download.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    pub action: Option<String>,
    pub resource: Option<String>,
    pub outcome: Option<String>,
    pub limit: Option<u32>,
    pub format: Option<String>,
}

/// `GET /api/v1/audit[?action=&resource=&outcome=&limit=&format=csv]`: newest first.
pub async fn list(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Response, AppError> {
    let query = parameters(query, "action, resource, outcome, limit and format")?;
    let filter = AuditFilter {
        action: query.action,
        resource: query.resource,
        outcome: query.outcome,
        limit: query.limit,
    };
    let csv = match query.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(other) => {
            return Err(AppError::BadRequest(format!(
                "format {other:?} is not json or csv"
            )))
        }
    };
    let records = audit::list(&state.services, &actor, filter).await?;
    Ok(if csv {
        (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"gpushare-audit.csv\"",
                ),
            ],
            to_csv(&records),
        )
            .into_response()
    } else {
        Json(records).into_response()
    })
}
