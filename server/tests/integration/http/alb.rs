//! Sign-in behind an Application Load Balancer: tokens signed with a P-256 key made here, whose
//! public key a local key server hands out by kid, as the region's key endpoint does. Valid,
//! expired, wrongly signed, tampered, unpadded and unknown-key tokens, through the router.

use axum::{
    body::Body,
    http::{Request, StatusCode},
    Router,
};
use base64::Engine as _;
use gpushare::auth::alb_tokens::{key_server, TokenSigner};

use super::support::*;

const ARN: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/gpushare/50dc6c495c0c9188";
const KID: &str = "6d5b2c1a-8f3e-4a7b-9c0d-1e2f3a4b5c6d";

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn header(kid: &str, signer: &str, exp: i64) -> serde_json::Value {
    serde_json::json!({
        "alg": "ES256", "kid": kid, "signer": signer, "iss": "https://idp.example.com",
        "client": "gpushare-console", "exp": exp, "typ": "JWT",
    })
}

fn claims(exp: i64) -> serde_json::Value {
    // The padding comes from the length: this one is not a multiple of three.
    serde_json::json!({
        "sub": "8c2f-ana", "email": "ana@example.com", "groups": ["ml-engineers", "search-eng"], "exp": exp,
        "iss": "https://idp.example.com",
    })
}

/// A console behind the load balancer, with the example policy.
async fn console(key_url: String) -> Router {
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../policy.example.toml");
    test_app_behind("10.0.0.9:4000".parse().expect("address"), move |args| {
        args.access.auth = gpushare::config::AuthFlag::Alb;
        args.access.alb_arn = Some(ARN.into());
        args.access.alb_key_url = Some(key_url);
        args.access.alb_issuer = Some("https://idp.example.com".into());
        args.access.alb_client_id = Some("gpushare-console".into());
        args.access.policy = Some(policy);
        args.listen = "0.0.0.0:3000".parse().expect("address");
        args.access.allowed_hosts = vec!["gpushare.example.com".into()];
    })
    .await
}

async fn status_with(app: &Router, token: Option<&str>) -> (StatusCode, serde_json::Value) {
    let mut request = Request::post("/api/console_status");
    if let Some(token) = token {
        request = request.header("x-amzn-oidc-data", token);
    }
    let response = send(app, request.body(Body::empty()).expect("request")).await;
    let status = response.status();
    (status, json(response).await)
}

