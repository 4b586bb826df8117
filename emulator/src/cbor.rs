//! The CloudWatch operations over CBOR (Smithy RPC v2): decoding what aws-sdk-cloudwatch sends
//! and encoding what it reads, timestamps as CBOR tag 1 (epoch seconds).

use base64::{engine::general_purpose::STANDARD, Engine as _};
use chrono::{DateTime, TimeZone, Utc};
use ciborium::Value;

use crate::{
    cloudwatch::{CloudWatchError, MetricQuery, MetricResult, MAX_DATAPOINTS},
    metric_store::MetricId,
    model::Fleet,
};

/// The CloudWatch operations the emulator serves.
pub const OPERATIONS: [&str; 3] = ["GetMetricData", "ListMetrics", "PutMetricData"];

type Entries = Vec<(Value, Value)>;

fn bad(message: impl Into<String>) -> CloudWatchError {
    CloudWatchError::InvalidParameterValue(message.into())
}

fn get<'a>(map: &'a Entries, key: &str) -> Option<&'a Value> {
    map.iter()
        .find(|(k, _)| k.as_text() == Some(key))
        .map(|(_, v)| v)
        .filter(|v| !v.is_null())
}

fn text(map: &Entries, key: &str) -> Result<Option<String>, CloudWatchError> {
    match get(map, key) {
        None => Ok(None),
        Some(Value::Text(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("{key} must be a string."))),
    }
}

fn integer(map: &Entries, key: &str) -> Result<Option<i64>, CloudWatchError> {
    match get(map, key) {
        None => Ok(None),
        Some(Value::Integer(i)) => i64::try_from(*i)
            .map(Some)
            .map_err(|_| bad(format!("{key} is out of range."))),
        Some(_) => Err(bad(format!("{key} must be an integer."))),
    }
}

fn float(value: &Value) -> Option<f64> {
    match value {
        Value::Float(f) => Some(*f),
        Value::Integer(i) => i64::try_from(*i).ok().map(|i| i as f64),
        _ => None,
    }
}

fn timestamp(map: &Entries, key: &str) -> Result<Option<DateTime<Utc>>, CloudWatchError> {
    let Some(value) = get(map, key) else {
        return Ok(None);
    };
    let seconds = match value {
        Value::Tag(1, inner) => float(inner),
        other => float(other),
    }
    .ok_or_else(|| bad(format!("{key} must be a timestamp.")))?;
    Utc.timestamp_millis_opt((seconds * 1000.0).round() as i64)
        .single()
        .map(Some)
        .ok_or_else(|| bad(format!("{key} is out of range.")))
}

fn list<'a>(map: &'a Entries, key: &str) -> Result<&'a [Value], CloudWatchError> {
    match get(map, key) {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(bad(format!("{key} must be a list."))),
    }
}

fn as_map<'a>(value: &'a Value, what: &str) -> Result<&'a Entries, CloudWatchError> {
    value
        .as_map()
        .ok_or_else(|| bad(format!("{what} must be a structure.")))
}

fn dimensions(map: &Entries) -> Result<Vec<(String, Option<String>)>, CloudWatchError> {
    list(map, "Dimensions")?
        .iter()
        .map(|d| {
            let d = as_map(d, "Each dimension")?;
            let name = text(d, "Name")?.ok_or_else(|| {
                CloudWatchError::MissingParameter("Each dimension needs a Name.".into())
            })?;
            Ok((name, text(d, "Value")?))
        })
        .collect()
}

fn metric_id(map: &Entries) -> Result<MetricId, CloudWatchError> {
    let namespace = text(map, "Namespace")?
        .ok_or_else(|| CloudWatchError::MissingParameter("Metric.Namespace is required.".into()))?;
    let name = text(map, "MetricName")?.ok_or_else(|| {
        CloudWatchError::MissingParameter("Metric.MetricName is required.".into())
    })?;
    let dims = dimensions(map)?
        .into_iter()
        .map(|(n, v)| {
            v.map(|v| (n.clone(), v))
                .ok_or_else(|| bad(format!("Dimension {n} needs a Value.")))
        })
        .collect::<Result<_, _>>()?;
    Ok(MetricId::new(&namespace, &name, dims))
}

fn t(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn ts(at: DateTime<Utc>) -> Value {
    Value::Tag(
        1,
        Box::new(Value::Float(at.timestamp_millis() as f64 / 1000.0)),
    )
}

fn encode_token(offset: usize) -> String {
    STANDARD.encode(format!("gpushare-emulator-cw:{offset}"))
}

fn decode_token(token: &str) -> Result<usize, CloudWatchError> {
    STANDARD
        .decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| {
            s.strip_prefix("gpushare-emulator-cw:")
                .and_then(|n| n.parse().ok())
        })
        .ok_or(CloudWatchError::InvalidNextToken)
}

