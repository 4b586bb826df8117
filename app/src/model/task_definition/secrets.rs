//! Secret-looking values of a task definition's JSON: masked before they are shown, masked in
//! pairs so that a diff still tells a changed secret, and put back from the source revision
//! when an edit keeps them masked.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// What a masked value shows instead of itself.
pub const MASK: &str = "••••••••";

/// How much of a task definition's JSON is masked for the person looking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskLevel {
    /// For the owning team and admins: secrets' references, and the environment values and log
    /// driver options that look like secrets (by name, or a URL carrying a password).
    SecretLooking,
    /// For everyone else: every environment value and every log driver option besides, since
    /// no name heuristic catches every secret (`DB_PASS`, a token in a URL, `splunk-token`).
    Everything,
}

/// Whether an environment variable's name looks like it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    const HINTS: [&str; 17] = [
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PWD",
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
        "BEARER",
    ];
    let upper = name.to_ascii_uppercase().replace('-', "_");
    HINTS.iter().any(|hint| upper.contains(hint))
}

/// Whether a value is a URL that carries a password (`postgres://user:password@host/db`).
pub fn carries_password(value: &str) -> bool {
    let Some((_, rest)) = value.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// Which list of a container a masked place is in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Environment,
    Secret,
    LogOption,
}

/// Every place of a task definition whose value may be masked, with the container's name, the
/// place (`environment/NAME`, `secrets/NAME`, `logConfiguration.secretOptions/NAME`,
/// `logConfiguration.options/NAME`), its kind, its name and its value.
fn each_slot(
    task: &mut Map<String, Value>,
    mut visit: impl FnMut(&str, &str, Slot, &str, &mut Value),
) {
    let Some(Value::Array(containers)) = task.get_mut("containerDefinitions") else {
        return;
    };
    for container in containers.iter_mut().filter_map(Value::as_object_mut) {
        let name = container
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        for (place, list_of, value_key) in [
            ("environment", Slot::Environment, "value"),
            ("secrets", Slot::Secret, "valueFrom"),
            ("logConfiguration.secretOptions", Slot::Secret, "valueFrom"),
        ] {
            let list = match place.split_once('.') {
                None => container.get_mut(place),
                Some((outer, inner)) => container
                    .get_mut(outer)
                    .and_then(|outer| outer.get_mut(inner)),
            };
            let Some(list) = list.and_then(Value::as_array_mut) else {
                continue;
            };
            for pair in list.iter_mut().filter_map(Value::as_object_mut) {
                let key = pair
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if let Some(value) = pair.get_mut(value_key) {
                    visit(&name, &format!("{place}/{key}"), list_of, &key, value);
                }
            }
        }
        if let Some(Value::Object(options)) = container
            .get_mut("logConfiguration")
            .and_then(|log| log.get_mut("options"))
        {
            for (key, value) in options.iter_mut() {
                let place = format!("logConfiguration.options/{key}");
                visit(&name, &place, Slot::LogOption, key, value);
            }
        }
    }
}

/// Whether a place is masked at `level`.
fn masked_at(level: MaskLevel, slot: Slot, name: &str, value: &Value) -> bool {
    match (slot, level) {
        (Slot::Secret, _) | (_, MaskLevel::Everything) => true,
        (Slot::Environment | Slot::LogOption, MaskLevel::SecretLooking) => {
            looks_secret(name) || value.as_str().is_some_and(carries_password)
        }
    }
}

/// The places of `task` masked at `level`, as `(container, place)`.
fn places(task: &Map<String, Value>, level: MaskLevel) -> HashSet<(String, String)> {
    let mut found = HashSet::new();
    each_slot(&mut task.clone(), |container, place, slot, name, value| {
        if masked_at(level, slot, name, value) {
            found.insert((container.to_string(), place.to_string()));
        }
    });
    found
}

/// Masks the values of `task` that `level` hides; the number masked.
pub fn mask_at(task: &mut Map<String, Value>, level: MaskLevel) -> usize {
    let mut count = 0;
    each_slot(task, |_, _, slot, name, value| {
        if value.is_string() && masked_at(level, slot, name, value) {
            *value = Value::String(MASK.into());
            count += 1;
        }
    });
    count
}

/// Masks the secret-looking values of `task`; the number masked.
pub fn mask_secrets(task: &mut Map<String, Value>) -> usize {
    mask_at(task, MaskLevel::SecretLooking)
}

