//! Who is asking, worked out once per request at the edge: without sign-in the local
//! administrator; behind a sign-in proxy the person its headers name, trusted only from the
//! proxy's addresses. The person's role and teams come from the policy file. The answer goes
//! into the request as an [`Actor`] for the pages, the server functions and the JSON API; a
//! request whose identity cannot be established is answered 401 or 403 with what to do.

pub mod network;
pub mod policy;
pub mod proxy;

use std::{net::SocketAddr, sync::Arc};

use app::model::{
    identity::{Actor, AuthMode},
    policy::Policy,
};
use axum::{
    extract::{ConnectInfo, FromRequestParts, Request, State},
    http::{header, StatusCode},
    middleware::Next,
    response::{Html, IntoResponse, Response},
};

use crate::{error::AppError, http::state::AppState};
use network::Network;

/// How this server learns who is asking.
#[derive(Clone, Debug)]
pub enum Authenticator {
    /// No sign-in: everyone is the local administrator. `insecure` when serving a network
    /// address, which the operator had to ask for.
    None { insecure: bool },
    /// A sign-in proxy at one of `trusted` addresses passes the person in its headers.
    Proxy { trusted: Vec<Network> },
}

/// Why a request's identity could not be established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unidentified {
    /// Nobody signed in (401).
    Missing(String),
    /// Who signed in cannot be believed, or may not use the console (403).
    Refused(String),
}

impl Authenticator {
    pub fn mode(&self) -> AuthMode {
        match self {
            Authenticator::None { .. } => AuthMode::None,
            Authenticator::Proxy { .. } => AuthMode::Proxy,
        }
    }

    /// The person behind a request from `peer` with `headers`, their role and teams from
    /// `policy`.
    pub fn identify(
        &self,
        peer: Option<SocketAddr>,
        headers: &http::HeaderMap,
        policy: &Policy,
    ) -> Result<Actor, Unidentified> {
        let source = peer.map(|p| p.ip().to_string());
        match self {
            Authenticator::None { insecure } => Ok(Actor {
                source,
                insecure: *insecure,
                ..Actor::local()
            }),
            Authenticator::Proxy { trusted } => {
                let signed_in = proxy::signed_in(trusted, peer, headers)?;
                let role = policy.role_for(&signed_in.groups).ok_or_else(|| {
                    Unidentified::Refused(format!(
                        "{} is signed in, but none of their groups ({}) has a role in the console's policy and it gives no default role; ask an admin to add one of the groups to the policy file.",
                        signed_in.subject,
                        if signed_in.groups.is_empty() { "none".to_string() } else { signed_in.groups.join(", ") }
                    ))
                })?;
                Ok(Actor {
                    teams: policy.teams_for(&signed_in.groups),
                    subject: signed_in.subject,
                    email: signed_in.email,
                    groups: signed_in.groups,
                    role,
                    auth: AuthMode::Proxy,
                    source,
                    insecure: false,
                })
            }
        }
    }
}

/// Paths anyone may fetch without an identity: health and readiness probes, metrics, and the
/// site's static files.
fn open_path(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics" | "/favicon.svg")
        || path.starts_with("/pkg/")
}

/// Middleware: puts the [`Actor`] of each request in its extensions, or answers 401/403.
pub async fn identify(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if open_path(request.uri().path()) {
        return next.run(request).await;
    }
    // The extractor also reads a test's mocked peer.
    let (mut parts, body) = request.into_parts();
    let peer = ConnectInfo::<SocketAddr>::from_request_parts(&mut parts, &state)
        .await
        .ok()
        .map(|ConnectInfo(address)| address);
    let mut request = Request::from_parts(parts, body);
    match state
        .authenticator
        .identify(peer, request.headers(), &state.services.policy)
    {
        Ok(actor) => {
            request.extensions_mut().insert(actor);
            next.run(request).await
        }
        Err(why) => {
            let (status, message) = match why {
                Unidentified::Missing(message) => (StatusCode::UNAUTHORIZED, message),
                Unidentified::Refused(message) => (StatusCode::FORBIDDEN, message),
            };
            tracing::info!(%status, path = %request.uri().path(), peer = ?peer, reason = %message, "request refused at sign-in");
            refusal(&request, status, message)
        }
    }
}

