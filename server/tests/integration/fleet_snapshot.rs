//! The fleet snapshot read through aws-sdk-ecs from the emulator's demo fleet, checked against
//! the emulator's own state.

use std::collections::HashMap;

use chrono::Utc;
use emulator::{placement::SharingMode, Emulator, Faults, Scenario};
use gpushare::{
    aws::Clients,
    fleet::{ec2::Ec2Reader, reader::FleetReader, usage::UsageReader},
};

async fn demo() -> (Emulator, Clients) {
    let emulator = Emulator::new(
        Scenario::Demo.build(5, Utc::now()),
        "demo",
        1.0,
        Faults::default(),
    );
    let clients = crate::support::serve(&emulator).await;
    (emulator, clients)
}

#[tokio::test]
async fn the_snapshot_matches_the_emulators_state() {
    let (emulator, clients) = demo().await;
    let reader = FleetReader::new(clients.ecs.clone(), "team", 8);
    let snapshot = reader.read().await.expect("read");
    assert_eq!(snapshot.unknown_gpu_ids, 0);

    // The emulator's view of every GPU: mode, remaining memory, containers on it.
    let truth: HashMap<String, (SharingMode, u32, u32)> = emulator.with_fleet(|fleet| {
        fleet
            .clusters
            .values()
            .flat_map(|c| c.instances.iter())
            .flat_map(|i| {
                i.gpu_ids.iter().cloned().zip(
                    i.gpus
                        .iter()
                        .map(|g| (g.mode, g.remaining_memory_mib, g.container_count)),
                )
            })
            .collect()
    });
    let views: Vec<_> = snapshot
        .clusters
        .iter()
        .flat_map(|c| c.instances.iter())
        .flat_map(|i| i.gpus.iter())
        .collect();
    assert_eq!(views.len(), truth.len(), "one view per GPU");
    // An instance without GPU sharing reports no gpuDevices: its GPUs come from its GPU
    // resources and its tasks' GPU IDs, whole, with the instance type's nominal memory.
    let unshared: Vec<_> = snapshot
        .clusters
        .iter()
        .flat_map(|c| c.instances.iter())
        .filter(|i| !i.mps_capable)
        .collect();
    assert_eq!(unshared.len(), 1, "the demo's p4d without GPU sharing");
    assert_eq!(unshared[0].instance_type, "p4d.24xlarge");
    assert_eq!(unshared[0].gpus.len(), 8);
    for gpu in &unshared[0].gpus {
        assert_eq!(gpu.total_memory_mib, 40 * 1024, "{}", gpu.uuid);
        assert_ne!(gpu.mode, SharingMode::NvidiaMps, "{}", gpu.uuid);
        assert!(
            gpu.containers.iter().all(|c| c.whole_gpu),
            "{}: {:?}",
            gpu.uuid,
            gpu.containers
        );
    }
    for view in &views {
        let (mode, remaining, count) = truth[&view.uuid];
        assert_eq!(view.mode, mode, "{}", view.uuid);
        assert_eq!(view.remaining_memory_mib, remaining, "{}", view.uuid);
        assert_eq!(view.containers.len() as u32, count, "{}", view.uuid);
        if view.mode == SharingMode::NvidiaMps {
            let requested: u32 = view.containers.iter().filter_map(|c| c.memory_mib).sum();
            assert_eq!(requested, view.allocated_memory_mib(), "{}", view.uuid);
        }
    }
    assert!(
        views.iter().any(|v| v.compute_allocated_percent > 100),
        "the demo has an oversubscribed GPU"
    );
    assert!(
        views
            .iter()
            .flat_map(|v| v.containers.iter())
            .all(|c| c.team.is_some()),
        "every demo service has a team"
    );
    let impaired: Vec<_> = snapshot
        .clusters
        .iter()
        .flat_map(|c| c.instances.iter())
        .filter(|i| i.impaired.is_some())
        .collect();
    assert_eq!(impaired.len(), 1);

    // What the tasks reserve of each instance's CPU and memory, read from their task
    // definitions, is what ECS says the instance has used: registered less remaining.
    let mut reserving = 0;
    for instance in snapshot.clusters.iter().flat_map(|c| c.instances.iter()) {
        let host = instance.host.as_ref().expect("CPU and memory read");
        let room = instance.room.as_ref().expect("room read");
        let cpu: u32 = host.reserved.iter().map(|r| r.cpu).sum();
        let memory: u32 = host.reserved.iter().map(|r| r.memory_mib).sum();
        assert!(host.cpu > 0 && host.memory_mib > 0, "{}", instance.arn);
        assert_eq!(cpu, host.cpu - room.cpu_remaining, "{}", instance.arn);
        assert_eq!(
            memory,
            host.memory_mib - room.memory_remaining_mib,
            "{}",
            instance.arn
        );
        reserving += usize::from(cpu > 0);
        let gpu_services: std::collections::BTreeSet<&str> = instance
            .gpus
            .iter()
            .flat_map(|g| g.containers.iter())
            .filter_map(|c| c.service.as_deref())
            .collect();
        for service in gpu_services {
            assert!(
                host.reserved
                    .iter()
                    .any(|r| r.service.as_deref() == Some(service) && r.team.is_some()),
                "{}: {service} holds a GPU but reserves no CPU: {:?}",
                instance.arn,
                host.reserved
            );
        }
    }
    assert!(
        reserving > 5,
        "the demo's tasks reserve CPU on {reserving} instances"
    );

    // The cluster counts the cluster table shows.
    let counts: HashMap<String, (u32, u32)> = emulator.with_fleet(|fleet| {
        fleet
            .clusters
            .values()
            .map(|c| {
                let running = c
                    .tasks
                    .values()
                    .filter(|t| {
                        t.is_live() && t.last_status == emulator::model::TaskStatus::Running
                    })
                    .count() as u32;
                (c.name.clone(), (c.services.len() as u32, running))
            })
            .collect()
    });
    for cluster in &snapshot.clusters {
        assert_eq!(
            (cluster.services, cluster.running_tasks),
            counts[&cluster.name],
            "{}",
            cluster.name
        );
    }

    // A second read reuses the cached task definitions.
    let again = reader.read().await.expect("read");
    assert!(
        again.api_calls < snapshot.api_calls,
        "{} then {}",
        snapshot.api_calls,
        again.api_calls
    );
}

