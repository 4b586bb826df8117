//! A task definition as JSON (the RegisterTaskDefinition request, as
//! `aws ecs register-task-definition --cli-input-json` takes it): GPU edits applied to it,
//! secret-looking values masked and restored, a readable diff of two revisions, the
//! CloudFormation snippet of the GPU requirements, and line/column lookups for errors.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::task_definition::GpuSetting;

/// Fields of DescribeTaskDefinition's answer that ECS sets itself and RegisterTaskDefinition
/// does not take.
pub const DESCRIBE_ONLY_FIELDS: [&str; 9] = [
    "taskDefinitionArn",
    "revision",
    "status",
    "requiresAttributes",
    "compatibilities",
    "registeredAt",
    "registeredBy",
    "deregisteredAt",
    "deleteRequestedAt",
];

/// The tag that keeps a revision's change description (a comment on a revision).
pub const CHANGE_TAG: &str = "gpushare:change";
/// ECS tag values are at most 256 characters.
pub const TAG_VALUE_LIMIT: usize = 256;

/// Puts `description` (trimmed) in the change tag of `task`, in place of an earlier one; an
/// empty description removes it. Too long a description is refused with what to do.
pub fn set_change_tag(task: &mut Map<String, Value>, description: &str) -> Result<(), String> {
    let description = description.trim();
    let length = description.chars().count();
    if length > TAG_VALUE_LIMIT {
        return Err(format!(
            "The description has {length} characters; ECS keeps at most {TAG_VALUE_LIMIT} in a tag. Shorten it."
        ));
    }
    let mut tags: Vec<Value> = task
        .get("tags")
        .and_then(Value::as_array)
        .map(|tags| {
            tags.iter()
                .filter(|t| t.get("key").and_then(Value::as_str) != Some(CHANGE_TAG))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if !description.is_empty() {
        tags.push(json!({"key": CHANGE_TAG, "value": description}));
    }
    if tags.is_empty() {
        task.remove("tags");
    } else {
        task.insert("tags".into(), Value::Array(tags));
    }
    Ok(())
}

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

/// A GPU setting as the `resourceRequirements` entry ECS takes.
pub fn gpu_requirement(setting: &GpuSetting) -> Option<Value> {
    match setting {
        GpuSetting::None => None,
        GpuSetting::Whole { count } if *count == u32::MAX => {
            Some(json!({"type": "GPU", "value": "ALL"}))
        }
        GpuSetting::Whole { count } => Some(json!({"type": "GPU", "value": count.to_string()})),
        GpuSetting::Mps {
            memory_mib,
            max_compute_percent,
        } => {
            let mut mps = json!({"memory": memory_mib});
            if let Some(percent) = max_compute_percent {
                mps["maxComputePercent"] = json!(percent);
            }
            Some(json!({"type": "GPU", "sharingStrategy": {"nvidiaMps": mps}}))
        }
    }
}

/// Gives the named containers of `task` their new GPU settings: each one's GPU requirement is
/// replaced, its other requirements and every other field stay. The names not found are
/// returned.
pub fn apply_gpu_edits(
    task: &mut Map<String, Value>,
    edits: &[(String, GpuSetting)],
) -> Vec<String> {
    let mut missing = Vec::new();
    let containers = task
        .get_mut("containerDefinitions")
        .and_then(Value::as_array_mut);
    let Some(containers) = containers else {
        return edits.iter().map(|(name, _)| name.clone()).collect();
    };
    for (name, setting) in edits {
        let Some(container) = containers
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
        else {
            missing.push(name.clone());
            continue;
        };
        let mut requirements: Vec<Value> = container
            .get("resourceRequirements")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter(|r| r.get("type").and_then(Value::as_str) != Some("GPU"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        requirements.extend(gpu_requirement(setting));
        if requirements.is_empty() {
            container.remove("resourceRequirements");
        } else {
            container.insert("resourceRequirements".into(), Value::Array(requirements));
        }
    }
    missing
}

/// The byte `offset` of `text` as a 1-based line and column.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

/// Where the value at a JSON `path` (`containerDefinitions[0].resourceRequirements[1].value`)
/// starts in `text`, as a line and column; `None` when the text does not parse or has no such
/// path. The key's position is given for a member, so the user sees the field's name.
pub fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let mut steps = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            steps.push(Step::Key(key.to_string()));
        }
        while let Some(close) = rest.find(']') {
            steps.push(Step::Index(rest[1..close].parse().ok()?));
            rest = &rest[close + 1..];
        }
    }
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        at: 0,
    };
    let offset = scanner.find(&steps)?;
    Some(line_column(text, offset))
}

