//! The conformance run: a bare HTTP client, and each request and answer checked against the
//! models.

use std::{collections::BTreeSet, net::SocketAddr};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::model::{Model, Walker, COMMON_ERRORS};

/// A bare HTTP/1.1 client: the test reads the bytes a client reads, nothing parsed for it.
pub(crate) async fn post(addr: SocketAddr, target: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let content_type = if target.starts_with("Granite") {
        "application/x-amz-json-1.0"
    } else {
        "application/x-amz-json-1.1"
    };
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nX-Amz-Target: {target}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read answer");
    let text = String::from_utf8(raw).expect("UTF-8 answer");
    let (head, payload) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "answers carry a length"
    );
    let value = serde_json::from_str(payload)
        .unwrap_or_else(|e| panic!("{target}: the answer is not JSON ({e}): {payload}"));
    (status, value)
}

/// The conformance run: the requests sent, each answer checked.
pub(crate) struct Run {
    pub(crate) addr: SocketAddr,
    pub(crate) ecs: Model,
    pub(crate) cloudwatch: Model,
    pub(crate) operations: BTreeSet<String>,
    pub(crate) fields: usize,
    pub(crate) problems: Vec<String>,
}

impl Run {
    /// Sends `input` to `operation` of ECS (or CloudWatch when `cloudwatch`), after checking
    /// it against the input shape; checks the answer; returns it.
    pub(crate) async fn call(
        &mut self,
        cloudwatch: bool,
        operation: &str,
        input: Value,
    ) -> (u16, Value) {
        let model = if cloudwatch {
            &self.cloudwatch
        } else {
            &self.ecs
        };
        let spec = model
            .operations
            .get(operation)
            .unwrap_or_else(|| panic!("{operation} is not an operation of {}", model.name))
            .clone();
        if let Some(input_shape) = spec["input"]["shape"].as_str() {
            let mut walker = Walker {
                model,
                checked: 0,
                problems: Vec::new(),
            };
            walker.walk(input_shape, &input, &format!("{operation} request"));
            assert!(
                walker.problems.is_empty(),
                "the test's own request does not match the model: {:#?}",
                walker.problems
            );
        }
        let target = if cloudwatch {
            format!("GraniteServiceVersion20100801.{operation}")
        } else {
            format!("AmazonEC2ContainerServiceV20141113.{operation}")
        };
        let (status, answer) = post(self.addr, &target, &input).await;
        let mut walker = Walker {
            model,
            checked: 0,
            problems: Vec::new(),
        };
        if status == 200 {
            if let Some(output_shape) = spec["output"]["shape"].as_str() {
                walker.walk(output_shape, &answer, &format!("{operation} answer"));
            }
        } else {
            let code = answer["__type"]
                .as_str()
                .unwrap_or_default()
                .rsplit('#')
                .next()
                .unwrap_or_default()
                .to_string();
            let listed: Vec<&str> = spec["errors"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["shape"].as_str())
                .collect();
            if listed.contains(&code.as_str()) {
                walker.walk(&code, &strip_type(&answer), &format!("{operation} error"));
            } else if !COMMON_ERRORS.contains(&code.as_str()) {
                walker.problems.push(format!(
                    "{operation}: error {code} (HTTP {status}) is not one the operation lists ({listed:?})"
                ));
            }
        }
        self.fields += walker.checked;
        self.problems.extend(walker.problems);
        self.operations
            .insert(format!("{}:{operation}", model.name));
        (status, answer)
    }

    pub(crate) async fn ecs(&mut self, operation: &str, input: Value) -> Value {
        let (status, answer) = self.call(false, operation, input).await;
        assert_eq!(status, 200, "{operation}: {answer}");
        answer
    }
}

/// An error answer without its `__type`, which is the protocol's, not the shape's.
pub(crate) fn strip_type(answer: &Value) -> Value {
    let mut answer = answer.clone();
    if let Some(object) = answer.as_object_mut() {
        object.remove("__type");
        // The JSON protocols spell the message either way.
        if let Some(message) = object.remove("Message") {
            object.insert("message".into(), message);
        }
    }
    answer
}

pub(crate) fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}