/// Whether `operation` only reads the fleet (and so can run beside other reads).
pub fn reads_only(operation: &str) -> bool {
    matches!(operation, "GetMetricData" | "ListMetrics")
}

/// The request body's entries, or what is wrong with it.
fn entries(input: &Value) -> Result<&Entries, CloudWatchError> {
    static EMPTY: Entries = Vec::new();
    match input {
        Value::Map(map) => Ok(map),
        Value::Null => Ok(&EMPTY),
        _ => Err(bad("The request body must be a CBOR map.")),
    }
}

/// Runs one CloudWatch operation that only reads (see [`reads_only`]).
pub fn read(
    fleet: &Fleet,
    operation: &str,
    input: Value,
    now: DateTime<Utc>,
) -> Result<Value, CloudWatchError> {
    let input = entries(&input)?;
    match operation {
        "GetMetricData" => get_metric_data(fleet, input, now),
        "ListMetrics" => list_metrics(fleet, input),
        other => Err(bad(format!(
            "The operation {other} is not supported by this emulator."
        ))),
    }
}

/// Runs one CloudWatch operation on a decoded request body.
pub fn handle(
    fleet: &mut Fleet,
    operation: &str,
    input: Value,
    now: DateTime<Utc>,
) -> Result<Value, CloudWatchError> {
    if reads_only(operation) {
        return read(fleet, operation, input, now);
    }
    match operation {
        "PutMetricData" => put_metric_data(fleet, entries(&input)?, now),
        other => Err(bad(format!(
            "The operation {other} is not supported by this emulator."
        ))),
    }
}

fn get_metric_data(
    fleet: &Fleet,
    input: &Entries,
    now: DateTime<Utc>,
) -> Result<Value, CloudWatchError> {
    let start = timestamp(input, "StartTime")?
        .ok_or_else(|| CloudWatchError::MissingParameter("StartTime is required.".into()))?;
    let end = timestamp(input, "EndTime")?
        .ok_or_else(|| CloudWatchError::MissingParameter("EndTime is required.".into()))?;
    let ascending = match text(input, "ScanBy")?.as_deref() {
        None | Some("TimestampDescending") => false,
        Some("TimestampAscending") => true,
        Some(other) => return Err(bad(format!("ScanBy {other} is not valid."))),
    };
    let max_points = integer(input, "MaxDatapoints")?.map_or(MAX_DATAPOINTS, |n| {
        n.clamp(1, MAX_DATAPOINTS as i64) as usize
    });
    let queries = metric_queries(input)?;
    let skip = text(input, "NextToken")?
        .map(|t| decode_token(&t))
        .transpose()?
        .unwrap_or(0);
    let mut results = fleet.get_metric_data(&queries, start, end, now)?;
    let mut out = Vec::new();
    let mut points = 0;
    let mut next = None;
    for (index, mut result) in results.drain(..).enumerate().skip(skip) {
        if points > 0 && points + result.values.len() > max_points {
            next = Some(encode_token(index));
            break;
        }
        points += result.values.len();
        if ascending {
            result.timestamps.reverse();
            result.values.reverse();
        }
        out.push(result_value(result));
    }
    let mut body = vec![
        (t("MetricDataResults"), Value::Array(out)),
        (t("Messages"), Value::Array(Vec::new())),
    ];
    if let Some(token) = next {
        body.push((t("NextToken"), t(&token)));
    }
    Ok(Value::Map(body))
}

/// GetMetricData's queries: each an Id and a MetricStat (metric math is not emulated).
fn metric_queries(input: &Entries) -> Result<Vec<MetricQuery>, CloudWatchError> {
    let mut queries = Vec::new();
    for query in list(input, "MetricDataQueries")? {
        let query = as_map(query, "Each metric data query")?;
        let id = text(query, "Id")?
            .ok_or_else(|| CloudWatchError::MissingParameter("Each query needs an Id.".into()))?;
        if text(query, "Expression")?.is_some() {
            return Err(bad(format!("Query {id}: metric math expressions are not supported by this emulator; use MetricStat.")));
        }
        let stat = get(query, "MetricStat")
            .ok_or_else(|| bad(format!("Query {id} needs a MetricStat.")))?;
        let stat = as_map(stat, "MetricStat")?;
        let metric = as_map(
            get(stat, "Metric")
                .ok_or_else(|| bad(format!("Query {id} needs MetricStat.Metric.")))?,
            "Metric",
        )?;
        queries.push(MetricQuery {
            id: id.clone(),
            label: text(query, "Label")?,
            metric: metric_id(metric)?,
            period_seconds: integer(stat, "Period")?
                .ok_or_else(|| bad(format!("Query {id} needs MetricStat.Period.")))?,
            stat: text(stat, "Stat")?
                .ok_or_else(|| bad(format!("Query {id} needs MetricStat.Stat.")))?,
            return_data: !matches!(get(query, "ReturnData"), Some(Value::Bool(false))),
        });
    }
    Ok(queries)
}

