//! Sign-in through an AWS Application Load Balancer with OIDC: the load balancer signs the
//! person's claims into `x-amzn-oidc-data`, and every request's token is verified here.
//!
//! - ES256 only, and the token's `signer` must be this console's load balancer (`--alb-arn`):
//!   without that check another account's load balancer in the region could sign claims.
//! - The key for the token's `kid` comes from the region's key endpoint,
//!   `https://public-keys.auth.elb.<region>.amazonaws.com/<kid>`, the region taken from the ARN
//!   and never from the token; keys are cached. The endpoint can be overridden (tests, GovCloud).
//! - The token is base64url *with padding* and the signature covers the text as sent, so the
//!   signature is verified over the raw bytes: a token re-encoded without its padding does not
//!   verify.
//! - `exp` must be in the future; `iss` and `client` must match when configured.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use base64::Engine as _;
use serde_json::Value;

use super::{proxy::SignedIn, Unidentified};
use crate::outbound::Outbound;

/// The header the load balancer puts the signed claims in.
pub const DATA_HEADER: &str = "x-amzn-oidc-data";

/// Keys cached at most; a token naming more kids than this only costs fetches.
const MAX_KEYS: usize = 32;

/// How long a kid the key endpoint did not know is not asked for again.
const MISS_FOR: Duration = Duration::from_secs(60);

/// Kids the key endpoint did not know, kept at most.
const MAX_MISSES: usize = 256;

/// Fetches of keys not cached: at most this many at once, refilled at [`FETCH_REFILL`]. Every
/// token names its kid before its signature can be checked, so without a bound anyone who can
/// reach the console makes it fetch once per made-up kid.
const FETCH_BURST: f64 = 10.0;
const FETCH_REFILL: Duration = Duration::from_secs(6);

/// Seconds of clock difference allowed on `exp`.
const LEEWAY_SECONDS: i64 = 30;

/// The DER prefix of a P-256 public key (SubjectPublicKeyInfo); the uncompressed point follows.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// What the load balancer's tokens are checked against.
#[derive(Clone, Debug)]
pub struct AlbSettings {
    /// The load balancer's ARN, which must sign every token.
    pub arn: String,
    /// Where `<kid>` is appended to fetch a public key.
    pub key_url: String,
    /// The identity provider's issuer, when it must match.
    pub issuer: Option<String>,
    /// The OIDC client id, when it must match.
    pub client_id: Option<String>,
    /// The claim that lists the person's groups.
    pub groups_claim: String,
}

impl AlbSettings {
    /// Settings for the load balancer `arn`, with the key endpoint of its region unless
    /// `key_url` says otherwise; or why the ARN will not do.
    pub fn new(
        arn: &str,
        key_url: Option<&str>,
        issuer: Option<String>,
        client_id: Option<String>,
        groups_claim: &str,
    ) -> Result<AlbSettings, String> {
        let region = region_of(arn)?;
        let key_url = match key_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None if arn.starts_with("arn:aws:") => {
                format!("https://public-keys.auth.elb.{region}.amazonaws.com")
            }
            None => {
                return Err(format!(
                    "{arn} is not in the aws partition, whose key endpoint the console knows; give the endpoint of its region with --alb-key-url"
                ))
            }
        };
        crate::outbound::allowed_url(&key_url).map_err(|e| format!("--alb-key-url: {e}"))?;
        Ok(AlbSettings {
            arn: arn.to_string(),
            key_url,
            issuer,
            client_id,
            groups_claim: groups_claim.to_string(),
        })
    }
}

/// The region of a load balancer ARN
/// (`arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/name/id`).
pub fn region_of(arn: &str) -> Result<&str, String> {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    match parts.as_slice() {
        ["arn", _, "elasticloadbalancing", region, account, resource]
            if !region.is_empty()
                && region
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && account.len() == 12
                && resource.starts_with("loadbalancer/app/") =>
        {
            Ok(region)
        }
        _ => Err(format!(
            "--alb-arn {arn:?} is not an Application Load Balancer ARN; give it as arn:aws:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/app/NAME/ID"
        )),
    }
}

