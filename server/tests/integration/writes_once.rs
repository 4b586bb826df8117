//! A write to ECS goes out once for each answer that proves ECS did not run it: a connection
//! dropped after ECS carried the call out is not a reason to send it again (that would make a
//! second revision, or a second deployment), while a throttling answer is.

use std::sync::Arc;

use gpushare::{config::EmulatorArgs, ecs::task_definitions::json};

/// The emulator's record of `operation`'s writes.
fn writes_of(emulator: &emulator::Emulator, operation: &str) -> Vec<emulator::WriteRecord> {
    emulator
        .writes()
        .into_iter()
        .filter(|w| w.operation == operation)
        .collect()
}

fn faults(spec: &str) -> emulator::Faults {
    let mut faults = emulator::Faults {
        rate_limits: Some(false),
        ..emulator::Faults::default()
    };
    faults.add_spec(spec).expect("a fault spec");
    faults
}

#[tokio::test]
async fn a_write_whose_answer_was_lost_is_not_sent_again() {
    let emulator = gpushare::build_emulator(&EmulatorArgs::default(), 0)
        .await
        .expect("the demo fleet");
    let (_, clients) = gpushare::serve_emulator(&emulator).await.expect("serves");
    let described = clients
        .ecs
        .describe_task_definition()
        .task_definition("embed-api:1")
        .send()
        .await
        .expect("described");
    let td = described.task_definition().expect("a task definition");
    let again = serde_json::Value::Object(json::register_json(td, &[])).to_string();

    // Carried out, and the answer lost: one revision, and the caller told it cannot know.
    emulator
        .set_faults(faults("RegisterTaskDefinition:lost=1"))
        .expect("faults");
    let lost = json::register(&clients.ecs, json::parse_register(&again).expect("reads"))
        .await
        .expect_err("no answer came back");
    let said = gpushare::aws::errors::ecs_write("RegisterTaskDefinition", &lost);
    assert_eq!(said.status(), 504, "{said}");
    let registered = writes_of(&emulator, "RegisterTaskDefinition");
    assert_eq!(registered.len(), 1, "sent once: {registered:?}");
    assert!(!registered[0].answered && registered[0].error.is_none());

    // The same for UpdateService, through the console's own port.
    emulator
        .set_faults(faults("UpdateService:lost=1"))
        .expect("faults");
    let store = Arc::new(gpushare::fleet::store::SnapshotStore::new(
        std::time::Duration::from_secs(15),
    ));
    let ecs = gpushare::ecs::Ecs::new(clients.ecs.clone(), "team", store);
    let scaled = ecs.scale("inference-prod", "rerank", 5).await;
    assert_eq!(scaled.expect_err("no answer").status(), 504);
    let updates = writes_of(&emulator, "UpdateService");
    assert_eq!(updates.len(), 1, "sent once: {updates:?}");
    assert_eq!(updates[0].request["desiredCount"], 5);

    // Throttled: ECS ran nothing, so the console tries again, a bounded number of times.
    let before = emulator
        .received()
        .get("ecs:RegisterTaskDefinition")
        .copied()
        .unwrap_or(0);
    emulator
        .set_faults(faults("RegisterTaskDefinition:throttle=1"))
        .expect("faults");
    let throttled = json::register(&clients.ecs, json::parse_register(&again).expect("reads"))
        .await
        .expect_err("throttled every time");
    assert!(gpushare::aws::once::not_run(&throttled));
    let after = emulator.received()["ecs:RegisterTaskDefinition"];
    assert_eq!(
        after - before,
        u64::from(1 + gpushare::aws::once::THROTTLED_RETRIES),
        "tried again after each throttling answer"
    );
    assert_eq!(writes_of(&emulator, "RegisterTaskDefinition").len(), 1);
}
