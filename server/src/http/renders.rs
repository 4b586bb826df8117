//! Pages are rendered a few at a time. A page's render holds the whole view of what it shows
//! (on `large`, the fleet page's 8,000 GPUs) until its last byte is sent, and renders interleave
//! at every await: under a burst of requests, hundreds were alive at once and the console's
//! memory went from 145 MiB to almost 1 GiB without answering any sooner. Requests for pages now
//! wait for one of [`RenderLimit`]'s permits (holding only the request), and keep it until the
//! page's last byte has gone out. The JSON API, built files, health and metrics do not wait.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::{FromRef, Request, State},
    middleware::Next,
    response::Response,
};
use futures::StreamExt as _;
use tokio::sync::Semaphore;

use super::state::AppState;

/// The pages being rendered at once, at most.
#[derive(Clone, Debug)]
pub struct RenderLimit {
    permits: Arc<Semaphore>,
    size: usize,
}

impl RenderLimit {
    /// Four renders per core, at least eight: the CPU stays busy while some wait for ECS.
    pub fn for_this_machine() -> RenderLimit {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        RenderLimit::new((cores * 4).max(8))
    }

    pub fn new(size: usize) -> RenderLimit {
        RenderLimit {
            permits: Arc::new(Semaphore::new(size)),
            size,
        }
    }

    /// Renders in progress now.
    pub fn in_progress(&self) -> usize {
        self.size - self.permits.available_permits()
    }
}

/// Whether `path` is a page (rendered by the app) rather than the JSON API, a built file, a
/// sign-in route, health or metrics.
fn is_page(path: &str) -> bool {
    const NOT_PAGES: [&str; 6] = [
        "/api/", "/pkg/", "/auth/", "/healthz", "/readyz", "/metrics",
    ];
    !NOT_PAGES.iter().any(|prefix| path.starts_with(prefix)) && path != "/favicon.svg"
}

impl FromRef<AppState> for RenderLimit {
    fn from_ref(state: &AppState) -> Self {
        state.renders.clone()
    }
}

/// Middleware: a page waits for a permit, and its answer holds it until the last byte is sent.
pub async fn limit(State(renders): State<RenderLimit>, request: Request, next: Next) -> Response {
    if !is_page(request.uri().path()) {
        return next.run(request).await;
    }
    let Ok(permit) = renders.permits.clone().acquire_owned().await else {
        // The semaphore is never closed.
        return next.run(request).await;
    };
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &permit;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tower::ServiceExt as _;

    #[tokio::test]
    async fn a_page_holds_its_permit_until_its_last_byte_and_the_next_one_waits() {
        let renders = RenderLimit::new(1);
        let router = axum::Router::new()
            .route(
                "/",
                axum::routing::get(|| async {
                    // A page that streams: its body ends only when it is read to the end.
                    Body::from_stream(
                        futures::stream::iter(["<p>", "done</p>"]).map(Ok::<_, std::io::Error>),
                    )
                }),
            )
            .route("/api/v1/x", axum::routing::get(|| async { "json" }))
            .layer(axum::middleware::from_fn_with_state(renders.clone(), limit));
        let get = |path: &str| {
            http::Request::get(path)
                .body(Body::empty())
                .expect("a request")
        };
        let first = router.clone().oneshot(get("/")).await.expect("answered");
        assert_eq!(renders.in_progress(), 1);
        // The next page waits while the first one's body is unsent; the API does not.
        let waiting = tokio::spawn(router.clone().oneshot(get("/")));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        let api = router
            .clone()
            .oneshot(get("/api/v1/x"))
            .await
            .expect("answered");
        assert_eq!(api.status(), http::StatusCode::OK);
        // Sending the first page to its end lets the second one render.
        let body = axum::body::to_bytes(first.into_body(), usize::MAX)
            .await
            .expect("the body");
        assert_eq!(&body[..], b"<p>done</p>");
        let second = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the second page rendered")
            .expect("joined")
            .expect("answered");
        assert_eq!(renders.in_progress(), 1);
        drop(second);
        assert_eq!(renders.in_progress(), 0);
    }

    #[test]
    fn only_pages_wait() {
        for page in [
            "/",
            "/deployments/prod-a/embed",
            "/cost",
            "/task-definitions",
        ] {
            assert!(is_page(page), "{page}");
        }
        for other in [
            "/api/v1/fleet",
            "/api/set_budget123",
            "/pkg/gpushare.wasm",
            "/auth/callback",
            "/healthz",
            "/readyz",
            "/metrics",
            "/favicon.svg",
        ] {
            assert!(!is_page(other), "{other}");
        }
    }
}