/// Verifies the load balancer's tokens, with its public keys cached.
#[derive(Debug)]
pub struct AlbVerifier {
    settings: AlbSettings,
    outbound: Outbound,
    keys: Mutex<HashMap<String, Vec<u8>>>,
    misses: Mutex<HashMap<String, Instant>>,
    /// Fetches left, and when they were last counted.
    fetches: Mutex<(f64, Instant)>,
    /// Tokens already verified, by their digest, until they expire.
    verified: super::remembered::Remembered,
}

/// A token's segments as sent, decoded.
struct Token<'a> {
    signed: &'a [u8],
    header: Value,
    claims: Value,
    signature: Vec<u8>,
}

fn refused(message: impl Into<String>) -> Unidentified {
    Unidentified::Refused(message.into())
}

/// One base64url segment, with or without padding.
fn decode(segment: &str) -> Result<Vec<u8>, Unidentified> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(segment.trim_end_matches('='))
        .map_err(|_| {
            refused("the sign-in token is not base64url; sign in again through the load balancer")
        })
}

fn parse(token: &str) -> Result<Token<'_>, Unidentified> {
    let mut parts = token.split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(refused(
            "the sign-in token does not have three parts; sign in again through the load balancer",
        ));
    };
    let json = |bytes: Vec<u8>| {
        serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| refused("the sign-in token's parts are not JSON objects"))
    };
    Ok(Token {
        signed: &token.as_bytes()[..header.len() + 1 + claims.len()],
        header: json(decode(header)?)?,
        claims: json(decode(claims)?)?,
        signature: decode(signature)?,
    })
}

/// The uncompressed P-256 point of a PEM public key.
fn p256_point(pem: &str) -> Result<Vec<u8>, String> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| "the key is not PEM".to_string())?;
    match der.strip_prefix(&P256_SPKI_PREFIX[..]) {
        Some(point) if point.len() == 65 && point[0] == 0x04 => Ok(point.to_vec()),
        _ => Err("the key is not a P-256 public key".into()),
    }
}

