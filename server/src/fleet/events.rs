//! ECS's task state change events, read from an SQS queue that an EventBridge rule on
//! `source: aws.ecs` fills (`--events-queue-url`). They tell the incremental refresh which tasks
//! changed, so that it need not list the tasks of every instance that changed.
//!
//! Events are hints, never the record: a task an event names is described again through ECS
//! (events can arrive late, twice, out of order, or not at all — EventBridge and SQS promise at
//! least once, not order), and an instance whose change the events do not account for is
//! listed as before. A consumer that cannot read the queue leaves the refresh polling.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::Value;

/// How long one ReceiveMessage waits for a message (long polling).
const WAIT_SECONDS: i32 = 5;
/// How long a received message stays hidden before it can be received again, if the consumer
/// did not delete it.
const VISIBILITY_SECONDS: i32 = 60;
/// The consumer counts as following the queue when its last receive succeeded this recently.
const HEALTHY_WITHIN: Duration = Duration::from_secs(3 * WAIT_SECONDS as u64);

/// What one event said of a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskHint {
    pub cluster_arn: String,
    pub container_instance_arn: Option<String>,
    /// Told to stop (`desiredStatus` STOPPED) or stopped.
    pub stopping: bool,
    /// `service:<name>` for a service's task.
    pub group: Option<String>,
    /// The task's `version` in the event: a later event of the same task has a higher one.
    pub version: i64,
}

/// The tasks that events named since the refresh last took them, by task ARN.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hints {
    pub tasks: HashMap<String, TaskHint>,
}

impl Hints {
    /// Adds what one event said; of two events of a task the later version wins.
    pub fn add(&mut self, arn: String, hint: TaskHint) {
        match self.tasks.get(&arn) {
            Some(known) if known.version > hint.version => {}
            _ => {
                self.tasks.insert(arn, hint);
            }
        }
    }

    /// Adds every hint of `other`.
    pub fn merge(&mut self, other: Hints) {
        for (arn, hint) in other.tasks {
            self.add(arn, hint);
        }
    }

    /// Takes out the hints of one cluster.
    pub fn take_cluster(&mut self, cluster_arn: &str) -> Hints {
        let arns: Vec<String> = self
            .tasks
            .iter()
            .filter(|(_, h)| h.cluster_arn == cluster_arn)
            .map(|(arn, _)| arn.clone())
            .collect();
        Hints {
            tasks: arns
                .into_iter()
                .filter_map(|arn| self.tasks.remove_entry(&arn))
                .collect(),
        }
    }

    /// The container instances the events say tasks changed on.
    pub fn instances(&self) -> HashSet<&str> {
        self.tasks
            .values()
            .filter_map(|h| h.container_instance_arn.as_deref())
            .collect()
    }
}

/// Reads one event (an EventBridge envelope, as the rule delivers it to SQS): the task it
/// names and what it says of it, `None` for events of other kinds, an error for a body that
/// is not an ECS event.
pub fn parse(body: &str) -> Result<Option<(String, TaskHint)>, String> {
    let event: Value =
        serde_json::from_str(body).map_err(|e| format!("the message is not JSON ({e})"))?;
    if event.get("source").and_then(Value::as_str) != Some("aws.ecs") {
        return Err("the message is not an ECS event (its source is not aws.ecs)".into());
    }
    if event.get("detail-type").and_then(Value::as_str) != Some("ECS Task State Change") {
        return Ok(None);
    }
    let detail = event
        .get("detail")
        .ok_or("the task state change event has no detail")?;
    let text = |key: &str| detail.get(key).and_then(Value::as_str).map(str::to_string);
    let arn = text("taskArn").ok_or("the task state change event names no taskArn")?;
    let cluster_arn =
        text("clusterArn").ok_or("the task state change event names no clusterArn")?;
    let stopping = text("desiredStatus").as_deref() == Some("STOPPED")
        || text("lastStatus").as_deref() == Some("STOPPED");
    Ok(Some((
        arn,
        TaskHint {
            cluster_arn,
            container_instance_arn: text("containerInstanceArn"),
            stopping,
            group: text("group"),
            version: detail.get("version").and_then(Value::as_i64).unwrap_or(0),
        },
    )))
}

/// Counts of what the consumer did, for `/metrics`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeedCounts {
    /// Task state change events read.
    pub task_events: u64,
    /// Messages of other kinds (ignored) and messages that were not ECS events.
    pub other_events: u64,
    pub unreadable: u64,
    /// Receives that failed.
    pub errors: u64,
}

#[derive(Default)]
struct FeedState {
    hints: Hints,
    last_receive: Option<Instant>,
    last_error: Option<String>,
    counts: FeedCounts,
}

/// Follows the events queue in the background and keeps what it says for the next refresh.
pub struct EventFeed {
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    state: Mutex<FeedState>,
}

