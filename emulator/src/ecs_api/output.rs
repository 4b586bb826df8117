//! What the operations share in their answers: pages of a list with their `nextToken`,
//! epoch-second timestamps, tags and `failures` entries, as awsJson 1.1 spells them.

use base64::{engine::general_purpose::STANDARD, Engine as _};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::input::Paging;
use crate::{
    error::{invalid, EcsError},
    model::{Fleet, Tag},
};

/// One page of `items` after `nextToken`, at most `maxResults` (default `default_max`).
pub fn page<T: Clone>(
    items: &[T],
    paging: &Paging,
    default_max: i64,
) -> Result<(Vec<T>, Option<String>), EcsError> {
    let max = paging.max_results.unwrap_or(default_max);
    if !(1..=100).contains(&max) {
        return Err(invalid("maxResults must be between 1 and 100."));
    }
    let start = match paging.next_token.as_deref() {
        None => 0,
        Some(token) => decode_token(token)
            .ok_or_else(|| invalid("The nextToken is not valid; start again without it."))?,
    };
    let end = (start + max as usize).min(items.len());
    let slice = items.get(start..end).unwrap_or_default().to_vec();
    let next = (end < items.len()).then(|| encode_token(end));
    Ok((slice, next))
}

fn encode_token(offset: usize) -> String {
    STANDARD.encode(format!("gpushare-emulator:{offset}"))
}

fn decode_token(token: &str) -> Option<usize> {
    let bytes = STANDARD.decode(token).ok()?;
    String::from_utf8(bytes)
        .ok()?
        .strip_prefix("gpushare-emulator:")?
        .parse()
        .ok()
}

/// A list's answer: `{name: items}` and its `nextToken` when there is more.
pub fn listed<T: serde::Serialize>(name: &str, items: Vec<T>, next: Option<String>) -> Value {
    let mut body = json!({ name: items });
    if let (Some(token), Some(map)) = (next, body.as_object_mut()) {
        map.insert("nextToken".into(), Value::String(token));
    }
    body
}

/// A time as ECS writes it: seconds since the epoch, with milliseconds.
pub fn epoch(at: DateTime<Utc>) -> Value {
    json!(epoch_seconds(at))
}

pub fn epoch_seconds(at: DateTime<Utc>) -> f64 {
    at.timestamp_millis() as f64 / 1000.0
}

/// Tags as `[{key, value}]`.
pub fn tags_json(tags: &[Tag]) -> Value {
    Value::Array(
        tags.iter()
            .map(|t| json!({"key": t.key, "value": t.value}))
            .collect(),
    )
}

/// The tags of the resource `arn`.
pub fn tags_of(fleet: &Fleet, arn: &str) -> Value {
    tags_json(fleet.tags.get(arn).map_or(&[][..], Vec::as_slice))
}

/// A `failures` entry for a resource a describe call did not find.
pub fn missing(reference: &str) -> Value {
    json!({"arn": reference, "reason": "MISSING"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_garbage_is_refused() {
        assert_eq!(decode_token(&encode_token(42)), Some(42));
        assert_eq!(decode_token("not base64!"), None);
        let items: Vec<u32> = (0..250).collect();
        let mut paging = Paging::default();
        let (first, next) = page(&items, &paging, 100).expect("page");
        assert_eq!(first.len(), 100);
        paging.next_token = next;
        paging.max_results = Some(100);
        let (second, next) = page(&items, &paging, 100).expect("page");
        assert_eq!(second[0], 100);
        paging.next_token = next;
        let (third, next) = page(&items, &paging, 100).expect("page");
        assert_eq!(third.len(), 50);
        assert!(next.is_none());
        paging.max_results = Some(101);
        assert!(page(&items, &paging, 100).is_err());
        assert_eq!(
            listed("taskArns", vec!["a"], Some("t".into())),
            json!({"taskArns": ["a"], "nextToken": "t"})
        );
    }
}
