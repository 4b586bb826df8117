//! ECS's task state change events on the emulator's SQS queue, read through aws-sdk-sqs as the
//! console reads them, and the refresh that follows them.

use chrono::Utc;
use emulator::{Emulator, Faults, Scenario};
use gpushare::fleet::{ec2::Ec2Reader, events::EventFeed, reader::FleetReader};
use std::sync::Arc;

fn emulator_with_queue() -> Emulator {
    let emulator = Emulator::new(
        Scenario::Demo.build(5, Utc::now()),
        "demo",
        0.0,
        Faults::default(),
    );
    emulator.enable_events_queue();
    emulator
}

/// Stops one live task of the first cluster that has one; returns its cluster key and ARN.
fn stop_one(emulator: &Emulator) -> (String, String) {
    emulator.with_fleet(|fleet| {
        let (key, arn) = fleet
            .clusters
            .iter()
            .find_map(|(key, c)| {
                c.tasks
                    .values()
                    .find(|t| t.is_live() && t.group.starts_with("service:"))
                    .map(|t| (key.clone(), t.arn.clone()))
            })
            .expect("a live service task");
        assert!(fleet.stop_task(&key, &arn, "stopped by the test", "UserInitiated"));
        (key, arn)
    })
}

#[tokio::test]
async fn a_stopped_task_comes_as_an_eventbridge_event_on_the_queue() {
    let emulator = emulator_with_queue();
    let clients = crate::support::serve(&emulator).await;
    let url = clients.events_queue_url.clone().expect("the queue's URL");
    let (_, arn) = stop_one(&emulator);
    let out = clients
        .sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .send()
        .await
        .expect("ReceiveMessage");
    let messages = out.messages();
    let event: serde_json::Value = messages
        .iter()
        .map(|m| serde_json::from_str(m.body().unwrap_or_default()).expect("JSON"))
        .find(|e: &serde_json::Value| e["detail"]["taskArn"] == arn.as_str())
        .expect("an event for the stopped task");
    assert_eq!(event["source"], "aws.ecs");
    assert_eq!(event["detail-type"], "ECS Task State Change");
    assert_eq!(event["resources"][0], arn.as_str());
    assert_eq!(event["detail"]["desiredStatus"], "STOPPED");
    assert!(
        event["detail"]["createdAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "events carry timestamps as ISO 8601: {}",
        event["detail"]["createdAt"]
    );
    assert!(event["detail"]["version"].as_i64().unwrap_or(0) > 1);
    // Read and not deleted: in flight. Deleted: gone.
    let status = emulator.status().events_queue.expect("the queue");
    assert_eq!(status.in_flight, messages.len());
    for message in messages {
        clients
            .sqs
            .delete_message()
            .queue_url(&url)
            .receipt_handle(message.receipt_handle().unwrap_or_default())
            .send()
            .await
            .expect("DeleteMessage");
    }
    let status = emulator.status().events_queue.expect("the queue");
    assert_eq!((status.visible, status.in_flight), (0, 0));
}

#[tokio::test]
async fn a_wrong_queue_is_said_plainly_and_leaves_the_refresh_polling() {
    let emulator = emulator_with_queue();
    let clients = crate::support::serve(&emulator).await;
    let url = clients.events_queue_url.clone().expect("URL");
    let wrong = url.replace("ecs-events", "no-such-queue");
    let feed = Arc::new(EventFeed::new(clients.sqs.clone(), &wrong));
    let error = feed.receive_once(0).await.expect_err("no such queue");
    assert!(error.contains("no-such-queue"), "{error}");
    assert!(error.contains("QueueDoesNotExist"), "{error}");
    assert!(!error.contains("ServiceError"), "no Debug dump: {error}");
    assert!(!feed.following());
    // Not following: the refresh takes no hints and lists as before; the fleet still reads.
    assert!(feed.take().is_none());
    let reader = FleetReader::new(clients.ecs.clone(), "team", 4)
        .with_ec2(Ec2Reader::new(clients.ec2.clone()))
        .with_events(feed);
    reader.refresh().await.expect("first read");
    stop_one(&emulator);
    emulator.advance(10);
    let refreshed = reader.refresh().await.expect("incremental refresh");
    assert!(!refreshed.full);
}

#[tokio::test]
async fn following_events_a_replaced_task_is_read_without_listing_tasks() {
    let emulator = emulator_with_queue();
    let clients = crate::support::serve(&emulator).await;
    let url = clients.events_queue_url.clone().expect("URL");
    let feed = Arc::new(EventFeed::new(clients.sqs.clone(), &url));
    let reader = FleetReader::new(clients.ecs.clone(), "team", 4)
        .with_ec2(Ec2Reader::new(clients.ec2.clone()))
        .with_events(feed.clone());
    reader.refresh().await.expect("first read");
    while feed.receive_once(0).await.expect("receive") > 0 {}
    reader.refresh().await.expect("level with the queue");
    let (_, stopped) = stop_one(&emulator);
    // The task stops, its service starts another, which comes to RUNNING.
    emulator.advance(30);
    while feed.receive_once(0).await.expect("receive") > 0 {}
    let list_tasks = |clients| crate::support::ecs_calls(clients, "ListTasks");
    let before = list_tasks(&clients);
    let refreshed = reader.refresh().await.expect("refresh");
    assert_eq!(
        list_tasks(&clients),
        before,
        "the events said which tasks changed"
    );
    let tasks: Vec<&str> = refreshed
        .snapshot
        .clusters
        .iter()
        .flat_map(|c| c.instances.iter())
        .flat_map(|i| i.gpus.iter())
        .flat_map(|g| g.containers.iter())
        .map(|c| c.task_arn.as_str())
        .collect();
    assert!(
        !tasks.contains(&stopped.as_str()),
        "the stopped task is gone"
    );
    let full = FleetReader::new(clients.ecs.clone(), "team", 4)
        .with_ec2(Ec2Reader::new(clients.ec2.clone()))
        .read()
        .await
        .expect("full read");
    let gpus = |s: &app::model::FleetSnapshot| {
        s.clusters
            .iter()
            .flat_map(|c| c.instances.iter().map(|i| i.gpus.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        gpus(&refreshed.snapshot),
        gpus(&full),
        "equal to a full read"
    );
}