#[tokio::test]
async fn load_balancer_tokens_are_verified_over_their_padded_text() {
    let signer = TokenSigner::new().expect("a key");
    let app = console(key_server(&signer, KID).await.expect("a key server")).await;
    let later = now() + 600;

    let valid = signer.token(&header(KID, ARN, later), &claims(later));
    let signed_text = valid.rsplit_once('.').map_or("", |(signed, _)| signed);
    assert!(
        signed_text.contains('='),
        "the signed text is padded: {valid}"
    );
    let (status, body) = status_with(&app, Some(&valid)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["actor"]["subject"], "8c2f-ana");
    assert_eq!(body["actor"]["email"], "ana@example.com");
    assert_eq!(body["actor"]["auth"], "alb");
    assert_eq!(body["actor"]["role"], "deployer", "{body}");
    assert_eq!(body["actor"]["teams"][0], "search", "{body}");
    // The key is cached: the same token again needs no fetch and gives the same person.
    assert_eq!(status_with(&app, Some(&valid)).await.0, StatusCode::OK);

    let refusals = [
        ("no token", None, StatusCode::UNAUTHORIZED, "sign in"),
        (
            "expired",
            Some(signer.token(&header(KID, ARN, now() - 120), &claims(now() - 120))),
            StatusCode::UNAUTHORIZED,
            "expired",
        ),
        (
            "signed by another load balancer",
            Some(signer.token(
                &header(KID, &ARN.replace("123456789012", "999999999999"), later),
                &claims(later),
            )),
            StatusCode::FORBIDDEN,
            "not by this console's load balancer",
        ),
        (
            "tampered claims",
            Some({
                let forged = base64::engine::general_purpose::URL_SAFE.encode(
                    serde_json::json!({"sub": "8c2f-ana", "groups": ["platform-admins"], "exp": later})
                        .to_string(),
                );
                let parts: Vec<&str> = valid.split('.').collect();
                format!("{}.{forged}.{}", parts[0], parts[2])
            }),
            StatusCode::FORBIDDEN,
            "does not verify",
        ),
        (
            "unpadded",
            Some(valid.replace('=', "")),
            StatusCode::FORBIDDEN,
            "does not verify",
        ),
        (
            "unknown kid",
            Some(signer.token(
                &header("00000000-0000-0000-0000-000000000000", ARN, later),
                &claims(later),
            )),
            StatusCode::FORBIDDEN,
            "key endpoint does not have",
        ),
        (
            "another algorithm",
            Some({
                let mut other = header(KID, ARN, later);
                other["alg"] = "HS256".into();
                signer.token(&other, &claims(later))
            }),
            StatusCode::FORBIDDEN,
            "only ES256",
        ),
        (
            "another client",
            Some({
                let mut other = header(KID, ARN, later);
                other["client"] = "someone-else".into();
                signer.token(&other, &claims(later))
            }),
            StatusCode::FORBIDDEN,
            "--alb-client-id",
        ),
        (
            "signed with another key",
            Some(
                TokenSigner::new()
                    .expect("a key")
                    .token(&header(KID, ARN, later), &claims(later)),
            ),
            StatusCode::FORBIDDEN,
            "does not verify",
        ),
        (
            "not a token",
            Some("abc".to_string()),
            StatusCode::FORBIDDEN,
            "three parts",
        ),
    ];
    for (case, token, status, says) in refusals {
        let (got, body) = status_with(&app, token.as_deref()).await;
        assert_eq!(got, status, "{case}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{case}: {message}");
    }
}

/// A key endpoint that counts what it is asked: `signer`'s key under `kid`, 404 for any other.
async fn counting_key_server(
    signer: &TokenSigner,
    kid: &str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use axum::{extract::Path, routing::get};
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (pem, kid, counter) = (signer.public_pem(), kid.to_string(), asked.clone());
    let keys = Router::new().route(
        "/{kid}",
        get(move |Path(wanted): Path<String>| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let answer = if wanted == kid {
                (StatusCode::OK, pem.clone())
            } else {
                (StatusCode::NOT_FOUND, "no such key".to_string())
            };
            async move { answer }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(async move {
        let _ = axum::serve(listener, keys).await;
    });
    (format!("http://{address}"), asked)
}

#[tokio::test]
async fn made_up_key_ids_cost_a_bounded_number_of_key_fetches() {
    let signer = TokenSigner::new().expect("a key");
    let (url, asked) = counting_key_server(&signer, KID).await;
    let app = console(url).await;
    let later = now() + 600;
    // Anyone who reaches the console can name any kid: 200 of them, each new.
    for n in 0..200 {
        let kid = format!("00000000-0000-0000-0000-{n:012}");
        let token = signer.token(&header(&kid, ARN, later), &claims(later));
        let (status, _) = status_with(&app, Some(&token)).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }
    let fetched = asked.load(std::sync::atomic::Ordering::SeqCst);
    assert!(fetched <= 12, "{fetched} key fetches for 200 made-up kids");
    let (status, body) = status_with(
        &app,
        Some(&signer.token(&header(KID, ARN, later), &claims(later))),
    )
    .await;
    // The real key may wait for the fetches to come back (one every few seconds), but a
    // token it signed is still told apart from a made-up one.
    assert!(
        status == StatusCode::OK
            || body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("try again in a minute")),
        "{status}: {body}"
    );
}
