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

/// A CSV to download as `name` (the `Content-Disposition` value).
pub(super) fn csv_attachment(name: &str, body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, name.to_string()),
        ],
        body,
    )
        .into_response()
}

/// What `GET /api/v1/cost` answers with.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Json,
    Csv,
    /// A line per day and row (`format=csv&detail=day`).
    DailyCsv,
    /// FOCUS's columns (`format=focus`).
    Focus,
}

/// The answer `format` and `detail` ask for; any other parameter not of the report's query is
/// refused, naming those there are (`known`).
fn answer_of(pairs: &[(String, String)], known: &str) -> Result<Answer, AppError> {
    let mut format = Answer::Json;
    let mut daily = false;
    for (key, value) in pairs {
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
            "format" => {
                format = match value.as_str() {
                    "focus" => Answer::Focus,
                    other => match wants_csv(other) {
                        Ok(true) => Answer::Csv,
                        Ok(false) => Answer::Json,
                        Err(_) => {
                            return Err(AppError::BadRequest(format!(
                                "format {other:?} is not json, csv or focus"
                            )))
                        }
                    },
                }
            }
            other => {
                return Err(AppError::BadRequest(format!(
                    "there is no parameter {other:?}; the parameters are {known}"
                )))
            }
        }
    }
    match (format, daily) {
        (answer, false) => Ok(answer),
        (Answer::Csv, true) => Ok(Answer::DailyCsv),
        (Answer::Focus, true) => Err(AppError::BadRequest(
            "format=focus is already a line per day and row: leave out detail".to_string(),
        )),
        _ => Err(AppError::BadRequest(
            "detail=day is a CSV: add format=csv".to_string(),
        )),
    }
}

/// `GET /api/v1/cost[?period=&from=&to=&group=&span=&sort=&idle=&cluster=&format=csv|focus&detail=day]`.
pub async fn report(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, AppError> {
    let known = format!("{}, format and detail", CostQuery::KEYS.join(", "));
    let pairs = parameters(query, &known)?;
    let answer = answer_of(&pairs, &known)?;
    let query = CostQuery::from_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(AppError::BadRequest)?;
    let named = |what: &str| {
        format!(
            "attachment; filename=\"gpushare-cost-{what}{}-{}.csv\"",
            query.group.as_str(),
            query.period.as_str()
        )
    };
    match answer {
        Answer::Focus => {
            let body = cost::focus_csv(&state.services, &query).await?;
            return Ok(csv_attachment(&named("focus-by-"), body));
        }
        Answer::DailyCsv => {
            let body = cost::daily_csv(&state.services, &query).await?;
            return Ok(csv_attachment(&named("by-day-and-"), body));
        }
        Answer::Json | Answer::Csv => {}
    }
    let report = cost::report(&state.services, &query).await?;
    Ok(if answer == Answer::Csv {
        let over = match &report.range {
            Some(_) => report.period_label.replace(" – ", "-to-"),
            None => query.span.as_str().to_string(),
        };
        let name = format!(
            "attachment; filename=\"gpushare-cost-by-{}-{over}.csv\"",
            query.group.as_str(),
        );
        csv_attachment(&name, to_csv(&report))
    } else {
        Json(report).into_response()
    })
}
