//! The two other services the console calls: SQS (awsJson1_0) for the events queue and EC2's query
//! protocol, each after the faults any operation may get.

use super::*;

/// One SQS request (awsJson1_0) to the events queue: faults as for any operation, then the
/// queue's answer.
pub(super) async fn sqs(emulator: Emulator, operation: String, body: Bytes) -> Response {
    emulator.receive("sqs", &operation);
    let id = request_id(&emulator);
    let reply = |status: StatusCode, body: Value, query_error: Option<&str>| {
        let mut response = (status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-amz-json-1.0"),
        );
        if let Ok(id) = HeaderValue::from_str(&id) {
            headers.insert("x-amzn-requestid", id);
        }
        if let Some(code) = query_error.and_then(|c| HeaderValue::from_str(c).ok()) {
            headers.insert("x-amzn-query-error", code);
        }
        response
    };
    let fail = |error: SqsError| {
        reply(
            StatusCode::BAD_REQUEST,
            json!({"__type": format!("com.amazonaws.sqs#{}", error.code), "message": error.message}),
            Some(error.query_code),
        )
    };
    let outcome = injected(&emulator, &operation).await;
    match outcome {
        Outcome::Throttle => {
            return fail(SqsError {
                code: "RequestThrottled",
                query_code: "RequestThrottled;Sender",
                message: "Request is throttled.".into(),
            })
        }
        Outcome::ServerError => {
            return reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"__type": "com.amazonaws.sqs#InternalError", "message": "Injected server error."}),
                Some("InternalError;Receiver"),
            )
        }
        Outcome::Drop => return dropped(),
        Outcome::Answer | Outcome::LoseAnswer => {}
    }
    let Some(queue) = emulator.events_queue() else {
        return fail(SqsError {
            code: "QueueDoesNotExist",
            query_code: "AWS.SimpleQueueService.NonExistentQueue;Sender",
            message: "The specified queue does not exist: this emulator routes no events to SQS (start it with its events queue on).".into(),
        });
    };
    let input: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(error) => {
                return reply(
                    StatusCode::BAD_REQUEST,
                    json!({"__type": "com.amazonaws.sqs#InvalidParameterValue", "message": format!("The request body is not valid JSON: {error}.")}),
                    Some("InvalidParameterValue;Sender"),
                )
            }
        }
    };
    let answer = queue.handle(&operation, &input).await;
    // A lost answer: the messages it took stay in flight until their visibility timeout.
    if outcome == Outcome::LoseAnswer {
        return dropped();
    }
    match answer {
        Ok(output) => reply(StatusCode::OK, output, None),
        Err(error) => fail(error),
    }
}

/// One EC2 query request: faults as for any operation, then an XML answer or error.
pub(super) async fn ec2_query(emulator: Emulator, body: Bytes) -> Response {
    let params = ec2::parse_form(&body);
    let action = params
        .iter()
        .find(|(k, _)| k == "Action")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let autoscaling = crate::autoscaling::is_for_autoscaling(&params);
    emulator.receive(if autoscaling { "autoscaling" } else { "ec2" }, &action);
    let id = request_id(&emulator);
    let xml = |status: StatusCode, text: String| {
        let mut response = (status, text).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/xml;charset=UTF-8"),
        );
        response
    };
    match injected(&emulator, &action).await {
        Outcome::Throttle if autoscaling => {
            let error = crate::autoscaling::AutoScalingError {
                code: "Throttling",
                message: "Rate exceeded".into(),
            };
            return xml(StatusCode::BAD_REQUEST, error.to_xml(&id));
        }
        Outcome::Throttle => {
            let error = ec2::Ec2Error {
                code: "RequestLimitExceeded",
                message: "Request limit exceeded.".into(),
            };
            return xml(StatusCode::SERVICE_UNAVAILABLE, error.to_xml(&id));
        }
        Outcome::ServerError if autoscaling => {
            let error = crate::autoscaling::AutoScalingError {
                code: "InternalFailure",
                message: "Injected server error.".into(),
            };
            return xml(StatusCode::INTERNAL_SERVER_ERROR, error.to_xml(&id));
        }
        Outcome::ServerError => {
            let error = ec2::Ec2Error {
                code: "InternalError",
                message: "Injected server error.".into(),
            };
            return xml(StatusCode::INTERNAL_SERVER_ERROR, error.to_xml(&id));
        }
        Outcome::Drop => return dropped(),
        Outcome::Answer | Outcome::LoseAnswer => {}
    }
    if autoscaling {
        return match emulator.read_fleet(|fleet| crate::autoscaling::handle(fleet, &params, &id)) {
            Ok(answer) => xml(StatusCode::OK, answer),
            Err(error) => xml(StatusCode::BAD_REQUEST, error.to_xml(&id)),
        };
    }
    match emulator.read_fleet(|fleet| ec2::handle(fleet, &params, &id)) {
        Ok(answer) => xml(StatusCode::OK, answer),
        Err(error) => xml(StatusCode::BAD_REQUEST, error.to_xml(&id)),
    }
}
