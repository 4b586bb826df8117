//! Sign-in with an OpenID Connect provider, through the router: a provider in this process
//! (discovery, JWKS, a token endpoint that checks the client's secret and the PKCE verifier,
//! ID tokens signed with an RSA key made here) stands in for the real one, which the end-to-end
//! tests drive in Chromium. Sign-in, the session, sign-out, a session that expires, and sign-ins
//! that must fail: replayed, from another browser, with a forged or foreign ID token.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use aws_lc_rs::{
    rand::SystemRandom,
    rsa::KeySize,
    signature::{KeyPair as _, RsaKeyPair, RSA_PKCS1_SHA256},
};
use axum::{
    body::Body,
    extract::{Form, State},
    http::{header, HeaderMap, Request, StatusCode},
    response::Response,
    routing::{self, post},
    Json, Router,
};
use base64::Engine as _;

use super::support::*;

const CLIENT: &str = "gpushare";
const SECRET: &str = "s3cret";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// What the provider knows: its key, and the codes it gave out with their sign-in's details.
struct Provider {
    issuer: String,
    key: RsaKeyPair,
    /// code → (nonce, PKCE challenge, subject)
    codes: Mutex<HashMap<String, (String, String, String)>>,
    /// How the next ID token is spoiled, if at all.
    spoil: Mutex<Option<&'static str>>,
}

impl Provider {
    fn id_token(&self, nonce: &str, subject: &str) -> String {
        let spoil = *self.spoil.lock().expect("lock");
        let now = chrono::Utc::now().timestamp();
        let header = serde_json::json!({"alg": "RS256", "kid": "k1", "typ": "JWT"});
        let mut claims = serde_json::json!({
            "iss": self.issuer, "aud": CLIENT, "sub": subject, "email": format!("{subject}@example.com"),
            "groups": ["ml-engineers", "search-eng"], "nonce": nonce, "iat": now, "exp": now + 300,
        });
        match spoil {
            Some("nonce") => claims["nonce"] = "another sign-in's".into(),
            Some("audience") => claims["aud"] = "another-client".into(),
            Some("unverified") => {
                claims["email"] = "ceo@example.com".into();
                claims["email_verified"] = false.into();
            }
            _ => {}
        }
        let signed = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let mut signature = vec![0; self.key.public_modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                signed.as_bytes(),
                &mut signature,
            )
            .expect("signed");
        if spoil == Some("signature") {
            signature[10] ^= 1;
        }
        format!("{signed}.{}", b64(&signature))
    }
}

async fn discovery(State(p): State<Arc<Provider>>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "issuer": p.issuer,
        "authorization_endpoint": format!("{}/auth", p.issuer),
        "token_endpoint": format!("{}/token", p.issuer),
        "jwks_uri": format!("{}/jwks", p.issuer),
    }))
}

async fn jwks(State(p): State<Arc<Provider>>) -> Json<serde_json::Value> {
    let public = p.key.public_key();
    Json(serde_json::json!({"keys": [{
        "kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
        "n": b64(public.modulus().big_endian_without_leading_zero()),
        "e": b64(public.exponent().big_endian_without_leading_zero()),
    }]}))
}

async fn token(
    State(p): State<Arc<Provider>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> (StatusCode, Json<serde_json::Value>) {
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT}:{SECRET}"))
    );
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(basic.as_str())
    {
        return (
            StatusCode::UNAUTHORIZED,
            Json(serde_json::json!({"error": "invalid_client"})),
        );
    }
    let code = form.get("code").cloned().unwrap_or_default();
    let Some((nonce, challenge, subject)) = p.codes.lock().expect("lock").remove(&code) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(
                serde_json::json!({"error": "invalid_grant", "error_description": "unknown code"}),
            ),
        );
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    if gpushare::auth::oidc::s256(&verifier) != challenge {
        return (
            StatusCode::BAD_REQUEST,
            Json(
                serde_json::json!({"error": "invalid_grant", "error_description": "PKCE verifier does not match"}),
            ),
        );
    }
    (
        StatusCode::OK,
        Json(
            serde_json::json!({"access_token": "at", "token_type": "Bearer", "id_token": p.id_token(&nonce, &subject)}),
        ),
    )
}

