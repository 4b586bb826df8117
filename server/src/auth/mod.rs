//! Who is asking, worked out once per request at the edge: without sign-in the local
//! administrator; behind a sign-in proxy the person its headers name, trusted only from the
//! proxy's addresses; behind an Application Load Balancer the person its signed token names;
//! with an OpenID Connect provider the person of the session the provider's sign-in opened.
//! The person's role and teams come from the policy file. The answer goes
//! into the request as an [`Actor`] for the pages, the server functions and the JSON API; a
//! request whose identity cannot be established is answered 401 or 403 with what to do.

pub mod alb;
pub mod alb_tokens;
pub mod network;
pub mod oidc;
pub mod policy;
pub mod proxy;
pub mod remembered;
pub mod routes;
pub mod sessions;

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

use crate::error::{wants_html, AppError};
use network::Network;

/// How this server learns who is asking.
#[derive(Clone, Debug)]
pub enum Authenticator {
    /// No sign-in: everyone is the local administrator. `insecure` when serving a network
    /// address, which the operator had to ask for.
    None { insecure: bool },
    /// A sign-in proxy at one of `trusted` addresses passes the person in its headers.
    Proxy { trusted: Vec<Network> },
    /// An Application Load Balancer signs the person's claims into every request.
    Alb(Arc<alb::AlbVerifier>),
    /// The console signs people in with an OpenID Connect provider and keeps their session.
    Oidc(Arc<oidc::OidcSignIn>),
}

/// Why a request's identity could not be established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unidentified {
    /// Nobody signed in (401).
    Missing(String),
    /// Who signed in cannot be believed, or may not use the console (403).
    Refused(String),
}

impl std::fmt::Display for Unidentified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unidentified::Missing(why) | Unidentified::Refused(why) => f.write_str(why),
        }
    }
}

impl Authenticator {
    pub fn mode(&self) -> AuthMode {
        match self {
            Authenticator::None { .. } => AuthMode::None,
            Authenticator::Proxy { .. } => AuthMode::Proxy,
            Authenticator::Alb(_) => AuthMode::Alb,
            Authenticator::Oidc(_) => AuthMode::Oidc,
        }
    }

    /// The person behind a request from `peer` with `headers`, their role and teams from
    /// `policy`.
    pub async fn identify(
        &self,
        peer: Option<SocketAddr>,
        headers: &http::HeaderMap,
        policy: &Policy,
    ) -> Result<Actor, Unidentified> {
        let source = peer.map(|p| p.ip().to_string());
        let signed_in = match self {
            Authenticator::None { insecure } => {
                return Ok(Actor {
                    source,
                    insecure: *insecure,
                    ..Actor::local()
                })
            }
            Authenticator::Proxy { trusted } => proxy::signed_in(trusted, peer, headers)?,
            Authenticator::Alb(verifier) => verifier.verify(headers).await?,
            Authenticator::Oidc(sign_in) => sign_in.session(headers).await?,
        };
        let role = policy.role_for(&signed_in.groups).ok_or_else(|| {
            Unidentified::Refused(format!(
                "{} is signed in, but none of their groups ({}) has a role in the console's policy and it gives no default role; ask an admin to add one of the groups to the policy file.",
                signed_in.email.as_deref().unwrap_or(&signed_in.subject),
                if signed_in.groups.is_empty() { "none".to_string() } else { signed_in.groups.join(", ") }
            ))
        })?;
        Ok(Actor {
            teams: policy.teams_for(&signed_in.groups),
            subject: signed_in.subject,
            email: signed_in.email,
            groups: signed_in.groups,
            role,
            auth: self.mode(),
            source,
            insecure: false,
        })
    }
}

/// Paths anyone may fetch without an identity: health and readiness probes, metrics, the
/// site's static files, and signing in and out.
fn open_path(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/readyz" | "/metrics" | "/favicon.svg" | "/signed-out"
    ) || path.starts_with("/pkg/")
        || path.starts_with("/auth/")
}

