//! Tokens as an Application Load Balancer makes them, and a key server as the region's key
//! endpoint serves them: for the tests of `--auth alb` and for `gpushare bench auth`. Nothing on
//! a request's path uses this.

use aws_lc_rs::{
    rand::SystemRandom,
    signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING},
};
use base64::Engine as _;

/// A P-256 signing key made here.
pub struct TokenSigner {
    pair: EcdsaKeyPair,
}

/// The DER prefix of a P-256 `SubjectPublicKeyInfo`, before the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

impl TokenSigner {
    /// A new random key.
    pub fn new() -> Result<TokenSigner, String> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "cannot make a P-256 key".to_string())?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
            .map_err(|_| "cannot read back the P-256 key".to_string())?;
        Ok(TokenSigner { pair })
    }

    /// The public key in PEM, as the key endpoint serves it.
    pub fn public_pem(&self) -> String {
        let mut der = P256_SPKI_PREFIX.to_vec();
        der.extend_from_slice(self.pair.public_key().as_ref());
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        format!("-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n")
    }

    /// A token as the load balancer makes it: padded base64url, signed over the padded text.
    /// The claims get a filler, if need be, so that the signed text itself has padding (when
    /// they are an object).
    pub fn token(&self, header: &serde_json::Value, claims: &serde_json::Value) -> String {
        let encode = |value: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE.encode(value.to_string())
        };
        let mut claims = claims.clone();
        let mut filler = String::new();
        // Claims that are not an object (generated input) are signed as they are.
        while claims.is_object() && !encode(&claims).ends_with('=') {
            filler.push('x');
            claims["filler"] = filler.clone().into();
        }
        let signed = format!("{}.{}", encode(header), encode(&claims));
        // Signing with a valid key and the system's randomness does not fail.
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signed.as_bytes())
            .map(|s| base64::engine::general_purpose::URL_SAFE.encode(s.as_ref()))
            .unwrap_or_default();
        format!("{signed}.{signature}")
    }
}

/// A key server on a loopback port that hands out `signer`'s public key under `kid` and
/// answers 404 for any other; its URL, for `--alb-key-url`.
pub async fn key_server(signer: &TokenSigner, kid: &str) -> std::io::Result<String> {
    use axum::{extract::Path, http::StatusCode, routing::get, Router};
    let (pem, kid) = (signer.public_pem(), kid.to_string());
    let keys = Router::new().route(
        "/{kid}",
        get(move |Path(asked): Path<String>| {
            let answer = if asked == kid {
                (StatusCode::OK, pem.clone())
            } else {
                (StatusCode::NOT_FOUND, "no such key".to_string())
            };
            async move { answer }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, keys).await;
    });
    Ok(format!("http://{address}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_that_are_not_an_object_are_signed_as_they_are() {
        let signer = TokenSigner::new().expect("a key");
        let header = serde_json::json!({"alg": "ES256"});
        for claims in [
            serde_json::json!("a string"),
            serde_json::json!([1, 2]),
            serde_json::Value::Null,
        ] {
            let token = signer.token(&header, &claims);
            let parts: Vec<&str> = token.split('.').collect();
            assert_eq!(parts.len(), 3, "{token}");
            let decoded = base64::engine::general_purpose::URL_SAFE
                .decode(parts[1])
                .expect("base64url");
            assert_eq!(decoded, claims.to_string().as_bytes());
        }
        let padded = signer.token(&header, &serde_json::json!({"sub": "a"}));
        assert!(padded.split('.').nth(1).is_some_and(|c| c.ends_with('=')));
    }
}
