//! Secret-looking values of a task definition's JSON: masked before they are shown, masked in
//! pairs so that a diff still tells a changed secret, and put back from the source revision
//! when an edit keeps them masked.

use serde_json::{Map, Value};

/// What a masked value shows instead of itself.
pub const MASK: &str = "••••••••";

/// Whether an environment variable's name looks like it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    const HINTS: [&str; 14] = [
        "PASSWORD",
        "PASSWD",
        "SECRET",
        "TOKEN",
        "KEY",
        "CREDENTIAL",
        "PRIVATE",
        "AUTH",
        "DSN",
        "DATABASE_URL",
        "CONNECTION_STRING",
        "SALT",
        "COOKIE",
        "SESSION",
    ];
    let upper = name.to_ascii_uppercase();
    HINTS.iter().any(|hint| upper.contains(hint))
}

/// The places of a task definition whose values are masked: environment values with a
/// secret-looking name, and every secret's `valueFrom` (in `secrets` and the log
/// configuration's `secretOptions`).
fn masked_slots(task: &mut Map<String, Value>, mut visit: impl FnMut(&str, &str, &mut Value)) {
    let Some(Value::Array(containers)) = task.get_mut("containerDefinitions") else {
        return;
    };
    for container in containers.iter_mut().filter_map(Value::as_object_mut) {
        let name = container
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(Value::Array(environment)) = container.get_mut("environment") {
            for pair in environment.iter_mut().filter_map(Value::as_object_mut) {
                let key = pair
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if looks_secret(&key) {
                    if let Some(value) = pair.get_mut("value") {
                        visit(&name, &format!("environment/{key}"), value);
                    }
                }
            }
        }
        for place in ["secrets", "logConfiguration.secretOptions"] {
            let list = match place {
                "secrets" => container.get_mut("secrets"),
                _ => container
                    .get_mut("logConfiguration")
                    .and_then(|log| log.get_mut("secretOptions")),
            };
            let Some(list) = list.and_then(Value::as_array_mut) else {
                continue;
            };
            for secret in list.iter_mut().filter_map(Value::as_object_mut) {
                let key = secret
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if let Some(value) = secret.get_mut("valueFrom") {
                    visit(&name, &format!("{place}/{key}"), value);
                }
            }
        }
    }
}

/// Masks the secret-looking values of `task`; the number masked.
pub fn mask_secrets(task: &mut Map<String, Value>) -> usize {
    let mut count = 0;
    masked_slots(task, |_, _, value| {
        if value.is_string() {
            *value = Value::String(MASK.into());
            count += 1;
        }
    });
    count
}

/// Masks the secret-looking values of two versions of a task definition so that their diff
/// still tells a changed secret: in `new`, a value that differs from `old`'s at the same place
/// reads "•••••••• (changed)".
pub fn mask_pair(old: &mut Map<String, Value>, new: &mut Map<String, Value>) {
    let mut before = std::collections::HashMap::new();
    masked_slots(old, |container, place, value| {
        before.insert((container.to_string(), place.to_string()), value.clone());
    });
    masked_slots(new, |container, place, value| {
        let changed = before
            .get(&(container.to_string(), place.to_string()))
            .is_some_and(|old| old != value);
        *value = Value::String(if changed {
            format!("{MASK} (changed)")
        } else {
            MASK.to_string()
        });
    });
    mask_secrets(old);
}

/// Puts back, from `source`, every value of `edited` that is still masked (the same container
/// and variable or secret name). The places that stay masked because `source` has nothing there
/// are returned, as `container: place`.
pub fn unmask_secrets(edited: &mut Map<String, Value>, source: &Map<String, Value>) -> Vec<String> {
    let mut originals = std::collections::HashMap::new();
    let mut source = source.clone();
    masked_slots(&mut source, |container, place, value| {
        originals.insert((container.to_string(), place.to_string()), value.clone());
    });
    let mut missing = Vec::new();
    masked_slots(edited, |container, place, value| {
        if value.as_str() == Some(MASK) {
            match originals.get(&(container.to_string(), place.to_string())) {
                Some(original) => *value = original.clone(),
                None => missing.push(format!("{container}: {place}")),
            }
        }
    });
    missing
}

/// A task definition with secrets, for the tests of this folder.
#[cfg(test)]
pub(super) mod fixture {
    use serde_json::{json, Map, Value};

    pub fn task() -> Map<String, Value> {
        json!({
            "family": "embed",
            "containerDefinitions": [
                {"name": "model", "image": "embed:1",
                 "environment": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "HF_TOKEN", "value": "hf_abc"}],
                 "secrets": [{"name": "DB", "valueFrom": "arn:aws:secretsmanager:us-east-1:1:secret:db"}],
                 "resourceRequirements": [
                    {"type": "InferenceAccelerator", "value": "device_1"},
                    {"type": "GPU", "value": "1"}]},
                {"name": "proxy", "image": "envoy"}
            ],
            "tags": [{"key": "team", "value": "search"}]
        })
        .as_object()
        .cloned()
        .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::task_definition::diff;
    use fixture::task;
    use serde_json::json;

    #[test]
    fn a_masked_diff_still_tells_a_changed_secret() {
        let mut old = task();
        let mut new = task();
        new["containerDefinitions"][0]["environment"][1]["value"] = json!("hf_new");
        mask_pair(&mut old, &mut new);
        let changes = diff(&old, &new);
        assert_eq!(changes.len(), 1);
        assert_eq!(
            changes[0].path,
            "containerDefinitions[model].environment[HF_TOKEN].value"
        );
        assert_eq!(changes[0].after.as_deref(), Some("\"•••••••• (changed)\""));
        assert!(!format!("{changes:?}").contains("hf_"));
    }

    #[test]
    fn secrets_are_masked_and_put_back() {
        let mut shown = task();
        assert_eq!(mask_secrets(&mut shown), 2);
        let container = &shown["containerDefinitions"][0];
        assert_eq!(container["environment"][0]["value"], "info");
        assert_eq!(container["environment"][1]["value"], MASK);
        assert_eq!(container["secrets"][0]["valueFrom"], MASK);
        assert!(!shown.values().any(|v| v.to_string().contains("hf_abc")));
        let mut edited = shown.clone();
        edited["containerDefinitions"][0]["environment"]
            .as_array_mut()
            .expect("list")
            .push(json!({"name": "NEW_SECRET", "value": MASK}));
        let missing = unmask_secrets(&mut edited, &task());
        assert_eq!(missing, ["model: environment/NEW_SECRET"]);
        assert_eq!(
            edited["containerDefinitions"][0]["environment"][1]["value"],
            "hf_abc"
        );
        assert!(looks_secret("api_key") && looks_secret("DB_PASSWORD"));
        assert!(!looks_secret("LOG_LEVEL"));
    }
}
