//! Generated sign-in input. Tokens as a load balancer sends them in `x-amzn-oidc-data`: signed
//! with a key that a key server here hands out (so that the checks past the signature run too),
//! their header and claims generated from a good token's, or their text broken, or nothing like
//! a token at all. And the login cookie an OIDC callback brings back: sealed as the console seals
//! it, then tampered with, re-sealed with another key, expired, or made up.

use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::FutureExt as _;
use rand::{rngs::StdRng, seq::IndexedRandom, Rng};
use serde_json::{json, Value};

use super::{generate, parsed, Answer};
use crate::auth::{
    alb::{AlbSettings, AlbVerifier},
    alb_tokens::{key_server, TokenSigner},
    oidc::{seal, unseal, PendingSignIn},
    Unidentified,
};

const ARN: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/gpushare/50dc6c495c0c9188";
const KID: &str = "6c2d5b53-0f7e-4d2b-9a55-6b3e8c0b1f42";
const ISSUER: &str = "https://idp.example.com";
const CLIENT: &str = "gpushare-console";

/// Fields of a token's header and claims, for generated ones.
const TOKEN_FIELDS: [&str; 10] = [
    "alg", "kid", "signer", "iss", "client", "exp", "sub", "email", "groups", "name",
];

/// The verifier of load balancer tokens and the keys to make tokens and cookies with.
pub struct SignIn {
    verifier: AlbVerifier,
    signer: TokenSigner,
    login_key: Vec<u8>,
}

impl SignIn {
    /// A verifier for the load balancer [`ARN`], whose key [`KID`] a key server on a loopback
    /// port hands out.
    pub async fn new() -> Result<SignIn, String> {
        let signer = TokenSigner::new()?;
        let url = key_server(&signer, KID)
            .await
            .map_err(|e| format!("the key server cannot start: {e}"))?;
        let settings = AlbSettings::new(
            ARN,
            Some(&url),
            Some(ISSUER.into()),
            Some(CLIENT.into()),
            "groups",
        )?;
        Ok(SignIn {
            verifier: AlbVerifier::new(settings, crate::outbound::Outbound::new()?),
            signer,
            login_key: (0..32u8).collect(),
        })
    }

    /// A good token's header and claims.
    fn good_parts() -> (Value, Value) {
        let exp = chrono::Utc::now().timestamp() + 600;
        (
            json!({"alg": "ES256", "kid": KID, "signer": ARN, "iss": ISSUER, "client": CLIENT,
                   "typ": "JWT", "exp": exp}),
            json!({"sub": "fuzz-person", "email": "person@example.com",
                   "groups": ["ml-platform", "search"], "exp": exp, "iss": ISSUER}),
        )
    }

    /// A generated token.
    pub fn alb_token(&self, rng: &mut StdRng) -> String {
        let (mut header, mut claims) = Self::good_parts();
        match rng.random_range(0..5) {
            // Signed by the load balancer's key, with generated header fields or claims.
            0 | 1 => {
                let part = if rng.random_bool(0.5) {
                    &mut header
                } else {
                    &mut claims
                };
                generate::mutate(rng, part, &TOKEN_FIELDS);
                self.signer.token(&header, &claims)
            }
            // A good token with its text broken: a character changed, cut short, a part
            // dropped or repeated.
            2 => {
                let token = self.signer.token(&header, &claims);
                broken(rng, &token)
            }
            // Three parts of random base64, or JSON that is not a token's.
            3 => {
                let b64 = |text: String| {
                    base64::engine::general_purpose::URL_SAFE.encode(text.as_bytes())
                };
                let part = |rng: &mut StdRng| match rng.random_range(0..3) {
                    0 => b64(generate::text(rng)),
                    1 => b64(Value::Object(generate::object(rng, &TOKEN_FIELDS, 2)).to_string()),
                    _ => generate::text(rng),
                };
                (0..rng.random_range(1..5))
                    .map(|_| part(rng))
                    .collect::<Vec<_>>()
                    .join(".")
            }
            _ => generate::text(rng),
        }
    }

    /// How the verifier answered `token` in the header: accepted, refused with a reason, or
    /// failed (a panic, or a refusal without one).
    pub async fn judge_alb(&self, token: &str) -> (Answer, Duration) {
        let mut headers = http::HeaderMap::new();
        // A client can send only a valid header value; other bytes are sent as `?`.
        let sendable: String = token
            .chars()
            .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
            .collect();
        if let Ok(value) = http::HeaderValue::from_str(&sendable) {
            headers.insert("x-amzn-oidc-data", value);
        }
        let started = Instant::now();
        let verified = std::panic::AssertUnwindSafe(self.verifier.verify(&headers))
            .catch_unwind()
            .await;
        let answer = match verified {
            Ok(Ok(_)) => Answer::Accepted,
            Ok(Err(Unidentified::Missing(why) | Unidentified::Refused(why)))
                if !why.trim().is_empty() =>
            {
                Answer::Refused
            }
            Ok(Err(_)) => Answer::Failed("refused without saying why".into()),
            Err(_) => Answer::Failed("panicked".into()),
        };
        (answer, started.elapsed())
    }

    /// A generated login cookie value.
    pub fn login_cookie(&self, rng: &mut StdRng) -> String {
        let pending = PendingSignIn {
            state: generate::text(rng),
            nonce: generate::text(rng),
            verifier: generate::text(rng),
            next: ["/", "/cost", "//evil.example", "/deployments?x=1"]
                .choose(rng)
                .copied()
                .unwrap_or("/")
                .to_string(),
            until: chrono::Utc::now().timestamp() + rng.random_range(-1_000..1_000),
        };
        match rng.random_range(0..5) {
            0 => seal(&pending, &self.login_key),
            1 => broken(rng, &seal(&pending, &self.login_key)),
            // Sealed with another key.
            2 => seal(&pending, b"not the console's key"),
            // Its JSON generated, then sealed with the console's key: what a leaked key would
            // allow, and still no panic.
            3 => {
                let mut body = serde_json::to_value(&pending).unwrap_or(Value::Null);
                generate::mutate(
                    rng,
                    &mut body,
                    &["state", "nonce", "verifier", "next", "until"],
                );
                let body =
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(body.to_string());
                let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &self.login_key);
                let tag = aws_lc_rs::hmac::sign(&key, body.as_bytes());
                format!(
                    "{body}.{}",
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag.as_ref())
                )
            }
            _ => generate::text(rng),
        }
    }

    /// How the login cookie `value` was read.
    pub fn judge_cookie(&self, value: &str) -> (Answer, Duration) {
        let key = self.login_key.clone();
        let value = value.to_string();
        parsed(move || unseal(&value, &key, chrono::Utc::now().timestamp()))
    }
}

/// `text` with one thing wrong: a character changed, cut short, a dot-separated part dropped,
/// repeated or swapped.
fn broken(rng: &mut StdRng, text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return "x".into();
    }
    let mut parts: Vec<&str> = text.split('.').collect();
    match rng.random_range(0..4) {
        0 => {
            let mut chars = chars;
            let at = rng.random_range(0..chars.len());
            chars[at] = *['A', '-', '_', '=', '.', '%', '/', ' ']
                .choose(rng)
                .unwrap_or(&'A');
            chars.into_iter().collect()
        }
        1 => chars[..rng.random_range(0..chars.len())].iter().collect(),
        2 if parts.len() > 1 => {
            let at = rng.random_range(0..parts.len());
            parts.remove(at);
            parts.join(".")
        }
        _ => {
            let at = rng.random_range(0..parts.len());
            let part = parts[at];
            parts.insert(at, part);
            parts.join(".")
        }
    }
}
