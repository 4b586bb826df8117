//! Signing in and out with `--auth oidc`: `GET /auth/login`, `GET /auth/callback`,
//! `POST /auth/logout` and the `/signed-out` page. Under the other sign-in modes these say how
//! the console signs people in instead.

use axum::{
    extract::{rejection::QueryRejection, Query, State},
    http::{header, HeaderMap, StatusCode},
    response::{Html, IntoResponse, Response},
};
use serde::Deserialize;

use super::{oidc::LOGIN_COOKIE, Authenticator, SignIn};

/// A small page of the console: a title, a message and a link.
fn page(status: StatusCode, title: &str, message: &str, link: (&str, &str)) -> Response {
    let escape = super::escape;
    let body = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} · gpushare</title>\
         <link rel=\"stylesheet\" href=\"/pkg/gpushare.css\"></head>\
         <body><main class=\"signed-out\"><h1>{title}</h1><p>{}</p><p><a href=\"{}\">{}</a></p></main></body></html>",
        escape(message),
        escape(link.0),
        escape(link.1)
    );
    (status, Html(body)).into_response()
}

/// What a sign-in route says under another sign-in mode.
fn not_here(state: &SignIn) -> Response {
    let how = match &*state.authenticator {
        Authenticator::None { .. } => "without sign-in",
        Authenticator::Proxy { .. } => "through its sign-in proxy",
        Authenticator::Alb(_) => "through its load balancer",
        Authenticator::Oidc(_) => "with its OpenID Connect provider",
    };
    page(
        StatusCode::NOT_FOUND,
        "No sign-in here",
        &format!("This console signs people in {how}; open it at its usual address."),
        ("/", "Open the console"),
    )
}

#[derive(Debug, Default, Deserialize)]
pub struct LoginQuery {
    pub next: Option<String>,
}

/// `GET /auth/login?next=/path`: to the provider's sign-in, and back to `next`.
pub async fn login(
    State(state): State<SignIn>,
    query: Result<Query<LoginQuery>, QueryRejection>,
) -> Response {
    let Authenticator::Oidc(sign_in) = &*state.authenticator else {
        return not_here(&state);
    };
    let next = query.ok().and_then(|Query(q)| q.next);
    match sign_in.begin(next.as_deref()).await {
        Ok((location, cookie)) => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, location), (header::SET_COOKIE, cookie)],
        )
            .into_response(),
        Err(error) => {
            tracing::warn!(%error, "a sign-in could not start");
            page(
                StatusCode::BAD_GATEWAY,
                "Sign-in is not available",
                &format!("The console cannot reach its sign-in provider: {error}. Try again in a minute, and tell the operator if it keeps happening."),
                ("/auth/login", "Try again"),
            )
        }
    }
}

/// What the provider sends back.
#[derive(Debug, Default, Deserialize)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    pub iss: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

/// `GET /auth/callback`: the provider's answer, checked, opens a session.
pub async fn callback(
    State(state): State<SignIn>,
    headers: HeaderMap,
    query: Result<Query<CallbackQuery>, QueryRejection>,
) -> Response {
    let Authenticator::Oidc(sign_in) = &*state.authenticator else {
        return not_here(&state);
    };
    let failed = |why: &str| {
        tracing::info!(reason = %why, "a sign-in failed");
        let mut response = page(
            StatusCode::BAD_REQUEST,
            "Sign-in failed",
            &format!("{why}. Sign in again; if it keeps failing, tell the operator the time it happened."),
            ("/auth/login", "Sign in again"),
        );
        if let Ok(clear) = sign_in.settings().cookie(LOGIN_COOKIE, "", 0).parse() {
            response.headers_mut().append(header::SET_COOKIE, clear);
        }
        response
    };
    let Ok(Query(query)) = query else {
        return failed("the provider's answer could not be read");
    };
    if let Some(error) = &query.error {
        return failed(&format!(
            "the provider refused the sign-in ({error}{})",
            query
                .error_description
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        ));
    }
    // RFC 9207: an answer naming another issuer is another provider's.
    if query
        .iss
        .as_deref()
        .is_some_and(|iss| iss != sign_in.settings().issuer)
    {
        return failed("the answer came from another provider than the console's");
    }
    let (Some(code), Some(returned_state)) = (query.code.as_deref(), query.state.as_deref()) else {
        return failed("the provider's answer has no code or state");
    };
    match sign_in.finish(code, returned_state, &headers).await {
        Ok((next, session)) => {
            let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, next)]).into_response();
            for cookie in [session, sign_in.settings().cookie(LOGIN_COOKIE, "", 0)] {
                if let Ok(value) = cookie.parse() {
                    response.headers_mut().append(header::SET_COOKIE, value);
                }
            }
            response
        }
        Err(why) => failed(&why),
    }
}

/// `POST /auth/logout`: ends the session.
pub async fn logout(State(state): State<SignIn>, headers: HeaderMap) -> Response {
    let Authenticator::Oidc(sign_in) = &*state.authenticator else {
        return not_here(&state);
    };
    let clear = sign_in.end(&headers).await;
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, "/signed-out".to_string()),
            (header::SET_COOKIE, clear),
        ],
    )
        .into_response()
}

/// `GET /signed-out`.
pub async fn signed_out() -> Response {
    page(
        StatusCode::OK,
        "Signed out",
        "You have signed out of gpushare. Your session at the sign-in provider may still be open: sign out there too on a shared computer.",
        ("/auth/login", "Sign in again"),
    )
}
