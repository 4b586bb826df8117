//! A readable diff of two revisions' JSON: lists of named things matched by name, GPU
//! requirements first.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One difference between two task definitions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffEntry {
    /// A readable path: `containerDefinitions[model].environment[LOG_LEVEL].value`.
    pub path: String,
    pub change: DiffChange,
    /// The value before, as JSON; `None` when added.
    pub before: Option<String>,
    /// The value after, as JSON; `None` when removed.
    pub after: Option<String>,
    /// Whether it is part of a GPU requirement.
    pub gpu: bool,
}

/// How a value differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffChange {
    Added,
    Removed,
    Changed,
}

impl DiffChange {
    pub fn as_str(self) -> &'static str {
        match self {
            DiffChange::Added => "added",
            DiffChange::Removed => "removed",
            DiffChange::Changed => "changed",
        }
    }
}

/// The label of a list item: its `name` (containers, variables, volumes, …) or `key` (tags).
fn label(item: &Value) -> Option<String> {
    ["name", "key"]
        .iter()
        .find_map(|k| item.get(*k).and_then(Value::as_str).map(str::to_string))
}

/// Whether every item of both lists has a label, distinct within its list: then items are
/// matched by label, so that a reordering or an insertion reads as what it is.
fn keyed(old: &[Value], new: &[Value]) -> bool {
    [old, new].iter().all(|list| {
        let mut labels: Vec<String> = list.iter().filter_map(label).collect();
        let count = labels.len();
        labels.sort();
        labels.dedup();
        count == list.len() && labels.len() == count
    })
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Adds the differences between `old` and `new` at `path` to `out`: a field or list item that
/// is only on one side is one entry with its whole value.
fn diff_values(old: &Value, new: &Value, path: String, out: &mut Vec<DiffEntry>) {
    let entry = |path: String, before: Option<&Value>, after: Option<&Value>| DiffEntry {
        gpu: path.contains(".resourceRequirements"),
        change: match (before, after) {
            (None, _) => DiffChange::Added,
            (_, None) => DiffChange::Removed,
            _ => DiffChange::Changed,
        },
        before: before.map(Value::to_string),
        after: after.map(Value::to_string),
        path,
    };
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in old {
                match new.get(key) {
                    Some(now) => diff_values(value, now, child(&path, key), out),
                    None => out.push(entry(child(&path, key), Some(value), None)),
                }
            }
            for (key, value) in new.iter().filter(|(key, _)| !old.contains_key(*key)) {
                out.push(entry(child(&path, key), None, Some(value)));
            }
        }
        (Value::Array(old), Value::Array(new)) if keyed(old, new) => {
            let find = |list: &[Value], wanted: &str| {
                list.iter()
                    .find(|item| label(item).as_deref() == Some(wanted))
                    .cloned()
            };
            for item in old {
                let name = label(item).unwrap_or_default();
                match find(new, &name) {
                    Some(now) => diff_values(item, &now, format!("{path}[{name}]"), out),
                    None => out.push(entry(format!("{path}[{name}]"), Some(item), None)),
                }
            }
            for item in new {
                let name = label(item).unwrap_or_default();
                if find(old, &name).is_none() {
                    out.push(entry(format!("{path}[{name}]"), None, Some(item)));
                }
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            for index in 0..old.len().max(new.len()) {
                let at = format!("{path}[{index}]");
                match (old.get(index), new.get(index)) {
                    (Some(a), Some(b)) => diff_values(a, b, at, out),
                    (a, b) => out.push(entry(at, a, b)),
                }
            }
        }
        (a, b) if a != b => out.push(entry(path, Some(a), Some(b))),
        _ => {}
    }
}

/// The differences between two task definitions, GPU requirements first, then in the order of
/// the fields.
pub fn diff(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<DiffEntry> {
    let mut entries = Vec::new();
    diff_values(
        &Value::Object(before.clone()),
        &Value::Object(after.clone()),
        String::new(),
        &mut entries,
    );
    entries.sort_by_key(|e| !e.gpu);
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::task_definition::secrets::fixture::task;
    use serde_json::json;

    #[test]
    fn a_diff_keys_lists_by_name_and_puts_gpu_first() {
        let before = task();
        let mut after = task();
        after["containerDefinitions"][0]["environment"]
            .as_array_mut()
            .expect("list")
            .insert(0, json!({"name": "BATCH", "value": "8"}));
        after["containerDefinitions"][0]["resourceRequirements"][1]["value"] = json!("2");
        after["tags"][0]["value"] = json!("ads");
        let changes = diff(&before, &after);
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "containerDefinitions[model].resourceRequirements[1].value",
                "containerDefinitions[model].environment[BATCH]",
                "tags[team].value",
            ]
        );
        assert_eq!(changes[1].change, DiffChange::Added);
        assert_eq!(
            changes[1].after.as_deref(),
            Some(r#"{"name":"BATCH","value":"8"}"#)
        );
        assert_eq!(changes[0].before.as_deref(), Some("\"1\""));
        assert_eq!(changes[0].after.as_deref(), Some("\"2\""));
        assert!(diff(&before, &before).is_empty());
    }
}
