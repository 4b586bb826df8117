//! What an edit of a task definition may not slip past the rules: the team tag read straight from
//! the request (not from the diff, which a repeated key or a `tags` list dropped whole would
//! hide), tag keys given twice (ECS refuses them), and the environment variables that steer the
//! NVIDIA container runtime or the MPS daemon.

use serde_json::{Map, Value};

/// The prefixes of the environment variables that steer what a container sees of the GPUs
/// (`NVIDIA_VISIBLE_DEVICES`, `NVIDIA_DRIVER_CAPABILITIES`, …) or of the MPS daemon
/// (`CUDA_MPS_PIPE_DIRECTORY`, `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`, …). ECS sets the ones GPU
/// sharing needs itself.
pub const GPU_VARIABLE_PREFIXES: [&str; 2] = ["NVIDIA_", "CUDA_MPS_"];

/// The `tags` items of a RegisterTaskDefinition request.
fn tags(task: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    task.get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
}

/// The value of the tag `key` of a request: `None` when it has no such tag. When the key is
/// given more than once (which ECS refuses) the values are joined with `, ` so that no single
/// one passes for the team.
pub fn tag_value(task: &Map<String, Value>, key: &str) -> Option<String> {
    let values: Vec<&str> = tags(task)
        .filter(|tag| tag.get("key").and_then(Value::as_str) == Some(key))
        .map(|tag| tag.get("value").and_then(Value::as_str).unwrap_or_default())
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// Tag keys a request gives more than once, each once, in the order first repeated.
pub fn duplicate_tag_keys(task: &Map<String, Value>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut twice: Vec<String> = Vec::new();
    for key in tags(task).filter_map(|tag| tag.get("key").and_then(Value::as_str)) {
        if !seen.insert(key) && !twice.iter().any(|k| k == key) {
            twice.push(key.to_string());
        }
    }
    twice
}

/// Whether an environment variable's name steers the GPUs or the MPS daemon.
pub fn is_gpu_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    GPU_VARIABLE_PREFIXES
        .iter()
        .any(|prefix| upper.starts_with(prefix))
}

/// `(container, name) → value` of every GPU-steering environment variable of a request.
fn gpu_variables(task: &Map<String, Value>) -> Vec<((String, String), Option<String>)> {
    task.get("containerDefinitions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(|container| {
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            container
                .get("environment")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_object)
                .filter_map(move |pair| {
                    let key = pair.get("name").and_then(Value::as_str)?;
                    is_gpu_variable(key).then(|| {
                        (
                            (name.clone(), key.to_string()),
                            pair.get("value")
                                .and_then(Value::as_str)
                                .map(str::to_string),
                        )
                    })
                })
        })
        .collect()
}

/// The GPU-steering environment variables that `result` sets or changes against `source`, as
/// `(container, name)`: those already in the source with the same value are left alone.
pub fn gpu_variables_set(
    source: &Map<String, Value>,
    result: &Map<String, Value>,
) -> Vec<(String, String)> {
    let before = gpu_variables(source);
    gpu_variables(result)
        .into_iter()
        .filter(|(place, value)| !before.iter().any(|(p, v)| p == place && v == value))
        .map(|(place, _)| place)
        .collect()
}

/// Whether `name` is allowed by one of `allowed`: an exact name, or a prefix ending in `*`.
pub fn allowed_by(name: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|rule| match rule.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == rule,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_team_is_read_from_the_tags_and_a_repeated_key_names_no_single_team() {
        let one = task(json!({"tags": [{"key": "team", "value": "search"}]}));
        assert_eq!(tag_value(&one, "team").as_deref(), Some("search"));
        assert_eq!(tag_value(&task(json!({})), "team"), None);
        assert_eq!(tag_value(&task(json!({"tags": []})), "team"), None);
        let twice = task(json!({"tags": [
            {"key": "team", "value": "search"},
            {"key": "owner", "value": "x"},
            {"key": "team", "value": "vision"},
            {"key": "team", "value": "ads"}]}));
        assert_eq!(
            tag_value(&twice, "team").as_deref(),
            Some("search, vision, ads")
        );
        assert_eq!(duplicate_tag_keys(&twice), ["team"]);
        assert!(duplicate_tag_keys(&one).is_empty());
    }

    #[test]
    fn gpu_variables_that_an_edit_sets_or_changes_are_found() {
        let source = task(
            json!({"containerDefinitions": [{"name": "model", "environment": [
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute"},
            {"name": "LOG_LEVEL", "value": "info"}]}]}),
        );
        assert!(
            gpu_variables_set(&source, &source).is_empty(),
            "kept as it was"
        );
        let result = task(
            json!({"containerDefinitions": [{"name": "model", "environment": [
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
            {"name": "nvidia_visible_devices", "value": "all"},
            {"name": "CUDA_MPS_PIPE_DIRECTORY", "value": "/tmp/other"},
            {"name": "LOG_LEVEL", "value": "debug"}]}]}),
        );
        assert_eq!(
            gpu_variables_set(&source, &result),
            [
                (
                    "model".to_string(),
                    "NVIDIA_DRIVER_CAPABILITIES".to_string()
                ),
                ("model".to_string(), "nvidia_visible_devices".to_string()),
                ("model".to_string(), "CUDA_MPS_PIPE_DIRECTORY".to_string()),
            ]
        );
        let allowed = vec![
            "NVIDIA_DRIVER_CAPABILITIES".to_string(),
            "CUDA_MPS_*".into(),
        ];
        assert!(allowed_by("NVIDIA_DRIVER_CAPABILITIES", &allowed));
        assert!(allowed_by("CUDA_MPS_PIPE_DIRECTORY", &allowed));
        assert!(!allowed_by("NVIDIA_VISIBLE_DEVICES", &allowed));
    }
}
