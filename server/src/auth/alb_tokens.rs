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
    /// The claims get a filler, if need be, so that the signed text itself has padding.
    pub fn token(&self, header: &serde_json::Value, claims: &serde_json::Value) -> String {
        let encode = |value: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE.encode(value.to_string())
        };
        let mut claims = claims.clone();
        let mut filler = String::new();
        while !encode(&claims).ends_with('=') {
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
