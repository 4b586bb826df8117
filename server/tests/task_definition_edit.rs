//! A GPU edit through aws-sdk-ecs against the emulator: register a task definition rich in
//! fields, describe it, change one container's GPU setting, register the new revision, describe
//! that — and everything but the GPU setting is the same.

use aws_sdk_ecs::types::{
    Compatibility, ContainerCondition, ContainerDefinition, ContainerDependency, CpuArchitecture,
    EphemeralStorage, HealthCheck, HostEntry, HostVolumeProperties, IpcMode, KernelCapabilities,
    KeyValuePair, LinuxParameters, LogConfiguration, LogDriver, MountPoint, NetworkMode, OsFamily,
    PidMode, PortMapping, ResourceRequirement, ResourceType, RuntimePlatform, Secret,
    SystemControl, Tag, TaskDefinitionField, TaskDefinitionPlacementConstraint,
    TaskDefinitionPlacementConstraintType, TransportProtocol, Ulimit, UlimitName, Volume,
    VolumeFrom,
};
use chrono::Utc;
use emulator::{Emulator, Faults, Scenario};
use gpushare::{
    aws::{Clients, Target},
    task_definitions::{gpu_setting, register_request, GpuSetting, CHANGE_TAG},
};

async fn empty() -> Clients {
    let emulator = Emulator::new(
        Scenario::Empty.build(1, Utc::now()),
        "empty",
        1.0,
        Faults::default(),
    );
    let address = emulator
        .spawn("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    Clients::new(&Target::Emulator {
        endpoint: format!("http://{address}"),
    })
    .await
}

fn model_container() -> ContainerDefinition {
    ContainerDefinition::builder()
        .name("model")
        .image("123456789012.dkr.ecr.us-east-1.amazonaws.com/search/embed:2.4.1")
        .cpu(2048)
        .memory(8192)
        .memory_reservation(6144)
        .essential(true)
        .command("serve")
        .command("--port=8080")
        .entry_point("/usr/bin/tini")
        .entry_point("--")
        .working_directory("/srv")
        .user("1000:1000")
        .environment(
            KeyValuePair::builder()
                .name("LOG_LEVEL")
                .value("info")
                .build(),
        )
        .environment(
            KeyValuePair::builder()
                .name("MODEL")
                .value("e5-large")
                .build(),
        )
        .secrets(
            Secret::builder()
                .name("HF_TOKEN")
                .value_from("arn:aws:secretsmanager:us-east-1:123456789012:secret:hf")
                .build()
                .expect("secret"),
        )
        .port_mappings(
            PortMapping::builder()
                .container_port(8080)
                .host_port(8080)
                .protocol(TransportProtocol::Tcp)
                .name("http")
                .build(),
        )
        .mount_points(
            MountPoint::builder()
                .source_volume("models")
                .container_path("/models")
                .read_only(true)
                .build(),
        )
        .volumes_from(
            VolumeFrom::builder()
                .source_container("warmup")
                .read_only(true)
                .build(),
        )
        .depends_on(
            ContainerDependency::builder()
                .container_name("warmup")
                .condition(ContainerCondition::Success)
                .build()
                .expect("dependency"),
        )
        .health_check(
            HealthCheck::builder()
                .command("CMD-SHELL")
                .command("curl -f http://localhost:8080/health || exit 1")
                .interval(30)
                .timeout(5)
                .retries(3)
                .start_period(60)
                .build()
                .expect("health check"),
        )
        .linux_parameters(
            LinuxParameters::builder()
                .init_process_enabled(true)
                .shared_memory_size(2048)
                .capabilities(KernelCapabilities::builder().add("SYS_PTRACE").build())
                .build(),
        )
        .ulimits(
            Ulimit::builder()
                .name(UlimitName::Nofile)
                .soft_limit(65_536)
                .hard_limit(65_536)
                .build()
                .expect("ulimit"),
        )
        .log_configuration(
            LogConfiguration::builder()
                .log_driver(LogDriver::Awslogs)
                .options("awslogs-group", "/ecs/embed")
                .options("awslogs-region", "us-east-1")
                .options("awslogs-stream-prefix", "ecs")
                .build()
                .expect("log configuration"),
        )
        .docker_labels("team", "search")
        .stop_timeout(120)
        .start_timeout(300)
        .readonly_root_filesystem(true)
        .extra_hosts(
            HostEntry::builder()
                .hostname("metadata")
                .ip_address("169.254.169.254")
                .build()
                .expect("host"),
        )
        .system_controls(
            SystemControl::builder()
                .namespace("net.core.somaxconn")
                .value("1024")
                .build(),
        )
        .resource_requirements(
            ResourceRequirement::builder()
                .r#type(ResourceType::Gpu)
                .value("1")
                .build()
                .expect("gpu"),
        )
        .build()
}

