//! Server functions, grouped by domain: called from the browser, run on the server. Each is a
//! thin adapter over one use case of the service layer; errors reach the page as the service's
//! own [`ServiceError`](crate::model::ServiceError).

pub mod activity;
pub mod approvals;
pub mod audit;
pub mod capacity;
pub mod clusters;
pub mod console;
pub mod cost;
pub mod deployments;
pub mod fleet;
pub mod task_definitions;

/// The service context the server provides to every server function.
#[cfg(feature = "ssr")]
fn context() -> Result<crate::service::ServiceContext, crate::model::ServiceError> {
    leptos::prelude::use_context::<crate::service::ServiceContext>().ok_or_else(|| {
        crate::model::ServiceError::Internal {
            message: "the server did not provide its service context".into(),
        }
    })
}

/// Who is asking: the server's sign-in put the person in the request.
#[cfg(feature = "ssr")]
fn actor() -> Result<crate::model::identity::Actor, crate::model::ServiceError> {
    leptos::prelude::use_context::<http::request::Parts>()
        .and_then(|parts| {
            parts
                .extensions
                .get::<crate::model::identity::Actor>()
                .cloned()
        })
        .ok_or_else(|| crate::model::ServiceError::Internal {
            message: "the server did not say who is asking; sign in again".into(),
        })
}

/// An answer that shows revealed values must not be kept by the browser or any cache on the way.
#[cfg(feature = "ssr")]
fn no_store_if(revealed: bool) {
    if !revealed {
        return;
    }
    if let Some(response) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
        response.insert_header(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-store"),
        );
    }
}