#[tokio::test]
async fn a_failing_call_fails_the_read_rather_than_giving_a_partial_snapshot() {
    let (emulator, clients) = demo().await;
    let mut faults = Faults::default();
    faults.operations.insert(
        "DescribeTasks".into(),
        emulator::Fault {
            error_rate: 1.0,
            ..emulator::Fault::default()
        },
    );
    emulator.set_faults(faults).expect("valid");
    let error = FleetReader::new(clients.ecs.clone(), "team", 8)
        .read()
        .await
        .expect_err("must fail");
    assert_eq!(error.operation, "DescribeTasks");
}

#[tokio::test]
async fn a_failed_refresh_keeps_the_last_good_snapshot_and_says_why() {
    let (emulator, clients) = demo().await;
    let reader = FleetReader::new(clients.ecs.clone(), "team", 8);
    let store = gpushare::fleet::store::SnapshotStore::default();
    store.refresh(&reader).await.expect("the first read");
    let good = store.state();
    let first = good.snapshot.clone().expect("a snapshot");
    assert!(good.last_error.is_none());

    let faults = Faults {
        all: emulator::Fault {
            throttle_rate: 1.0,
            ..emulator::Fault::default()
        },
        ..Faults::default()
    };
    emulator.set_faults(faults).expect("valid");
    let throttled = store.refresh(&reader).await.expect_err("throttled");
    assert!(
        throttled.throttled,
        "the refresher backs off: {throttled:?}"
    );
    let after = store.state();
    assert_eq!(
        after.snapshot.as_deref(),
        Some(&*first),
        "the last good snapshot is served"
    );
    assert_eq!(after.taken_at, good.taken_at, "with its own age");
    // Said for people: what ECS answered, no SDK dump. (The refresh after the first reads
    // the clusters' counts first.)
    let said = after.last_error.clone().unwrap_or_default();
    assert_eq!(
        said,
        "ECS is throttling requests (DescribeClusters: ThrottlingException: Rate exceeded); the account's request rate for this kind of call is used up, by this console or other callers"
    );

    // Server errors (5xx after the SDK's retries) are handled the same way.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let faults = Faults {
        all: emulator::Fault {
            error_rate: 1.0,
            ..emulator::Fault::default()
        },
        ..Faults::default()
    };
    emulator.set_faults(faults).expect("valid");
    let failed = store.refresh(&reader).await.expect_err("server errors");
    assert!(!failed.throttled);
    let after = store.state();
    assert_eq!(after.snapshot.as_deref(), Some(&*first));
    let age = Utc::now() - after.taken_at.expect("taken");
    assert!(age >= chrono::Duration::seconds(1), "its age grows: {age}");
    let error = after.last_error.unwrap_or_default();
    assert!(error.contains("DescribeClusters"), "{error}");
    assert_eq!(after.version, good.version, "no new snapshot");

    emulator.set_faults(Faults::default()).expect("valid");
    store.refresh(&reader).await.expect("recovered");
    let recovered = store.state();
    assert!(recovered.last_error.is_none());
    assert!(recovered.version > good.version);
}

