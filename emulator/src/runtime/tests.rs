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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_whose_caller_hangs_up_mid_call_still_runs_and_is_recorded() {
    use std::future::IntoFuture;
    use tokio::io::AsyncWriteExt;
    let emulator = Emulator::new(fixture::fleet(1, 1), "test", 0.0, Faults::default());
    // Served without the ticker, whose reads would wait on the held lock in a worker thread.
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bound");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(axum::serve(listener, emulator.router()).into_future());
    // The fleet's lock held elsewhere: a call that has started waits on it.
    let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = emulator.clone();
    let holding = std::thread::spawn(move || {
        holder.with_fleet(|_| {
            let _ = held_tx.send(());
            let _ = release_rx.recv();
        })
    });
    held_rx.recv().expect("the lock is held");

    let body = r#"{"clusterName":"hung-up"}"#;
    let request = format!(
        "POST / HTTP/1.1\r\nHost: ecs\r\nX-Amz-Target: AmazonEC2ContainerServiceV20141113.CreateCluster\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connected");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("request sent");
    // The call has its permit, so its blocking part has been spawned (and waits on the lock).
    wait_until("the call to start", || {
        ANSWER_PERMITS.available_permits() == ANSWERING - 1
    })
    .await;
    // The caller hangs up, and the server lets go of the call (its permit comes back) while
    // the write still waits on the lock.
    drop(stream);
    wait_until("the server to let go of the call", || {
        ANSWER_PERMITS.available_permits() == ANSWERING
    })
    .await;
    release_tx.send(()).expect("released");
    holding.join().expect("the holder ends");

    wait_until("the write to be recorded", || {
        emulator
            .writes()
            .iter()
            .any(|w| w.operation == "CreateCluster" && w.error.is_none() && w.answered)
    })
    .await;
    assert!(
        emulator.read_fleet(|fleet| fleet.clusters.contains_key("hung-up")),
        "the write ran"
    );
}

/// Waits up to 10 s for `done`, failing with what it waited for.
async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited 10 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