/// Whether a kid can be put in a URL path as it is.
fn plain_kid(kid: &str) -> bool {
    !kid.is_empty()
        && kid.len() <= 128
        && kid
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl AlbVerifier {
    pub fn new(settings: AlbSettings, outbound: Outbound) -> AlbVerifier {
        AlbVerifier {
            settings,
            outbound,
            keys: Mutex::default(),
            misses: Mutex::default(),
            fetches: Mutex::new((FETCH_BURST, Instant::now())),
            verified: super::remembered::Remembered::default(),
        }
    }

    pub fn settings(&self) -> &AlbSettings {
        &self.settings
    }

    /// The public key (uncompressed point) of `kid`, from the cache or the key endpoint.
    async fn key(&self, kid: &str) -> Result<Vec<u8>, Unidentified> {
        if let Some(key) = self.keys.lock().unwrap_or_else(|p| p.into_inner()).get(kid) {
            return Ok(key.clone());
        }
        let unknown = || {
            refused(format!(
                "the sign-in token names a key ({kid}) the load balancer's key endpoint does not have; sign in again through the load balancer"
            ))
        };
        if !plain_kid(kid) {
            return Err(unknown());
        }
        {
            let mut misses = self.misses.lock().unwrap_or_else(|p| p.into_inner());
            misses.retain(|_, at| at.elapsed() < MISS_FOR);
            if misses.contains_key(kid) {
                return Err(unknown());
            }
        }
        if !self.may_fetch() {
            tracing::warn!(
                kid,
                "a sign-in token names a key not cached, and the key fetches are used up"
            );
            return Err(refused(
                "the sign-in token names a key the console does not have, and it has asked the key endpoint for many unknown keys lately; try again in a minute",
            ));
        }
        let url = format!("{}/{kid}", self.settings.key_url);
        let (status, body) = self.outbound.get(&url).await.map_err(|error| {
            tracing::warn!(%error, "the load balancer's public key could not be fetched");
            Unidentified::Refused(format!(
                "the console cannot fetch the load balancer's public key ({error}); try again in a minute, and tell the operator if it keeps happening"
            ))
        })?;
        let point = if status.is_success() {
            p256_point(&String::from_utf8_lossy(&body))
        } else {
            Err(format!("the key endpoint answered {status}"))
        };
        match point {
            Ok(point) => {
                let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
                if keys.len() >= MAX_KEYS {
                    keys.clear();
                }
                keys.insert(kid.to_string(), point.clone());
                Ok(point)
            }
            Err(why) => {
                tracing::info!(kid, reason = %why, "no public key for a sign-in token's kid");
                let mut misses = self.misses.lock().unwrap_or_else(|p| p.into_inner());
                if misses.len() >= MAX_MISSES {
                    misses.clear();
                }
                misses.insert(kid.to_string(), Instant::now());
                Err(unknown())
            }
        }
    }

    /// Takes one of the key fetches left, if any.
    fn may_fetch(&self) -> bool {
        let mut fetches = self.fetches.lock().unwrap_or_else(|p| p.into_inner());
        let (left, at) = *fetches;
        let refilled =
            (left + at.elapsed().as_secs_f64() / FETCH_REFILL.as_secs_f64()).min(FETCH_BURST);
        if refilled < 1.0 {
            *fetches = (refilled, Instant::now());
            return false;
        }
        *fetches = (refilled - 1.0, Instant::now());
        true
    }

    /// The person the request's token names, or why it cannot be believed.
    pub async fn verify(&self, headers: &http::HeaderMap) -> Result<SignedIn, Unidentified> {
        let token = headers
            .get(DATA_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Unidentified::Missing(
                    "sign in first: open the console through its load balancer, which signs you in"
                        .into(),
                )
            })?;
        // The same bytes verified before are good until they expire: the load balancer sends
        // one token with every request of a sign-in.
        let digest = super::remembered::digest(token);
        if let Some(person) = self.verified.get(&digest) {
            return Ok(person);
        }
        let token = parse(token)?;
        let field = |name: &str| token.header.get(name).and_then(Value::as_str);
        match field("alg") {
            Some("ES256") => {}
            other => {
                return Err(refused(format!(
                    "the sign-in token is signed with {}; only ES256 from the load balancer is accepted",
                    other.unwrap_or("no algorithm")
                )))
            }
        }
        let signer = field("signer").unwrap_or_default();
        if signer != self.settings.arn {
            return Err(refused(format!(
                "the sign-in token was signed by {}, not by this console's load balancer; open the console through its own address",
                if signer.is_empty() { "nobody named" } else { signer }
            )));
        }
        let kid = field("kid").unwrap_or_default();
        let key = self.key(kid).await?;
        aws_lc_rs::signature::UnparsedPublicKey::new(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED,
            &key,
        )
        .verify(token.signed, &token.signature)
        .map_err(|_| {
            refused("the sign-in token's signature does not verify: it was not made by the load balancer, or was changed on the way")
        })?;
        let now = chrono::Utc::now().timestamp();
        let expires = [&token.header, &token.claims]
            .iter()
            .filter_map(|part| part.get("exp").and_then(Value::as_i64))
            .min();
        let good_for = match expires {
            Some(exp) if exp + LEEWAY_SECONDS >= now => {
                Duration::from_secs(u64::try_from(exp + LEEWAY_SECONDS - now).unwrap_or(0))
            }
            Some(_) => {
                return Err(Unidentified::Missing(
                    "your sign-in has expired; reload the page to sign in again".into(),
                ))
            }
            None => return Err(refused("the sign-in token has no expiry (exp)")),
        };
        for (name, wanted, flag) in [
            ("iss", &self.settings.issuer, "--alb-issuer"),
            ("client", &self.settings.client_id, "--alb-client-id"),
        ] {
            if let Some(wanted) = wanted {
                let got = field(name).unwrap_or_default();
                if got != wanted {
                    return Err(refused(format!(
                        "the sign-in token's {name} is {got:?}, not {wanted:?} as {flag} says; sign in through the console's own identity provider"
                    )));
                }
            }
        }
        let person = signed_in(&token.claims, &self.settings.groups_claim)?;
        self.verified.put(digest, &person, good_for);
        Ok(person)
    }
}

