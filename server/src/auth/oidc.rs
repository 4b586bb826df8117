//! Direct sign-in with an OpenID Connect provider: the authorization code flow with PKCE, the ID
//! token verified against the provider's published keys, and a session in the console's
//! database named by an `HttpOnly`, `SameSite=Lax` cookie (`Secure` when the public URL is
//! https).
//!
//! - `/auth/login?next=/path` makes a state, a nonce and a PKCE verifier and keeps them, for ten
//!   minutes, in a cookie signed with the console's own key (HMAC-SHA256; the key is made once
//!   and kept in the database, so that every replica knows it). Nothing is written per sign-in,
//!   so a loop of requests to `/auth/login` costs the database nothing.
//! - `/auth/callback` checks the cookie's signature and age and that its state is the one the
//!   provider sent back, exchanges the code with the verifier, and verifies the ID token: RS256
//!   or ES256 with a key of the provider's JWKS, `iss`, `aud` (and `azp`), `exp`, and the nonce.
//!   The person's session lasts `--session-ttl`.
//! - `POST /auth/logout` ends the session.
//!
//! Over https the cookies are named with the `__Host-` prefix, which browsers accept only when
//! `Secure`, for `Path=/` and without a `Domain`: no other site on the same domain can set them.

mod checks;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use base64::Engine as _;
use serde_json::Value;

use super::{proxy::SignedIn, Unidentified};
use crate::{audit::SqlAuditLog, outbound::Outbound};

use self::checks::{b64url, random, unb64url};
pub use self::checks::{check_claims, cookie_value, s256, safe_next, session_hash};

/// The cookie that names a session (`__Host-` before it over https).
pub const SESSION_COOKIE: &str = "gpushare_session";
/// The cookie that holds a sign-in under way, in the browser that started it (`__Host-`
/// before it over https).
pub const LOGIN_COOKIE: &str = "gpushare_login";
/// The name of the key the sign-in cookies are signed with, in the database.
const LOGIN_KEY: &str = "oidc-login";
/// How long a sign-in may take at the provider.
pub const LOGIN_SECONDS: i64 = 600;
/// Seconds of clock difference allowed on the ID token's times.
const LEEWAY_SECONDS: i64 = 60;
/// How long a session read from the database is believed without reading it again. A sign-out
/// on this replica counts at once; one on another replica sharing the database within this.
pub const SESSION_RECHECK: Duration = Duration::from_secs(5);
/// How often the provider's keys may be fetched again for a kid they did not have.
const JWKS_REFETCH: Duration = Duration::from_secs(30);

/// How the console signs people in with its provider.
#[derive(Clone, Debug)]
pub struct OidcSettings {
    /// The provider's issuer URL, exactly as its discovery document names it.
    pub issuer: String,
    pub client_id: String,
    /// Sent with client_secret_basic when given; a public client relies on PKCE alone.
    pub client_secret: Option<String>,
    /// The scopes asked for, `openid` among them.
    pub scopes: String,
    /// The claim that lists the person's groups.
    pub groups_claim: String,
    /// The console's own origin (`--public-url`), where the provider sends people back.
    pub public_url: String,
    /// How long a session lasts.
    pub session_ttl: Duration,
}

impl OidcSettings {
    /// Where the provider sends people back.
    pub fn redirect_uri(&self) -> String {
        format!("{}/auth/callback", self.public_url.trim_end_matches('/'))
    }

    /// Whether the cookies are `Secure`: when the console is reached over https.
    pub fn secure(&self) -> bool {
        self.public_url.starts_with("https://")
    }

    /// The name a cookie goes by: `__Host-` before `name` over https.
    pub fn cookie_name(&self, name: &str) -> String {
        if self.secure() {
            format!("__Host-{name}")
        } else {
            name.to_string()
        }
    }

    /// A `Set-Cookie` value for `name` = `value` lasting `seconds` (0 clears it).
    pub fn cookie(&self, name: &str, value: &str, seconds: i64) -> String {
        format!(
            "{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={seconds}{}",
            self.cookie_name(name),
            if self.secure() { "; Secure" } else { "" }
        )
    }

    /// The value of the cookie `name` (by [`OidcSettings::cookie_name`]) in a request.
    pub fn cookie_in<'a>(&self, headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
        cookie_value(headers, &self.cookie_name(name))
    }
}

/// A sign-in under way, as the login cookie holds it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PendingSignIn {
    pub state: String,
    pub nonce: String,
    pub verifier: String,
    pub next: String,
    /// Until when (Unix seconds) the sign-in may finish.
    pub until: i64,
}