#[tokio::test]
async fn usage_joins_by_host_and_index_and_missing_metrics_are_no_data() {
    let (emulator, clients) = demo().await;
    let reader = FleetReader::new(clients.ecs.clone(), "team", 8)
        .with_usage(UsageReader::new(clients.cloudwatch.clone(), "host", 4))
        .with_ec2(Ec2Reader::new(clients.ec2.clone()));
    let snapshot = reader.read().await.expect("read");
    assert!(snapshot.usage_error.is_none(), "{:?}", snapshot.usage_error);
    // The instances' EC2 side: spot in ml-dev, on-demand elsewhere, every zone.
    let instances: Vec<_> = snapshot
        .clusters
        .iter()
        .flat_map(|c| c.instances.iter().map(move |i| (c.name.as_str(), i)))
        .collect();
    assert!(instances
        .iter()
        .all(|(_, i)| i.availability_zone.is_some() && i.lifecycle.is_some()));
    assert!(instances.iter().any(|(cluster, i)| *cluster == "ml-dev"
        && i.lifecycle == Some(app::model::cost::Lifecycle::Spot)));
    assert!(instances
        .iter()
        .any(|(cluster, i)| *cluster == "inference-prod"
            && i.lifecycle == Some(app::model::cost::Lifecycle::OnDemand)));
    // One ListMetrics page and one GetMetricData call: the demo has under 500 queries.
    assert_eq!(snapshot.cloudwatch_calls, 2);
    let agents: HashMap<String, (bool, String)> = emulator.with_fleet(|fleet| {
        fleet
            .clusters
            .values()
            .flat_map(|c| c.instances.iter())
            .map(|i| {
                (
                    i.ec2_instance_id.clone(),
                    (i.cloudwatch_agent, i.gpu_model.clone()),
                )
            })
            .collect()
    });
    let mut without = 0;
    for instance in snapshot.clusters.iter().flat_map(|c| c.instances.iter()) {
        let (agent, model) = &agents[&instance.ec2_instance_id];
        for gpu in &instance.gpus {
            if !agent {
                without += 1;
                assert_eq!(gpu.usage, None, "no metrics is no data, never zero");
                continue;
            }
            assert_eq!(instance.gpu_model.as_ref(), Some(model));
            let usage = gpu.usage.expect("a GPU with the agent has usage");
            let utilization = usage.utilization_percent.expect("utilization");
            let used = usage.memory_used_mib.expect("memory used");
            assert!((0.0..=100.0).contains(&utilization.latest));
            assert!((0.0..=100.0).contains(&utilization.average));
            if gpu.mode == SharingMode::Idle {
                assert_eq!(utilization.latest, 0.0, "{}", gpu.uuid);
                assert!(used.latest <= 1.0, "{}: nothing but the driver", gpu.uuid);
            } else {
                assert!(used.average > 0.0, "{}", gpu.uuid);
            }
        }
    }
    assert!(without > 0, "the demo's instance without the agent");
    // Without the agent, the model still comes from the instance type.
    assert!(snapshot
        .clusters
        .iter()
        .flat_map(|c| c.instances.iter())
        .all(|i| i.gpu_model.is_some()));
}

#[tokio::test]
async fn a_cloudwatch_failure_keeps_the_ecs_snapshot_and_says_usage_is_missing() {
    let (emulator, clients) = demo().await;
    let mut faults = Faults::default();
    faults.operations.insert(
        "ListMetrics".into(),
        emulator::Fault {
            error_rate: 1.0,
            ..emulator::Fault::default()
        },
    );
    emulator.set_faults(faults).expect("valid");
    let snapshot = FleetReader::new(clients.ecs.clone(), "team", 8)
        .with_usage(UsageReader::new(clients.cloudwatch.clone(), "host", 4))
        .read()
        .await
        .expect("ECS answers");
    let error = snapshot.usage_error.expect("the usage error is reported");
    assert!(error.contains("ListMetrics"), "{error}");
    assert!(snapshot
        .clusters
        .iter()
        .flat_map(|c| c.instances.iter())
        .flat_map(|i| i.gpus.iter())
        .all(|g| g.usage.is_none()));
}

