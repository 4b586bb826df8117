//! ECS events as an account receives them through EventBridge into an SQS queue (a rule on
//! `source: aws.ecs` whose target is the queue): every change of a task's `lastStatus` or
//! `desiredStatus` puts an "ECS Task State Change" event on the queue, and the queue is served
//! over SQS's JSON protocol (awsJson1_0): ReceiveMessage (with long polling and a visibility
//! timeout), DeleteMessage, DeleteMessageBatch, GetQueueUrl and GetQueueAttributes.
//!
//! What the emulator does not do: container instance and service events, message attributes,
//! FIFO queues, dead-letter queues. The queue holds at most [`CAPACITY`] messages and drops the
//! oldest beyond that (SQS keeps them for the retention period; the bound stands in for a
//! consumer that fell behind for longer than that), counted in `dropped`.

use std::{
    collections::VecDeque,
    sync::Mutex,
    time::{Duration, Instant},
};

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::Fleet;

/// The `X-Amz-Target` prefix of SQS's JSON protocol.
pub const SQS_TARGET_PREFIX: &str = "AmazonSQS.";
/// The queue's name in the embedded emulator.
pub const QUEUE_NAME: &str = "ecs-events";
/// Messages the queue holds before it drops the oldest.
pub const CAPACITY: usize = 20_000;
/// SQS's default visibility timeout.
const DEFAULT_VISIBILITY: u64 = 30;

/// SQS operations the emulator serves.
pub const OPERATIONS: [&str; 5] = [
    "ReceiveMessage",
    "DeleteMessage",
    "DeleteMessageBatch",
    "GetQueueUrl",
    "GetQueueAttributes",
];

struct Message {
    id: String,
    body: String,
    /// When it can be received again; in the past for a message not in flight.
    visible_at: Instant,
    /// The handle of its latest receipt; only that one deletes it.
    receipt: Option<String>,
    receives: u32,
}

#[derive(Default)]
struct State {
    messages: VecDeque<Message>,
    sent: u64,
    dropped: u64,
    next: u64,
}

/// The queue ECS's events arrive on.
pub struct EventQueue {
    account: String,
    state: Mutex<State>,
    arrived: tokio::sync::Notify,
}

/// The queue's counts, in the emulator's status.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct QueueStatus {
    pub name: String,
    /// The path of its URL on the emulator's endpoint: `/<account>/<name>`.
    pub path: String,
    /// Messages that can be received now, and messages received but not yet deleted.
    pub visible: usize,
    pub in_flight: usize,
    /// Events put on the queue since the start, and those dropped beyond its capacity.
    pub sent: u64,
    pub dropped: u64,
}

/// An SQS error: its code (the `__type`), its query-compatible code, and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsError {
    pub code: &'static str,
    pub query_code: &'static str,
    pub message: String,
}

impl SqsError {
    fn no_queue(url: &str) -> SqsError {
        SqsError {
            code: "QueueDoesNotExist",
            query_code: "AWS.SimpleQueueService.NonExistentQueue;Sender",
            message: format!("The specified queue does not exist: {url}"),
        }
    }

    fn invalid(message: impl Into<String>) -> SqsError {
        SqsError {
            code: "InvalidParameterValue",
            query_code: "InvalidParameterValue;Sender",
            message: message.into(),
        }
    }
}