/// Masks two versions of a task definition at `level` so that their diff still tells a changed
/// value: in `new`, a value that differs from `old`'s at the same place reads
/// "•••••••• (changed)". A place masked in either version is masked in both.
pub fn mask_pair_at(old: &mut Map<String, Value>, new: &mut Map<String, Value>, level: MaskLevel) {
    let mut hidden = places(old, level);
    hidden.extend(places(new, level));
    let mut before = HashMap::new();
    each_slot(old, |container, place, _, _, value| {
        let at = (container.to_string(), place.to_string());
        if hidden.contains(&at) {
            before.insert(at, value.clone());
            *value = Value::String(MASK.into());
        }
    });
    each_slot(new, |container, place, _, _, value| {
        let at = (container.to_string(), place.to_string());
        if hidden.contains(&at) {
            let changed = before.get(&at).is_some_and(|old| old != value);
            *value = Value::String(if changed {
                format!("{MASK} (changed)")
            } else {
                MASK.to_string()
            });
        }
    });
}

/// [`mask_pair_at`] for the owning team: secret-looking values.
pub fn mask_pair(old: &mut Map<String, Value>, new: &mut Map<String, Value>) {
    mask_pair_at(old, new, MaskLevel::SecretLooking);
}

/// Puts back, from `source`, every value of `edited` that is still masked (the same container
/// and variable, secret or option name). The places that stay masked because `source` has
/// nothing there are returned, as `container: place`.
pub fn unmask_secrets(edited: &mut Map<String, Value>, source: &Map<String, Value>) -> Vec<String> {
    let mut originals = HashMap::new();
    each_slot(&mut source.clone(), |container, place, _, _, value| {
        originals.insert((container.to_string(), place.to_string()), value.clone());
    });
    let mut missing = Vec::new();
    each_slot(edited, |container, place, _, _, value| {
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

    /// A task whose secrets no list of names finds: a short name, a password in a URL, a log
    /// driver's token.
    fn sly() -> Map<String, Value> {
        json!({"family": "embed", "containerDefinitions": [{"name": "model", "image": "embed:1",
            "environment": [
                {"name": "DB_PASS", "value": "hunter2"},
                {"name": "UPSTREAM", "value": "https://svc:s3cret@upstream.internal/v1"},
                {"name": "LOG_LEVEL", "value": "info"}],
            "logConfiguration": {"logDriver": "splunk", "options": {
                "splunk-token": "tok-123", "splunk-url": "https://splunk.internal:8088", "splunk-format": "json"}}}]})
        .as_object()
        .cloned()
        .unwrap_or_default()
    }

    #[test]
    fn the_owning_team_sees_plain_values_and_no_secret_a_name_list_would_miss() {
        let mut shown = sly();
        assert_eq!(mask_secrets(&mut shown), 3, "{shown:?}");
        let text = serde_json::to_string(&shown).expect("json");
        for secret in ["hunter2", "s3cret", "tok-123"] {
            assert!(!text.contains(secret), "{secret} shown: {text}");
        }
        assert!(
            text.contains("\"info\"") && text.contains("splunk.internal"),
            "{text}"
        );
        assert!(carries_password("postgres://u:p@db/x") && !carries_password("https://db/x?a=b@c"));
    }

    #[test]
    fn people_outside_the_team_see_no_environment_value_or_log_option() {
        let mut shown = sly();
        assert_eq!(mask_at(&mut shown, MaskLevel::Everything), 6);
        let text = serde_json::to_string(&shown).expect("json");
        for value in [
            "hunter2",
            "s3cret",
            "tok-123",
            "info",
            "splunk.internal",
            "\"json\"",
        ] {
            assert!(!text.contains(value), "{value} shown: {text}");
        }
        assert!(text.contains("splunk-format"), "the names stay: {text}");
        // Compared at that level, a changed plain value says only that it changed.
        let (mut old, mut new) = (sly(), sly());
        new["containerDefinitions"][0]["environment"][2]["value"] = json!("debug");
        mask_pair_at(&mut old, &mut new, MaskLevel::Everything);
        let changes = diff(&old, &new);
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].after.as_deref(), Some("\"•••••••• (changed)\""));
        // A masked value an edit keeps is put back, whatever its name.
        let mut edited = sly();
        mask_at(&mut edited, MaskLevel::Everything);
        assert!(unmask_secrets(&mut edited, &sly()).is_empty());
        assert_eq!(edited, sly());
    }
}
