//! Sign-in behind an Application Load Balancer: tokens signed with a P-256 key made here, whose
//! public key a local key server hands out by kid, as the region's key endpoint does. Valid,
//! expired, wrongly signed, tampered, unpadded and unknown-key tokens, through the router.

use aws_lc_rs::{
    rand::SystemRandom,
    signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING},
};
use axum::{
    body::Body,
    http::{Request, StatusCode},
    Router,
};
use base64::Engine as _;

use super::support::*;

const ARN: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/gpushare/50dc6c495c0c9188";
const KID: &str = "6d5b2c1a-8f3e-4a7b-9c0d-1e2f3a4b5c6d";

/// A signing key and the PEM of its public key, as the key endpoint serves it.
struct Signer {
    pair: EcdsaKeyPair,
}

impl Signer {
    fn new() -> Signer {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("a key");
        Signer {
            pair: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
                .expect("the key reads back"),
        }
    }

    fn public_pem(&self) -> String {
        let mut der = vec![
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
            0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
        ];
        der.extend_from_slice(self.pair.public_key().as_ref());
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        format!("-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n")
    }

    /// A token as the load balancer makes it: padded base64url, signed over the padded text.
    /// The claims get a filler, if need be, so that the signed text itself has padding.
    fn token(&self, header: serde_json::Value, mut claims: serde_json::Value) -> String {
        let encode = |value: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE.encode(value.to_string())
        };
        let mut filler = String::new();
        while !encode(&claims).ends_with('=') {
            filler.push('x');
            claims["filler"] = filler.clone().into();
        }
        let signed = format!("{}.{}", encode(&header), encode(&claims));
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signed.as_bytes())
            .expect("signed");
        format!(
            "{signed}.{}",
            base64::engine::general_purpose::URL_SAFE.encode(signature.as_ref())
        )
    }
}

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

/// A key server on a loopback port that knows `signer`'s key under [`KID`]; its URL.
async fn key_server(signer: &Signer) -> String {
    let pem = signer.public_pem();
    let keys = Router::new().route(
        "/{kid}",
        axum::routing::get(
            move |axum::extract::Path(kid): axum::extract::Path<String>| {
                let pem = pem.clone();
                async move {
                    if kid == KID {
                        (StatusCode::OK, pem)
                    } else {
                        (StatusCode::NOT_FOUND, "no such key".to_string())
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(async move {
        let _ = axum::serve(listener, keys).await;
    });
    format!("http://{address}")
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
    let signer = Signer::new();
    let app = console(key_server(&signer).await).await;
    let later = now() + 600;

    let valid = signer.token(header(KID, ARN, later), claims(later));
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
            Some(signer.token(header(KID, ARN, now() - 120), claims(now() - 120))),
            StatusCode::UNAUTHORIZED,
            "expired",
        ),
        (
            "signed by another load balancer",
            Some(signer.token(
                header(KID, &ARN.replace("123456789012", "999999999999"), later),
                claims(later),
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
                header("00000000-0000-0000-0000-000000000000", ARN, later),
                claims(later),
            )),
            StatusCode::FORBIDDEN,
            "key endpoint does not have",
        ),
        (
            "another algorithm",
            Some({
                let mut other = header(KID, ARN, later);
                other["alg"] = "HS256".into();
                signer.token(other, claims(later))
            }),
            StatusCode::FORBIDDEN,
            "only ES256",
        ),
        (
            "another client",
            Some({
                let mut other = header(KID, ARN, later);
                other["client"] = "someone-else".into();
                signer.token(other, claims(later))
            }),
            StatusCode::FORBIDDEN,
            "--alb-client-id",
        ),
        (
            "signed with another key",
            Some(Signer::new().token(header(KID, ARN, later), claims(later))),
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
