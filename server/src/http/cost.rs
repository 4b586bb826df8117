//! `GET /api/v1/cost`: what the fleet costs at today's allocations, grouped, as JSON or as the
//! CSV of the page's table.

use axum::{
    extract::{rejection::QueryRejection, Query, State},
    http::header,
    response::{IntoResponse, Response},
    Json,
};

use app::{
    model::cost::{to_csv, CostQuery},
    service::cost,
};

use crate::{error::AppError, http::api::parameters, http::state::AppState};

/// Whether a `format` parameter asks for CSV (`csv`) rather than JSON (`json` or empty).
pub(super) fn wants_csv(format: &str) -> Result<bool, AppError> {
    match format {
        "" | "json" => Ok(false),
        "csv" => Ok(true),
        other => Err(AppError::BadRequest(format!(
            "format {other:?} is not json or csv"
        ))),
    }
}

/// `GET /api/v1/cost[?period=&from=&to=&group=&span=&sort=&idle=&cluster=&format=csv]`.
pub async fn report(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, AppError> {
    let known = format!("{}, format and detail", CostQuery::KEYS.join(", "));
    let pairs = parameters(query, &known)?;
    let mut csv = false;
    let mut daily = false;
    for (key, value) in &pairs {
        match key.as_str() {
            key if CostQuery::KEYS.contains(&key) => {}
            "detail" => {
                daily = match value.as_str() {
                    "" | "rows" => false,
                    "day" => true,
                    other => {
                        return Err(AppError::BadRequest(format!(
                            "detail {other:?} is not rows or day"
                        )))
                    }
                }
            }
            "format" => csv = wants_csv(value)?,
            other => {
                return Err(AppError::BadRequest(format!(
                    "there is no parameter {other:?}; the parameters are {known}"
                )))
            }
        }
    }
    let query = CostQuery::from_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(AppError::BadRequest)?;
    if daily {
        if !csv {
            return Err(AppError::BadRequest(
                "detail=day is a CSV: add format=csv".to_string(),
            ));
        }
        let body = cost::daily_csv(&state.services, &query).await?;
        let name = format!(
            "attachment; filename=\"gpushare-cost-by-day-and-{}-{}.csv\"",
            query.group.as_str(),
            query.period.as_str()
        );
        return Ok((
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
                (header::CONTENT_DISPOSITION, name),
            ],
            body,
        )
            .into_response());
    }
    let report = cost::report(&state.services, &query).await?;
    Ok(if csv {
        let over = match &report.range {
            Some(_) => report.period_label.replace(" – ", "-to-"),
            None => query.span.as_str().to_string(),
        };
        let name = format!(
            "attachment; filename=\"gpushare-cost-by-{}-{over}.csv\"",
            query.group.as_str(),
        );
        (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
                (header::CONTENT_DISPOSITION, name),
            ],
            to_csv(&report),
        )
            .into_response()
    } else {
        Json(report).into_response()
    })
}
