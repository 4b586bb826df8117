//! The JSON API's own answers, apart from its resources.

use axum::{
    extract::{rejection::QueryRejection, Query},
    http::{header, Method, StatusCode, Uri},
    response::{IntoResponse, Response},
};

use crate::error::AppError;

/// Any `/api/v1/…` path that has no endpoint: a JSON 404 rather than the HTML error page.
pub async fn unknown_endpoint(method: Method, uri: Uri) -> AppError {
    AppError::NotFound(format!(
        "there is no API endpoint {method} {}; see the API documentation in the README",
        uri.path()
    ))
}

/// A path under the open prefixes (`/auth/…`, `/pkg/…`) that names nothing: a bare 404. These
/// paths are answered without sign-in, so they must not render the app's shell, which tells the
/// console's version, its AWS endpoint and its last read error.
pub async fn bare_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Not found\n",
    )
        .into_response()
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