/// Starts the provider on a loopback port.
async fn provider() -> Arc<Provider> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let issuer = format!("http://{}", listener.local_addr().expect("bound"));
    let provider = Arc::new(Provider {
        issuer,
        key: RsaKeyPair::generate(KeySize::Rsa2048).expect("an RSA key"),
        codes: Mutex::default(),
        spoil: Mutex::default(),
    });
    let app = Router::new()
        .route("/.well-known/openid-configuration", routing::get(discovery))
        .route("/jwks", routing::get(jwks))
        .route("/token", post(token))
        .with_state(provider.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    provider
}

/// A console that signs in with `provider`, sessions lasting `ttl` seconds.
async fn console(provider: &Provider, ttl: u64) -> Router {
    console_at(provider, ttl, "http://127.0.0.1:3000").await.0
}

/// [`console`] reached at `public_url`, with its site root (where its database is).
async fn console_at(
    provider: &Provider,
    ttl: u64,
    public_url: &str,
) -> (Router, std::path::PathBuf) {
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../policy.example.toml");
    let (issuer, public_url) = (provider.issuer.clone(), public_url.to_string());
    test_app_configured(false, Vec::new(), None, move |args| {
        args.access.auth = gpushare::config::AuthFlag::Oidc;
        args.access.oidc_issuer = Some(issuer);
        args.access.oidc_client_id = Some(CLIENT.into());
        args.access.oidc_client_secret = Some(SECRET.into());
        args.access.public_url = Some(public_url);
        args.access.policy = Some(policy);
        args.access.session_ttl = ttl;
    })
    .await
}

/// The query parameters of a URL.
fn parameters(url: &str) -> HashMap<String, String> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), percent_decode(v)))
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `name=value` of a `Set-Cookie` header named `name`.
fn set_cookie(response: &Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(str::to_string)
}

fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap_or_default().to_string()
}

/// Signs in through the console and the provider as `subject`; the callback's answer.
async fn sign_in(
    app: &Router,
    provider: &Provider,
    subject: &str,
    next: &str,
) -> (Response, String) {
    let response = send(app, get(&format!("/auth/login?next={next}"))).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()[header::LOCATION]
        .to_str()
        .expect("text")
        .to_string();
    assert!(
        location.starts_with(&format!("{}/auth?", provider.issuer)),
        "{location}"
    );
    let login = set_cookie(&response, "gpushare_login").expect("the sign-in's cookie");
    assert!(
        login.contains("HttpOnly") && login.contains("SameSite=Lax"),
        "{login}"
    );
    let asked = parameters(&location);
    assert_eq!(asked["client_id"], CLIENT);
    assert_eq!(asked["code_challenge_method"], "S256");
    assert_eq!(asked["redirect_uri"], "http://127.0.0.1:3000/auth/callback");
    // The person signs in at the provider, which sends them back with a code.
    let code = format!("code-{}", rand_suffix());
    provider.codes.lock().expect("lock").insert(
        code.clone(),
        (
            asked["nonce"].clone(),
            asked["code_challenge"].clone(),
            subject.to_string(),
        ),
    );
    let callback = format!(
        "/auth/callback?code={code}&state={}&iss={}",
        asked["state"],
        gpushare::outbound::form_encode(&provider.issuer)
    );
    let request = Request::get(&callback)
        .header(header::COOKIE, cookie_pair(&login))
        .body(Body::empty())
        .expect("request");
    (send(app, request).await, callback)
}

async fn status_with(app: &Router, cookie: &str) -> (StatusCode, serde_json::Value) {
    let request = Request::post("/api/console_status")
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .expect("request");
    let response = send(app, request).await;
    let status = response.status();
    (status, json(response).await)
}

