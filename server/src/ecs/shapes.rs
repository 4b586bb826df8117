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
