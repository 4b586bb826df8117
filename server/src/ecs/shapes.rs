//! ECS's JSON through aws-sdk-ecs's own shape schemas: the codec of its wire protocol, a value
//! of an SDK shape as JSON, and the fields of a request that the SDK's reading left out (a field
//! it does not model), for the requests the console takes as JSON.

use aws_smithy_json::codec::{JsonCodec, JsonCodecSettings};
use aws_smithy_schema::{
    codec::Codec,
    serde::{SerializableStruct, ShapeSerializer},
    Schema,
};
use serde_json::{Map, Value};

use app::model::{
    task_definition::{line_column, FieldError},
    ServiceError,
};

/// The codec of ECS's wire protocol (awsJson 1.1: member names as keys, epoch-second times).
pub(crate) fn codec() -> JsonCodec {
    JsonCodec::new(JsonCodecSettings::builder().use_json_name(false).build())
}

/// A value of an SDK shape as JSON.
pub(crate) fn to_json(schema: &Schema<'_>, value: &dyn SerializableStruct) -> Value {
    let mut serializer = codec().create_serializer();
    // Writing SDK values the SDK itself built cannot fail; an empty object is the safe answer.
    if serializer.write_struct(schema, value).is_err() {
        return Value::Object(Map::new());
    }
    serde_json::from_slice(&serializer.finish()).unwrap_or(Value::Object(Map::new()))
}

/// The paths of the fields of `original` that did not survive the SDK's reading (`kept`).
pub(crate) fn dropped_fields(original: &Value, kept: &Value, path: String, out: &mut Vec<String>) {
    match (original, kept) {
        (Value::Object(original), Value::Object(kept)) => {
            for (key, value) in original {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match kept.get(key) {
                    Some(kept) => dropped_fields(value, kept, child, out),
                    None if value.is_null() => {}
                    None => out.push(child),
                }
            }
        }
        (Value::Array(original), Value::Array(kept)) => {
            for (index, (value, kept)) in original.iter().zip(kept).enumerate() {
                dropped_fields(value, kept, format!("{path}[{index}]"), out);
            }
        }
        (Value::Object(_), _) => out.push(path),
        _ => {}
    }
}

/// The JSON `text` as the request of `operation`, read with the SDK's own shape (`read` is the
/// shape's deserializer, `write` its JSON): the request, and the JSON that is sent; or each field
/// that is wrong — JSON that does not parse or a value of the wrong type at its line and column,
/// a field the SDK does not model by its path.
pub(crate) fn read_request<T>(
    text: &str,
    operation: &str,
    read: impl FnOnce(
        &mut dyn aws_smithy_schema::serde::ShapeDeserializer,
    ) -> Result<T, aws_smithy_schema::serde::SerdeError>,
    write: impl FnOnce(&T) -> Value,
) -> Result<(T, Map<String, Value>), Vec<FieldError>> {
    let at = |line: usize, column: usize, message: String| {
        vec![FieldError {
            message: format!("line {line}, column {column}: {message}"),
            line: Some(line),
            column: Some(column),
            ..FieldError::default()
        }]
    };
    let original: Value = serde_json::from_str(text)
        .map_err(|e| at(e.line(), e.column(), format!("{e}; fix the JSON there")))?;
    if !original.is_object() {
        return Err(vec![FieldError {
            message: format!("the body must be a JSON object: ECS's {operation} request"),
            ..FieldError::default()
        }]);
    }
    let codec = codec();
    let mut deserializer = codec.create_deserializer(text.as_bytes());
    let input = read(&mut deserializer).map_err(|e| {
        let (line, column) = line_column(text, deserializer.position());
        at(
            line,
            column,
            format!("{e}; give the value the type the ECS API reference gives it"),
        )
    })?;
    let kept = write(&input);
    let mut unknown = Vec::new();
    dropped_fields(&original, &kept, String::new(), &mut unknown);
    if !unknown.is_empty() {
        return Err(unknown
            .into_iter()
            .map(|path| FieldError {
                message: format!(
                    "{operation} has no field '{}' here; remove it or check its spelling against the ECS API reference",
                    path.rsplit('.').next().unwrap_or(&path)
                ),
                field: path,
                ..FieldError::default()
            })
            .collect());
    }
    let body = match kept {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Ok((input, body))
}

/// Field errors as one refusal, for a request that was checked before and no longer reads.
pub(crate) fn invalid(errors: &[FieldError]) -> ServiceError {
    ServiceError::invalid(
        errors
            .iter()
            .map(|e| format!("{} {}", e.field, e.message).trim().to_string())
            .collect::<Vec<_>>()
            .join("; "),
    )
}