/// The CloudWatch agent publishes the hostname as `host` unless configured otherwise: without
/// EC2's private DNS names only the agent configured with `InstanceId` joins; with them, all do.
#[tokio::test]
async fn usage_joins_by_hostname_through_ec2_and_an_ec2_failure_is_said() {
    let (emulator, clients) = demo().await;
    let with_usage =
        |ec2: bool| {
            let reader = FleetReader::new(clients.ecs.clone(), "team", 8)
                .with_usage(UsageReader::new(clients.cloudwatch.clone(), "host", 4));
            if ec2 {
                reader.with_ec2(Ec2Reader::new(clients.ec2.clone()))
            } else {
                reader
            }
        };
    let with_data = |snapshot: &app::model::FleetSnapshot| {
        snapshot
            .clusters
            .iter()
            .flat_map(|c| c.instances.iter())
            .filter(|i| i.gpus.iter().any(|g| g.usage.is_some()))
            .map(|i| i.instance_type.clone())
            .collect::<Vec<_>>()
    };
    let without = with_usage(false).read().await.expect("read");
    assert_eq!(
        with_data(&without),
        vec!["p5.48xlarge".to_string()],
        "only the agent that appends InstanceId joins without EC2"
    );
    let with = with_usage(true).read().await.expect("read");
    let agents = emulator.with_fleet(|fleet| {
        fleet
            .clusters
            .values()
            .flat_map(|c| c.instances.iter())
            .filter(|i| i.cloudwatch_agent && !i.gpus.is_empty())
            .count()
    });
    assert_eq!(
        with_data(&with).len(),
        agents,
        "every agent joins by hostname"
    );
    // EC2 refused: the snapshot still comes, and says why usage is missing.
    let mut faults = Faults::default();
    faults.operations.insert(
        "DescribeInstances".into(),
        emulator::Fault {
            error_rate: 1.0,
            ..emulator::Fault::default()
        },
    );
    emulator.set_faults(faults).expect("valid");
    let refused = with_usage(true).read().await.expect("ECS answers");
    let error = refused.usage_error.expect("said");
    assert!(
        error.contains("DescribeInstances") && error.contains("ec2:DescribeInstances"),
        "{error}"
    );
    assert!(!error.contains("ServiceError"), "no Debug dump: {error}");
}

#[tokio::test]
async fn enis_left_come_from_the_instance_types_and_the_tasks_attachments() {
    let (emulator, clients) = demo().await;
    let enis = |snapshot: &app::model::FleetSnapshot| -> HashMap<String, Option<u32>> {
        snapshot
            .clusters
            .iter()
            .flat_map(|c| c.instances.iter())
            .map(|i| (i.arn.clone(), i.room.as_ref().and_then(|r| r.enis_free)))
            .collect()
    };
    // Without EC2 the limit is not known.
    let plain = FleetReader::new(clients.ecs.clone(), "team", 8)
        .read()
        .await
        .expect("read");
    assert!(enis(&plain).values().all(Option::is_none));
    let reader = FleetReader::new(clients.ecs.clone(), "team", 8)
        .with_ec2(Ec2Reader::new(clients.ec2.clone()));
    let snapshot = reader.read().await.expect("read");
    let truth: HashMap<String, Option<u32>> = emulator.with_fleet(|fleet| {
        fleet
            .clusters
            .values()
            .flat_map(|c| c.instances.iter())
            .map(|i| (i.arn.clone(), i.room.enis_free))
            .collect()
    });
    assert_eq!(
        enis(&snapshot),
        truth,
        "the emulator's own count, instance by instance"
    );
    // speech-align's awsvpc tasks hold ENIs on ml-dev's instances.
    let held: u32 = emulator.with_fleet(|fleet| {
        fleet.clusters["ml-dev"]
            .instances
            .iter()
            .map(|i| {
                emulator::instance_types::find(&i.instance_type)
                    .expect("known")
                    .task_enis()
                    - i.room.enis_free.expect("counted")
            })
            .sum()
    });
    assert!(held > 0, "the awsvpc tasks hold some");
}

#[tokio::test]
async fn a_full_read_checks_the_incremental_state_and_finds_it_equal() {
    let (emulator, clients) = demo().await;
    let reader = FleetReader::new(clients.ecs.clone(), "team", 8)
        .with_full_read_every(std::time::Duration::from_secs(0));
    let first = reader.refresh().await.expect("first");
    assert!(first.full);
    // A task stops, and its service replaces it; the refresh sees it incrementally.
    emulator.with_fleet(|fleet| {
        let (key, arn) = fleet
            .clusters
            .iter()
            .find_map(|(key, c)| {
                let task = c.tasks.values().find(|t| t.is_live())?;
                Some((key.clone(), task.arn.clone()))
            })
            .expect("a live task");
        fleet.stop_task(&key, &arn, "stopped by the test", "UserInitiated");
    });
    emulator.advance(30);
    let second = reader.refresh().await.expect("incremental");
    assert!(!second.full);
    assert!(
        second.snapshot.api_calls < first.snapshot.api_calls,
        "{} calls incrementally, {} in full",
        second.snapshot.api_calls,
        first.snapshot.api_calls
    );
    assert!(reader.full_read_due().await);
    let drift = reader.check_with_full_read().await.expect("checked");
    assert!(drift.compared > 0, "{drift:?}");
    assert!(drift.differing.is_empty(), "{drift:?}");
    let checks = reader.checks();
    assert_eq!(checks.full_reads, 1);
    assert_eq!(checks.gpus_differing, 0);
    assert_eq!(checks.gpus_compared, drift.compared);
}
