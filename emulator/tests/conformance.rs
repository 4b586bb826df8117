//! Conformance against an independent description of ECS and CloudWatch: the service models
//! that botocore ships (in the virtual environment `scripts/setup.sh` makes). Every request
//! this test sends is first checked against its operation's input shape; every answer of the
//! emulator, over HTTP as a client sees it, is walked against the output shape: every field a
//! member of its structure, every value of its type, every enum value in its enum, every error
//! code one the operation lists. The `include` options are checked both ways: what a request
//! does not ask for is not in the answer.

use std::{
    collections::BTreeSet,
    io::Read,
    net::SocketAddr,
    path::{Path, PathBuf},
};

use chrono::Utc;
use emulator::{Emulator, Faults, Scenario};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One botocore service model: its shapes and operations.
struct Model {
    name: &'static str,
    shapes: Map<String, Value>,
    operations: Map<String, Value>,
}

/// Errors ECS and CloudWatch answer for any operation, which the models do not list per
/// operation (the "common errors" of the API reference).
const COMMON_ERRORS: [&str; 4] = [
    "ThrottlingException",
    "ServiceUnavailable",
    "InternalFailure",
    "AccessDeniedException",
];

fn botocore_data() -> PathBuf {
    if let Ok(dir) = std::env::var("GPUSHARE_BOTOCORE_DATA") {
        return PathBuf::from(dir);
    }
    let python = std::env::var("GPUSHARE_PYTHON").unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        format!("{home}/.cache/gpushare/venv/bin/python")
    });
    let out = std::process::Command::new(&python)
        .args([
            "-c",
            "import botocore, os; print(os.path.join(os.path.dirname(botocore.__file__), 'data'))",
        ])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {python} to find botocore's models ({e}): run ./scripts/setup.sh, or set GPUSHARE_BOTOCORE_DATA to botocore's data directory")
        });
    assert!(
        out.status.success(),
        "botocore is not installed for {python}: run ./scripts/setup.sh ({})",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn load(name: &'static str, dir: &Path) -> Model {
    let service = std::fs::read_dir(dir.join(name))
        .unwrap_or_else(|e| panic!("no botocore model for {name} in {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .max()
        .expect("a model version");
    let gz = service.join("service-2.json.gz");
    let text = if gz.exists() {
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&gz).expect("open model"))
            .read_to_string(&mut text)
            .expect("read model");
        text
    } else {
        std::fs::read_to_string(service.join("service-2.json")).expect("read model")
    };
    let mut model: Value = serde_json::from_str(&text).expect("model is JSON");
    let take = |model: &mut Value, key: &str| match model.get_mut(key).map(Value::take) {
        Some(Value::Object(map)) => map,
        _ => panic!("model {name} has no {key}"),
    };
    Model {
        name,
        shapes: take(&mut model, "shapes"),
        operations: take(&mut model, "operations"),
    }
}

/// Walks `value` against `shape`, counting the values checked and writing what does not match.
struct Walker<'a> {
    model: &'a Model,
    checked: usize,
    problems: Vec<String>,
}