/// The person the claims name: `sub`, `email`, and the groups in `groups_claim` (a list, or a
/// comma-separated text).
pub fn signed_in(claims: &Value, groups_claim: &str) -> Result<SignedIn, Unidentified> {
    let text = |name: &str| {
        claims
            .get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let subject = text("sub").ok_or_else(|| refused("the sign-in names nobody (no sub claim)"))?;
    let groups = match claims.get(groups_claim) {
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(Value::String(list)) => list
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    // An address the provider has not verified is whatever the person typed: it must not name
    // them in the audit log or pass for someone else's (Cognito sends the flag as a text).
    let unverified = matches!(claims.get("email_verified"), Some(Value::Bool(false)))
        || claims
            .get("email_verified")
            .and_then(Value::as_str)
            .is_some_and(|v| v.eq_ignore_ascii_case("false"));
    Ok(SignedIn {
        subject,
        email: text("email").filter(|_| !unverified),
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_comes_from_the_arn_and_only_from_it() {
        let arn = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/app/console/50dc6c495c0c9188";
        assert_eq!(region_of(arn), Ok("eu-west-1"));
        let settings = AlbSettings::new(arn, None, None, None, "groups").expect("valid");
        assert_eq!(
            settings.key_url,
            "https://public-keys.auth.elb.eu-west-1.amazonaws.com"
        );
        for bad in [
            "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/nlb/1",
            "arn:aws:ecs:eu-west-1:123456789012:cluster/x",
            "eu-west-1",
            "arn:aws:elasticloadbalancing:EU/../:123456789012:loadbalancer/app/a/b",
        ] {
            assert!(region_of(bad).is_err(), "{bad}");
        }
        let gov =
            "arn:aws-us-gov:elasticloadbalancing:us-gov-west-1:123456789012:loadbalancer/app/c/1";
        assert!(AlbSettings::new(gov, None, None, None, "groups")
            .expect_err("needs its key URL")
            .contains("--alb-key-url"));
        assert!(
            AlbSettings::new(gov, Some("http://evil.example/k"), None, None, "groups").is_err()
        );
    }

    #[test]
    fn claims_name_the_person_and_groups_in_either_form() {
        let claims =
            serde_json::json!({"sub": "u-1", "email": "ana@example.com", "groups": ["a", "b"]});
        let person = signed_in(&claims, "groups").expect("named");
        assert_eq!(person.subject, "u-1");
        assert_eq!(person.email.as_deref(), Some("ana@example.com"));
        assert_eq!(person.groups, ["a", "b"]);
        let comma = serde_json::json!({"sub": "u-2", "cognito:groups": "x, y"});
        assert_eq!(
            signed_in(&comma, "cognito:groups").expect("named").groups,
            ["x", "y"]
        );
        assert!(signed_in(&serde_json::json!({"email": "a@b"}), "groups").is_err());
        for unverified in [serde_json::json!(false), serde_json::json!("false")] {
            let claims = serde_json::json!({"sub": "u-3", "email": "ceo@example.com", "email_verified": unverified});
            assert_eq!(signed_in(&claims, "groups").expect("named").email, None);
        }
        let verified =
            serde_json::json!({"sub": "u-4", "email": "ana@example.com", "email_verified": true});
        assert_eq!(
            signed_in(&verified, "groups")
                .expect("named")
                .email
                .as_deref(),
            Some("ana@example.com")
        );
    }

    #[test]
    fn kids_go_into_the_url_only_when_plain() {
        assert!(plain_kid("0b2b8a1c-4d5e-6f70-8192-a3b4c5d6e7f8"));
        assert!(!plain_kid("../../etc/passwd"));
        assert!(!plain_kid(""));
        assert!(!plain_kid("a?b=c"));
    }
}