/// `pending` as a cookie value: its JSON and an HMAC-SHA256 of it under `key`, base64url.
pub fn seal(pending: &PendingSignIn, key: &[u8]) -> String {
    let body = b64url(
        serde_json::to_string(pending)
            .unwrap_or_default()
            .as_bytes(),
    );
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, key);
    let tag = aws_lc_rs::hmac::sign(&key, body.as_bytes());
    format!("{body}.{}", b64url(tag.as_ref()))
}

/// The sign-in a cookie value holds, when its signature under `key` verifies and it is not
/// past its time at `now`; or why not.
pub fn unseal(value: &str, key: &[u8], now: i64) -> Result<PendingSignIn, String> {
    let lost = "this sign-in was not started in this browser (or took longer than ten minutes)";
    let (body, tag) = value.split_once('.').ok_or(lost)?;
    let tag = unb64url(tag).ok_or(lost)?;
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, key);
    aws_lc_rs::hmac::verify(&key, body.as_bytes(), &tag).map_err(|_| lost.to_string())?;
    let pending: PendingSignIn = unb64url(body)
        .and_then(|json| serde_json::from_slice(&json).ok())
        .ok_or(lost)?;
    if pending.until < now {
        return Err(lost.into());
    }
    Ok(pending)
}

/// The provider's endpoints, from its discovery document.
#[derive(Clone, Debug)]
struct Endpoints {
    authorization: String,
    token: String,
    jwks: String,
}

/// One key of the provider's JWKS, ready to verify with.
#[derive(Clone, Debug)]
enum Key {
    Rsa { n: Vec<u8>, e: Vec<u8> },
    P256 { point: Vec<u8> },
}

/// Sign-in with the provider, and the sessions it makes.
pub struct OidcSignIn {
    settings: OidcSettings,
    outbound: Outbound,
    store: Arc<SqlAuditLog>,
    endpoints: tokio::sync::Mutex<Option<Endpoints>>,
    keys: Mutex<(HashMap<String, Key>, Option<Instant>)>,
    /// Sessions read from the database lately, by their hash.
    sessions: super::remembered::Remembered,
    /// The key sign-in cookies are signed with, read from the database the first time.
    login_key: tokio::sync::OnceCell<Vec<u8>>,
}

impl std::fmt::Debug for OidcSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcSignIn")
            .field("issuer", &self.settings.issuer)
            .finish_non_exhaustive()
    }
}

impl OidcSignIn {
    pub fn new(settings: OidcSettings, outbound: Outbound, store: Arc<SqlAuditLog>) -> OidcSignIn {
        OidcSignIn {
            settings,
            outbound,
            store,
            endpoints: tokio::sync::Mutex::new(None),
            keys: Mutex::new((HashMap::new(), None)),
            sessions: super::remembered::Remembered::default(),
            login_key: tokio::sync::OnceCell::new(),
        }
    }

    /// The key the sign-in cookies are signed with: made once, kept in the database.
    async fn login_key(&self) -> Result<&[u8], String> {
        self.login_key
            .get_or_try_init(|| async {
                self.store
                    .console_key(LOGIN_KEY)
                    .await
                    .map_err(|e| format!("the console's database failed: {e}"))
            })
            .await
            .map(Vec::as_slice)
    }

    pub fn settings(&self) -> &OidcSettings {
        &self.settings
    }

