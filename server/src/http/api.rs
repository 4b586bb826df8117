//! The JSON API's own answers, apart from its resources.

use axum::http::{Method, Uri};

use crate::error::AppError;

/// Any `/api/v1/…` path that has no endpoint: a JSON 404 rather than the HTML error page.
pub async fn unknown_endpoint(method: Method, uri: Uri) -> AppError {
    AppError::NotFound(format!(
        "there is no API endpoint {method} {}; see the API documentation in the README",
        uri.path()
    ))
}
