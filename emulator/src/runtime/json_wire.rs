//! The `awsJson1_1` services besides ECS — the Price List Query API
//! (`X-Amz-Target: AWSPriceListService.<Operation>`) and Cost Explorer
//! (`X-Amz-Target: AWSInsightsIndexService.<Operation>`): faults injected as for every AWS call,
//! the body read as JSON, and the answer or the refusal as each service words it.

use super::*;

/// How a service names itself in the record of calls, and its refusals.
struct JsonService {
    pub name: &'static str,
    /// A throttled call's error code.
    pub throttled: &'static str,
    /// An injected server error's code.
    pub failed: &'static str,
    /// A body that is not JSON: its error code.
    pub invalid: &'static str,
}

const PRICING: JsonService = JsonService {
    name: "pricing",
    throttled: "ThrottlingException",
    failed: "InternalErrorException",
    invalid: "InvalidParameterException",
};

const COST_EXPLORER: JsonService = JsonService {
    name: "ce",
    throttled: "LimitExceededException",
    failed: "InternalServerException",
    invalid: "ValidationException",
};

/// `operation` of `service` with `body`, answered by `answer` (the emulator, the operation and
/// the input; the output, or a refusal's code and message).
async fn json_service(
    emulator: Emulator,
    service: &JsonService,
    operation: String,
    body: Bytes,
    answer: impl FnOnce(&Emulator, &str, &Value) -> Result<Value, (&'static str, String)>,
) -> Response {
    emulator.receive(service.name, &operation);
    let id = request_id(&emulator);
    let reply = |status: StatusCode, body: Value| {
        let mut response = (status, body.to_string()).into_response();
        set_json_headers(&emulator, response.headers_mut());
        if let Ok(id) = HeaderValue::from_str(&id) {
            response.headers_mut().insert("x-amzn-requestid", id);
        }
        response
    };
    let fail = |status: StatusCode, code: &str, message: String| {
        reply(status, json!({"__type": code, "Message": message}))
    };
    match injected(&emulator, &operation).await {
        Outcome::Throttle => {
            return fail(
                StatusCode::BAD_REQUEST,
                service.throttled,
                "Rate exceeded.".into(),
            )
        }
        Outcome::ServerError => {
            return fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                service.failed,
                "Injected server error.".into(),
            )
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
                return fail(
                    StatusCode::BAD_REQUEST,
                    service.invalid,
                    format!("The request body is not valid JSON: {error}."),
                )
            }
        }
    };
    match answer(&emulator, &operation, &input) {
        Ok(output) => reply(StatusCode::OK, output),
        Err((code, message)) => fail(StatusCode::BAD_REQUEST, code, message),
    }
}

/// The Price List Query API's `operation`.
pub(super) async fn pricing_json(emulator: Emulator, operation: String, body: Bytes) -> Response {
    let answer = |_: &Emulator, operation: &str, input: &Value| {
        crate::pricing::handle(operation, input).map_err(|e| (e.code, e.message))
    };
    json_service(emulator, &PRICING, operation, body, answer).await
}

/// Cost Explorer's `operation`, from the fleet's billing ledger at the emulator's time.
pub(super) async fn cost_explorer_json(
    emulator: Emulator,
    operation: String,
    body: Bytes,
) -> Response {
    let answer = |emulator: &Emulator, operation: &str, input: &Value| {
        emulator
            .with_fleet(|fleet| {
                crate::billing::handle(
                    operation,
                    input,
                    &fleet.billing,
                    fleet.now,
                    fleet.resource_level_data,
                )
            })
            .map_err(|e| (e.code, e.message))
    };
    json_service(emulator, &COST_EXPLORER, operation, body, answer).await
}