enum Step {
    Key(String),
    Index(usize),
}

/// A JSON reader that only finds where a path's value (or key) starts.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn blank(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn find(&mut self, steps: &[Step]) -> Option<usize> {
        self.blank();
        let Some((step, rest)) = steps.split_first() else {
            return Some(self.at);
        };
        match (step, self.bytes.get(self.at)?) {
            (Step::Key(wanted), b'{') => {
                self.at += 1;
                loop {
                    self.blank();
                    if self.bytes.get(self.at)? == &b'}' {
                        return None;
                    }
                    let key_at = self.at;
                    let key = self.string()?;
                    self.blank();
                    self.at += 1; // ':'
                    if &key == wanted {
                        return if rest.is_empty() {
                            Some(key_at)
                        } else {
                            self.find(rest)
                        };
                    }
                    self.skip()?;
                    self.blank();
                    if self.bytes.get(self.at)? == &b',' {
                        self.at += 1;
                    }
                }
            }
            (Step::Index(wanted), b'[') => {
                self.at += 1;
                for index in 0.. {
                    self.blank();
                    if self.bytes.get(self.at)? == &b']' {
                        return None;
                    }
                    if index == *wanted {
                        return self.find(rest);
                    }
                    self.skip()?;
                    self.blank();
                    if self.bytes.get(self.at)? == &b',' {
                        self.at += 1;
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// Reads a string and returns it unescaped enough to compare keys.
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        self.skip_string()?;
        serde_json::from_slice(&self.bytes[start..self.at]).ok()
    }

    fn skip_string(&mut self) -> Option<()> {
        self.at += 1;
        while let Some(byte) = self.bytes.get(self.at) {
            self.at += 1;
            match byte {
                b'\\' => self.at += 1,
                b'"' => return Some(()),
                _ => {}
            }
        }
        None
    }

    /// Skips one value.
    fn skip(&mut self) -> Option<()> {
        self.blank();
        match self.bytes.get(self.at)? {
            b'"' => self.skip_string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                while let Some(byte) = self.bytes.get(self.at) {
                    match byte {
                        b'"' => {
                            self.skip_string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
                None
            }
            _ => {
                while let Some(byte) = self.bytes.get(self.at) {
                    if matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace() {
                        break;
                    }
                    self.at += 1;
                }
                Some(())
            }
        }
    }
}

/// One difference between two task definitions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffEntry {
    /// A readable path: `containerDefinitions[model].environment[LOG_LEVEL].value`.
    pub path: String,
    /// `added`, `removed` or `changed`.
    pub change: String,
    /// The value before, as JSON; `None` when added.
    pub before: Option<String>,
    /// The value after, as JSON; `None` when removed.
    pub after: Option<String>,
    /// Whether it is part of a GPU requirement.
    pub gpu: bool,
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
            (None, _) => "added",
            (_, None) => "removed",
            _ => "changed",
        }
        .into(),
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

/// The containers' `ResourceRequirements` as CloudFormation YAML, for an
/// `AWS::ECS::TaskDefinition` kept in code; one block per container that has requirements.
pub fn cloudformation_yaml(task: &Map<String, Value>) -> String {
    let quote = |text: &str| Value::String(text.to_string()).to_string();
    let mut out = String::new();
    let containers = task
        .get("containerDefinitions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for container in &containers {
        let Some(requirements) = container
            .get("resourceRequirements")
            .and_then(Value::as_array)
            .filter(|list| !list.is_empty())
        else {
            continue;
        };
        let name = container
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.push_str(&format!(
            "# AWS::ECS::TaskDefinition, ContainerDefinitions entry with Name: {}\nResourceRequirements:\n",
            quote(name)
        ));
        for requirement in requirements {
            let kind = requirement
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            out.push_str(&format!("  - Type: {}\n", quote(kind)));
            if let Some(value) = requirement
                .get("value")
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
            {
                out.push_str(&format!("    Value: {}\n", quote(value)));
            }
            if let Some(mps) = requirement.pointer("/sharingStrategy/nvidiaMps") {
                out.push_str("    SharingStrategy:\n      NvidiaMps:\n");
                if let Some(memory) = mps.get("memory") {
                    out.push_str(&format!("        Memory: {memory}\n"));
                }
                if let Some(percent) = mps.get("maxComputePercent") {
                    out.push_str(&format!("        MaxComputePercent: {percent}\n"));
                }
            }
        }
    }
    if out.is_empty() {
        out.push_str("# No container of this task definition has resource requirements.\n");
    }
    out
}

/// The task definition as pretty JSON, ready for `aws ecs register-task-definition
/// --cli-input-json file://…`.
pub fn cli_json(task: &Map<String, Value>) -> String {
    serde_json::to_string_pretty(task).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Map<String, Value> {
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

    #[test]
    fn an_edit_replaces_only_the_gpu_requirement() {
        let mut edited = task();
        let mps = GpuSetting::Mps {
            memory_mib: 8192,
            max_compute_percent: Some(50),
        };
        let missing = apply_gpu_edits(
            &mut edited,
            &[
                ("model".into(), mps),
                ("proxy".into(), GpuSetting::None),
                ("nope".into(), GpuSetting::None),
            ],
        );
        assert_eq!(missing, ["nope"]);
        assert_eq!(
            edited["containerDefinitions"][0]["resourceRequirements"],
            json!([
                {"type": "InferenceAccelerator", "value": "device_1"},
                {"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}}}
            ])
        );
        assert!(edited["containerDefinitions"][1]
            .get("resourceRequirements")
            .is_none());
        let changes = diff(&task(), &edited);
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert!(changes.iter().all(|c| c.gpu));
        assert_eq!(
            changes[0].path,
            "containerDefinitions[model].resourceRequirements[1].value"
        );
        assert_eq!(changes[0].change, "removed");
        assert_eq!(
            changes[1].path,
            "containerDefinitions[model].resourceRequirements[1].sharingStrategy"
        );
        assert_eq!(
            changes[1].after.as_deref(),
            Some(r#"{"nvidiaMps":{"maxComputePercent":50,"memory":8192}}"#)
        );
        let mut back = edited.clone();
        apply_gpu_edits(
            &mut back,
            &[("model".into(), GpuSetting::Whole { count: 1 })],
        );
        assert_eq!(back, task(), "and back again is the same JSON");
    }

    #[test]
    fn the_change_description_is_one_tag() {
        let mut edited = task();
        set_change_tag(&mut edited, "  more memory ").expect("short");
        set_change_tag(&mut edited, "more memory for batch 8").expect("short");
        assert_eq!(
            edited["tags"],
            json!([{"key": "team", "value": "search"}, {"key": CHANGE_TAG, "value": "more memory for batch 8"}])
        );
        set_change_tag(&mut edited, "").expect("empty");
        assert_eq!(edited, task());
        let error = set_change_tag(&mut edited, &"x".repeat(257)).expect_err("long");
        assert!(error.contains("257 characters"));
    }

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
        assert_eq!(changes[1].change, "added");
        assert_eq!(
            changes[1].after.as_deref(),
            Some(r#"{"name":"BATCH","value":"8"}"#)
        );
        assert_eq!(changes[0].before.as_deref(), Some("\"1\""));
        assert_eq!(changes[0].after.as_deref(), Some("\"2\""));
        assert!(diff(&before, &before).is_empty());
    }

    #[test]
    fn cloudformation_names_every_requirement() {
        let mut edited = task();
        apply_gpu_edits(
            &mut edited,
            &[(
                "model".into(),
                GpuSetting::Mps {
                    memory_mib: 8192,
                    max_compute_percent: Some(50),
                },
            )],
        );
        let yaml = cloudformation_yaml(&edited);
        assert_eq!(
            yaml,
            "# AWS::ECS::TaskDefinition, ContainerDefinitions entry with Name: \"model\"\n\
             ResourceRequirements:\n  - Type: \"InferenceAccelerator\"\n    Value: \"device_1\"\n\
             \x20 - Type: \"GPU\"\n    SharingStrategy:\n      NvidiaMps:\n        Memory: 8192\n        MaxComputePercent: 50\n"
        );
        assert!(cloudformation_yaml(&Map::new()).starts_with("# No container"));
    }

    #[test]
    fn paths_are_found_at_their_line_and_column() {
        let text = "{\n  \"family\": \"x\",\n  \"containerDefinitions\": [\n    {\"name\": \"a\"},\n    {\"name\": \"b\", \"resourceRequirements\": [{\"type\": \"GPU\"}]}\n  ]\n}";
        assert_eq!(locate(text, "family"), Some((2, 3)));
        assert_eq!(
            locate(text, "containerDefinitions[1].resourceRequirements[0].type"),
            Some((5, 45))
        );
        assert_eq!(locate(text, "containerDefinitions[2]"), None);
        assert_eq!(locate(text, "nope"), None);
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
    }
}