fn warmup_container() -> ContainerDefinition {
    ContainerDefinition::builder()
        .name("warmup")
        .image("search/warmup:1.0.0")
        .essential(false)
        .memory(512)
        .build()
}

#[tokio::test]
async fn a_gpu_edit_keeps_every_other_field() {
    let clients = empty().await;
    let registered = clients
        .ecs
        .register_task_definition()
        .family("embed-api")
        .task_role_arn("arn:aws:iam::123456789012:role/embed-task")
        .execution_role_arn("arn:aws:iam::123456789012:role/ecsTaskExecutionRole")
        .network_mode(NetworkMode::Awsvpc)
        .container_definitions(model_container())
        .container_definitions(warmup_container())
        .volumes(
            Volume::builder()
                .name("models")
                .host(
                    HostVolumeProperties::builder()
                        .source_path("/opt/models")
                        .build(),
                )
                .build(),
        )
        .placement_constraints(
            TaskDefinitionPlacementConstraint::builder()
                .r#type(TaskDefinitionPlacementConstraintType::MemberOf)
                .expression("attribute:ecs.instance-type =~ g5.*")
                .build(),
        )
        .requires_compatibilities(Compatibility::Ec2)
        .cpu("4096")
        .memory("16384")
        .pid_mode(PidMode::Task)
        .ipc_mode(IpcMode::Task)
        .ephemeral_storage(EphemeralStorage::builder().size_in_gib(50).build())
        .runtime_platform(
            RuntimePlatform::builder()
                .cpu_architecture(CpuArchitecture::X8664)
                .operating_system_family(OsFamily::Linux)
                .build(),
        )
        .enable_fault_injection(false)
        .tags(Tag::builder().key("team").value("search").build())
        .tags(Tag::builder().key("cost-center").value("4711").build())
        .send()
        .await
        .expect("register the source revision");
    let source_arn = registered
        .task_definition()
        .and_then(|td| td.task_definition_arn())
        .expect("an ARN")
        .to_string();

    let described = clients
        .ecs
        .describe_task_definition()
        .task_definition(&source_arn)
        .include(TaskDefinitionField::Tags)
        .send()
        .await
        .expect("describe");
    let source = described.task_definition().expect("a task definition");
    assert_eq!(
        gpu_setting(&source.container_definitions()[0]),
        GpuSetting::Whole { count: 1 }
    );

    let mps = GpuSetting::Mps {
        memory_mib: 8_192,
        max_compute_percent: Some(50),
    };
    let edited = register_request(
        &clients.ecs,
        source,
        described.tags(),
        &[("model".to_string(), mps.clone())],
        Some("Share the GPU: 8 GiB and half the compute are enough for e5-large"),
    )
    .expect("the edit applies")
    .send()
    .await
    .expect("register the edit");
    let new_arn = edited
        .task_definition()
        .and_then(|td| td.task_definition_arn())
        .expect("an ARN")
        .to_string();
    assert!(new_arn.ends_with("embed-api:2"), "{new_arn}");

    let after = clients
        .ecs
        .describe_task_definition()
        .task_definition(&new_arn)
        .include(TaskDefinitionField::Tags)
        .send()
        .await
        .expect("describe the edit");
    let new = after.task_definition().expect("a task definition");
    assert_eq!(gpu_setting(&new.container_definitions()[0]), mps);

    // Everything but the GPU requirement and what ECS assigns to a revision is the same.
    let mut expected = source.clone();
    let mut actual = new.clone();
    for td in [&mut expected, &mut actual] {
        td.task_definition_arn = None;
        td.revision = 0;
        td.registered_at = None;
        td.registered_by = None;
        td.requires_attributes = None;
        td.container_definitions.as_mut().expect("containers")[0].resource_requirements = None;
    }
    assert_eq!(actual, expected);
    assert_eq!(
        actual.container_definitions()[1],
        warmup_container(),
        "the other container is untouched"
    );

    let mut tags: Vec<(String, String)> = after
        .tags()
        .iter()
        .map(|t| {
            (
                t.key().unwrap_or_default().to_string(),
                t.value().unwrap_or_default().to_string(),
            )
        })
        .collect();
    tags.sort();
    assert_eq!(
        tags,
        [
            ("cost-center".to_string(), "4711".to_string()),
            (
                CHANGE_TAG.to_string(),
                "Share the GPU: 8 GiB and half the compute are enough for e5-large".to_string()
            ),
            ("team".to_string(), "search".to_string()),
        ]
    );

    // An edit of a container that does not exist, or a description over the tag limit, is
    // refused before anything is sent.
    assert!(register_request(
        &clients.ecs,
        new,
        after.tags(),
        &[("nope".to_string(), GpuSetting::None)],
        None
    )
    .is_err());
    assert!(
        register_request(&clients.ecs, new, after.tags(), &[], Some(&"x".repeat(257))).is_err()
    );
}
