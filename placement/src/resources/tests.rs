//! Unit tests of the `resources` module.

use super::*;
use serde_json::json;

fn room() -> Room {
    Room {
        status: "ACTIVE".into(),
        agent_connected: true,
        cpu_remaining: 4_096,
        memory_remaining_mib: 16_000,
        tcp_ports_used: [22, 2375, 2376, 51678, 51679].into_iter().collect(),
        udp_ports_used: BTreeSet::new(),
        attributes: [
            ("ecs.instance-type".to_string(), "g5.12xlarge".to_string()),
            (
                "ecs.availability-zone".to_string(),
                "us-east-1a".to_string(),
            ),
        ]
        .into_iter()
        .collect(),
        enis_free: None,
    }
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

#[test]
fn memory_reservation_wins_over_memory_and_task_level_values_win_over_both() {
    let td = object(json!({"containerDefinitions": [
        {"name": "a", "cpu": 512, "memory": 4096, "memoryReservation": 1024},
        {"name": "b", "cpu": 256, "memory": 2048}
    ]}));
    let needs = needs_of(&td, &[]).expect("needs");
    assert_eq!((needs.cpu, needs.memory_mib), (768, 3072));
    let td = object(
        json!({"cpu": "2048", "memory": "8192", "containerDefinitions": [
            {"name": "a", "cpu": 512, "memory": 4096}
        ]}),
    );
    let needs = needs_of(&td, &[]).expect("needs");
    assert_eq!((needs.cpu, needs.memory_mib), (2048, 8192));
}

#[test]
fn static_host_ports_count_in_bridge_and_host_mode_only() {
    let containers = json!([{"name": "a", "portMappings": [
        {"containerPort": 8080, "hostPort": 80},
        {"containerPort": 9000, "hostPort": 0},
        {"containerPort": 53, "hostPort": 53, "protocol": "udp"}
    ]}]);
    let bridge =
        needs_of(&object(json!({"containerDefinitions": containers})), &[]).expect("parsed");
    assert_eq!((bridge.tcp_ports, bridge.udp_ports), (vec![80], vec![53]));
    let host = needs_of(
        &object(json!({"networkMode": "host", "containerDefinitions": [{"name": "a", "portMappings": [{"containerPort": 8080}]}]})),
        &[],
    ).expect("parsed");
    assert_eq!(host.tcp_ports, vec![8080]);
    let awsvpc = needs_of(
        &object(json!({"networkMode": "awsvpc", "containerDefinitions": containers})),
        &[],
    )
    .expect("parsed");
    assert!(awsvpc.tcp_ports.is_empty() && awsvpc.awsvpc);
}

#[test]
fn each_resource_blocks_in_ecs_order_and_words() {
    let needs = Needs {
        cpu: 1_024,
        memory_mib: 4_096,
        tcp_ports: vec![80],
        ..Needs::default()
    };
    assert_eq!(check(&room(), &needs, 0), Ok(()));
    let mut draining = room();
    draining.status = "DRAINING".into();
    assert_eq!(
        check(&draining, &needs, 0),
        Err(Blocked::NotActive {
            status: "DRAINING".into()
        })
    );
    let mut gone = room();
    gone.agent_connected = false;
    assert_eq!(
        check(&gone, &needs, 0).expect_err("blocked").ecs_words(),
        "encountered error \"AGENT\""
    );
    let mut full = room();
    full.cpu_remaining = 512;
    assert_eq!(
        check(&full, &needs, 0).expect_err("blocked").ecs_words(),
        "has insufficient CPU units available"
    );
    full.cpu_remaining = 4_096;
    full.memory_remaining_mib = 4_095;
    assert_eq!(
        check(&full, &needs, 0).expect_err("blocked").ecs_words(),
        "has insufficient memory available"
    );
    let mut busy = room();
    take(&mut busy, &needs);
    assert_eq!(
        check(&busy, &needs, 0),
        Err(Blocked::Port {
            port: 80,
            udp: false
        })
    );
    give_back(&mut busy, &needs);
    assert_eq!(busy, room(), "giving back restores the room exactly");
    let distinct = Needs {
        distinct_instance: true,
        ..needs.clone()
    };
    assert_eq!(check(&room(), &distinct, 1), Err(Blocked::DistinctInstance));
    assert_eq!(check(&room(), &distinct, 0), Ok(()));
}

#[test]
fn tasks_that_fit_is_bounded_by_the_scarcest_resource() {
    let needs = Needs {
        cpu: 1_024,
        memory_mib: 4_096,
        ..Needs::default()
    };
    // 4,096 CPU units and 16,000 MiB: four by CPU, three by memory.
    assert_eq!(tasks_that_fit(&room(), &needs), 3);
    let awsvpc = Needs {
        awsvpc: true,
        ..needs.clone()
    };
    let two_enis = Room {
        enis_free: Some(2),
        ..room()
    };
    assert_eq!(tasks_that_fit(&two_enis, &awsvpc), 2);
    assert_eq!(
        tasks_that_fit(&room(), &awsvpc),
        3,
        "unknown ENIs bound nothing"
    );
    let port = Needs {
        tcp_ports: vec![8443],
        ..needs.clone()
    };
    assert_eq!(tasks_that_fit(&room(), &port), 1);
    assert_eq!(tasks_that_fit(&room(), &Needs::default()), u32::MAX);
    let draining = Room {
        status: "DRAINING".into(),
        ..room()
    };
    assert_eq!(tasks_that_fit(&draining, &needs), 0);
    // Placing them one by one agrees.
    let mut filling = room();
    let mut placed = 0;
    while check(&filling, &needs, 0).is_ok() {
        take(&mut filling, &needs);
        placed += 1;
    }
    assert_eq!(placed, tasks_that_fit(&room(), &needs));
}

#[test]
fn an_awsvpc_task_takes_an_eni_and_unknown_enis_block_nothing() {
    let awsvpc = Needs {
        awsvpc: true,
        ..Needs::default()
    };
    let mut two = Room {
        enis_free: Some(2),
        ..room()
    };
    take(&mut two, &awsvpc);
    assert_eq!(check(&two, &awsvpc, 0), Ok(()));
    take(&mut two, &awsvpc);
    let blocked = check(&two, &awsvpc, 0).expect_err("no ENI left");
    assert_eq!(blocked, Blocked::Eni);
    assert_eq!(blocked.ecs_words(), "encountered error \"RESOURCE:ENI\"");
    assert_eq!(
        check(&two, &Needs::default(), 0),
        Ok(()),
        "a bridge task needs no ENI"
    );
    give_back(&mut two, &awsvpc);
    assert_eq!(two.enis_free, Some(1));
    let mut unknown = room();
    take(&mut unknown, &awsvpc);
    assert_eq!(unknown.enis_free, None);
    assert_eq!(check(&unknown, &awsvpc, 0), Ok(()), "unknown is not zero");
}

#[test]
fn member_of_expressions() {
    let attributes = room().attributes;
    let holds = |text: &str| Expression::parse(text).expect(text).holds(&attributes);
    assert!(holds("attribute:ecs.instance-type == g5.12xlarge"));
    assert!(holds("attribute:ecs.instance-type == g5.*"));
    assert!(!holds("attribute:ecs.instance-type == g6.*"));
    assert!(holds(
        "attribute:ecs.availability-zone in [us-east-1a, us-east-1b]"
    ));
    assert!(!holds(
        "attribute:ecs.availability-zone not_in [us-east-1a, us-east-1b]"
    ));
    assert!(holds("attribute:ecs.instance-type != p5.48xlarge"));
    assert!(holds("attribute:team !exists"));
    assert!(holds("attribute:ecs.instance-type =~ g5.*"));
    assert!(holds("attribute:ecs.instance-type =~ g5.12xlarge"));
    assert!(!holds("attribute:ecs.instance-type =~ g5"));
    assert!(holds("attribute:ecs.instance-type !~ p.*"));
    assert!(holds("ec2InstanceId !exists"));
    assert!(!holds("attribute:team exists"));
    assert!(holds(
        "attribute:ecs.instance-type == p5.48xlarge or attribute:ecs.availability-zone == us-east-1a"
    ));
    assert!(!holds(
        "attribute:ecs.instance-type == g5.12xlarge and attribute:ecs.availability-zone == us-east-1b"
    ));
    for bad in [
        "",
        "task:group == service:x",
        "attribute:x ~ y",
        "attribute:x ==",
    ] {
        assert!(Expression::parse(bad).is_err(), "{bad:?} is refused");
    }
    let td = object(json!({"containerDefinitions": [], "placementConstraints": [
        {"type": "memberOf", "expression": "attribute:ecs.instance-type == g5.*"}
    ]}));
    let needs = needs_of(&td, &[json!({"type": "distinctInstance"})]).expect("needs");
    assert!(needs.distinct_instance);
    let mut elsewhere = room();
    elsewhere
        .attributes
        .insert("ecs.instance-type".into(), "g6.xlarge".into());
    assert_eq!(
        check(&elsewhere, &needs, 0),
        Err(Blocked::Attribute {
            expression: "attribute:ecs.instance-type == g5.*".into()
        })
    );
}
