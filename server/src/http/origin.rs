//! Requests that could come from somewhere else are refused: a `Host` this console does not
//! answer for (DNS rebinding), a state-changing request whose `Origin` or `Sec-Fetch-Site` says
//! another site sent it (cross-site request forgery), and a JSON API body that is not
//! `application/json` (which a plain form or `text/plain` post could send without asking).

use std::{net::SocketAddr, sync::Arc};

use axum::{
    extract::{Request, State},
    http::{header, HeaderMap, Method},
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::error::AppError;

/// The console's own origin and the hosts it answers for.
#[derive(Clone, Debug, Default)]
pub struct OriginGuard {
    /// `https://gpushare.example.com` when `--public-url` names it.
    public_origin: Option<String>,
    /// `host` or `host:port`, lowercase; empty: any host.
    allowed_hosts: Vec<String>,
}

impl OriginGuard {
    /// The guard for a server listening on `listen`, reached at `public_url` when given, also
    /// answering for `extra_hosts`. On loopback without a public URL it answers for
    /// `localhost`, `127.0.0.1` and `[::1]` only.
    pub fn new(
        listen: SocketAddr,
        public_url: Option<&str>,
        extra_hosts: &[String],
    ) -> OriginGuard {
        let public_origin = public_url.map(|url| url.trim_end_matches('/').to_ascii_lowercase());
        let mut allowed_hosts: Vec<String> =
            extra_hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
        if let Some(origin) = &public_origin {
            if let Some((_, host)) = origin.split_once("://") {
                allowed_hosts.push(host.to_string());
            }
        } else if listen.ip().is_loopback() {
            allowed_hosts.extend(["localhost", "127.0.0.1", "[::1]"].map(str::to_string));
        }
        OriginGuard {
            public_origin,
            allowed_hosts,
        }
    }

    /// Whether the console answers for `host` (`name` or `name:port`).
    fn answers_for(&self, host: &str) -> bool {
        if self.allowed_hosts.is_empty() {
            return true;
        }
        let host = host.to_ascii_lowercase();
        let name = host_name(&host);
        self.allowed_hosts
            .iter()
            .any(|allowed| *allowed == host || allowed == name)
    }

    /// Whether an `Origin` is this console's own.
    fn own_origin(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = origin.to_ascii_lowercase();
        match (&self.public_origin, host) {
            (Some(public), _) => origin == *public,
            (None, Some(host)) => {
                let host = host.to_ascii_lowercase();
                origin == format!("http://{host}") || origin == format!("https://{host}")
            }
            (None, None) => false,
        }
    }

    /// What is wrong with a request, or `None`.
    pub fn check(&self, method: &Method, path: &str, headers: &HeaderMap) -> Option<AppError> {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        if let Some(host) = host {
            if !self.answers_for(host) {
                return Some(AppError::Forbidden(format!(
                    "this console does not answer for the host {host:?}; open it at {}",
                    self.public_origin
                        .clone()
                        .unwrap_or_else(|| self.allowed_hosts.join(" or "))
                )));
            }
        }
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            return None;
        }
        let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
        let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
        // A browser sends `Origin: null` for a form posted from a page that asked for no
        // referrer (as the console's pages do), and also from sandboxed frames and data URLs. Only
        // `Sec-Fetch-Site`, which the browser sets and pages cannot, tells the two apart.
        let null_from_own_page = site == Some("same-origin");
        if let Some(origin) = text(header::ORIGIN).filter(|o| *o != "null" || !null_from_own_page) {
            if origin == "null" || !self.own_origin(origin, host) {
                return Some(AppError::Forbidden(format!(
                    "a change must come from the console's own pages, not from {origin}; open the console and do it there"
                )));
            }
        } else if let Some(site) = site {
            if !matches!(site, "same-origin" | "none") {
                return Some(AppError::Forbidden(format!(
                    "a change must come from the console's own pages, and this one came from a {site} page; open the console and do it there"
                )));
            }
        }
        if path.starts_with("/api/v1/") {
            let json = text(header::CONTENT_TYPE).is_some_and(|t| {
                t.split(';')
                    .next()
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
            });
            if !json {
                return Some(AppError::UnsupportedMediaType(
                    "the JSON API takes bodies with Content-Type: application/json".into(),
                ));
            }
        }
        None
    }
}

/// `name` of `name:port`, `[::1]` of `[::1]:port`.
fn host_name(host: &str) -> &str {
    match host.strip_prefix('[') {
        Some(rest) => rest.find(']').map_or(host, |end| &host[..end + 2]),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    }
}

