//! `gpushare bench auth`: what sign-in costs a request. The same console on the same emulated
//! fleet under each sign-in mode: the time to work out who is asking (in process, many times
//! over), and the fleet page's requests per second over HTTP with `wrk`.

use std::{
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::{print_table, Row};
use crate::{
    auth::alb_tokens::{key_server, TokenSigner},
    config::{AuthFlag, BenchAuthArgs, ServeArgs},
};

const ARN: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/bench/50dc6c495c0c9188";
const KID: &str = "0b1e4c6d-bench";

/// One sign-in mode: how the console is set up, and what each request carries.
struct Mode {
    name: &'static str,
    auth: AuthFlag,
    headers: Vec<(&'static str, String)>,
    /// Headers of people the console has not seen yet, one request each.
    fresh: Vec<Vec<(&'static str, String)>>,
}

/// How many never-seen tokens or sessions measure a first verification.
const FRESH: usize = 500;

fn ana_claims(exp: i64) -> serde_json::Value {
    serde_json::json!({
        "sub": "8c2f-ana", "email": "ana@example.com",
        "groups": ["ml-engineers", "search-eng"], "exp": exp,
    })
}

fn alb_header(exp: i64) -> serde_json::Value {
    serde_json::json!({"alg": "ES256", "kid": KID, "signer": ARN, "exp": exp, "typ": "JWT"})
}

/// The headers of a person in the search team, as each mode carries them.
async fn modes() -> anyhow::Result<(Vec<Mode>, String)> {
    let signer = TokenSigner::new().map_err(anyhow::Error::msg)?;
    let key_url = key_server(&signer, KID).await?;
    let later = chrono::Utc::now().timestamp() + 24 * 3600;
    let token = signer.token(&alb_header(later), &ana_claims(later));
    // Tokens that differ only in their expiry: each is new to the console.
    let fresh_tokens = (1..=FRESH as i64)
        .map(|n| {
            let exp = later + n;
            vec![(
                "x-amzn-oidc-data",
                signer.token(&alb_header(exp), &ana_claims(exp)),
            )]
        })
        .collect();
    Ok((
        vec![
            Mode {
                name: "none (loopback)",
                auth: AuthFlag::None,
                headers: Vec::new(),
                fresh: Vec::new(),
            },
            Mode {
                name: "proxy (X-Forwarded-*)",
                auth: AuthFlag::Proxy,
                headers: vec![
                    ("x-forwarded-user", "ana".into()),
                    ("x-forwarded-email", "ana@example.com".into()),
                    ("x-forwarded-groups", "ml-engineers,search-eng".into()),
                ],
                fresh: Vec::new(),
            },
            Mode {
                name: "alb (ES256 token)",
                auth: AuthFlag::Alb,
                headers: vec![("x-amzn-oidc-data", token)],
                fresh: fresh_tokens,
            },
            Mode {
                name: "oidc (session in SQLite)",
                auth: AuthFlag::Oidc,
                // The cookies are made once the console's database is open.
                headers: Vec::new(),
                fresh: Vec::new(),
            },
        ],
        key_url,
    ))
}

fn header_map(headers: &[(&'static str, String)]) -> anyhow::Result<HeaderMap> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(value).context("a header value")?,
        );
    }
    Ok(map)
}

/// `gpushare bench auth`.
pub async fn auth(args: BenchAuthArgs) -> anyhow::Result<()> {
    let mut serve = ServeArgs::default();
    serve.fleet.emulator.scenario = args.scenario.clone();
    let (source, clients) = crate::connect_fleet(&serve.fleet).await?;
    let (modes, key_url) = modes().await?;
    let policy =
        std::path::Path::new(&std::env::var("GPUSHARE_ROOT").unwrap_or_else(|_| ".".into()))
            .join("policy.example.toml");
    let mut rows = Vec::new();
    for mut mode in modes {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let dir = std::env::temp_dir().join(format!(
            "gpushare-bench-auth-{}-{}",
            std::process::id(),
            address.port()
        ));
        let args_for = serve_args_for(&serve, mode.auth, address, &policy, &key_url);
        let audit = Arc::new(crate::audit::SqlAuditLog::open(None, &dir).await?);
        if mode.auth == AuthFlag::Oidc {
            let mut cookies = oidc_sessions(&audit).await?;
            mode.headers = cookies.remove(0);
            mode.fresh = cookies;
        }
        let state = crate::startup::start(&args_for, source.clone(), clients.clone(), audit)?;
        let authenticator = state.authenticator.clone();
        let policy_of = state.services.policy.clone();
        let service = crate::router(state).into_make_service_with_connect_info::<SocketAddr>();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, service).await;
        });

        let (who, per_call, first_sight) =
            time_identify(&authenticator, &policy_of, &mode, args.rounds).await?;
        let rounds = args.rounds;

        // The fleet page over HTTP, once the first snapshot is there.
        let url = format!("http://{address}/");
        wait_for_page(&address, &mode.headers).await?;
        let rate = super::fleet::wrk_with(&url, args.seconds, &mode.headers)
            .await
            .unwrap_or_else(|error| format!("not measured: {error:#}"));
        if let Some(first) = first_sight {
            rows.push(Row {
                what: format!(
                    "{} — who is asking, first request of {} new people",
                    mode.name,
                    mode.fresh.len()
                ),
                value: format!("{first:.1} µs each"),
            });
        }
        rows.push(Row {
            what: format!("{} — who is asking, {rounds} times", mode.name),
            value: format!("{per_call:.1} µs each (as {})", who.label()),
        });
        rows.push(Row {
            what: format!(
                "{} — fleet page req/s, wrk 2 threads 32 connections {} s",
                mode.name, args.seconds
            ),
            value: rate,
        });
        server.abort();
        let _ = std::fs::remove_dir_all(&dir);
    }
    print_table(
        &format!(
            "gpushare bench auth — scenario {}, the fleet page (GET /) under each sign-in mode",
            args.scenario
        ),
        &rows,
    );
    Ok(())
}

