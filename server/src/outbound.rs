//! The console's own HTTP calls beyond the AWS SDK: the load balancer's public keys, and an
//! OpenID provider's documents and token endpoint. HTTPS with the system's root certificates;
//! plain HTTP only to loopback addresses (a test's or a sidecar's server). Every call has a
//! deadline and a cap on the answer's size.

use std::time::Duration;

use http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};

/// How long one call may take, connection included.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// The largest answer read.
pub const MAX_ANSWER: usize = 256 * 1024;

/// An HTTP client for the console's own calls.
#[derive(Clone)]
pub struct Outbound {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<axum::body::Bytes>>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Outbound")
    }
}

/// Whether `url` may be called: `https://` anywhere, `http://` only on a loopback address.
pub fn allowed_url(url: &str) -> Result<(), String> {
    let uri: http::Uri = url.parse().map_err(|_| format!("{url:?} is not a URL"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("https"), Some(_)) => Ok(()),
        (Some("http"), Some(host)) => {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host == "localhost"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback {
                Ok(())
            } else {
                Err(format!(
                    "{url} is plain HTTP to another host; use https:// (plain HTTP is for loopback only)"
                ))
            }
        }
        _ => Err(format!("{url:?} must be an https:// URL")),
    }
}

impl Outbound {
    /// A client trusting the system's root certificates.
    pub fn new() -> Result<Outbound, String> {
        use hyper_rustls::ConfigBuilderExt as _;
        let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS cannot be set up: {e}"))?
            .with_native_roots()
            .map_err(|e| format!("the system's root certificates cannot be read: {e}"))?
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Outbound {
            client: Client::builder(TokioExecutor::new()).build(connector),
        })
    }

    /// Sends one request; the status and the body, or what failed.
    async fn send(
        &self,
        method: Method,
        url: &str,
        content_type: Option<&str>,
        basic: Option<(&str, &str)>,
        body: String,
    ) -> Result<(StatusCode, axum::body::Bytes), String> {
        use base64::Engine as _;
        allowed_url(url)?;
        let mut request = Request::builder().method(method).uri(url).header(
            header::ACCEPT,
            "application/json, application/x-pem-file, */*",
        );
        if let Some(kind) = content_type {
            request = request.header(header::CONTENT_TYPE, kind);
        }
        if let Some((user, password)) = basic {
            // RFC 6749 2.3.1: the client id and secret are form-encoded before Basic.
            let pair = format!("{}:{}", form_encode(user), form_encode(password));
            request = request.header(
                header::AUTHORIZATION,
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                ),
            );
        }
        let request = request
            .body(Full::new(axum::body::Bytes::from(body)))
            .map_err(|e| format!("{url}: {e}"))?;
        let call = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| format!("{url} cannot be reached: {e}"))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| format!("{url} answered unreadably or too much: {e}"))?
                .to_bytes();
            Ok((status, body))
        };
        tokio::time::timeout(DEADLINE, call)
            .await
            .map_err(|_| format!("{url} did not answer within {} s", DEADLINE.as_secs()))?
    }

    /// `GET url`.
    pub async fn get(&self, url: &str) -> Result<(StatusCode, axum::body::Bytes), String> {
        self.send(Method::GET, url, None, None, String::new()).await
    }

    /// `POST url` with a form body, with HTTP Basic credentials when given.
    pub async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<(StatusCode, axum::body::Bytes), String> {
        let body = form
            .iter()
            .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        self.send(
            Method::POST,
            url,
            Some("application/x-www-form-urlencoded"),
            basic,
            body,
        )
        .await
    }
}

/// `text` percent-encoded for a form body or a query string (RFC 3986's unreserved characters
/// stay as they are).
pub use app::model::fleet_view::encode as form_encode;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_is_called() {
        assert!(allowed_url("https://public-keys.auth.elb.us-east-1.amazonaws.com/k").is_ok());
        assert!(allowed_url("http://127.0.0.1:9000/k").is_ok());
        assert!(allowed_url("http://[::1]:9000/k").is_ok());
        assert!(allowed_url("http://localhost/k").is_ok());
        let refused = allowed_url("http://keys.example.com/k").expect_err("plain HTTP elsewhere");
        assert!(refused.contains("https://"), "{refused}");
        assert!(allowed_url("ftp://x/y").is_err());
        assert!(allowed_url("not a url").is_err());
    }

    #[test]
    fn form_values_are_percent_encoded() {
        assert_eq!(form_encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(form_encode("Az09-_.~"), "Az09-_.~");
    }
}
