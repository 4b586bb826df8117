//! The Price List Query API over `awsJson1_1`: `POST /` with
//! `X-Amz-Target: AWSPriceListService.<Operation>`, faults injected as for every AWS call.

use super::*;
use crate::pricing::{self, PricingError};

pub(super) async fn pricing_json(emulator: Emulator, operation: String, body: Bytes) -> Response {
    emulator.receive("pricing", &operation);
    let id = request_id(&emulator);
    let reply = |status: StatusCode, body: Value| {
        let mut response = (status, body.to_string()).into_response();
        set_json_headers(&emulator, response.headers_mut());
        if let Ok(id) = HeaderValue::from_str(&id) {
            response.headers_mut().insert("x-amzn-requestid", id);
        }
        response
    };
    let fail = |status: StatusCode, error: PricingError| {
        reply(
            status,
            json!({"__type": error.code, "Message": error.message}),
        )
    };
    match injected(&emulator, &operation).await {
        Outcome::Throttle => {
            return fail(
                StatusCode::BAD_REQUEST,
                PricingError {
                    code: "ThrottlingException",
                    message: "Rate exceeded.".into(),
                },
            )
        }
        Outcome::ServerError => {
            return fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                PricingError {
                    code: "InternalErrorException",
                    message: "Injected server error.".into(),
                },
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
                    PricingError {
                        code: "InvalidParameterException",
                        message: format!("The request body is not valid JSON: {error}."),
                    },
                )
            }
        }
    };
    match pricing::handle(&operation, &input) {
        Ok(output) => reply(StatusCode::OK, output),
        Err(error) => fail(StatusCode::BAD_REQUEST, error),
    }
}