/// The console's flags for one sign-in mode, listening on `address`.
fn serve_args_for(
    serve: &ServeArgs,
    auth: AuthFlag,
    address: SocketAddr,
    policy: &std::path::Path,
    key_url: &str,
) -> ServeArgs {
    let mut args = serve.clone();
    args.listen = address;
    args.access.auth = auth;
    if auth != AuthFlag::None {
        args.access.policy = Some(policy.to_path_buf());
    }
    match auth {
        AuthFlag::Proxy => args.access.trusted_proxies = vec!["127.0.0.1".into()],
        AuthFlag::Alb => {
            args.access.alb_arn = Some(ARN.into());
            args.access.alb_key_url = Some(key_url.to_string());
        }
        AuthFlag::Oidc => {
            // Never asked: a request with a session reads only the database.
            args.access.oidc_issuer = Some("http://127.0.0.1:9".into());
            args.access.oidc_client_id = Some("gpushare".into());
            args.access.oidc_client_secret = Some("bench".into());
            args.access.public_url = Some(format!("http://{address}"));
        }
        AuthFlag::None => {}
    }
    args
}

/// Sessions of one person kept in the console's database, as the cookie headers that carry
/// them: one for the repeated requests, then [`FRESH`] never seen.
async fn oidc_sessions(
    audit: &crate::audit::SqlAuditLog,
) -> anyhow::Result<Vec<Vec<(&'static str, String)>>> {
    let ana = crate::auth::proxy::SignedIn {
        subject: "8c2f-ana".into(),
        email: Some("ana@example.com".into()),
        groups: vec!["ml-engineers".into(), "search-eng".into()],
    };
    let mut cookies = Vec::new();
    for n in 0..=FRESH {
        let id = format!("bench-session-{n:06}-0123456789abcdef");
        audit
            .create_session(
                &crate::auth::oidc::session_hash(&id),
                &ana,
                Duration::from_secs(24 * 3600),
            )
            .await?;
        cookies.push(vec![(
            "cookie",
            format!("{}={id}", crate::auth::oidc::SESSION_COOKIE),
        )]);
    }
    Ok(cookies)
}

/// Who is asking, worked out in process: the cost each request pays, `rounds` times, and the
/// first request of a token or session the console has not seen (µs each).
async fn time_identify(
    authenticator: &crate::auth::Authenticator,
    policy: &app::model::policy::Policy,
    mode: &Mode,
    rounds: u32,
) -> anyhow::Result<(app::model::identity::Actor, f64, Option<f64>)> {
    let headers = header_map(&mode.headers)?;
    let peer = Some(SocketAddr::from(([127, 0, 0, 1], 40_000)));
    let who = authenticator
        .identify(peer, &headers, policy)
        .await
        .map_err(|why| anyhow::anyhow!("{}: not signed in: {why}", mode.name))?;
    let started = Instant::now();
    for _ in 0..rounds {
        let _ = authenticator.identify(peer, &headers, policy).await;
    }
    let per_call = started.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
    if mode.fresh.is_empty() {
        return Ok((who, per_call, None));
    }
    let fresh = mode
        .fresh
        .iter()
        .map(|h| header_map(h))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let started = Instant::now();
    for headers in &fresh {
        authenticator
            .identify(peer, headers, policy)
            .await
            .map_err(|why| anyhow::anyhow!("{}: not signed in: {why}", mode.name))?;
    }
    let first = started.elapsed().as_secs_f64() * 1e6 / fresh.len() as f64;
    Ok((who, per_call, Some(first)))
}

/// Waits until `GET /` with `headers` answers 200.
async fn wait_for_page(
    address: &SocketAddr,
    headers: &[(&'static str, String)],
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if super::fleet::http_get_with(&address.to_string(), "/", headers)
            .await
            .is_ok_and(|status| status == 200)
        {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the fleet page did not answer 200 within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
