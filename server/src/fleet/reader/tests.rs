//! Unit tests of the `reader` module.

use super::convert::TRUNK_ATTRIBUTE;
use super::*;
use app::model::ClusterView;

fn snapshot(attributes: &[(&str, &str)]) -> FleetSnapshot {
    let room = Room {
        status: "ACTIVE".into(),
        agent_connected: true,
        attributes: attributes
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Room::default()
    };
    FleetSnapshot {
        clusters: vec![ClusterView {
            name: "prod".into(),
            instances: vec![InstanceView::of("i-1", "g5.xlarge")
                .with_arn("arn:ci/1")
                .with_room(Some(room))],
            ..ClusterView::default()
        }],
        taken_at: "t".into(),
        api_calls: 0,
        cloudwatch_calls: 0,
        usage_error: None,
        unknown_gpu_ids: 0,
    }
}

/// A task reserves the task-level CPU and memory when set, else its containers' sum, where
/// a container's memoryReservation wins over its memory.
#[test]
fn a_task_reserves_task_level_values_else_its_containers_sum() {
    use aws_sdk_ecs::types::{ContainerDefinition, TaskDefinition};
    let container = |cpu: i32, memory: Option<i32>, reservation: Option<i32>| {
        ContainerDefinition::builder()
            .name("c")
            .cpu(cpu)
            .set_memory(memory)
            .set_memory_reservation(reservation)
            .build()
    };
    let containers = vec![
        container(512, Some(4096), Some(1024)),
        container(256, Some(2048), None),
        container(0, None, None),
    ];
    let sum = TaskDefinition::builder()
        .set_container_definitions(Some(containers.clone()))
        .build();
    assert_eq!(host_needs(&sum), (768, 3072));
    let task_level = TaskDefinition::builder()
        .cpu("2048")
        .memory(" 8192 ")
        .set_container_definitions(Some(containers))
        .build();
    assert_eq!(host_needs(&task_level), (2048, 8192));
}

#[test]
fn enis_left_are_the_interfaces_less_the_primary_and_the_tasks_unless_trunked() {
    let interfaces: HashMap<String, u32> = [("g5.xlarge".to_string(), 4)].into();
    let tasks: HashMap<String, u32> = [("arn:ci/1".to_string(), 2)].into();
    let enis = |snapshot: &FleetSnapshot| {
        snapshot.clusters[0].instances[0]
            .room
            .as_ref()
            .and_then(|r| r.enis_free)
    };
    let mut plain = snapshot(&[]);
    count_enis(&mut plain, &interfaces, &tasks);
    assert_eq!(enis(&plain), Some(1));
    count_enis(&mut plain, &interfaces, &HashMap::new());
    assert_eq!(enis(&plain), Some(3));
    let mut trunked = snapshot(&[(TRUNK_ATTRIBUTE, "eni-0trunk")]);
    count_enis(&mut trunked, &interfaces, &tasks);
    assert_eq!(enis(&trunked), None, "the trunk's limit is not known");
    let mut undescribed = snapshot(&[]);
    count_enis(&mut undescribed, &HashMap::new(), &tasks);
    assert_eq!(enis(&undescribed), None);
}
