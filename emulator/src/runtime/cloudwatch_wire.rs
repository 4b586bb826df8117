//! CloudWatch on the wire: the Smithy RPC v2 CBOR protocol the SDK speaks, the JSON one, and their
//! error shapes, each answered from the CloudWatch model.

use super::*;

pub(super) fn cbor_response(
    emulator: &Emulator,
    status: StatusCode,
    value: &ciborium::Value,
    query_error: Option<&str>,
) -> Response {
    let mut bytes = Vec::new();
    if ciborium::into_writer(value, &mut bytes).is_err() {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let mut response = (status, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/cbor"),
    );
    headers.insert("smithy-protocol", HeaderValue::from_static("rpc-v2-cbor"));
    if let Ok(id) = HeaderValue::from_str(&request_id(emulator)) {
        headers.insert("x-amzn-requestid", id);
    }
    if let Some(code) = query_error.and_then(|c| HeaderValue::from_str(c).ok()) {
        headers.insert("x-amzn-query-error", code);
    }
    response
}

pub(super) fn cloudwatch_error(emulator: &Emulator, error: &CloudWatchError) -> Response {
    let (type_name, query_error) = error.codes();
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let body = ciborium::Value::Map(vec![
        (
            ciborium::Value::Text("__type".into()),
            ciborium::Value::Text(format!("com.amazonaws.cloudwatch#{type_name}")),
        ),
        (
            ciborium::Value::Text("message".into()),
            ciborium::Value::Text(error.to_string()),
        ),
    ]);
    cbor_response(emulator, status, &body, Some(query_error))
}

/// `POST /service/GraniteServiceVersion20100801/operation/<Operation>` with a CBOR body.
pub(super) async fn cloudwatch(
    State(emulator): State<Emulator>,
    Path(operation): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    emulator.receive("cloudwatch", &operation);
    if !cbor::OPERATIONS.contains(&operation.as_str()) {
        return cloudwatch_error(
            &emulator,
            &CloudWatchError::InvalidParameterValue(format!(
                "The operation {operation} is not supported by this emulator."
            )),
        );
    }
    if headers.get("smithy-protocol").and_then(|v| v.to_str().ok()) != Some("rpc-v2-cbor") {
        return cloudwatch_error(
            &emulator,
            &CloudWatchError::InvalidParameterValue(
                "Requests must carry the header smithy-protocol: rpc-v2-cbor.".into(),
            ),
        );
    }
    match injected(&emulator, &operation).await {
        Outcome::Throttle => return cloudwatch_error(&emulator, &CloudWatchError::Throttling),
        Outcome::ServerError => {
            return cloudwatch_error(
                &emulator,
                &CloudWatchError::InternalService("Injected server error.".into()),
            )
        }
        // CloudWatch reads change nothing: a lost answer is a dropped connection.
        Outcome::Drop | Outcome::LoseAnswer => return dropped(),
        Outcome::Answer => {}
    }
    let gzip = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        == Some("gzip");
    let raw = if gzip {
        let mut out = Vec::new();
        if flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut out)
            .is_err()
        {
            return cloudwatch_error(
                &emulator,
                &CloudWatchError::InvalidParameterValue("The gzip body could not be read.".into()),
            );
        }
        Bytes::from(out)
    } else {
        body
    };
    let input: ciborium::Value = if raw.is_empty() {
        ciborium::Value::Map(Vec::new())
    } else {
        match ciborium::from_reader(&raw[..]) {
            Ok(value) => value,
            Err(error) => {
                return cloudwatch_error(
                    &emulator,
                    &CloudWatchError::InvalidParameterValue(format!(
                        "The request body is not valid CBOR: {error}."
                    )),
                )
            }
        }
    };
    match cloudwatch_answer(&emulator, operation, input).await {
        Ok(output) => cbor_response(&emulator, StatusCode::OK, &output, None),
        Err(error) => cloudwatch_error(&emulator, &error),
    }
}

/// One CloudWatch operation's answer, worked out off the server's threads: reads beside other
/// reads, PutMetricData alone.
pub(super) async fn cloudwatch_answer(
    emulator: &Emulator,
    operation: String,
    input: ciborium::Value,
) -> Result<ciborium::Value, CloudWatchError> {
    let emulator = emulator.clone();
    let now = emulator.now();
    off_thread(move || {
        if cbor::reads_only(&operation) {
            emulator.read_fleet(|fleet| cbor::read(fleet, &operation, input, now))
        } else {
            emulator.with_fleet(|fleet| cbor::handle(fleet, &operation, input, now))
        }
    })
    .await
    .unwrap_or_else(|| {
        Err(CloudWatchError::InternalService(
            "The emulator failed while answering; try again.".into(),
        ))
    })
}

/// CloudWatch over `awsJson1_0`: the same operations, JSON in and out, timestamps as epoch
/// seconds.
pub(super) async fn cloudwatch_json(
    emulator: Emulator,
    operation: String,
    body: Bytes,
) -> Response {
    emulator.receive("cloudwatch", &operation);
    let fail = |error: &CloudWatchError| {
        let (type_name, query_error) = error.codes();
        let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_REQUEST);
        let mut response = (
            status,
            json!({"__type": type_name, "message": error.to_string()}).to_string(),
        )
            .into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-amz-json-1.0"),
        );
        if let Ok(code) = HeaderValue::from_str(query_error) {
            response.headers_mut().insert("x-amzn-query-error", code);
        }
        response
    };
    if !cbor::OPERATIONS.contains(&operation.as_str()) {
        return fail(&CloudWatchError::InvalidParameterValue(format!(
            "The operation {operation} is not supported by this emulator."
        )));
    }
    match injected(&emulator, &operation).await {
        Outcome::Throttle => return fail(&CloudWatchError::Throttling),
        Outcome::ServerError => {
            return fail(&CloudWatchError::InternalService(
                "Injected server error.".into(),
            ))
        }
        Outcome::Drop | Outcome::LoseAnswer => return dropped(),
        Outcome::Answer => {}
    }
    let input: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(error) => {
                return fail(&CloudWatchError::InvalidParameterValue(format!(
                    "The request body is not valid JSON: {error}."
                )))
            }
        }
    };
    let Ok(input) = ciborium::Value::serialized(&input) else {
        return fail(&CloudWatchError::InvalidParameterValue(
            "The request body could not be read.".into(),
        ));
    };
    match cloudwatch_answer(&emulator, operation, input).await {
        Ok(output) => {
            let mut response = (StatusCode::OK, cbor_to_json(&output).to_string()).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-amz-json-1.0"),
            );
            response
        }
        Err(error) => fail(&error),
    }
}

/// CBOR to JSON, with timestamps (tag 1) as epoch seconds.
pub(super) fn cbor_to_json(value: &ciborium::Value) -> Value {
    use ciborium::Value as C;
    match value {
        C::Integer(i) => i64::try_from(*i).map_or(Value::Null, |i| json!(i)),
        C::Float(f) => json!(f),
        C::Text(s) => json!(s),
        C::Bool(b) => json!(b),
        C::Array(items) => Value::Array(items.iter().map(cbor_to_json).collect()),
        C::Map(entries) => Value::Object(
            entries
                .iter()
                .filter_map(|(k, v)| k.as_text().map(|k| (k.to_string(), cbor_to_json(v))))
                .collect(),
        ),
        C::Tag(_, inner) => cbor_to_json(inner),
        _ => Value::Null,
    }
}
