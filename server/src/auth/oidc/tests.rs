//! Unit tests of the `oidc` module.

use super::*;

fn settings() -> OidcSettings {
    OidcSettings {
        issuer: "https://idp.example.com".into(),
        client_id: "gpushare".into(),
        client_secret: None,
        scopes: "openid email".into(),
        groups_claim: "groups".into(),
        public_url: "https://gpushare.example.com".into(),
        session_ttl: Duration::from_secs(3600),
    }
}

#[test]
fn id_token_claims_are_checked_one_by_one() {
    let now = 1_800_000_000;
    let good = serde_json::json!({"iss": "https://idp.example.com", "aud": "gpushare",
        "exp": now + 300, "iat": now, "nonce": "n1", "sub": "ana"});
    assert_eq!(check_claims(&good, &settings(), "n1", now), Ok(()));
    let with = |field: &str, value: Value| {
        let mut claims = good.clone();
        claims[field] = value;
        check_claims(&claims, &settings(), "n1", now).expect_err(field)
    };
    assert!(with("iss", "https://evil.example.com".into()).contains("issued by"));
    assert!(with("aud", "someone-else".into()).contains("aud"));
    assert!(with("aud", serde_json::json!(["gpushare", "other"])).contains("azp"));
    assert!(with("exp", (now - 3600).into()).contains("expired"));
    assert!(with("iat", (now + 3600).into()).contains("iat"));
    assert!(with("nonce", "replayed".into()).contains("nonce"));
}

#[test]
fn cookies_are_http_only_lax_and_secure_over_https() {
    let cookie = settings().cookie(SESSION_COOKIE, "abc", 60);
    assert_eq!(
        cookie,
        "__Host-gpushare_session=abc; Path=/; HttpOnly; SameSite=Lax; Max-Age=60; Secure"
    );
    let mut secure = http::HeaderMap::new();
    secure.insert(
        http::header::COOKIE,
        "gpushare_session=planted; __Host-gpushare_session=real"
            .parse()
            .expect("a header"),
    );
    assert_eq!(
        settings().cookie_in(&secure, SESSION_COOKIE),
        Some("real"),
        "over https only the __Host- cookie counts"
    );
    let plain = OidcSettings {
        public_url: "http://127.0.0.1:3000".into(),
        ..settings()
    };
    assert!(!plain.cookie(SESSION_COOKIE, "abc", 60).contains("Secure"));
    assert!(plain
        .cookie(SESSION_COOKIE, "abc", 60)
        .starts_with("gpushare_session=abc;"));
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::COOKIE,
        "theme=dark; gpushare_session=xyz"
            .parse()
            .expect("a header"),
    );
    assert_eq!(cookie_value(&headers, SESSION_COOKIE), Some("xyz"));
    assert_eq!(cookie_value(&headers, LOGIN_COOKIE), None);
}

#[test]
fn after_sign_in_the_browser_goes_only_to_the_consoles_own_paths() {
    assert_eq!(
        safe_next(Some("/deployments?cluster=a")),
        "/deployments?cluster=a"
    );
    for elsewhere in [
        "https://evil.example.com",
        "//evil.example.com",
        "/\\evil",
        "/auth/login",
        "x",
    ] {
        assert_eq!(safe_next(Some(elsewhere)), "/", "{elsewhere}");
    }
    assert_eq!(safe_next(None), "/");
}

#[test]
fn a_sign_in_cookie_holds_only_what_its_signature_covers_and_only_for_its_time() {
    let pending = PendingSignIn {
        state: "s1".into(),
        nonce: "n1".into(),
        verifier: "v1".into(),
        next: "/deployments".into(),
        until: 1_000,
    };
    let key = b"0123456789abcdef0123456789abcdef";
    let sealed = seal(&pending, key);
    assert_eq!(unseal(&sealed, key, 999), Ok(pending.clone()));
    assert!(unseal(&sealed, key, 1_001).is_err(), "too late");
    assert!(unseal(&sealed, b"another key", 999).is_err());
    // The next page changed by hand: the signature no longer covers it.
    let forged = PendingSignIn {
        next: "https://evil.example".into(),
        ..pending
    };
    let (_, tag) = sealed.split_once('.').expect("two parts");
    let (body, _) = seal(&forged, b"x")
        .split_once('.')
        .map(|(b, t)| (b.to_string(), t.to_string()))
        .expect("two parts");
    assert!(unseal(&format!("{body}.{tag}"), key, 999).is_err());
    assert!(unseal("not a cookie", key, 999).is_err());
}

#[test]
fn the_pkce_challenge_is_rfc_7636s() {
    // RFC 7636, appendix B.
    assert_eq!(
        s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
    assert_ne!(random(32), random(32));
    assert_eq!(random(32).map(|r| r.len()), Ok(43), "32 bytes, base64url");
    assert_eq!(session_hash("a").len(), 64);
}