impl EventFeed {
    pub fn new(sqs: aws_sdk_sqs::Client, queue_url: &str) -> EventFeed {
        EventFeed {
            sqs,
            queue_url: queue_url.to_string(),
            state: Mutex::new(FeedState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    /// Whether the consumer is following the queue: its last receive succeeded lately.
    pub fn following(&self) -> bool {
        let state = self.lock();
        state.last_error.is_none()
            && state
                .last_receive
                .is_some_and(|at| at.elapsed() < HEALTHY_WITHIN)
    }

    /// Takes the hints gathered since the last call. `None` when the consumer is not following
    /// the queue: the refresh then lists tasks as if there were no events (the hints stay).
    pub fn take(&self) -> Option<Hints> {
        if !self.following() {
            return None;
        }
        Some(std::mem::take(&mut self.lock().hints))
    }

    /// Gives back hints a refresh took and could not use (it failed), for the next one.
    pub fn give_back(&self, hints: Hints) {
        let mut state = self.lock();
        let newer = std::mem::replace(&mut state.hints, hints);
        state.hints.merge(newer);
    }

    pub fn counts(&self) -> FeedCounts {
        self.lock().counts.clone()
    }

    /// What went wrong with the queue, when the last receive failed.
    pub fn last_error(&self) -> Option<String> {
        self.lock().last_error.clone()
    }

    /// One receive: up to ten messages, waiting up to `wait` seconds for the first; each is
    /// read into the hints, then deleted. Returns how many messages came.
    pub async fn receive_once(&self, wait: i32) -> Result<usize, String> {
        let out = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(wait)
            .visibility_timeout(VISIBILITY_SECONDS)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "cannot read ECS events from the SQS queue {}: {}; the fleet refresh lists \
                     tasks instead (check the queue URL and that the console may call \
                     sqs:ReceiveMessage and sqs:DeleteMessage on it)",
                    self.queue_url,
                    crate::aws::errors::plain(&e)
                )
            })?;
        let messages = out.messages();
        let mut receipts = Vec::new();
        {
            let mut state = self.lock();
            for message in messages {
                match parse(message.body().unwrap_or_default()) {
                    Ok(Some((arn, hint))) => {
                        state.counts.task_events += 1;
                        state.hints.add(arn, hint);
                    }
                    Ok(None) => state.counts.other_events += 1,
                    Err(why) => {
                        state.counts.unreadable += 1;
                        tracing::warn!(queue = %self.queue_url, "an events queue message was skipped: {why}");
                    }
                }
                if let Some(receipt) = message.receipt_handle() {
                    receipts.push(receipt.to_string());
                }
            }
            state.last_receive = Some(Instant::now());
            state.last_error = None;
        }
        if !receipts.is_empty() {
            let entries: Vec<aws_sdk_sqs::types::DeleteMessageBatchRequestEntry> = receipts
                .iter()
                .enumerate()
                .filter_map(|(n, receipt)| {
                    aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                        .id(n.to_string())
                        .receipt_handle(receipt)
                        .build()
                        .ok()
                })
                .collect();
            // A message not deleted comes again after its visibility timeout: a duplicate
            // hint, which costs one more DescribeTasks at most.
            if let Err(error) = self
                .sqs
                .delete_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
            {
                tracing::warn!(queue = %self.queue_url, "events read from the queue could not be deleted and will come again: {}", crate::aws::errors::plain(&error));
            }
        }
        Ok(messages.len())
    }

    fn failed(&self, error: String) {
        let mut state = self.lock();
        state.counts.errors += 1;
        if state.last_error.as_ref() != Some(&error) {
            tracing::warn!("{error}");
        }
        state.last_error = Some(error);
    }
}

/// Follows the queue until `feed` is dropped elsewhere: long polls, and after a failed
/// receive waits (5 s, doubling to a minute) before the next.
pub fn spawn(feed: &Arc<EventFeed>) {
    let weak = Arc::downgrade(feed);
    tokio::spawn(async move {
        let mut pause = Duration::from_secs(5);
        loop {
            let Some(feed) = weak.upgrade() else { break };
            match feed.receive_once(WAIT_SECONDS).await {
                Ok(_) => pause = Duration::from_secs(5),
                Err(error) => {
                    feed.failed(error);
                    drop(feed);
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(60));
                }
            }
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn event(arn: &str, desired: &str, version: i64) -> String {
        serde_json::json!({
            "version": "0", "id": "1", "detail-type": "ECS Task State Change", "source": "aws.ecs",
            "account": "1", "time": "2026-12-01T00:00:00Z", "region": "us-east-1",
            "resources": [arn],
            "detail": {"taskArn": arn, "clusterArn": "arn:c/prod", "containerInstanceArn": "arn:ci/1",
                       "lastStatus": "RUNNING", "desiredStatus": desired, "group": "service:web",
                       "version": version}
        })
        .to_string()
    }

    #[test]
    fn a_task_event_is_read_and_the_later_version_wins() {
        let mut hints = Hints::default();
        for body in [
            event("t1", "RUNNING", 3),
            event("t1", "STOPPED", 4),
            event("t1", "RUNNING", 2),
        ] {
            let (arn, hint) = parse(&body).unwrap().unwrap();
            hints.add(arn, hint);
        }
        let hint = &hints.tasks["t1"];
        assert!(
            hint.stopping,
            "version 4 said STOPPED; version 2 came late and lost"
        );
        assert_eq!(hint.version, 4);
        assert_eq!(hints.instances(), HashSet::from(["arn:ci/1"]));
        assert_eq!(hints.take_cluster("arn:c/prod").tasks.len(), 1);
        assert!(hints.tasks.is_empty());
    }

    #[test]
    fn other_messages_are_told_apart() {
        let other = r#"{"source":"aws.ecs","detail-type":"ECS Service Action","detail":{}}"#;
        assert_eq!(parse(other), Ok(None));
        assert!(parse("not json").unwrap_err().contains("not JSON"));
        assert!(parse(r#"{"source":"aws.ec2"}"#)
            .unwrap_err()
            .contains("not an ECS event"));
        let no_arn = r#"{"source":"aws.ecs","detail-type":"ECS Task State Change","detail":{}}"#;
        assert!(parse(no_arn).unwrap_err().contains("taskArn"));
    }
}
