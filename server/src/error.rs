//! The one error type at the HTTP edge.
//!
//! Handlers return [`AppError`]; it becomes a status and a JSON message a person can act on. The
//! detail of an internal error is logged once, here, and never sent to the client.

use app::model::ServiceError;
use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;

/// Everything that can go wrong in a request, as the client should hear it.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The thing asked for does not exist.
    #[error("{0}")]
    NotFound(String),
    /// Nobody signed in.
    #[error("{0}")]
    Unauthenticated(String),
    /// The request may not be made, by this person or from where it came.
    #[error("{0}")]
    Forbidden(String),
    /// The body is not of the type the endpoint takes.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The request itself is wrong; the message says what and how to fix it.
    #[error("{0}")]
    BadRequest(String),
    /// The request body is larger than the server accepts.
    #[error("the request body is larger than the limit of {limit} bytes; send a smaller body")]
    PayloadTooLarge { limit: usize },
    /// The request took longer than the server allows.
    #[error("the request took longer than {seconds} s and was stopped; try again, and if it keeps happening, narrow the request")]
    Timeout { seconds: u64 },
    /// A dependency is not usable right now.
    #[error("{0}")]
    Unavailable(String),
    /// The client, or everyone together, holds as much as the server gives; try later.
    #[error("{0}")]
    TooManyRequests(String),
    /// A use case could not do what it was asked; its kind gives the status.
    #[error("{0}")]
    Service(ServiceError),
    /// A bug or an unexpected failure; the detail goes to the log only.
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

impl From<ServiceError> for AppError {
    fn from(error: ServiceError) -> Self {
        match error {
            ServiceError::Internal { message } => AppError::Internal(anyhow::anyhow!(message)),
            other => AppError::Service(other),
        }
    }
}

/// Whether a request is a browser's for a page rather than the API's: a refusal or an error is
/// then answered as a short page, otherwise as JSON.
pub fn wants_html<B>(request: &axum::http::Request<B>) -> bool {
    !request.uri().path().starts_with("/api/")
        && request
            .headers()
            .get(axum::http::header::ACCEPT)
            .and_then(|a| a.to_str().ok())
            .is_some_and(|a| a.contains("text/html"))
}

/// The JSON body of every error response.
#[derive(Debug, Serialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
    /// The pre-check that refused a deploy, when that is the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_check: Option<serde_json::Value>,
}

/// What went wrong: a stable code for programs and a message for people.
#[derive(Debug, Serialize)]
pub struct ErrorDetail {
    pub code: &'static str,
    pub message: String,
}

impl AppError {
    /// The HTTP status and the stable error code.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            AppError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            AppError::Unauthenticated(_) => (StatusCode::UNAUTHORIZED, "unauthenticated"),
            AppError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            AppError::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            AppError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            AppError::PayloadTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
            }
            AppError::Timeout { .. } => (StatusCode::REQUEST_TIMEOUT, "timeout"),
            AppError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            AppError::TooManyRequests(_) => (StatusCode::TOO_MANY_REQUESTS, "too_many_requests"),
            AppError::Service(error) => (
                StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                error.code(),
            ),
            AppError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let message = match &self {
            AppError::Internal(detail) => {
                tracing::error!(error = ?detail, "internal error");
                "Something went wrong on the server. It has been logged; try again, and if it \
                 keeps happening, report it with the time it happened."
                    .to_string()
            }
            other => {
                tracing::debug!(%status, code, message = %other, "request refused");
                other.to_string()
            }
        };
        let pre_check = match &self {
            AppError::Service(ServiceError::PreCheck { check, .. }) => {
                serde_json::to_value(check).ok()
            }
            _ => None,
        };
        let mut response = (
            status,
            Json(ErrorBody {
                error: ErrorDetail { code, message },
                pre_check,
            }),
        )
            .into_response();
        if status == StatusCode::TOO_MANY_REQUESTS {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("30"),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn body_json(response: Response) -> serde_json::Value {
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        serde_json::from_slice(&bytes).expect("json")
    }

    #[tokio::test]
    async fn internal_errors_hide_their_detail() {
        let response =
            AppError::Internal(anyhow::anyhow!("secret connection string")).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let json = body_json(response).await;
        assert_eq!(json["error"]["code"], "internal");
        let message = json["error"]["message"].as_str().unwrap_or_default();
        assert!(!message.contains("secret"), "{message}");
    }

    #[tokio::test]
    async fn a_use_case_error_answers_with_its_kinds_status() {
        let response =
            AppError::from(ServiceError::conflict("changed since you looked")).into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        let json = body_json(response).await;
        assert_eq!(json["error"]["code"], "conflict");
        assert_eq!(json["error"]["message"], "changed since you looked");
        assert!(json.get("pre_check").is_none());
        let response = AppError::from(ServiceError::refused_by_aws(
            "ECS refused UpdateService: X: y",
        ))
        .into_response();
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(body_json(response).await["error"]["code"], "ecs");
    }

    #[tokio::test]
    async fn client_errors_say_what_to_do() {
        let response = AppError::PayloadTooLarge { limit: 1024 }.into_response();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let json = body_json(response).await;
        assert_eq!(json["error"]["code"], "payload_too_large");
        assert!(json["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("1024 bytes"));
    }
}
