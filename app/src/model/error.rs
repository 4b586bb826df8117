//! The one error of the console's use cases, shared by the server and the browser: what went
//! wrong, in words that say what to do, and of which kind. The HTTP edge turns the kind into a
//! status once; server functions carry the error to the browser whole, answered with the kind's
//! status too, so a page shows the message and, when it renders on the server, answers with the
//! kind's status.

use std::fmt;

use leptos::server_fn::{
    codec::JsonEncoding,
    error::{FromServerFnError, ServerFnErrorErr},
};
use serde::{Deserialize, Serialize};

use crate::model::rollout::RolloutCheck;

/// Why a use case could not do what it was asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ServiceError {
    /// The request is wrong: a malformed name, a value out of range, a filter that names
    /// nothing. The message says how to write it.
    InvalidInput { message: String },
    /// No such cluster, service, family, revision or deployment; the message names what exists.
    NotFound { message: String },
    /// The person may not do this; the message names the rule and who could.
    Forbidden { message: String },
    /// The resource changed since the user looked, or another change of it is in flight.
    Conflict { message: String },
    /// The capacity pre-check says the rollout will not complete; sending it anyway is a
    /// choice the request must make (`force`).
    PreCheck {
        message: String,
        check: Box<RolloutCheck>,
    },
    /// AWS answered and refused the call, with its code.
    RefusedByAws { message: String },
    /// The call went to AWS and no answer came back (a timeout, a lost connection, an answer
    /// that could not be read): whether it took effect is not known until ECS is asked.
    NoAnswer { message: String },
    /// AWS, the fleet snapshot or the audit database cannot be used right now.
    Unavailable { message: String },
    /// A failure of the console itself, such as a server function that could not be called.
    Internal { message: String },
}

impl ServiceError {
    pub fn invalid(message: impl Into<String>) -> ServiceError {
        ServiceError::InvalidInput {
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<String>) -> ServiceError {
        ServiceError::NotFound {
            message: message.into(),
        }
    }

    pub fn forbidden(message: impl Into<String>) -> ServiceError {
        ServiceError::Forbidden {
            message: message.into(),
        }
    }

    pub fn conflict(message: impl Into<String>) -> ServiceError {
        ServiceError::Conflict {
            message: message.into(),
        }
    }

    pub fn refused_by_aws(message: impl Into<String>) -> ServiceError {
        ServiceError::RefusedByAws {
            message: message.into(),
        }
    }

    pub fn no_answer(message: impl Into<String>) -> ServiceError {
        ServiceError::NoAnswer {
            message: message.into(),
        }
    }

    pub fn unavailable(message: impl Into<String>) -> ServiceError {
        ServiceError::Unavailable {
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> ServiceError {
        ServiceError::Internal {
            message: message.into(),
        }
    }

    /// What went wrong and what to do, for a person.
    pub fn message(&self) -> &str {
        match self {
            ServiceError::InvalidInput { message }
            | ServiceError::NotFound { message }
            | ServiceError::Forbidden { message }
            | ServiceError::Conflict { message }
            | ServiceError::PreCheck { message, .. }
            | ServiceError::RefusedByAws { message }
            | ServiceError::NoAnswer { message }
            | ServiceError::Unavailable { message }
            | ServiceError::Internal { message } => message,
        }
    }

    /// The same kind, with `more` after the message (", nothing was sent").
    pub fn with_suffix(self, more: &str) -> ServiceError {
        let extend = |message: String| format!("{message}{more}");
        match self {
            ServiceError::InvalidInput { message } => ServiceError::InvalidInput {
                message: extend(message),
            },
            ServiceError::NotFound { message } => ServiceError::NotFound {
                message: extend(message),
            },
            ServiceError::Forbidden { message } => ServiceError::Forbidden {
                message: extend(message),
            },
            ServiceError::Conflict { message } => ServiceError::Conflict {
                message: extend(message),
            },
            ServiceError::PreCheck { message, check } => ServiceError::PreCheck {
                message: extend(message),
                check,
            },
            ServiceError::RefusedByAws { message } => ServiceError::RefusedByAws {
                message: extend(message),
            },
            ServiceError::NoAnswer { message } => ServiceError::NoAnswer {
                message: extend(message),
            },
            ServiceError::Unavailable { message } => ServiceError::Unavailable {
                message: extend(message),
            },
            ServiceError::Internal { message } => ServiceError::Internal {
                message: extend(message),
            },
        }
    }

    /// The HTTP status this kind of failure answers with, here and at the JSON API.
    pub fn status(&self) -> u16 {
        match self {
            ServiceError::InvalidInput { .. } => 400,
            ServiceError::NotFound { .. } => 404,
            ServiceError::Forbidden { .. } => 403,
            ServiceError::Conflict { .. } | ServiceError::PreCheck { .. } => 409,
            ServiceError::RefusedByAws { .. } => 502,
            ServiceError::NoAnswer { .. } => 504,
            ServiceError::Unavailable { .. } => 503,
            ServiceError::Internal { .. } => 500,
        }
    }

    /// The stable code the JSON API puts beside the message.
    pub fn code(&self) -> &'static str {
        match self {
            ServiceError::InvalidInput { .. } => "bad_request",
            ServiceError::NotFound { .. } => "not_found",
            ServiceError::Forbidden { .. } => "forbidden",
            ServiceError::Conflict { .. } => "conflict",
            ServiceError::PreCheck { .. } => "pre_check",
            ServiceError::RefusedByAws { .. } => "ecs",
            ServiceError::NoAnswer { .. } => "no_answer",
            ServiceError::Unavailable { .. } => "unavailable",
            ServiceError::Internal { .. } => "internal",
        }
    }
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ServiceError {}

impl FromServerFnError for ServiceError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            ServerFnErrorErr::Args(detail) | ServerFnErrorErr::MissingArg(detail) => {
                ServiceError::InvalidInput {
                    message: format!("the request's parameters could not be read ({detail}); reload the page and try again"),
                }
            }
            ServerFnErrorErr::Request(detail) => ServiceError::Unavailable {
                message: format!(
                    "the console's server could not be reached ({detail}); check the connection and try again"
                ),
            },
            other => ServiceError::Internal {
                message: format!("the console could not complete the call ({other}); reload the page and try again"),
            },
        }
    }

