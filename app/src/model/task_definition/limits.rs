//! The bounds a task definition's JSON is held to before any heavy check: ECS's own quotas
//! (10 containers, 50 tags, 10 placement constraints), a nesting depth no RegisterTaskDefinition
//! request reaches, and a cap on the errors one answer lists. A body past them is refused in one
//! cheap pass, so that no request can tie the server up with work ECS would refuse anyway.

use serde_json::Value;

use super::FieldError;

/// Containers per task definition: ECS's service quota "Containers per task definition", 10,
/// not adjustable.
pub const MAX_CONTAINERS: usize = 10;

/// Tags per resource: the ECS API reference's limit on `tags`, 50.
pub const MAX_TAGS: usize = 50;

/// Placement constraints per task definition: RegisterTaskDefinition's `placementConstraints`
/// takes at most 10.
pub const MAX_PLACEMENT_CONSTRAINTS: usize = 10;

/// How deep arrays and objects may nest. The deepest member of the RegisterTaskDefinition shapes
/// (`containerDefinitions[].linuxParameters.tmpfs[].mountOptions[]`) sits at depth 7; ECS
/// documents no limit, so this is an inference with room to spare, not ECS's number.
pub const MAX_DEPTH: usize = 20;

/// Errors one answer lists; the rest are counted in a last error.
pub const MAX_ERRORS: usize = 50;

/// How deep `text` nests arrays and objects, counted in one pass without recursion; strings are
/// skipped, so brackets inside them do not count.
pub fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut in_string = false;
    let mut escaped = false;
    for byte in text.bytes() {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The error of a list longer than ECS takes.
fn too_many(field: &str, count: usize, limit: usize, what: &str, fix: &str) -> FieldError {
    FieldError {
        field: field.into(),
        message: format!("{field} has {count} {what}; ECS takes at most {limit}. {fix}"),
        ..FieldError::default()
    }
}

/// What breaks ECS's limits in the JSON `text`, found before any other check; an empty list when
/// nothing does. A text nested too deep is not parsed at all.
pub fn over_limits(text: &str) -> Vec<FieldError> {
    let depth = nesting_depth(text);
    if depth > MAX_DEPTH {
        return vec![FieldError {
            field: String::new(),
            message: format!(
                "The JSON nests {depth} levels deep; no task definition nests more than {MAX_DEPTH}. Send the RegisterTaskDefinition request itself."
            ),
            ..FieldError::default()
        }];
    }
    let Ok(Value::Object(task)) = serde_json::from_str::<Value>(text) else {
        // Malformed JSON is reported by the checks that read it, at its line and column.
        return Vec::new();
    };
    let limits = [
        (
            "containerDefinitions",
            MAX_CONTAINERS,
            "containers",
            "Split the containers into more than one task definition.",
        ),
        (
            "tags",
            MAX_TAGS,
            "tags",
            "Keep the tags that matter for cost and ownership.",
        ),
        (
            "placementConstraints",
            MAX_PLACEMENT_CONSTRAINTS,
            "constraints",
            "Combine the expressions.",
        ),
    ];
    let mut errors = Vec::new();
    for (field, most, noun, advice) in limits {
        let count = task
            .get(field)
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if count > most {
            errors.push(too_many(field, count, most, noun, advice));
        }
    }
    errors
}

/// `errors` cut to [`MAX_ERRORS`], the rest counted in a last error that says so.
pub fn capped<T>(mut errors: Vec<T>, more: impl FnOnce(usize) -> T) -> Vec<T> {
    if errors.len() > MAX_ERRORS {
        let left_out = errors.len() - MAX_ERRORS;
        errors.truncate(MAX_ERRORS);
        errors.push(more(left_out));
    }
    errors
}

/// The last error of a capped list.
pub fn more_errors(left_out: usize) -> FieldError {
    FieldError {
        field: String::new(),
        message: format!("… and {left_out} more errors not listed; fix these and check again."),
        ..FieldError::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        assert_eq!(nesting_depth(r#"{"a": [1, {"b": "[[[{{"}]}"#), 3);
        assert_eq!(nesting_depth(r#"{"a": "\"[", "b": []}"#), 2);
        assert_eq!(nesting_depth("[[[[]]]]"), 4);
        assert_eq!(nesting_depth("12"), 0);
    }

    #[test]
    fn ecs_limits_are_refused_before_anything_else() {
        let containers: Vec<String> = (0..11)
            .map(|n| format!(r#"{{"name": "c{n}", "image": "x"}}"#))
            .collect();
        let text = format!(
            r#"{{"family": "f", "containerDefinitions": [{}]}}"#,
            containers.join(",")
        );
        let errors = over_limits(&text);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "containerDefinitions");
        assert!(errors[0].message.contains("11 containers"), "{errors:?}");
        assert!(errors[0].message.contains("at most 10"), "{errors:?}");

        let ten = format!(
            r#"{{"family": "f", "containerDefinitions": [{}]}}"#,
            containers[..10].join(",")
        );
        assert!(over_limits(&ten).is_empty());

        let tags: Vec<String> = (0..51)
            .map(|n| format!(r#"{{"key": "k{n}", "value": "v"}}"#))
            .collect();
        let text = format!(
            r#"{{"family": "f", "containerDefinitions": [], "tags": [{}]}}"#,
            tags.join(",")
        );
        assert_eq!(over_limits(&text)[0].field, "tags");

        let deep = format!(
            r#"{{"family": "f", "containerDefinitions": {}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let errors = over_limits(&deep);
        assert!(errors[0].message.contains("100001 levels"), "{errors:?}");
        assert!(
            over_limits("not json").is_empty(),
            "malformed JSON is left to the parser"
        );
    }

    #[test]
    fn long_error_lists_are_cut_and_counted() {
        let errors: Vec<FieldError> = (0..120)
            .map(|n| FieldError {
                field: format!("f{n}"),
                ..FieldError::default()
            })
            .collect();
        let cut = capped(errors, more_errors);
        assert_eq!(cut.len(), MAX_ERRORS + 1);
        assert_eq!(cut[MAX_ERRORS - 1].field, format!("f{}", MAX_ERRORS - 1));
        assert!(
            cut[MAX_ERRORS].message.contains("70 more errors"),
            "{:?}",
            cut[MAX_ERRORS]
        );
        let few = capped(vec![more_errors(1)], more_errors);
        assert_eq!(few.len(), 1);
    }
}
