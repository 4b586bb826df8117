//! botocore's service models, loaded from the virtual environment `scripts/setup.sh` makes, and
//! the walker that holds a request or an answer to its operation's shape.

use std::{
    io::Read,
    path::{Path, PathBuf},
};

use serde_json::{Map, Value};

/// One botocore service model: its shapes and operations.
pub(crate) struct Model {
    pub(crate) name: &'static str,
    pub(crate) shapes: Map<String, Value>,
    pub(crate) operations: Map<String, Value>,
}

/// Errors ECS and CloudWatch answer for any operation, which the models do not list per
/// operation (the "common errors" of the API reference).
pub(crate) const COMMON_ERRORS: [&str; 4] = [
    "ThrottlingException",
    "ServiceUnavailable",
    "InternalFailure",
    "AccessDeniedException",
];

pub(crate) fn botocore_data() -> PathBuf {
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

pub(crate) fn load(name: &'static str, dir: &Path) -> Model {
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
pub(crate) struct Walker<'a> {
    pub(crate) model: &'a Model,
    pub(crate) checked: usize,
    pub(crate) problems: Vec<String>,
}

impl Walker<'_> {
    pub(crate) fn walk(&mut self, shape_name: &str, value: &Value, path: &str) {
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

pub(crate) fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 80 {
        format!("{}…", &text[..80])
    } else {
        text
    }
}
