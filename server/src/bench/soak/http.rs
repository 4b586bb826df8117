//! The soak's HTTP client: requests to the console as a person behind the sign-in proxy, and
//! to the emulator.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use axum::body::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};
use serde_json::Value;

/// Someone the sign-in proxy vouches for: a user and their groups.
#[derive(Clone, Debug)]
pub struct Person {
    pub user: String,
    pub groups: String,
}

impl Person {
    pub fn new(user: impl Into<String>, groups: impl Into<String>) -> Person {
        Person {
            user: user.into(),
            groups: groups.into(),
        }
    }
}

/// An answer: its status and body, and how long it took.
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
    pub took: Duration,
}

impl Answer {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

#[derive(Clone)]
pub struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Http {
    pub fn new() -> Http {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(3)));
        Http {
            client: Client::builder(TokioExecutor::new())
                .pool_idle_timeout(Duration::from_secs(30))
                .build(connector),
        }
    }

    /// The request, built: `person` as the proxy's headers, `body` as JSON.
    pub fn request(
        method: http::Method,
        url: &str,
        person: Option<&Person>,
        body: Option<&Value>,
    ) -> anyhow::Result<http::Request<Full<Bytes>>> {
        let mut request = http::Request::builder().method(method).uri(url);
        if let Some(person) = person {
            request = request
                .header("x-forwarded-user", &person.user)
                .header("x-forwarded-email", format!("{}@soak.example", person.user))
                .header("x-forwarded-groups", &person.groups);
        }
        let body = match body {
            Some(body) => {
                request = request.header(http::header::CONTENT_TYPE, "application/json");
                Full::new(Bytes::from(body.to_string()))
            }
            None => Full::new(Bytes::new()),
        };
        request.body(body).context("a request")
    }

    /// Sends a request and reads its whole answer.
    pub async fn send(
        &self,
        method: http::Method,
        url: &str,
        person: Option<&Person>,
        body: Option<&Value>,
    ) -> anyhow::Result<Answer> {
        let started = Instant::now();
        let answer = self
            .client
            .request(Self::request(method, url, person, body)?)
            .await?;
        let status = answer.status().as_u16();
        let body = answer.into_body().collect().await?.to_bytes();
        Ok(Answer {
            status,
            body,
            took: started.elapsed(),
        })
    }

    pub async fn get(&self, url: &str, person: Option<&Person>) -> anyhow::Result<Answer> {
        self.send(http::Method::GET, url, person, None).await
    }

    pub async fn post(&self, url: &str, person: &Person, body: &Value) -> anyhow::Result<Answer> {
        self.send(http::Method::POST, url, Some(person), Some(body))
            .await
    }

    /// Opens a stream: the answer's head, its body to be read frame by frame.
    pub async fn open(
        &self,
        url: &str,
        person: &Person,
    ) -> anyhow::Result<http::Response<hyper::body::Incoming>> {
        Ok(self
            .client
            .request(Self::request(http::Method::GET, url, Some(person), None)?)
            .await?)
    }
}