    /// The provider's endpoints, read from its discovery document the first time.
    async fn endpoints(&self) -> Result<Endpoints, String> {
        let mut known = self.endpoints.lock().await;
        if let Some(endpoints) = known.as_ref() {
            return Ok(endpoints.clone());
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.settings.issuer.trim_end_matches('/')
        );
        let (status, body) = self.outbound.get(&url).await?;
        if !status.is_success() {
            return Err(format!("{url} answered {status}"));
        }
        let document: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("{url} is not a discovery document: {e}"))?;
        let text = |name: &str| {
            document
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("{url} has no {name}"))
        };
        let issuer = text("issuer")?;
        if issuer != self.settings.issuer {
            return Err(format!(
                "the provider calls itself {issuer:?}, not {:?} as --oidc-issuer says; give its issuer exactly",
                self.settings.issuer
            ));
        }
        let endpoints = Endpoints {
            authorization: text("authorization_endpoint")?,
            token: text("token_endpoint")?,
            jwks: text("jwks_uri")?,
        };
        for url in [&endpoints.authorization, &endpoints.token, &endpoints.jwks] {
            crate::outbound::allowed_url(url)?;
        }
        *known = Some(endpoints.clone());
        Ok(endpoints)
    }

    /// The provider's key `kid`, fetching the JWKS when it is not known (at most every 30 s).
    async fn key(&self, jwks_url: &str, kid: &str) -> Result<Key, String> {
        {
            let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(key) = keys.0.get(kid) {
                return Ok(key.clone());
            }
            if keys.1.is_some_and(|at| at.elapsed() < JWKS_REFETCH) {
                return Err(format!("the provider has no key {kid:?}"));
            }
        }
        let (status, body) = self.outbound.get(jwks_url).await?;
        if !status.is_success() {
            return Err(format!("{jwks_url} answered {status}"));
        }
        let jwks: Value =
            serde_json::from_slice(&body).map_err(|e| format!("{jwks_url} is not a JWKS: {e}"))?;
        let mut fetched = HashMap::new();
        for jwk in jwks
            .get("keys")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let field = |name: &str| jwk.get(name).and_then(Value::as_str);
            let bytes = |name: &str| field(name).and_then(unb64url);
            if field("use").is_some_and(|u| u != "sig") {
                continue;
            }
            let key = match (field("kty"), field("crv")) {
                (Some("RSA"), _) => bytes("n").zip(bytes("e")).map(|(n, e)| Key::Rsa { n, e }),
                (Some("EC"), Some("P-256")) => bytes("x").zip(bytes("y")).and_then(|(x, y)| {
                    (x.len() == 32 && y.len() == 32).then(|| Key::P256 {
                        point: [&[0x04][..], &x, &y].concat(),
                    })
                }),
                _ => None,
            };
            if let (Some(id), Some(key)) = (field("kid"), key) {
                fetched.insert(id.to_string(), key);
            }
        }
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        *keys = (fetched, Some(Instant::now()));
        keys.0
            .get(kid)
            .cloned()
            .ok_or_else(|| format!("the provider has no key {kid:?}"))
    }

    /// Starts a sign-in that returns to `next`: the provider URL to send the browser to, and
    /// the cookie that binds the sign-in to it.
    pub async fn begin(&self, next: Option<&str>) -> Result<(String, String), String> {
        let endpoints = self.endpoints().await?;
        let key = self.login_key().await?;
        let pending = PendingSignIn {
            state: random(24)?,
            nonce: random(24)?,
            verifier: random(48)?,
            next: safe_next(next),
            until: chrono::Utc::now().timestamp() + LOGIN_SECONDS,
        };
        let (state, nonce, verifier) = (&pending.state, &pending.nonce, &pending.verifier);
        let form = crate::outbound::form_encode;
        let separator = if endpoints.authorization.contains('?') {
            '&'
        } else {
            '?'
        };
        let url = format!(
            "{}{separator}response_type=code&client_id={}&redirect_uri={}&scope={}&state={state}&nonce={nonce}&code_challenge={}&code_challenge_method=S256",
            endpoints.authorization,
            form(&self.settings.client_id),
            form(&self.settings.redirect_uri()),
            form(&self.settings.scopes),
            s256(verifier),
        );
        Ok((
            url,
            self.settings
                .cookie(LOGIN_COOKIE, &seal(&pending, key), LOGIN_SECONDS),
        ))
    }

    /// Ends a sign-in at the callback: the path to go to and the session's cookie, or why the
    /// sign-in failed.
    pub async fn finish(
        &self,
        code: &str,
        state: &str,
        headers: &http::HeaderMap,
    ) -> Result<(String, String), String> {
        let key = self.login_key().await?;
        let cookie = self
            .settings
            .cookie_in(headers, LOGIN_COOKIE)
            .unwrap_or_default();
        let pending = unseal(cookie, key, chrono::Utc::now().timestamp())?;
        if pending.state != state {
            return Err(
                "this sign-in was not started in this browser (or took longer than ten minutes)"
                    .into(),
            );
        }
        let endpoints = self.endpoints().await?;
        let redirect = self.settings.redirect_uri();
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect.as_str()),
            ("code_verifier", pending.verifier.as_str()),
        ];
        if self.settings.client_secret.is_none() {
            form.push(("client_id", self.settings.client_id.as_str()));
        }
        let basic = self
            .settings
            .client_secret
            .as_deref()
            .map(|secret| (self.settings.client_id.as_str(), secret));
        let (status, body) = self
            .outbound
            .post_form(&endpoints.token, &form, basic)
            .await?;
        let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(format!(
                "the provider refused the code ({status}: {})",
                answer
                    .get("error_description")
                    .or_else(|| answer.get("error"))
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given")
            ));
        }
        let id_token = answer
            .get("id_token")
            .and_then(Value::as_str)
            .ok_or("the provider answered without an ID token; ask for the openid scope")?;
        let claims = self
            .verify_id_token(&endpoints.jwks, id_token, &pending.nonce)
            .await?;
        let person = super::alb::signed_in(&claims, &self.settings.groups_claim).map_err(
            |why| match why {
                Unidentified::Missing(m) | Unidentified::Refused(m) => m,
            },
        )?;
        let id = random(32)?;
        self.store
            .create_session(&session_hash(&id), &person, self.settings.session_ttl)
            .await
            .map_err(|e| format!("the console's database failed: {e}"))?;
        tracing::info!(subject = %person.subject, "signed in");
        let seconds = i64::try_from(self.settings.session_ttl.as_secs()).unwrap_or(i64::MAX);
        Ok((
            pending.next,
            self.settings.cookie(SESSION_COOKIE, &id, seconds),
        ))
    }

    /// The claims of an ID token, after every check; or why it cannot be believed.
    pub async fn verify_id_token(
        &self,
        jwks_url: &str,
        token: &str,
        nonce: &str,
    ) -> Result<Value, String> {
        let parts: Vec<&str> = token.split('.').collect();
        let [header, payload, signature] = parts.as_slice() else {
            return Err("the ID token does not have three parts".into());
        };
        let decode = |part: &str| {
            unb64url(part)
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .filter(Value::is_object)
                .ok_or_else(|| "the ID token is not base64url JSON".to_string())
        };
        let head = decode(header)?;
        let claims = decode(payload)?;
        let signature = unb64url(signature).ok_or("the ID token's signature is not base64url")?;
        let alg = head.get("alg").and_then(Value::as_str).unwrap_or_default();
        let kid = head.get("kid").and_then(Value::as_str).unwrap_or_default();
        let key = self.key(jwks_url, kid).await?;
        let signed = &token.as_bytes()[..header.len() + 1 + payload.len()];
        let verified = match (alg, &key) {
            ("RS256", Key::Rsa { n, e }) => aws_lc_rs::signature::RsaPublicKeyComponents { n, e }
                .verify(
                    &aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256,
                    signed,
                    &signature,
                )
                .is_ok(),
            ("ES256", Key::P256 { point }) => aws_lc_rs::signature::UnparsedPublicKey::new(
                &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED,
                point,
            )
            .verify(signed, &signature)
            .is_ok(),
            _ => {
                return Err(format!(
                    "the ID token is signed with {alg:?} and a key of another kind; the console takes RS256 and ES256"
                ))
            }
        };
        if !verified {
            return Err("the ID token's signature does not verify".into());
        }
        check_claims(
            &claims,
            &self.settings,
            nonce,
            chrono::Utc::now().timestamp(),
        )?;
        Ok(claims)
    }

    /// The person of the request's session, or why there is none.
    pub async fn session(&self, headers: &http::HeaderMap) -> Result<SignedIn, Unidentified> {
        let Some(id) = self
            .settings
            .cookie_in(headers, SESSION_COOKIE)
            .filter(|v| !v.is_empty())
        else {
            return Err(Unidentified::Missing(
                "sign in first: open /auth/login".into(),
            ));
        };
        let hash = session_hash(id);
        if let Some(person) = self.sessions.get(hash.as_bytes()) {
            return Ok(person);
        }
        match self.store.session(&hash).await {
            Ok(Some((person, expires_at))) => {
                let left = (expires_at - chrono::Utc::now())
                    .to_std()
                    .unwrap_or(Duration::ZERO);
                self.sessions
                    .put(hash.into_bytes(), &person, left.min(SESSION_RECHECK));
                Ok(person)
            }
            Ok(None) => Err(Unidentified::Missing(
                "your session has ended or expired; sign in again at /auth/login".into(),
            )),
            Err(error) => Err(Unidentified::Refused(format!(
                "the console's database cannot say who you are right now ({error}); try again in a moment"
            ))),
        }
    }

    /// Ends the request's session; the cookie that clears it.
    pub async fn end(&self, headers: &http::HeaderMap) -> String {
        if let Some(id) = self
            .settings
            .cookie_in(headers, SESSION_COOKIE)
            .filter(|v| !v.is_empty())
        {
            self.sessions.forget(session_hash(id).as_bytes());
            if let Err(error) = self.store.end_session(&session_hash(id)).await {
                tracing::warn!(%error, "a session could not be ended in the database");
            }
        }
        self.settings.cookie(SESSION_COOKIE, "", 0)
    }
}

#[cfg(test)]
mod tests;