    /// The error as a server function's answer carries it. On the server the answer's HTTP
    /// status is then the error's own — a refusal is a 403, a conflict a 409 — where the
    /// framework would answer every error 500.
    fn ser(&self) -> leptos::server_fn::Bytes {
        #[cfg(feature = "ssr")]
        if let Some(response) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(
                http::StatusCode::from_u16(self.status())
                    .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR),
            );
        }
        <JsonEncoding as leptos::server_fn::Encodes<Self>>::encode(self).unwrap_or_else(|e| {
            <JsonEncoding as leptos::server_fn::Encodes<Self>>::encode(&ServiceError::Internal {
                message: format!(
                    "the error could not be written ({e}); reload the page and try again"
                ),
            })
            .unwrap_or_default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "ssr")]
    #[test]
    fn a_server_functions_error_is_answered_with_its_own_status() {
        use leptos::prelude::{provide_context, Owner};
        let owner = Owner::new();
        owner.with(|| {
            let response = leptos_axum::ResponseOptions::default();
            provide_context(response.clone());
            let refusal = ServiceError::forbidden("only the search team's deployers may");
            let bytes = refusal.ser();
            let status = response.0.read().map(|parts| parts.status).ok().flatten();
            assert_eq!(status, Some(http::StatusCode::FORBIDDEN));
            assert_eq!(ServiceError::de(bytes), refusal, "read back whole");
        });
        // Outside a request (no response to set) it is only written.
        let conflict = ServiceError::conflict("another deploy is being sent");
        assert_eq!(ServiceError::de(conflict.ser()), conflict);
    }

    #[test]
    fn each_kind_has_its_status_and_code() {
        let cases = [
            (ServiceError::invalid("x"), 400, "bad_request"),
            (ServiceError::not_found("x"), 404, "not_found"),
            (ServiceError::forbidden("x"), 403, "forbidden"),
            (ServiceError::conflict("x"), 409, "conflict"),
            (ServiceError::refused_by_aws("x"), 502, "ecs"),
            (ServiceError::unavailable("x"), 503, "unavailable"),
        ];
        for (error, status, code) in cases {
            assert_eq!(error.status(), status, "{error:?}");
            assert_eq!(error.code(), code, "{error:?}");
            assert_eq!(error.to_string(), "x");
        }
    }

    #[test]
    fn the_error_crosses_to_the_browser_whole() {
        let error = ServiceError::not_found("there is no cluster \"nope\"; the clusters are a, b");
        let bytes = error.ser();
        let back = ServiceError::de(bytes);
        assert_eq!(back, error);
        assert_eq!(
            ServiceError::from_server_fn_error(ServerFnErrorErr::MissingArg("cluster".into()))
                .status(),
            400
        );
    }

    #[test]
    fn a_suffix_keeps_the_kind() {
        let error = ServiceError::unavailable("the audit database failed")
            .with_suffix("; nothing was sent");
        assert_eq!(error.status(), 503);
        assert_eq!(
            error.message(),
            "the audit database failed; nothing was sent"
        );
    }
}