/// One query's result as CBOR.
fn result_value(result: MetricResult) -> Value {
    Value::Map(vec![
        (t("Id"), t(&result.id)),
        (t("Label"), t(&result.label)),
        (
            t("Timestamps"),
            Value::Array(result.timestamps.into_iter().map(ts).collect()),
        ),
        (
            t("Values"),
            Value::Array(result.values.into_iter().map(Value::Float).collect()),
        ),
        (
            t("StatusCode"),
            t(if result.complete {
                "Complete"
            } else {
                "PartialData"
            }),
        ),
        (t("Messages"), Value::Array(Vec::new())),
    ])
}

fn list_metrics(fleet: &Fleet, input: &Entries) -> Result<Value, CloudWatchError> {
    let namespace = text(input, "Namespace")?;
    let name = text(input, "MetricName")?;
    let filters = dimensions(input)?;
    let all = fleet.list_metrics(namespace.as_deref(), name.as_deref(), &filters);
    let start = text(input, "NextToken")?
        .map(|t| decode_token(&t))
        .transpose()?
        .unwrap_or(0);
    let end = (start + 500).min(all.len());
    let metrics: Vec<Value> = all
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|m| {
            Value::Map(vec![
                (t("Namespace"), t(&m.namespace)),
                (t("MetricName"), t(&m.name)),
                (
                    t("Dimensions"),
                    Value::Array(
                        m.dimensions
                            .iter()
                            .map(|(n, v)| Value::Map(vec![(t("Name"), t(n)), (t("Value"), t(v))]))
                            .collect(),
                    ),
                ),
            ])
        })
        .collect();
    let mut body = vec![(t("Metrics"), Value::Array(metrics))];
    if end < all.len() {
        body.push((t("NextToken"), t(&encode_token(end))));
    }
    Ok(Value::Map(body))
}

fn put_metric_data(
    fleet: &mut Fleet,
    input: &Entries,
    now: DateTime<Utc>,
) -> Result<Value, CloudWatchError> {
    let namespace = text(input, "Namespace")?
        .ok_or_else(|| CloudWatchError::MissingParameter("Namespace is required.".into()))?;
    if namespace.starts_with("AWS/") {
        return Err(bad(
            "Namespaces starting with AWS/ are reserved for AWS services.",
        ));
    }
    let data = list(input, "MetricData")?;
    if data.is_empty() || data.len() > 1000 {
        return Err(bad("MetricData must have 1 to 1000 items."));
    }
    let mut parsed = Vec::new();
    for datum in data {
        let datum = as_map(datum, "Each metric datum")?;
        let name = text(datum, "MetricName")?.ok_or_else(|| {
            CloudWatchError::MissingParameter("Each datum needs a MetricName.".into())
        })?;
        let dims = dimensions(datum)?
            .into_iter()
            .map(|(n, v)| {
                v.map(|v| (n.clone(), v))
                    .ok_or_else(|| bad(format!("Dimension {n} needs a Value.")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let at = timestamp(datum, "Timestamp")?.unwrap_or(now);
        let mut values: Vec<f64> = get(datum, "Value").and_then(float).into_iter().collect();
        let counts: Vec<f64> = list(datum, "Counts")?.iter().filter_map(float).collect();
        for (index, value) in list(datum, "Values")?.iter().filter_map(float).enumerate() {
            let repeat = counts.get(index).copied().unwrap_or(1.0).max(1.0) as usize;
            values.extend(std::iter::repeat_n(value, repeat.min(10_000)));
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(bad(format!(
                "Metric {name} has a value that is not a finite number."
            )));
        }
        parsed.push((MetricId::new(&namespace, &name, dims), at, values));
    }
    for (metric, at, values) in parsed {
        fleet.put_metric_data(metric, at, values);
    }
    Ok(Value::Map(Vec::new()))
}
