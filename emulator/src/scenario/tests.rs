//! Unit tests of the `scenario` module.

use super::*;
use crate::model::TaskStatus;

#[test]
fn the_same_seed_builds_the_same_fleet() {
    let now = Utc::now();
    let a = Scenario::Demo.build(7, now);
    let b = Scenario::Demo.build(7, now);
    let ids = |f: &Fleet| {
        f.clusters
            .values()
            .flat_map(|c| c.tasks.keys().cloned())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&a), ids(&b));
    assert_ne!(ids(&a), ids(&Scenario::Demo.build(8, now)));
}

#[test]
fn the_demos_past_walks_its_story_to_where_the_demo_starts() {
    // A Wednesday: the two weekends before it dip.
    let now = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z")
        .expect("a time")
        .with_timezone(&Utc);
    let mut fleet = Scenario::Demo.build_with_past(7, now, 14);
    let desired = |fleet: &Fleet, cluster: &str, service: &str| {
        fleet.clusters[cluster].services[service].desired_count
    };
    assert_eq!(desired(&fleet, "inference-prod", "embed-api"), 3);
    // Saturday 21 November to Monday 23, and 28 to 30: four changes each for two services.
    let dips: Vec<_> = fleet
        .schedule
        .iter()
        .filter(|s| s.service == "physics-sim")
        .map(|s| (s.at.to_rfc3339(), s.desired))
        .collect();
    assert_eq!(
        dips,
        [
            ("2026-11-21T00:00:00+00:00".to_string(), 1),
            ("2026-11-23T00:00:00+00:00".to_string(), 5),
            ("2026-11-28T00:00:00+00:00".to_string(), 1),
            ("2026-11-30T00:00:00+00:00".to_string(), 5),
        ]
    );
    fleet.advance(now - Duration::days(7));
    assert_eq!(desired(&fleet, "inference-prod", "embed-api"), 5);
    assert_eq!(
        desired(&fleet, "batch-sim", "physics-sim"),
        5,
        "a Wednesday"
    );
    fleet.advance(now - Duration::days(3));
    assert_eq!(desired(&fleet, "inference-prod", "embed-api"), 8);
    assert_eq!(desired(&fleet, "batch-sim", "physics-sim"), 1, "a Sunday");
    fleet.advance(now);
    assert!(fleet.schedule.is_empty());
    let plain = Scenario::Demo.build(7, now);
    for (cluster, c) in &plain.clusters {
        for (name, service) in &c.services {
            assert_eq!(
                desired(&fleet, cluster, name),
                service.desired_count,
                "{cluster}/{name}"
            );
        }
    }
    assert!(fleet.idle_services.contains_key("inference-prod/tts"));
}

