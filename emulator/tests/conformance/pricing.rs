//! The Price List Query API against botocore's `pricing` model: GetProducts' requests, its
//! answers (every product a JSON document in a string, as the model says) and its refusals.

use chrono::Utc;
use emulator::{Emulator, Faults, Scenario};
use serde_json::{json, Value};

use crate::{
    model::{botocore_data, load, Model, Walker},
    run::post,
};

/// The errors every AWS API may answer (the API references' "Common Errors"), which the
/// models do not list per operation.
const COMMON_ERRORS: [&str; 5] = [
    "AccessDeniedException",
    "InternalFailure",
    "ServiceUnavailable",
    "ThrottlingException",
    "ValidationException",
];

/// Checks `input` against the operation's input shape, sends it with `X-Amz-Target:
/// <target><operation>`, and checks the answer or the refusal against the model; the status and
/// the answer.
pub(crate) async fn call_json(
    model: &Model,
    addr: std::net::SocketAddr,
    target: &str,
    operation: &str,
    input: Value,
    problems: &mut Vec<String>,
) -> (u16, Value) {
    let spec = model.operations[operation].clone();
    let mut walker = Walker {
        model,
        checked: 0,
        problems: Vec::new(),
    };
    walker.walk(
        spec["input"]["shape"].as_str().expect("an input shape"),
        &input,
        &format!("{operation} request"),
    );
    assert!(walker.problems.is_empty(), "{:#?}", walker.problems);
    let (status, answer) = post(addr, &format!("{target}{operation}"), &input).await;
    if status == 200 {
        let shape = spec["output"]["shape"].as_str().expect("an output shape");
        walker.walk(shape, &answer, &format!("{operation} answer"));
    } else {
        let code = answer["__type"].as_str().unwrap_or_default().to_string();
        let listed = spec["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e["shape"].as_str() == Some(code.as_str()));
        if listed {
            // The errors spell their member `Message`, as the models do.
            let mut fields = answer.clone();
            if let Some(object) = fields.as_object_mut() {
                object.remove("__type");
            }
            walker.walk(&code, &fields, &format!("{operation} error"));
        } else if COMMON_ERRORS.contains(&code.as_str()) {
            // Not in the model: every AWS API may answer these, with a message.
            if !answer["Message"].is_string() {
                walker
                    .problems
                    .push(format!("{operation}: error {code} has no Message"));
            }
        } else {
            walker
                .problems
                .push(format!("{operation}: error {code} is not one it lists"));
        }
    }
    problems.extend(walker.problems);
    (status, answer)
}

/// [`call_json`] to the Price List.
async fn call(
    model: &Model,
    addr: std::net::SocketAddr,
    operation: &str,
    input: Value,
    problems: &mut Vec<String>,
) -> (u16, Value) {
    call_json(
        model,
        addr,
        "AWSPriceListService.",
        operation,
        input,
        problems,
    )
    .await
}

#[tokio::test]
async fn get_products_matches_the_botocore_model() {
    let model = load("pricing", &botocore_data());
    let emulator = Emulator::new(
        Scenario::Empty.build(1, Utc::now()),
        "empty",
        1.0,
        Faults::default(),
    );
    let addr = emulator
        .spawn("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let mut problems = Vec::new();
    let (status, answer) = call(
        &model,
        addr,
        "GetProducts",
        json!({
            "ServiceCode": "AmazonEC2",
            "FormatVersion": "aws_v1",
            "Filters": [
                {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "p5.48xlarge"},
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"},
            ],
            "MaxResults": 2,
        }),
        &mut problems,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["PriceList"].as_array().map(Vec::len), Some(2));
    let token = answer["NextToken"].clone();
    assert!(token.is_string(), "{answer}");
    let (_, rest) = call(
        &model,
        addr,
        "GetProducts",
        json!({"ServiceCode": "AmazonEC2", "NextToken": token, "MaxResults": 100,
               "Filters": [{"Type": "TERM_MATCH", "Field": "instanceType", "Value": "p5.48xlarge"},
                           {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"}]}),
        &mut problems,
    )
    .await;
    assert_eq!(rest["PriceList"].as_array().map(Vec::len), Some(2));
    let (status, refused) = call(
        &model,
        addr,
        "GetProducts",
        json!({"ServiceCode": "AmazonEC2", "NextToken": "nope"}),
        &mut problems,
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert!(problems.is_empty(), "{problems:#?}");
}