#[tokio::test]
async fn a_person_signs_in_with_the_provider_and_signs_out() {
    let provider = provider().await;
    let app = console(&provider, 3600).await;

    // A page without a session goes to the sign-in, and comes back to the page.
    let page = Request::get("/deployments?cluster=ml-dev")
        .header(header::ACCEPT, "text/html")
        .body(Body::empty())
        .expect("request");
    let response = send(&app, page).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        response.headers()[header::LOCATION],
        "/auth/login?next=%2Fdeployments%3Fcluster%3Dml-dev"
    );
    // The API says to sign in.
    let (status, body) = status_with(&app, "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");

    let (response, callback) = sign_in(&app, &provider, "ana", "/deployments").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[header::LOCATION], "/deployments");
    let session = set_cookie(&response, "gpushare_session").expect("a session");
    assert!(
        session.contains("HttpOnly") && session.contains("SameSite=Lax"),
        "{session}"
    );
    assert!(
        !session.contains("Secure"),
        "the public URL is plain HTTP: {session}"
    );
    let cookie = cookie_pair(&session);
    let (status, body) = status_with(&app, &cookie).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["actor"]["subject"], "ana");
    assert_eq!(body["actor"]["email"], "ana@example.com");
    assert_eq!(body["actor"]["auth"], "oidc");
    assert_eq!(body["actor"]["role"], "deployer");
    assert_eq!(body["actor"]["teams"][0], "search");

    // The same answer again is refused: a code and its state are used once.
    let replay = Request::get(&callback)
        .header(header::COOKIE, "gpushare_login=whatever")
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(&app, replay).await.status(), StatusCode::BAD_REQUEST);

    // Signing out ends the session.
    let out = Request::post("/auth/logout")
        .header(header::COOKIE, &cookie)
        .body(Body::empty())
        .expect("request");
    let response = send(&app, out).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[header::LOCATION], "/signed-out");
    assert!(set_cookie(&response, "gpushare_session").is_some_and(|c| c.contains("Max-Age=0")));
    let (status, body) = status_with(&app, &cookie).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("sign in again")));
    let page = text(send(&app, get("/signed-out")).await).await;
    assert!(page.contains("signed out"), "{page}");
}

#[tokio::test]
async fn a_session_expires() {
    let provider = provider().await;
    let app = console(&provider, 1).await;
    let (response, _) = sign_in(&app, &provider, "ana", "/").await;
    let cookie = cookie_pair(&set_cookie(&response, "gpushare_session").expect("a session"));
    assert_eq!(status_with(&app, &cookie).await.0, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, body) = status_with(&app, &cookie).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("expired")));
}

#[tokio::test]
async fn sign_ins_that_cannot_be_believed_are_refused() {
    let provider = provider().await;
    let app = console(&provider, 3600).await;
    for (spoil, says) in [
        ("signature", "signature does not verify"),
        ("nonce", "nonce"),
        ("audience", "aud"),
    ] {
        *provider.spoil.lock().expect("lock") = Some(spoil);
        let (response, _) = sign_in(&app, &provider, "ana", "/").await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{spoil}");
        assert!(
            set_cookie(&response, "gpushare_session").is_none(),
            "{spoil}"
        );
        let page = text(response).await;
        assert!(page.contains(says), "{spoil}: {page}");
    }
    *provider.spoil.lock().expect("lock") = None;

    // An answer for a sign-in this browser did not start.
    let response = send(&app, get("/auth/login")).await;
    let asked = parameters(response.headers()[header::LOCATION].to_str().expect("text"));
    let foreign = Request::get(format!("/auth/callback?code=c&state={}", asked["state"]))
        .header(header::COOKIE, "gpushare_login=another-browsers")
        .body(Body::empty())
        .expect("request");
    let page = text(send(&app, foreign).await).await;
    assert!(page.contains("not started in this browser"), "{page}");

    // The provider's own refusal, and an answer from another issuer.
    let refused = text(
        send(
            &app,
            get("/auth/callback?error=access_denied&error_description=no%20consent"),
        )
        .await,
    )
    .await;
    assert!(refused.contains("access_denied"), "{refused}");
    let mixed_up = text(
        send(
            &app,
            get("/auth/callback?code=c&state=s&iss=https%3A%2F%2Fevil.example.com"),
        )
        .await,
    )
    .await;
    assert!(mixed_up.contains("another provider"), "{mixed_up}");

    // After sign-in the browser goes only to the console's own pages.
    let (response, _) = sign_in(&app, &provider, "ana", "https://evil.example.com/").await;
    assert_eq!(response.headers()[header::LOCATION], "/");
}