#[test]
fn demo_has_what_it_promises() {
    let fleet = Scenario::Demo.build(1, Utc::now());
    let instances: Vec<_> = fleet
        .clusters
        .values()
        .flat_map(|c| c.instances.iter())
        .collect();
    assert_eq!(fleet.clusters.len(), 3);
    assert_eq!(instances.len(), 26);
    assert!(instances.iter().any(|i| i.spot) && instances.iter().any(|i| !i.spot));
    assert_eq!(
        instances
            .iter()
            .filter(|i| i.agent_instance_id_dimension)
            .count(),
        1
    );
    assert_eq!(
        fleet.clusters["ml-dev"].services["notebook-gpu"]
            .config
            .strategy,
        "BLUE_GREEN"
    );
    assert!(instances.iter().any(|i| i.room.status == "DRAINING"));
    assert!(instances.iter().any(|i| !i.room.agent_connected));
    let vision: Vec<_> = fleet.clusters["inference-prod"]
        .tasks
        .values()
        .filter(|t| t.is_live() && t.group == "service:vision-detect")
        .collect();
    let hosts: std::collections::BTreeSet<_> = vision.iter().map(|t| &t.instance_arn).collect();
    assert!(vision.len() > 1);
    assert_eq!(
        hosts.len(),
        vision.len(),
        "distinctInstance: one per instance"
    );
    assert!(vision.iter().all(|t| t.needs.tcp_ports == vec![8443]));
    // speech-align's awsvpc tasks each hold one of their instance's ENIs.
    let ml_dev = &fleet.clusters["ml-dev"];
    let align_tasks: Vec<_> = ml_dev
        .tasks
        .values()
        .filter(|t| t.is_live() && t.group == "service:speech-align")
        .collect();
    assert!(!align_tasks.is_empty() && align_tasks.iter().all(|t| t.needs.awsvpc));
    for instance in &ml_dev.instances {
        let held = align_tasks
            .iter()
            .filter(|t| t.instance_arn == instance.arn)
            .count() as u32;
        let kind = crate::instance_types::find(&instance.instance_type).expect("known");
        assert_eq!(instance.room.enis_free, Some(kind.task_enis() - held));
    }
    // Instances bound by CPU or memory before their GPUs: a GPU with room for a task of a
    // service of their cluster, but not the instance memory or CPU that task needs.
    let mut bound = Vec::new();
    for cluster in fleet.clusters.values() {
        for service in cluster.services.values() {
            let td = fleet
                .task_definition(&service.task_definition_arn)
                .expect("registered");
            let ask = td.gpu.mps_memory_mib();
            for i in &cluster.instances {
                if i.room.status == "ACTIVE"
                    && ask > 0
                    && i.mps_capable
                    && i.mps_impaired.is_none()
                    && i.gpus.iter().any(|g| g.fits_mps(ask))
                    && (i.room.memory_remaining_mib < td.needs.memory_mib
                        || i.room.cpu_remaining < td.needs.cpu)
                {
                    bound.push((service.name.clone(), i.instance_type.clone()));
                }
            }
        }
    }
    assert!(
        bound.contains(&("tts".to_string(), "g5.xlarge".to_string())),
        "tts fills its g5.xlarge's memory before their GPUs: {bound:?}"
    );
    let gpus = || instances.iter().flat_map(|i| i.gpus.iter());
    assert!(
        gpus().any(|g| g.mode == crate::placement::SharingMode::Idle),
        "some idle GPUs"
    );
    assert!(
        gpus().any(|g| g.mode == crate::placement::SharingMode::Dedicated),
        "a dedicated GPU"
    );
    let impaired: Vec<_> = instances
        .iter()
        .filter(|i| i.mps_impaired.is_some())
        .collect();
    assert_eq!(impaired.len(), 1, "one impaired daemon");
    assert!(
        fleet.clusters["batch-sim"]
            .tasks
            .values()
            .any(|t| t.is_live()
                && t.instance_arn == impaired[0].arn
                && t.last_status == crate::model::TaskStatus::Running),
        "tasks still running on the impaired instance"
    );
    let unshared: Vec<_> = instances.iter().filter(|i| !i.mps_capable).collect();
    assert_eq!(unshared.len(), 1, "one instance without GPU sharing");
    assert!(
        unshared[0]
            .gpus
            .iter()
            .all(|g| g.mode != crate::placement::SharingMode::NvidiaMps),
        "no MPS task on an instance without GPU sharing"
    );
    let services: Vec<_> = fleet
        .clusters
        .values()
        .flat_map(|c| c.services.values())
        .collect();
    assert_eq!(services.len(), 12);
    let align = services
        .iter()
        .find(|s| s.name == "speech-align")
        .expect("speech-align");
    assert!(
        align.task_definition_arn.ends_with("speech-align:1"),
        "rolled back to revision 1"
    );
    assert!(
        align
            .events
            .iter()
            .any(|e| e.message.contains("deployment failed")),
        "{:?}",
        align.events
    );
    assert!(align
        .events
        .iter()
        .any(|e| e.message.contains("rolling back")));
    // Every service but the one that failed reaches its desired count.
    for service in &services {
        let running: u32 = service.deployments.iter().map(|d| d.running_count).sum();
        assert_eq!(running, service.desired_count, "{}", service.name);
    }
    // Allocation bookkeeping matches the tasks placed.
    for cluster in fleet.clusters.values() {
        for instance in &cluster.instances {
            for (index, slot) in instance.gpus.iter().enumerate() {
                let uuid = &instance.gpu_ids[index];
                let containers: Vec<_> = cluster
                    .tasks
                    .values()
                    .filter(|t| t.last_status != TaskStatus::Stopped)
                    .flat_map(|t| t.containers.iter())
                    .filter(|c| c.gpu_ids.contains(uuid))
                    .collect();
                assert_eq!(
                    slot.container_count as usize,
                    containers.len().min(
                        if slot.mode == crate::placement::SharingMode::Dedicated {
                            1
                        } else {
                            usize::MAX
                        }
                    ),
                    "{uuid}"
                );
            }
        }
    }
}

#[test]
fn the_large_fleet_is_mostly_behind_capacity_providers() {
    let fleet = Scenario::Large.build(7, chrono::Utc::now());
    let instances: Vec<_> = fleet.clusters.values().flat_map(|c| &c.instances).collect();
    let behind = instances
        .iter()
        .filter(|i| i.capacity_provider.is_some())
        .count();
    assert_eq!(
        behind,
        instances.len(),
        "every type of large has a provider"
    );
    assert_eq!(
        fleet.elastic.groups.len(),
        4,
        "one Auto Scaling group per cluster"
    );
    let mi = instances
        .iter()
        .filter(|i| i.capacity_provider.as_deref() == Some("prod-a-gpu-mi"))
        .count();
    assert_eq!(mi, 150, "prod-a's g5, g6 and g6e");
}