/// A refusal as JSON for the API and server functions, as a short page for a browser.
fn refusal(request: &Request, status: StatusCode, message: String) -> Response {
    let wants_html = !request.uri().path().starts_with("/api/")
        && request
            .headers()
            .get(header::ACCEPT)
            .and_then(|a| a.to_str().ok())
            .is_some_and(|a| a.contains("text/html"));
    if !wants_html {
        let error = if status == StatusCode::UNAUTHORIZED {
            AppError::Unauthenticated(message)
        } else {
            AppError::Forbidden(message)
        };
        return error.into_response();
    }
    let title = if status == StatusCode::UNAUTHORIZED {
        "Sign-in needed"
    } else {
        "Not allowed"
    };
    let page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} · gpushare</title></head>\
         <body><main><h1>{title}</h1><p>{}</p></main></body></html>",
        escape(&message)
    );
    (status, Html(page)).into_response()
}

/// Text safe to put in HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The authenticator the flags describe, or why the server must not start with them.
pub fn from_flags(
    mode: AuthMode,
    listen: SocketAddr,
    insecure_no_auth: bool,
    trusted: &[String],
) -> Result<Authenticator, String> {
    match mode {
        AuthMode::None => {
            let insecure = !listen.ip().is_loopback();
            if insecure && !insecure_no_auth {
                return Err(format!(
                    "refusing to serve {listen} without sign-in: anyone who reaches it could register and deploy anything. \
                     Put a sign-in in front (--auth proxy with --trusted-proxy, or --auth alb), listen on 127.0.0.1, \
                     or pass --insecure-no-auth if this network is yours alone"
                ));
            }
            Ok(Authenticator::None { insecure })
        }
        AuthMode::Proxy => {
            if trusted.is_empty() {
                return Err("--auth proxy needs --trusted-proxy: the addresses (or CIDR ranges) of the sign-in proxy, whose identity headers are believed".into());
            }
            let trusted = trusted
                .iter()
                .map(|t| Network::parse(t).map_err(|e| format!("--trusted-proxy {t:?}: {e}")))
                .collect::<Result<_, _>>()?;
            Ok(Authenticator::Proxy { trusted })
        }
        AuthMode::Alb => Err(
            "--auth alb is not available in this version; use --auth proxy behind oauth2-proxy"
                .into(),
        ),
    }
}

/// Shared, for the state.
pub type SharedAuthenticator = Arc<Authenticator>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_sign_in_is_for_loopback_unless_the_operator_insists() {
        let local = SocketAddr::from(([127, 0, 0, 1], 3000));
        let open = SocketAddr::from(([0, 0, 0, 0], 3000));
        assert!(matches!(
            from_flags(AuthMode::None, local, false, &[]),
            Ok(Authenticator::None { insecure: false })
        ));
        let refused = from_flags(AuthMode::None, open, false, &[]).expect_err("refused");
        assert!(refused.contains("--insecure-no-auth"), "{refused}");
        assert!(matches!(
            from_flags(AuthMode::None, open, true, &[]),
            Ok(Authenticator::None { insecure: true })
        ));
        assert!(from_flags(AuthMode::Proxy, open, false, &[])
            .expect_err("no proxy named")
            .contains("--trusted-proxy"));
        assert!(from_flags(AuthMode::Proxy, open, false, &["10.0.0.0/8".into()]).is_ok());
        assert!(from_flags(AuthMode::Proxy, open, false, &["10.0.0.0/99".into()]).is_err());
    }

    #[test]
    fn health_metrics_and_static_files_need_no_sign_in() {
        assert!(open_path("/healthz") && open_path("/pkg/gpushare.wasm"));
        assert!(!open_path("/") && !open_path("/api/v1/fleet") && !open_path("/api/list_audit"));
    }

    #[test]
    fn refusal_pages_escape_the_message() {
        assert_eq!(escape("<b>&\""), "&lt;b&gt;&amp;&quot;");
    }
}