/// Every table of the console's database with its number of rows.
async fn rows(site_root: &std::path::Path) -> Vec<(String, i64)> {
    use sqlx::Row as _;
    let url = format!(
        "sqlite://{}?mode=ro",
        site_root.join("data").join("gpushare.db").display()
    );
    let pool = sqlx::sqlite::SqlitePool::connect(&url)
        .await
        .expect("the database opens");
    let tables: Vec<String> = sqlx::query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_sqlx%' ORDER BY name",
    )
    .fetch_all(&pool)
    .await
    .expect("tables")
    .iter()
    .map(|row| row.get::<String, _>("name"))
    .collect();
    let mut counts = Vec::new();
    for table in tables {
        let count: i64 = sqlx::query(&format!("SELECT COUNT(*) AS n FROM \"{table}\""))
            .fetch_one(&pool)
            .await
            .expect("a count")
            .get("n");
        counts.push((table, count));
    }
    counts
}

#[tokio::test]
async fn starting_sign_ins_writes_nothing_to_the_database() {
    let provider = provider().await;
    let (app, site_root) = console_at(&provider, 3600, "http://127.0.0.1:3000").await;
    // The first start makes the console's key; what follows must write nothing.
    let first = send(&app, get("/auth/login")).await;
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    let before = rows(&site_root).await;
    for _ in 0..300 {
        let response = send(&app, get("/auth/login?next=/cost")).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
    }
    // The Price List's prices are stored by a background task as the fleet's instance types are
    // read, whatever the sign-ins do: left out of the comparison.
    let without_prices = |rows: Vec<(String, i64)>| {
        rows.into_iter()
            .filter(|(table, _)| table != "list_prices")
            .collect::<Vec<_>>()
    };
    assert_eq!(
        without_prices(rows(&site_root).await),
        without_prices(before),
        "300 sign-ins started"
    );
    // And a sign-in still finishes.
    let (response, _) = sign_in(&app, &provider, "ana", "/cost").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[header::LOCATION], "/cost");
}

#[tokio::test]
async fn an_address_the_provider_has_not_verified_names_nobody() {
    let provider = provider().await;
    let app = console(&provider, 3600).await;
    *provider.spoil.lock().expect("lock") = Some("unverified");
    let (response, _) = sign_in(&app, &provider, "mallory", "/").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = cookie_pair(&set_cookie(&response, "gpushare_session").expect("a session"));
    let (status, body) = status_with(&app, &cookie).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["actor"]["subject"], "mallory");
    assert!(body["actor"]["email"].is_null(), "{body}");
}

#[tokio::test]
async fn over_https_the_cookies_are_host_only() {
    let provider = provider().await;
    let (app, _) = console_at(&provider, 3600, "https://gpushare.example.com").await;
    let response = send(&app, get("/auth/login")).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let login = set_cookie(&response, "__Host-gpushare_login").expect("a __Host- cookie");
    assert!(
        login.contains("Secure") && login.contains("Path=/") && !login.contains("Domain"),
        "{login}"
    );
    assert!(set_cookie(&response, "gpushare_login").is_none());
    // A cookie of the plain name, which another site on the domain could have set, is not it.
    let asked = parameters(response.headers()[header::LOCATION].to_str().expect("text"));
    let value = cookie_pair(&login)
        .split_once('=')
        .map(|(_, v)| v.to_string())
        .expect("a value");
    let planted = Request::get(format!("/auth/callback?code=c&state={}", asked["state"]))
        .header(header::COOKIE, format!("gpushare_login={value}"))
        .body(Body::empty())
        .expect("request");
    let page = text(send(&app, planted).await).await;
    assert!(page.contains("not started in this browser"), "{page}");
}