impl Walker<'_> {
    fn walk(&mut self, shape_name: &str, value: &Value, path: &str) {
        self.checked += 1;
        let Some(shape) = self.model.shapes.get(shape_name) else {
            self.problems
                .push(format!("{path}: shape {shape_name} is not in the model"));
            return;
        };
        let kind = shape["type"].as_str().unwrap_or_default();
        let fail = |walker: &mut Self, what: &str| {
            walker.problems.push(format!(
                "{path}: {what} (shape {shape_name}, type {kind}), got {}",
                short(value)
            ));
        };
        match kind {
            "structure" => {
                let Some(object) = value.as_object() else {
                    return fail(self, "expected an object");
                };
                let members = shape["members"].as_object().cloned().unwrap_or_default();
                for (key, member_value) in object {
                    match members.get(key) {
                        Some(member) => {
                            let target = member["shape"].as_str().unwrap_or_default().to_string();
                            self.walk(&target, member_value, &format!("{path}.{key}"));
                        }
                        None => self
                            .problems
                            .push(format!("{path}.{key}: not a member of {shape_name}")),
                    }
                }
                for required in shape["required"].as_array().into_iter().flatten() {
                    let required = required.as_str().unwrap_or_default();
                    if !object.contains_key(required) {
                        self.problems.push(format!(
                            "{path}: required member {required} of {shape_name} is missing"
                        ));
                    }
                }
            }
            "list" => {
                let Some(items) = value.as_array() else {
                    return fail(self, "expected a list");
                };
                let target = shape["member"]["shape"].as_str().unwrap_or_default();
                for (index, item) in items.iter().enumerate() {
                    self.walk(target, item, &format!("{path}[{index}]"));
                }
            }
            "map" => {
                let Some(object) = value.as_object() else {
                    return fail(self, "expected a map");
                };
                let key_shape = shape["key"]["shape"].as_str().unwrap_or_default();
                let value_shape = shape["value"]["shape"].as_str().unwrap_or_default();
                for (key, item) in object {
                    self.walk(
                        key_shape,
                        &Value::String(key.clone()),
                        &format!("{path}<{key}>"),
                    );
                    self.walk(value_shape, item, &format!("{path}.{key}"));
                }
            }
            "string" => {
                let Some(text) = value.as_str() else {
                    return fail(self, "expected a string");
                };
                if let Some(allowed) = shape["enum"].as_array() {
                    if !allowed.iter().any(|a| a.as_str() == Some(text)) {
                        fail(self, "not a value of the enum");
                    }
                }
            }
            "integer" | "long" => {
                if !(value.is_i64() || value.is_u64()) {
                    fail(self, "expected an integer");
                }
            }
            "double" | "float" => {
                if !value.is_number() {
                    fail(self, "expected a number");
                }
            }
            "boolean" => {
                if !value.is_boolean() {
                    fail(self, "expected true or false");
                }
            }
            // awsJson: epoch seconds, possibly with a fraction.
            "timestamp" => {
                if !value.is_number() {
                    fail(self, "expected epoch seconds");
                }
            }
            "blob" => {
                if !value.is_string() {
                    fail(self, "expected base64 text");
                }
            }
            other => self.problems.push(format!(
                "{path}: shape type {other} is not known to this test"
            )),
        }
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 80 {
        format!("{}…", &text[..80])
    } else {
        text
    }
}

