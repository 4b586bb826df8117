//! The JSON API's own answers, apart from its resources.

use axum::{
    extract::{rejection::QueryRejection, Query},
    http::{Method, Uri},
};

use crate::error::AppError;

/// Any `/api/v1/…` path that has no endpoint: a JSON 404 rather than the HTML error page.
pub async fn unknown_endpoint(method: Method, uri: Uri) -> AppError {
    AppError::NotFound(format!(
        "there is no API endpoint {method} {}; see the API documentation in the README",
        uri.path()
    ))
}

/// An endpoint's query parameters, or a 400 that says what was wrong and which parameters
/// (`known`) there are.
pub fn parameters<T>(query: Result<Query<T>, QueryRejection>, known: &str) -> Result<T, AppError> {
    query.map(|Query(q)| q).map_err(|rejection| {
        AppError::BadRequest(format!(
            "{}; the parameters are {known}",
            rejection.body_text()
        ))
    })
}