/// What the sign-in reads of the server's state: the way people sign in, and the use cases'
/// context (the policy, and the people it notes as they come).
#[derive(Clone)]
pub struct SignIn {
    pub authenticator: Arc<Authenticator>,
    pub services: app::service::ServiceContext,
}

/// Middleware: puts the [`Actor`] of each request in its extensions, or answers 401/403.
pub async fn identify(State(state): State<SignIn>, request: Request, next: Next) -> Response {
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
        .await
    {
        Ok(actor) => {
            // Who the sign-in says this is now: an approval of an earlier request of theirs is
            // sent with these rights, not with the ones they asked with.
            if actor.auth != AuthMode::None {
                if let Err(error) = state.services.people.seen(&actor).await {
                    tracing::warn!(%error, "who signed in could not be noted");
                }
            }
            request.extensions_mut().insert(actor);
            next.run(request).await
        }
        Err(why) => {
            let (status, message) = match why {
                Unidentified::Missing(message) => (StatusCode::UNAUTHORIZED, message),
                Unidentified::Refused(message) => (StatusCode::FORBIDDEN, message),
            };
            // A page opened without a session goes to the provider's sign-in and comes back.
            if status == StatusCode::UNAUTHORIZED
                && matches!(*state.authenticator, Authenticator::Oidc(_))
                && request.method() == http::Method::GET
                && wants_html(&request)
            {
                let next = request.uri().path_and_query().map_or("/", |p| p.as_str());
                let location = format!("/auth/login?next={}", crate::outbound::form_encode(next));
                return (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response();
            }
            tracing::info!(%status, path = %request.uri().path(), peer = ?peer, reason = %message, "request refused at sign-in");
            refusal(&request, status, message)
        }
    }
}

/// A refusal as JSON for the API and server functions, as a short page for a browser.
fn refusal(request: &Request, status: StatusCode, message: String) -> Response {
    if !wants_html(request) {
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

/// The authenticator the flags describe, or why the server must not start with them. `store`
/// keeps the sessions of `--auth oidc`.
pub fn from_flags(
    access: &crate::config::AccessArgs,
    listen: SocketAddr,
    store: &Arc<crate::audit::SqlAuditLog>,
) -> Result<Authenticator, String> {
    check_exposure(access, listen)?;
    match access.auth.mode() {
        AuthMode::None => {
            let insecure = !listen.ip().is_loopback();
            if insecure && !access.insecure_no_auth {
                return Err(format!(
                    "refusing to serve {listen} without sign-in: anyone who reaches it could register and deploy anything. \
                     Put a sign-in in front (--auth proxy with --trusted-proxy, or --auth alb with --alb-arn), listen on 127.0.0.1, \
                     or pass --insecure-no-auth if this network is yours alone"
                ));
            }
            Ok(Authenticator::None { insecure })
        }
        AuthMode::Proxy => proxy_from_flags(access),
        AuthMode::Alb => {
            let arn = access.alb_arn.as_deref().ok_or(
                "--auth alb needs --alb-arn: the ARN of the load balancer whose sign-in tokens are believed (tokens signed by any other are refused)",
            )?;
            let settings = alb::AlbSettings::new(
                arn,
                access.alb_key_url.as_deref(),
                access.alb_issuer.clone(),
                access.alb_client_id.clone(),
                &access.groups_claim,
            )?;
            let outbound = crate::outbound::Outbound::new()?;
            Ok(Authenticator::Alb(Arc::new(alb::AlbVerifier::new(
                settings, outbound,
            ))))
        }
        AuthMode::Oidc => oidc_from_flags(access, store),
    }
}

/// `--auth proxy`: the sign-in proxy's addresses, and never every address unless said so.
fn proxy_from_flags(access: &crate::config::AccessArgs) -> Result<Authenticator, String> {
    if access.trusted_proxies.is_empty() {
        return Err("--auth proxy needs --trusted-proxy: the addresses (or CIDR ranges) of the sign-in proxy, whose identity headers are believed".into());
    }
    let trusted: Vec<Network> = access
        .trusted_proxies
        .iter()
        .map(|t| Network::parse(t).map_err(|e| format!("--trusted-proxy {t:?}: {e}")))
        .collect::<Result<_, _>>()?;
    if let Some(everything) = access
        .trusted_proxies
        .iter()
        .zip(&trusted)
        .find(|(_, network)| network.is_everything())
        .map(|(text, _)| text)
    {
        if !access.trust_any_proxy {
            return Err(format!(
                "--trusted-proxy {everything} trusts every address: anyone who reaches the console could send identity headers and be believed. \
                 Name the sign-in proxy's own addresses, or, if nothing but the proxy can reach the console, say so with --trust-any-proxy"
            ));
        }
    }
    Ok(Authenticator::Proxy { trusted })
}

/// `--auth oidc`: the provider, the console's client and URL, and `openid` among the scopes.
fn oidc_from_flags(
    access: &crate::config::AccessArgs,
    store: &Arc<crate::audit::SqlAuditLog>,
) -> Result<Authenticator, String> {
    let needs = |what: &str| format!("--auth oidc needs {what}");
    let issuer = access.oidc_issuer.clone().ok_or_else(|| {
        needs("--oidc-issuer: the provider's issuer URL, as its discovery document names it")
    })?;
    crate::outbound::allowed_url(&issuer).map_err(|e| format!("--oidc-issuer: {e}"))?;
    let client_id = access
        .oidc_client_id
        .clone()
        .ok_or_else(|| needs("--oidc-client-id: the console's client at the provider"))?;
    let public_url = access.public_url.clone().ok_or_else(|| {
        needs("--public-url: the console's own URL, where the provider sends people back (<URL>/auth/callback)")
    })?;
    if !access.oidc_scopes.split_whitespace().any(|s| s == "openid") {
        return Err("--oidc-scopes must include openid".into());
    }
    let settings = oidc::OidcSettings {
        issuer,
        client_id,
        client_secret: access.oidc_client_secret.clone(),
        scopes: access.oidc_scopes.clone(),
        groups_claim: access.groups_claim.clone(),
        public_url,
        session_ttl: std::time::Duration::from_secs(access.session_ttl),
    };
    let outbound = crate::outbound::Outbound::new()?;
    Ok(Authenticator::Oidc(Arc::new(oidc::OidcSignIn::new(
        settings,
        outbound,
        store.clone(),
    ))))
}

/// Refuses flags that leave the console open to more than its operator meant: a sign-in without a
/// policy file (nobody would be let in, so operators used to fall back on "everyone is a
/// viewer"), and a network address without the console's own host names (every `Host` would be
/// answered, so DNS rebinding could reach it).
fn check_exposure(access: &crate::config::AccessArgs, listen: SocketAddr) -> Result<(), String> {
    let mode = access.auth.mode();
    if mode != AuthMode::None && access.policy.is_none() {
        return Err(format!(
            "--auth {} needs --policy: the file that gives people's groups their roles and teams (see policy.example.toml). \
             Without one nobody who signs in may use the console",
            mode.as_str()
        ));
    }
    if !listen.ip().is_loopback() && access.public_url.is_none() && access.allowed_hosts.is_empty()
    {
        return Err(format!(
            "refusing to serve {listen} without knowing the console's own host name: a request for any Host would be answered, \
             which lets another site reach it through DNS rebinding. Give --public-url (the URL people open, e.g. https://gpushare.example.com) \
             or --allowed-host (each host name it is reached by)"
        ));
    }
    Ok(())
}

/// Shared, for the state.
pub type SharedAuthenticator = Arc<Authenticator>;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn no_sign_in_is_for_loopback_unless_the_operator_insists() {
        use crate::config::{AccessArgs, AuthFlag};
        let dir = std::env::temp_dir().join(format!("gpushare-flags-{}", std::process::id()));
        let store = Arc::new(
            crate::audit::SqlAuditLog::open(None, &dir)
                .await
                .expect("a database"),
        );
        let from_flags = |access: &AccessArgs, listen| from_flags(access, listen, &store);
        let local = SocketAddr::from(([127, 0, 0, 1], 3000));
        let open = SocketAddr::from(([0, 0, 0, 0], 3000));
        let policy = dir.join("policy.toml");
        std::fs::create_dir_all(&dir).expect("a folder");
        std::fs::write(&policy, "").expect("a policy file");
        let flags = |auth: AuthFlag, insecure: bool, trusted: &[&str]| AccessArgs {
            auth,
            insecure_no_auth: insecure,
            trusted_proxies: trusted.iter().map(|t| t.to_string()).collect(),
            allowed_hosts: vec!["gpushare.internal".into()],
            policy: (auth != AuthFlag::None).then(|| policy.clone()),
            ..AccessArgs::default()
        };
        assert!(matches!(
            from_flags(&flags(AuthFlag::None, false, &[]), local),
            Ok(Authenticator::None { insecure: false })
        ));
        let refused = from_flags(&flags(AuthFlag::None, false, &[]), open).expect_err("refused");
        assert!(refused.contains("--insecure-no-auth"), "{refused}");
        assert!(matches!(
            from_flags(&flags(AuthFlag::None, true, &[]), open),
            Ok(Authenticator::None { insecure: true })
        ));
        assert!(from_flags(&flags(AuthFlag::Proxy, false, &[]), open)
            .expect_err("no proxy named")
            .contains("--trusted-proxy"));
        assert!(from_flags(&flags(AuthFlag::Proxy, false, &["10.0.0.0/8"]), open).is_ok());
        assert!(from_flags(&flags(AuthFlag::Proxy, false, &["10.0.0.0/99"]), open).is_err());
        // Trusting every address is said twice or not at all.
        for everything in ["0.0.0.0/0", "::/0"] {
            let refused = from_flags(
                &flags(AuthFlag::Proxy, false, &["10.0.0.1", everything]),
                open,
            )
            .expect_err("every address trusted");
            assert!(refused.contains("--trust-any-proxy"), "{refused}");
            let insisted = AccessArgs {
                trust_any_proxy: true,
                ..flags(AuthFlag::Proxy, false, &[everything])
            };
            assert!(from_flags(&insisted, open).is_ok());
        }
        // A sign-in without a policy would let nobody in; it is refused at start.
        let no_policy = AccessArgs {
            policy: None,
            ..flags(AuthFlag::Proxy, false, &["10.0.0.1"])
        };
        assert!(from_flags(&no_policy, open)
            .expect_err("no policy")
            .contains("--policy"));
        // A network address needs the console's own host names.
        let any_host = AccessArgs {
            allowed_hosts: Vec::new(),
            ..flags(AuthFlag::Proxy, false, &["10.0.0.1"])
        };
        let refused = from_flags(&any_host, open).expect_err("every Host answered");
        assert!(
            refused.contains("--public-url") && refused.contains("--allowed-host"),
            "{refused}"
        );
        assert!(
            from_flags(&any_host, local).is_ok(),
            "loopback answers only its own names"
        );
        let insecure_any_host = AccessArgs {
            allowed_hosts: Vec::new(),
            ..flags(AuthFlag::None, true, &[])
        };
        assert!(from_flags(&insecure_any_host, open).is_err());
        assert!(from_flags(&flags(AuthFlag::Alb, false, &[]), open)
            .expect_err("no load balancer named")
            .contains("--alb-arn"));
        let oidc = AccessArgs {
            auth: AuthFlag::Oidc,
            oidc_issuer: Some("https://idp.example.com".into()),
            oidc_client_id: Some("gpushare".into()),
            ..flags(AuthFlag::Oidc, false, &[])
        };
        assert!(from_flags(&oidc, open)
            .expect_err("no public URL")
            .contains("--public-url"));
        let oidc = AccessArgs {
            public_url: Some("https://gpushare.example.com".into()),
            ..oidc
        };
        assert!(matches!(
            from_flags(&oidc, open),
            Ok(Authenticator::Oidc(_))
        ));
        let plain = AccessArgs {
            oidc_issuer: Some("http://idp.example.com".into()),
            ..oidc.clone()
        };
        assert!(from_flags(&plain, open)
            .expect_err("plain HTTP to a provider elsewhere")
            .contains("--oidc-issuer"));
        let _ = std::fs::remove_dir_all(&dir);
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