/// A bare HTTP/1.1 client: the test reads the bytes a client reads, nothing parsed for it.
async fn post(addr: SocketAddr, target: &str, body: &Value) -> (u16, Value) {
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
struct Run {
    addr: SocketAddr,
    ecs: Model,
    cloudwatch: Model,
    operations: BTreeSet<String>,
    fields: usize,
    problems: Vec<String>,
}

impl Run {
    /// Sends `input` to `operation` of ECS (or CloudWatch when `cloudwatch`), after checking
    /// it against the input shape; checks the answer; returns it.
    async fn call(&mut self, cloudwatch: bool, operation: &str, input: Value) -> (u16, Value) {
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

    async fn ecs(&mut self, operation: &str, input: Value) -> Value {
        let (status, answer) = self.call(false, operation, input).await;
        assert_eq!(status, 200, "{operation}: {answer}");
        answer
    }
}

/// An error answer without its `__type`, which is the protocol's, not the shape's.
fn strip_type(answer: &Value) -> Value {
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

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn every_answer_of_every_operation_matches_the_botocore_models() {
    let data = botocore_data();
    let ecs = load("ecs", &data);
    let cloudwatch = load("cloudwatch", &data);
    let scenario = Scenario::Demo;
    let emulator = Emulator::new(
        scenario.build(7, Utc::now()),
        scenario.name(),
        1.0,
        Faults::default(),
    );
    let addr = emulator
        .clone()
        .spawn("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let mut run = Run {
        addr,
        ecs,
        cloudwatch,
        operations: BTreeSet::new(),
        fields: 0,
        problems: Vec::new(),
    };
    let cluster = "inference-prod";

    // Clusters.
    let clusters = run.ecs("ListClusters", json!({})).await;
    assert!(!strings(&clusters["clusterArns"]).is_empty());
    let plain = run
        .ecs("DescribeClusters", json!({"clusters": [cluster, "nope"]}))
        .await;
    for field in [
        "statistics",
        "tags",
        "settings",
        "configuration",
        "attachments",
    ] {
        assert!(
            plain["clusters"][0].get(field).is_none(),
            "DescribeClusters without include has no {field}"
        );
    }
    run.ecs(
        "DescribeClusters",
        json!({"clusters": [cluster], "include": ["TAGS", "STATISTICS", "SETTINGS"]}),
    )
    .await;
    run.ecs("CreateCluster", json!({"clusterName": "conformance"}))
        .await;

    // Container instances.
    let instances = run
        .ecs(
            "ListContainerInstances",
            json!({"cluster": cluster, "maxResults": 5}),
        )
        .await;
    let instance_arns = strings(&instances["containerInstanceArns"]);
    assert!(!instance_arns.is_empty());
    run.ecs(
        "ListContainerInstances",
        json!({"cluster": cluster, "status": "ACTIVE", "nextToken": instances["nextToken"]}),
    )
    .await;
    let mut everything = instance_arns.clone();
    everything
        .push("arn:aws:ecs:us-east-1:123456789012:container-instance/inference-prod/0000".into());
    let plain = run
        .ecs(
            "DescribeContainerInstances",
            json!({"cluster": cluster, "containerInstances": everything}),
        )
        .await;
    for instance in plain["containerInstances"].as_array().expect("instances") {
        assert!(
            instance.get("healthStatus").is_none() && instance.get("tags").is_none(),
            "healthStatus and tags only when asked for"
        );
    }
    let full = run
        .ecs(
            "DescribeContainerInstances",
            json!({"cluster": cluster, "containerInstances": instance_arns, "include": ["CONTAINER_INSTANCE_HEALTH", "TAGS"]}),
        )
        .await;
    assert!(
        full["containerInstances"][0].get("healthStatus").is_some(),
        "healthStatus when asked for"
    );
    // Set ACTIVE (as it is), with an instance that is not there: the instance and a failure.
    let updated = run
        .ecs(
            "UpdateContainerInstancesState",
            json!({"cluster": cluster, "containerInstances": [instance_arns[0].clone(), "arn:aws:ecs:us-east-1:123456789012:container-instance/inference-prod/0000"], "status": "ACTIVE"}),
        )
        .await;
    assert_eq!(updated["containerInstances"][0]["status"], "ACTIVE");
    assert_eq!(updated["failures"][0]["reason"], "MISSING");

    // Every instance of every cluster, with everything it can carry: the impaired daemon, the
    // GPUs of an instance that does not share them.
    for other in ["batch-sim", "ml-dev"] {
        let arns = strings(
            &run.ecs("ListContainerInstances", json!({"cluster": other}))
                .await["containerInstanceArns"],
        );
        run.ecs(
            "DescribeContainerInstances",
            json!({"cluster": other, "containerInstances": arns, "include": ["CONTAINER_INSTANCE_HEALTH"]}),
        )
        .await;
        let tasks = strings(&run.ecs("ListTasks", json!({"cluster": other})).await["taskArns"]);
        for chunk in tasks.chunks(100) {
            run.ecs("DescribeTasks", json!({"cluster": other, "tasks": chunk}))
                .await;
        }
        let services =
            strings(&run.ecs("ListServices", json!({"cluster": other})).await["serviceArns"]);
        for chunk in services.chunks(10) {
            run.ecs(
                "DescribeServices",
                json!({"cluster": other, "services": chunk}),
            )
            .await;
        }
    }

    // Task definitions.
    let families = run
        .ecs("ListTaskDefinitionFamilies", json!({"maxResults": 100}))
        .await;
    assert!(!strings(&families["families"]).is_empty());
    run.ecs(
        "ListTaskDefinitionFamilies",
        json!({"status": "ACTIVE", "familyPrefix": "e"}),
    )
    .await;
    let definitions = run
        .ecs(
            "ListTaskDefinitions",
            json!({"sort": "DESC", "status": "ACTIVE", "maxResults": 10}),
        )
        .await;
    let definition_arn = strings(&definitions["taskDefinitionArns"])
        .into_iter()
        .next()
        .expect("a task definition");
    let plain = run
        .ecs(
            "DescribeTaskDefinition",
            json!({"taskDefinition": definition_arn}),
        )
        .await;
    assert!(plain.get("tags").is_none(), "tags only when asked for");
    run.ecs(
        "DescribeTaskDefinition",
        json!({"taskDefinition": definition_arn, "include": ["TAGS"]}),
    )
    .await;
    let registered = run
        .ecs(
            "RegisterTaskDefinition",
            json!({
                "family": "conformance",
                "requiresCompatibilities": ["EC2"],
                "networkMode": "bridge",
                "containerDefinitions": [{
                    "name": "model",
                    "image": "public.ecr.aws/docker/library/busybox:latest",
                    "cpu": 1024,
                    "memory": 2048,
                    "essential": true,
                    "portMappings": [{"containerPort": 8080, "protocol": "tcp"}],
                    "environment": [{"name": "MODE", "value": "serve"}],
                    "resourceRequirements": [{
                        "type": "GPU",
                        "sharingStrategy": {"nvidiaMps": {"memory": 4096, "maxComputePercent": 40}}
                    }]
                }],
                "tags": [{"key": "team", "value": "search"}]
            }),
        )
        .await;
    let new_arn = registered["taskDefinition"]["taskDefinitionArn"]
        .as_str()
        .expect("an ARN")
        .to_string();
    // A request ECS refuses: a value beside a sharing strategy.
    let (status, _) = run
        .call(
            false,
            "RegisterTaskDefinition",
            json!({
                "family": "conformance",
                "containerDefinitions": [{
                    "name": "model", "image": "busybox", "memory": 512,
                    "resourceRequirements": [{"type": "GPU", "value": "", "sharingStrategy": {"nvidiaMps": {"memory": 1024}}}]
                }]
            }),
        )
        .await;
    assert_eq!(status, 400);

    // Tags.
    run.ecs(
        "TagResource",
        json!({"resourceArn": new_arn, "tags": [{"key": "owner", "value": "conformance"}]}),
    )
    .await;
    run.ecs("ListTagsForResource", json!({"resourceArn": new_arn}))
        .await;
    run.ecs(
        "UntagResource",
        json!({"resourceArn": new_arn, "tagKeys": ["owner"]}),
    )
    .await;

    // Services.
    let services = run
        .ecs("ListServices", json!({"cluster": cluster, "maxResults": 3}))
        .await;
    let service_arns = strings(&services["serviceArns"]);
    assert!(!service_arns.is_empty());
    let plain = run
        .ecs(
            "DescribeServices",
            json!({"cluster": cluster, "services": [service_arns[0], "nope"]}),
        )
        .await;
    assert!(
        plain["services"][0].get("tags").is_none(),
        "tags only when asked for"
    );
    run.ecs(
        "DescribeServices",
        json!({"cluster": cluster, "services": service_arns, "include": ["TAGS"]}),
    )
    .await;
    run.ecs(
        "CreateService",
        json!({
            "cluster": cluster,
            "serviceName": "conformance",
            "taskDefinition": new_arn,
            "desiredCount": 1,
            "launchType": "EC2",
            "deploymentConfiguration": {
                "maximumPercent": 200, "minimumHealthyPercent": 100,
                "deploymentCircuitBreaker": {"enable": true, "rollback": true}
            },
            "tags": [{"key": "team", "value": "search"}]
        }),
    )
    .await;
    run.ecs(
        "UpdateService",
        json!({"cluster": cluster, "service": "conformance", "desiredCount": 2}),
    )
    .await;
    let (status, _) = run
        .call(
            false,
            "UpdateService",
            json!({"cluster": cluster, "service": "no-such-service", "desiredCount": 1}),
        )
        .await;
    assert_eq!(status, 400);

    // Tasks.
    let tasks = run
        .ecs(
            "ListTasks",
            json!({"cluster": cluster, "desiredStatus": "RUNNING", "maxResults": 20}),
        )
        .await;
    let task_arns = strings(&tasks["taskArns"]);
    assert!(!task_arns.is_empty());
    run.ecs(
        "ListTasks",
        json!({"cluster": cluster, "containerInstance": instance_arns[0]}),
    )
    .await;
    let plain = run
        .ecs(
            "DescribeTasks",
            json!({"cluster": cluster, "tasks": task_arns}),
        )
        .await;
    assert!(
        plain["tasks"][0].get("tags").is_none(),
        "tags only when asked for"
    );
    assert!(
        plain["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| t["containers"].as_array().into_iter().flatten())
            .any(|c| c["gpuSharingStrategy"]["nvidiaMps"]["memory"].is_u64()),
        "MPS containers carry their gpuSharingStrategy"
    );
    run.ecs(
        "DescribeTasks",
        json!({"cluster": cluster, "tasks": [task_arns[0]], "include": ["TAGS"]}),
    )
    .await;
    // Stopped tasks carry their stop code and reasons.
    let stopped = strings(
        &run.ecs(
            "ListTasks",
            json!({"cluster": cluster, "desiredStatus": "STOPPED"}),
        )
        .await["taskArns"],
    );
    if !stopped.is_empty() {
        run.ecs(
            "DescribeTasks",
            json!({"cluster": cluster, "tasks": stopped.iter().take(100).collect::<Vec<_>>()}),
        )
        .await;
    }
    run.ecs(
        "DeregisterTaskDefinition",
        json!({"taskDefinition": new_arn}),
    )
    .await;
    // An unknown operation gets a JSON error, not a crash.
    let (status, answer) = post(
        addr,
        "AmazonEC2ContainerServiceV20141113.DescribeCapacityProviders",
        &json!({}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");

    // CloudWatch over JSON, as botocore speaks it.
    let now = Utc::now().timestamp();
    let metrics = run
        .call(
            true,
            "ListMetrics",
            json!({"Namespace": "CWAgent", "MetricName": "nvidia_smi_utilization_gpu"}),
        )
        .await
        .1;
    let metric = metrics["Metrics"][0].clone();
    assert!(metric.is_object(), "the agent publishes GPU metrics");
    let (status, data) = run
        .call(
            true,
            "GetMetricData",
            json!({
                "MetricDataQueries": [{"Id": "u0", "MetricStat": {"Metric": metric, "Period": 60, "Stat": "Average"}}],
                "StartTime": now - 900,
                "EndTime": now,
                "ScanBy": "TimestampDescending"
            }),
        )
        .await;
    assert_eq!(status, 200, "{data}");
    let (status, put) = run
        .call(
            true,
            "PutMetricData",
            json!({"Namespace": "CWAgent", "MetricData": [{"MetricName": "nvidia_smi_utilization_gpu", "Dimensions": [{"Name": "host", "Value": "ip-10-0-0-1.ec2.internal"}, {"Name": "index", "Value": "0"}], "Value": 12.0, "Timestamp": now}]}),
        )
        .await;
    assert_eq!(status, 200, "{put}");

    let served: BTreeSet<String> = emulator::ecs_api::OPERATIONS
        .iter()
        .map(|op| format!("ecs:{op}"))
        .chain(
            emulator::cbor::OPERATIONS
                .iter()
                .map(|op| format!("cloudwatch:{op}")),
        )
        .collect();
    let missing: Vec<&String> = served.difference(&run.operations).collect();
    assert!(
        missing.is_empty(),
        "every operation the emulator serves is checked; not yet: {missing:?}"
    );
    println!(
        "conformance: {} operations, {} values checked against botocore's models",
        run.operations.len(),
        run.fields
    );
    assert!(
        run.problems.is_empty(),
        "{} answers do not match the models:\n{}",
        run.problems.len(),
        run.problems.join("\n")
    );
}

/// The walker finds what it is for: a field the shape does not have, a value of the wrong
/// type, a value outside its enum, a missing required member.
#[test]
fn the_walker_finds_answers_that_do_not_match() {
    let model = load("ecs", &botocore_data());
    let mut walker = Walker {
        model: &model,
        checked: 0,
        problems: Vec::new(),
    };
    walker.walk(
        "GpuDevice",
        &json!({"gpuId": "GPU-1", "sharingMode": "SHARED", "totalMemoryInMiB": "22563", "memoryInMiB": 1}),
        "gpu",
    );
    walker.walk(
        "NvidiaMpsAllocation",
        &json!({"maxComputePercent": 50}),
        "mps",
    );
    let problems = walker.problems.join("\n");
    assert!(
        problems.contains("gpu.sharingMode: not a value of the enum"),
        "{problems}"
    );
    assert!(
        problems.contains("gpu.totalMemoryInMiB: expected an integer"),
        "{problems}"
    );
    assert!(
        problems.contains("gpu.memoryInMiB: not a member of GpuDevice"),
        "{problems}"
    );
    assert!(
        problems.contains("required member memory of NvidiaMpsAllocation"),
        "{problems}"
    );
    assert_eq!(walker.problems.len(), 4, "{problems}");
}
