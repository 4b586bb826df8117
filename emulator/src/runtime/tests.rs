//! Unit tests of the `runtime` module.

use super::*;
use crate::engine::fixture;

#[test]
fn a_read_sees_the_fleet_at_the_simulated_time_and_changes_nothing_else() {
    // A stopped clock: only the offset moves simulated time.
    let emulator = Emulator::new(fixture::fleet(2, 4), "test", 0.0, Faults::default());
    assert_eq!(emulator.read_fleet(|fleet| fleet.now), fixture::start());
    emulator.inner.offset_ms.fetch_add(5_500, Ordering::Relaxed);
    // Five whole simulated seconds have passed: the read steps through them first.
    assert_eq!(
        emulator.read_fleet(|fleet| fleet.now),
        fixture::start() + chrono::Duration::seconds(5)
    );
    let before = emulator.read_fleet(|fleet| fleet.clusters.len());
    let answer = emulator
        .read_fleet(|fleet| ecs_api::read(fleet, "ListClusters", json!({})))
        .unwrap();
    assert!(answer.contains("clusterArns"), "{answer}");
    assert_eq!(emulator.read_fleet(|fleet| fleet.clusters.len()), before);
}

#[test]
fn only_operations_that_change_nothing_are_reads() {
    for operation in ecs_api::OPERATIONS {
        let changes = operation.starts_with("Create")
            || operation.starts_with("Update")
            || operation.starts_with("Register")
            || operation.starts_with("Deregister")
            || operation.starts_with("Delete")
            || operation.starts_with("Put")
            || operation.starts_with("Tag")
            || operation.starts_with("Untag");
        assert_eq!(ecs_api::reads_only(operation), !changes, "{operation}");
    }
    assert!(cbor::reads_only("GetMetricData") && cbor::reads_only("ListMetrics"));
    assert!(!cbor::reads_only("PutMetricData"));
}
