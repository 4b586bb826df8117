//! The consolidation plan carried out in the emulator: the instances it lists are drained with
//! UpdateContainerInstancesState, the services move their tasks as ECS does (within their
//! deployment bounds, placed by the emulator's own strategies), and every service that was
//! steady before is steady after, with nothing left on a drained instance.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use app::model::{cost::consolidate::PlanQuery, FleetSnapshot};
use aws_sdk_ecs::types::ContainerInstanceStatus;
use gpushare::{config::EmulatorArgs, fleet::reader::FleetReader};

use crate::support::temp_dir;

async fn read(reader: &FleetReader) -> FleetSnapshot {
    reader.refresh().await.expect("reads").snapshot
}

/// Services that run what they should: `(cluster, service)` → desired.
fn steady(snapshot: &FleetSnapshot) -> BTreeMap<(String, String), u32> {
    snapshot
        .clusters
        .iter()
        .flat_map(|c| {
            c.service_list
                .iter()
                .filter(|s| s.running == s.desired && s.pending == 0 && s.deployments <= 1)
                .map(move |s| ((c.name.clone(), s.name.clone()), s.desired))
        })
        .collect()
}

#[tokio::test]
async fn draining_the_planned_instances_leaves_every_service_running() {
    let emulator = gpushare::build_emulator(&EmulatorArgs::default(), 0)
        .await
        .expect("the demo");
    let (_, clients) = gpushare::serve_emulator(&emulator).await.expect("serves");
    let clock = emulator.clone();
    let reader = FleetReader::new(clients.ecs.clone(), "team", 16)
        .with_ec2(gpushare::fleet::ec2::Ec2Reader::new(clients.ec2.clone()))
        .with_clock(Arc::new(move || clock.now()));
    let before = read(&reader).await;
    let store = Arc::new(gpushare::fleet::store::SnapshotStore::new(
        Duration::from_secs(15),
    ));
    store.store(before.clone(), chrono::Utc::now());
    let dir = temp_dir("consolidation");
    let audit = Arc::new(
        gpushare::audit::SqlAuditLog::open(None, &dir)
            .await
            .expect("opens"),
    );
    let source = app::model::FleetSource::Emulator {
        endpoint: "embedded".into(),
        scenario: "demo".into(),
    };
    let context = gpushare::ports::service_context(
        &clients,
        gpushare::ports::Settings::defaults(source, &clients.region),
        gpushare::ports::Stores {
            fleet: store,
            history: Arc::new(gpushare::cost_history::SqlCostHistory::new(
                &audit,
                gpushare::cost_history::RETENTION_DAYS,
            )),
            audit,
            markets: Arc::new(app::service::ports::NoMarkets),
            reads: Default::default(),
        },
    );
    let plan = app::service::cost::plan(
        &context,
        &PlanQuery {
            cluster: None,
            spare_percent: 0,
        },
    )
    .await
    .expect("plans");
    // No spare: the plan moves tasks, not only empty instances.
    assert!(
        plan.tasks_moved > 0,
        "the demo has thin instances whose tasks can move: {plan:?}"
    );

    // Drain them as an operator would, ten at a time per cluster.
    let arn_of: BTreeMap<&str, &str> = before
        .instances()
        .map(|i| (i.ec2_instance_id.as_str(), i.arn.as_str()))
        .collect();
    let mut by_cluster: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for drain in &plan.drains {
        by_cluster
            .entry(drain.cluster.as_str())
            .or_default()
            .push(arn_of[drain.ec2_instance_id.as_str()].to_string());
    }
    for (cluster, arns) in &by_cluster {
        for chunk in arns.chunks(10) {
            let answer = clients
                .ecs
                .update_container_instances_state()
                .cluster(*cluster)
                .set_container_instances(Some(chunk.to_vec()))
                .status(ContainerInstanceStatus::Draining)
                .send()
                .await
                .expect("drains");
            assert!(answer.failures().is_empty(), "{:?}", answer.failures());
        }
    }
    // Let the services move their tasks: a minute at a time, for up to half an hour.
    let mut after = read(&reader).await;
    for _ in 0..30 {
        emulator.advance(60);
        after = read(&reader).await;
        let left = after
            .instances()
            .filter(|i| {
                plan.drains
                    .iter()
                    .any(|d| d.ec2_instance_id == i.ec2_instance_id)
            })
            .flat_map(|i| i.gpus.iter())
            .flat_map(|g| g.containers.iter())
            .filter(|c| c.service.is_some())
            .count();
        if left == 0
            && steady(&before)
                .keys()
                .all(|k| steady(&after).contains_key(k))
        {
            break;
        }
    }
    let drained: Vec<&str> = plan
        .drains
        .iter()
        .map(|d| d.ec2_instance_id.as_str())
        .collect();
    for instance in after
        .instances()
        .filter(|i| drained.contains(&i.ec2_instance_id.as_str()))
    {
        assert_eq!(instance.not_placing.as_deref(), Some("DRAINING"));
        let services: Vec<&str> = instance
            .gpus
            .iter()
            .flat_map(|g| g.containers.iter())
            .filter_map(|c| c.service.as_deref())
            .collect();
        assert!(
            services.is_empty(),
            "{} still runs {services:?}",
            instance.ec2_instance_id
        );
    }
    let was = steady(&before);
    let now = steady(&after);
    for (service, desired) in &was {
        assert_eq!(
            now.get(service),
            Some(desired),
            "{service:?} ran its {desired} tasks before the drain and does not after"
        );
    }
}