/// Middleware: refuses requests from elsewhere before anything else sees them.
pub async fn guard(
    State(origin): State<Arc<OriginGuard>>,
    request: Request,
    next: Next,
) -> Response {
    match origin.check(request.method(), request.uri().path(), request.headers()) {
        None => next.run(request).await,
        Some(refusal) => {
            tracing::info!(method = %request.method(), path = %request.uri().path(), reason = %refusal, "request refused as not the console's own");
            refusal.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().expect("a header value"));
        }
        map
    }

    fn local() -> OriginGuard {
        OriginGuard::new(SocketAddr::from(([127, 0, 0, 1], 3000)), None, &[])
    }

    #[test]
    fn a_loopback_console_answers_only_for_loopback_names() {
        let guard = local();
        let get = |host: &str| guard.check(&Method::GET, "/", &headers(&[("host", host)]));
        assert!(get("127.0.0.1:3000").is_none());
        assert!(get("localhost:3000").is_none());
        assert!(get("[::1]:3000").is_none());
        assert!(get("evil.example:3000").is_some(), "a rebound name");
        let open = OriginGuard::new(SocketAddr::from(([0, 0, 0, 0], 3000)), None, &[]);
        assert!(open
            .check(&Method::GET, "/", &headers(&[("host", "anything")]))
            .is_none());
        let public = OriginGuard::new(
            SocketAddr::from(([0, 0, 0, 0], 3000)),
            Some("https://gpushare.example.com"),
            &["10.0.0.5:3000".into()],
        );
        assert!(public
            .check(
                &Method::GET,
                "/",
                &headers(&[("host", "gpushare.example.com")])
            )
            .is_none());
        assert!(public
            .check(&Method::GET, "/", &headers(&[("host", "10.0.0.5:3000")]))
            .is_none());
        assert!(public
            .check(
                &Method::GET,
                "/",
                &headers(&[("host", "other.example.com")])
            )
            .is_some());
    }

    #[test]
    fn a_change_from_another_site_is_refused() {
        let guard = local();
        let post = |pairs: &[(&'static str, &str)]| {
            guard.check(&Method::POST, "/api/deploy_service", &headers(pairs))
        };
        assert!(post(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "http://127.0.0.1:3000")
        ])
        .is_none());
        assert!(post(&[
            ("host", "127.0.0.1:3000"),
            ("origin", "https://evil.example")
        ])
        .is_some());
        assert!(post(&[("host", "127.0.0.1:3000"), ("origin", "null")]).is_some());
        assert!(
            post(&[
                ("host", "127.0.0.1:3000"),
                ("origin", "null"),
                ("sec-fetch-site", "cross-site")
            ])
            .is_some(),
            "a sandboxed frame on another site"
        );
        assert!(
            post(&[
                ("host", "127.0.0.1:3000"),
                ("origin", "null"),
                ("sec-fetch-site", "same-origin")
            ])
            .is_none(),
            "a form on the console's own page, which asks for no referrer"
        );
        assert!(post(&[("host", "127.0.0.1:3000"), ("sec-fetch-site", "cross-site")]).is_some());
        assert!(post(&[
            ("host", "127.0.0.1:3000"),
            ("sec-fetch-site", "same-origin")
        ])
        .is_none());
        assert!(
            post(&[("host", "127.0.0.1:3000")]).is_none(),
            "a script without a browser"
        );
        let public = OriginGuard::new(
            SocketAddr::from(([0, 0, 0, 0], 3000)),
            Some("https://gpushare.example.com/"),
            &[],
        );
        let refused = public.check(
            &Method::POST,
            "/api/deploy_service",
            &headers(&[
                ("host", "gpushare.example.com"),
                ("origin", "http://gpushare.example.com"),
            ]),
        );
        assert!(refused.is_some(), "the public URL's scheme counts");
    }

    #[test]
    fn the_json_api_takes_json_only() {
        let guard = local();
        let post = |content_type: &str| {
            guard.check(
                &Method::POST,
                "/api/v1/services/prod/embed/deploy",
                &headers(&[("content-type", content_type)]),
            )
        };
        assert!(post("application/json").is_none());
        assert!(post("application/json; charset=utf-8").is_none());
        assert!(matches!(
            post("text/plain"),
            Some(AppError::UnsupportedMediaType(_))
        ));
        assert!(matches!(
            post("application/x-www-form-urlencoded"),
            Some(AppError::UnsupportedMediaType(_))
        ));
    }
}