impl EventQueue {
    pub fn new(account: &str) -> EventQueue {
        EventQueue {
            account: account.to_string(),
            state: Mutex::new(State::default()),
            arrived: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The path of the queue's URL.
    pub fn path(&self) -> String {
        format!("/{}/{QUEUE_NAME}", self.account)
    }

    /// Puts events on the queue.
    pub fn push(&self, bodies: Vec<String>) {
        if bodies.is_empty() {
            return;
        }
        let now = Instant::now();
        {
            let mut state = self.lock();
            for body in bodies {
                state.next += 1;
                state.sent += 1;
                let id = format!(
                    "{:08x}-0000-4000-9000-{:012x}",
                    state.next as u32, state.next
                );
                state.messages.push_back(Message {
                    id,
                    body,
                    visible_at: now,
                    receipt: None,
                    receives: 0,
                });
                if state.messages.len() > CAPACITY {
                    state.messages.pop_front();
                    state.dropped += 1;
                }
            }
        }
        self.arrived.notify_waiters();
    }

    pub fn status(&self) -> QueueStatus {
        let state = self.lock();
        let now = Instant::now();
        let in_flight = state.messages.iter().filter(|m| m.visible_at > now).count();
        QueueStatus {
            name: QUEUE_NAME.to_string(),
            path: self.path(),
            visible: state.messages.len() - in_flight,
            in_flight,
            sent: state.sent,
            dropped: state.dropped,
        }
    }

    /// Whether `url` names this queue: any host, with the path `/<account>/<name>`.
    fn check_url(&self, input: &Value) -> Result<(), SqsError> {
        let url = input
            .get("QueueUrl")
            .and_then(Value::as_str)
            .ok_or_else(|| SqsError::invalid("QueueUrl is required."))?;
        if url.trim_end_matches('/').ends_with(&self.path()) {
            Ok(())
        } else {
            Err(SqsError::no_queue(url))
        }
    }

    /// Takes up to `max` visible messages and hides them for `visibility`.
    fn take(&self, max: usize, visibility: Duration) -> Vec<Value> {
        let mut state = self.lock();
        let now = Instant::now();
        let mut out = Vec::new();
        let mut next = state.next;
        for message in state.messages.iter_mut() {
            if out.len() >= max {
                break;
            }
            if message.visible_at > now {
                continue;
            }
            next += 1;
            let receipt = format!("{}#{next:x}", message.id);
            message.visible_at = now + visibility;
            message.receipt = Some(receipt.clone());
            message.receives += 1;
            out.push(json!({
                "MessageId": message.id,
                "ReceiptHandle": receipt,
                "Body": message.body,
                "Attributes": {"ApproximateReceiveCount": message.receives.to_string()},
            }));
        }
        state.next = next;
        out
    }

    fn delete(&self, receipt: &str) -> bool {
        let mut state = self.lock();
        let before = state.messages.len();
        state
            .messages
            .retain(|m| m.receipt.as_deref() != Some(receipt));
        state.messages.len() < before
    }

    /// Answers one SQS operation. ReceiveMessage waits up to its `WaitTimeSeconds` for a
    /// message.
    pub async fn handle(&self, operation: &str, input: &Value) -> Result<Value, SqsError> {
        match operation {
            "GetQueueUrl" => {
                let name = input.get("QueueName").and_then(Value::as_str).unwrap_or("");
                if name == QUEUE_NAME {
                    Ok(json!({"QueueUrl": format!("https://sqs.emulator{}", self.path())}))
                } else {
                    Err(SqsError::no_queue(name))
                }
            }
            "GetQueueAttributes" => {
                self.check_url(input)?;
                let status = self.status();
                Ok(json!({"Attributes": {
                    "ApproximateNumberOfMessages": status.visible.to_string(),
                    "ApproximateNumberOfMessagesNotVisible": status.in_flight.to_string(),
                    "VisibilityTimeout": DEFAULT_VISIBILITY.to_string(),
                }}))
            }
            "ReceiveMessage" => {
                self.check_url(input)?;
                self.receive_message(input).await
            }
            "DeleteMessage" => {
                self.check_url(input)?;
                let receipt = input
                    .get("ReceiptHandle")
                    .and_then(Value::as_str)
                    .ok_or_else(|| SqsError::invalid("ReceiptHandle is required."))?;
                // SQS answers success for a handle whose message is already gone.
                self.delete(receipt);
                Ok(json!({}))
            }
            "DeleteMessageBatch" => {
                self.check_url(input)?;
                self.delete_message_batch(input)
            }
            other => Err(SqsError {
                code: "InvalidAction",
                query_code: "InvalidAction;Sender",
                message: format!("The action {other} is not valid for this endpoint."),
            }),
        }
    }

    /// ReceiveMessage: up to `MaxNumberOfMessages`, waiting up to `WaitTimeSeconds` for one.
    async fn receive_message(&self, input: &Value) -> Result<Value, SqsError> {
        let number = |key: &str, default: u64, max: u64| -> Result<u64, SqsError> {
            match input.get(key) {
                None | Some(Value::Null) => Ok(default),
                Some(value) => value.as_u64().filter(|n| *n <= max).ok_or_else(|| {
                    SqsError::invalid(format!(
                        "Value {value} for parameter {key} is invalid. Reason: must be between 0 and {max}."
                    ))
                }),
            }
        };
        let max = number("MaxNumberOfMessages", 1, 10)?.max(1) as usize;
        let wait = Duration::from_secs(number("WaitTimeSeconds", 0, 20)?);
        let visibility =
            Duration::from_secs(number("VisibilityTimeout", DEFAULT_VISIBILITY, 43_200)?);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let messages = self.take(max, visibility);
            if !messages.is_empty() {
                return Ok(json!({ "Messages": messages }));
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Ok(json!({}));
            }
        }
    }

    /// DeleteMessageBatch: 1 to 10 entries, each deleted or failed on its own.
    fn delete_message_batch(&self, input: &Value) -> Result<Value, SqsError> {
        let entries = input
            .get("Entries")
            .and_then(Value::as_array)
            .filter(|e| !e.is_empty() && e.len() <= 10)
            .ok_or_else(|| SqsError::invalid("Entries must hold 1 to 10 entries.".to_string()))?;
        let mut successful = Vec::new();
        let mut failed = Vec::new();
        for entry in entries {
            let id = entry.get("Id").and_then(Value::as_str).unwrap_or("");
            match entry.get("ReceiptHandle").and_then(Value::as_str) {
                Some(receipt) => {
                    self.delete(receipt);
                    successful.push(json!({"Id": id}));
                }
                None => failed.push(json!({
                    "Id": id,
                    "SenderFault": true,
                    "Code": "ReceiptHandleIsInvalid",
                    "Message": "ReceiptHandle is required.",
                })),
            }
        }
        Ok(json!({"Successful": successful, "Failed": failed}))
    }
}

/// The keys of a task that ECS gives as epoch seconds in its API and as ISO 8601 in events.
const TIMESTAMPS: [&str; 5] = [
    "createdAt",
    "startedAt",
    "stoppingAt",
    "stoppedAt",
    "pullStartedAt",
];

fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Takes the tasks that changed since the last call out of `fleet` and makes their events:
/// one "ECS Task State Change" per task, with its state now and its `version` one higher.
pub fn task_events(fleet: &mut Fleet) -> Vec<String> {
    let now = fleet.now;
    let (account, region) = (fleet.account.clone(), fleet.region.clone());
    let mut bodies = Vec::new();
    for cluster in fleet.clusters.values_mut() {
        if cluster.changed.is_empty() {
            continue;
        }
        let mut changed = std::mem::take(&mut cluster.changed);
        // One event per task for the changes made under one lock: its state now.
        let mut seen = std::collections::HashSet::new();
        changed.retain(|arn| seen.insert(arn.clone()));
        for arn in changed {
            let Some(task) = cluster.tasks.get_mut(&arn) else {
                continue;
            };
            task.version += 1;
            let zone = cluster
                .instance_index
                .get(&task.instance_arn)
                .and_then(|i| cluster.instances.get(*i))
                .map(|i| i.availability_zone.clone())
                .unwrap_or_default();
            let mut detail = crate::ecs_api::task_json(task, &zone);
            for key in TIMESTAMPS {
                let seconds = detail.get(key).and_then(Value::as_f64);
                if let Some(at) = seconds.and_then(|s| {
                    Utc.timestamp_millis_opt((s * 1000.0).round() as i64)
                        .single()
                }) {
                    detail[key] = json!(iso(at));
                }
            }
            detail["updatedAt"] = json!(iso(now));
            let id = crate::model::splitmix(task.version ^ seen.len() as u64 ^ bodies.len() as u64);
            let event = json!({
                "version": "0",
                "id": format!("{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}", id >> 32, id & 0xffff, (id >> 20) & 0xfff, (id >> 8) & 0xfff, id & 0xffff_ffff_ffff),
                "detail-type": "ECS Task State Change",
                "source": "aws.ecs",
                "account": account,
                "time": now.to_rfc3339_opts(SecondsFormat::Secs, true),
                "region": region,
                "resources": [arn],
                "detail": detail,
            });
            bodies.push(event.to_string());
        }
    }
    bodies
}

/// Forgets the tasks that changed, when no queue takes their events.
pub fn forget_changes(fleet: &mut Fleet) {
    for cluster in fleet.clusters.values_mut() {
        cluster.changed.clear();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn url() -> Value {
        json!({"QueueUrl": "http://127.0.0.1:1/123456789012/ecs-events"})
    }

    #[tokio::test]
    async fn a_received_message_is_hidden_until_deleted_or_its_timeout() {
        let queue = EventQueue::new("123456789012");
        queue.push(vec!["a".into(), "b".into()]);
        let mut input = url();
        input["MaxNumberOfMessages"] = json!(10);
        input["VisibilityTimeout"] = json!(0);
        let first = queue.handle("ReceiveMessage", &input).await.unwrap();
        assert_eq!(first["Messages"].as_array().map(Vec::len), Some(2));
        // Visibility 0: both can be received again, with new handles.
        input["VisibilityTimeout"] = json!(30);
        let second = queue.handle("ReceiveMessage", &input).await.unwrap();
        let messages = second["Messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["Attributes"]["ApproximateReceiveCount"], "2");
        // In flight now: nothing to receive.
        let third = queue.handle("ReceiveMessage", &input).await.unwrap();
        assert!(third.get("Messages").is_none());
        // An old handle deletes nothing; the latest one does.
        let old = first["Messages"][0]["ReceiptHandle"].as_str().unwrap();
        queue
            .handle(
                "DeleteMessage",
                &json!({"QueueUrl": url()["QueueUrl"], "ReceiptHandle": old}),
            )
            .await
            .unwrap();
        assert_eq!(queue.status().in_flight, 2);
        let entries: Vec<Value> = messages
            .iter()
            .enumerate()
            .map(|(n, m)| json!({"Id": n.to_string(), "ReceiptHandle": m["ReceiptHandle"]}))
            .collect();
        let mut batch = url();
        batch["Entries"] = json!(entries);
        let out = queue.handle("DeleteMessageBatch", &batch).await.unwrap();
        assert_eq!(out["Successful"].as_array().map(Vec::len), Some(2));
        assert_eq!((queue.status().visible, queue.status().in_flight), (0, 0));
    }

    #[tokio::test]
    async fn a_long_poll_returns_when_a_message_arrives() {
        let queue = std::sync::Arc::new(EventQueue::new("123456789012"));
        let mut input = url();
        input["WaitTimeSeconds"] = json!(5);
        let waiting = {
            let queue = queue.clone();
            tokio::spawn(async move { queue.handle("ReceiveMessage", &input).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        queue.push(vec!["late".into()]);
        let out = waiting.await.unwrap().unwrap();
        assert_eq!(out["Messages"][0]["Body"], "late");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn bad_input_gets_sqs_errors() {
        let queue = EventQueue::new("123456789012");
        let wrong = json!({"QueueUrl": "http://x/123456789012/other"});
        let error = queue.handle("ReceiveMessage", &wrong).await.unwrap_err();
        assert_eq!(error.code, "QueueDoesNotExist");
        let mut input = url();
        input["MaxNumberOfMessages"] = json!(11);
        let error = queue.handle("ReceiveMessage", &input).await.unwrap_err();
        assert_eq!(error.code, "InvalidParameterValue");
        assert!(
            error.message.contains("MaxNumberOfMessages"),
            "{}",
            error.message
        );
        let error = queue.handle("SendMessage", &url()).await.unwrap_err();
        assert_eq!(error.code, "InvalidAction");
    }

    #[test]
    fn every_change_of_a_task_makes_one_event_with_a_higher_version() {
        let mut fleet = crate::Scenario::Demo.build(2, Utc::now());
        forget_changes(&mut fleet);
        let (key, arn) = fleet
            .clusters
            .iter()
            .find_map(|(key, c)| {
                c.tasks
                    .values()
                    .find(|t| t.is_live() && t.last_status == crate::model::TaskStatus::Running)
                    .map(|t| (key.clone(), t.arn.clone()))
            })
            .expect("a running task");
        assert!(task_events(&mut fleet).is_empty(), "nothing changed yet");
        assert!(fleet.stop_task(&key, &arn, "test", "UserInitiated"));
        let events: Vec<Value> = task_events(&mut fleet)
            .iter()
            .map(|b| serde_json::from_str(b).unwrap())
            .collect();
        assert_eq!(events.len(), 1);
        let told = &events[0]["detail"];
        assert_eq!(
            (
                told["taskArn"].as_str(),
                told["desiredStatus"].as_str(),
                told["lastStatus"].as_str()
            ),
            (Some(arn.as_str()), Some("STOPPED"), Some("DEPROVISIONING"))
        );
        let now = fleet.now + chrono::Duration::seconds(5);
        fleet.advance(now);
        let later: Vec<Value> = task_events(&mut fleet)
            .iter()
            .map(|b| serde_json::from_str(b).unwrap())
            .filter(|e: &Value| e["detail"]["taskArn"] == arn.as_str())
            .collect();
        assert_eq!(later.len(), 1, "stopped: one more event");
        assert_eq!(later[0]["detail"]["lastStatus"], "STOPPED");
        assert!(later[0]["detail"]["version"].as_u64() > told["version"].as_u64());
    }

    #[test]
    fn beyond_its_capacity_the_queue_drops_the_oldest() {
        let queue = EventQueue::new("1");
        queue.push((0..CAPACITY + 5).map(|n| n.to_string()).collect());
        let status = queue.status();
        assert_eq!((status.visible, status.dropped), (CAPACITY, 5));
    }
}
