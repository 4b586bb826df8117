//! The task definition corpus through aws-sdk-ecs against the emulator. Each realistic task
//! definition of `tests/corpus` is registered, described, edited (its GPU setting, and a change
//! description), registered again and described again: everything but the edit is the same.
//! Together the corpus uses every field the SDK models for RegisterTaskDefinition.

use aws_sdk_ecs::types::{TaskDefinitionField, TaskDefinitionStatus};
use aws_smithy_schema::Schema;
use chrono::Utc;
use emulator::{Emulator, Faults, Scenario};
use gpushare::{
    aws::{Clients, Target},
    ecs::task_definitions::{gpu_setting, json, SdkSchema},
};
use serde_json::{Map, Value};

use app::model::task_definition::{apply_gpu_edits, set_change_tag, GpuSetting, CHANGE_TAG};

/// The corpus: an MPS inference service behind App Mesh with a FireLens log router; a training
/// job on whole GPUs with every kind of Linux volume and parameter; a Windows render task on
/// FSx; and a legacy Elastic Inference task.
const CORPUS: [(&str, &str); 4] = [
    (
        "embed-api-mps",
        include_str!("../corpus/embed-api-mps.json"),
    ),
    (
        "train-whole-gpu",
        include_str!("../corpus/train-whole-gpu.json"),
    ),
    (
        "render-windows",
        include_str!("../corpus/render-windows.json"),
    ),
    ("legacy-ei", include_str!("../corpus/legacy-ei.json")),
];

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

/// Registers the request `text` through the SDK and describes what ECS kept, as the
/// RegisterTaskDefinition JSON that registers it again.
async fn register_and_describe(clients: &Clients, text: &str) -> (Map<String, Value>, i32) {
    let input = json::parse_register(text).unwrap_or_else(|e| panic!("{e:?}"));
    let registered = json::register(&clients.ecs, input)
        .await
        .expect("registered");
    let arn = registered
        .task_definition()
        .and_then(|td| td.task_definition_arn())
        .expect("an ARN");
    let described = clients
        .ecs
        .describe_task_definition()
        .task_definition(arn)
        .include(TaskDefinitionField::Tags)
        .send()
        .await
        .expect("described");
    let td = described.task_definition().expect("a task definition");
    assert_eq!(td.status(), Some(&TaskDefinitionStatus::Active));
    (json::register_json(td, described.tags()), td.revision())
}

fn object(text: &str) -> Map<String, Value> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => map,
        other => panic!("not an object: {other:?}"),
    }
}

/// The edit the test makes: the first GPU container flips between whole GPUs and MPS; a task
/// without GPUs gets only a change description.
fn gpu_edit(task: &Map<String, Value>) -> Vec<(String, GpuSetting)> {
    let settings = app::model::task_definition::gpu_settings(task);
    settings
        .into_iter()
        .find(|(_, setting)| setting.uses_gpu())
        .map(|(name, setting)| {
            let flipped = match setting {
                GpuSetting::Mps { .. } => GpuSetting::Whole { count: 1 },
                _ => GpuSetting::Mps {
                    memory_mib: 8192,
                    max_compute_percent: Some(50),
                },
            };
            vec![(name, flipped)]
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn every_field_of_the_corpus_survives_a_gpu_edit() {
    let clients = empty().await;
    for (name, text) in CORPUS {
        let sent = object(text);
        SdkSchema::check(text).unwrap_or_else(|errors| panic!("{name} is valid: {errors:?}"));
        let (first, revision) = register_and_describe(&clients, text).await;
        assert_eq!(revision, 1, "{name}");
        assert_eq!(first, sent, "{name}: ECS keeps every field it was sent");

        let mut edited = first.clone();
        let edits = gpu_edit(&edited);
        assert!(apply_gpu_edits(&mut edited, &edits).is_empty());
        set_change_tag(&mut edited, &format!("corpus edit of {name}")).expect("short");
        let (second, revision) =
            register_and_describe(&clients, &Value::Object(edited.clone()).to_string()).await;
        assert_eq!(revision, 2, "{name}");
        assert_eq!(
            second, edited,
            "{name}: the new revision is the old one with the edit, and nothing else changes"
        );
        assert!(second["tags"]
            .as_array()
            .expect("tags")
            .iter()
            .any(|t| t["key"] == CHANGE_TAG));
        if let Some((container, setting)) = edits.first() {
            let input = json::parse_register(&Value::Object(second).to_string()).expect("valid");
            let read = input
                .container_definitions()
                .iter()
                .find(|c| c.name() == Some(container.as_str()))
                .map(gpu_setting);
            assert_eq!(
                read.as_ref(),
                Some(setting),
                "{name}: the SDK reads the edit"
            );
        }
    }
}

/// A shape's name, its schema, and its members that hold other shapes, with those shapes' names.
type Shape = (
    &'static str,
    &'static Schema<'static>,
    Vec<(&'static str, &'static str)>,
);

/// The structure shapes RegisterTaskDefinition reaches, and for each member that holds a
/// structure (or a list or map of them), the shape it holds.
// Elastic Inference is deprecated in the SDK, and still one of its shapes.
#[allow(deprecated)]
fn shapes() -> Vec<Shape> {
    use aws_sdk_ecs::{operation::register_task_definition::RegisterTaskDefinitionInput, types::*};
    vec![
        (
            "RegisterTaskDefinition",
            RegisterTaskDefinitionInput::SCHEMA,
            vec![
                ("containerDefinitions", "ContainerDefinition"),
                ("volumes", "Volume"),
                ("placementConstraints", "TaskDefinitionPlacementConstraint"),
                ("tags", "Tag"),
                ("proxyConfiguration", "ProxyConfiguration"),
                ("inferenceAccelerators", "InferenceAccelerator"),
                ("ephemeralStorage", "EphemeralStorage"),
                ("runtimePlatform", "RuntimePlatform"),
            ],
        ),
        (
            "ContainerDefinition",
            ContainerDefinition::SCHEMA,
            vec![
                ("repositoryCredentials", "RepositoryCredentials"),
                ("portMappings", "PortMapping"),
                ("restartPolicy", "ContainerRestartPolicy"),
                ("environment", "KeyValuePair"),
                ("environmentFiles", "EnvironmentFile"),
                ("mountPoints", "MountPoint"),
                ("volumesFrom", "VolumeFrom"),
                ("linuxParameters", "LinuxParameters"),
                ("secrets", "Secret"),
                ("dependsOn", "ContainerDependency"),
                ("extraHosts", "HostEntry"),
                ("ulimits", "Ulimit"),
                ("logConfiguration", "LogConfiguration"),
                ("healthCheck", "HealthCheck"),
                ("systemControls", "SystemControl"),
                ("resourceRequirements", "ResourceRequirement"),
                ("firelensConfiguration", "FirelensConfiguration"),
            ],
        ),
        (
            "Volume",
            Volume::SCHEMA,
            vec![
                ("host", "HostVolumeProperties"),
                ("dockerVolumeConfiguration", "DockerVolumeConfiguration"),
                ("efsVolumeConfiguration", "EfsVolumeConfiguration"),
                ("s3filesVolumeConfiguration", "S3FilesVolumeConfiguration"),
                (
                    "fsxWindowsFileServerVolumeConfiguration",
                    "FSxWindowsFileServerVolumeConfiguration",
                ),
            ],
        ),
        ("HostVolumeProperties", HostVolumeProperties::SCHEMA, vec![]),
        (
            "DockerVolumeConfiguration",
            DockerVolumeConfiguration::SCHEMA,
            vec![],
        ),
        (
            "EfsVolumeConfiguration",
            EfsVolumeConfiguration::SCHEMA,
            vec![("authorizationConfig", "EfsAuthorizationConfig")],
        ),
        (
            "EfsAuthorizationConfig",
            EfsAuthorizationConfig::SCHEMA,
            vec![],
        ),
        (
            "S3FilesVolumeConfiguration",
            S3FilesVolumeConfiguration::SCHEMA,
            vec![],
        ),
        (
            "FSxWindowsFileServerVolumeConfiguration",
            FSxWindowsFileServerVolumeConfiguration::SCHEMA,
            vec![(
                "authorizationConfig",
                "FSxWindowsFileServerAuthorizationConfig",
            )],
        ),
        (
            "FSxWindowsFileServerAuthorizationConfig",
            FSxWindowsFileServerAuthorizationConfig::SCHEMA,
            vec![],
        ),
        (
            "TaskDefinitionPlacementConstraint",
            TaskDefinitionPlacementConstraint::SCHEMA,
            vec![],
        ),
        (
            "ProxyConfiguration",
            ProxyConfiguration::SCHEMA,
            vec![("properties", "KeyValuePair")],
        ),
        ("KeyValuePair", KeyValuePair::SCHEMA, vec![]),
        ("InferenceAccelerator", InferenceAccelerator::SCHEMA, vec![]),
        ("EphemeralStorage", EphemeralStorage::SCHEMA, vec![]),
        ("RuntimePlatform", RuntimePlatform::SCHEMA, vec![]),
        ("Tag", Tag::SCHEMA, vec![]),
        (
            "RepositoryCredentials",
            RepositoryCredentials::SCHEMA,
            vec![],
        ),
        ("PortMapping", PortMapping::SCHEMA, vec![]),
        (
            "ContainerRestartPolicy",
            ContainerRestartPolicy::SCHEMA,
            vec![],
        ),
        ("EnvironmentFile", EnvironmentFile::SCHEMA, vec![]),
        ("MountPoint", MountPoint::SCHEMA, vec![]),
        ("VolumeFrom", VolumeFrom::SCHEMA, vec![]),
        (
            "LinuxParameters",
            LinuxParameters::SCHEMA,
            vec![
                ("capabilities", "KernelCapabilities"),
                ("devices", "Device"),
                ("tmpfs", "Tmpfs"),
            ],
        ),
        ("KernelCapabilities", KernelCapabilities::SCHEMA, vec![]),
        ("Device", Device::SCHEMA, vec![]),
        ("Tmpfs", Tmpfs::SCHEMA, vec![]),
        ("Secret", Secret::SCHEMA, vec![]),
        ("ContainerDependency", ContainerDependency::SCHEMA, vec![]),
        ("HostEntry", HostEntry::SCHEMA, vec![]),
        ("Ulimit", Ulimit::SCHEMA, vec![]),
        (
            "LogConfiguration",
            LogConfiguration::SCHEMA,
            vec![("secretOptions", "Secret")],
        ),
        ("HealthCheck", HealthCheck::SCHEMA, vec![]),
        ("SystemControl", SystemControl::SCHEMA, vec![]),
        (
            "ResourceRequirement",
            ResourceRequirement::SCHEMA,
            vec![("sharingStrategy", "SharingStrategy")],
        ),
        (
            "SharingStrategy",
            SharingStrategy::SCHEMA,
            vec![("nvidiaMps", "NvidiaMpsAllocation")],
        ),
        ("NvidiaMpsAllocation", NvidiaMpsAllocation::SCHEMA, vec![]),
        (
            "FirelensConfiguration",
            FirelensConfiguration::SCHEMA,
            vec![],
        ),
    ]
}

/// Records the `(shape, field)` pairs `value` (of `shape`) uses.
fn used_fields(
    shape: &'static str,
    value: &Value,
    table: &[Shape],
    used: &mut std::collections::BTreeSet<(&'static str, String)>,
) {
    let items: Vec<&Value> = match value {
        Value::Array(list) => list.iter().collect(),
        other => vec![other],
    };
    let (_, _, children) = table
        .iter()
        .find(|(name, _, _)| *name == shape)
        .unwrap_or_else(|| panic!("no shape {shape}"));
    for item in items {
        let Some(object) = item.as_object() else {
            continue;
        };
        for (key, value) in object {
            used.insert((shape, key.clone()));
            if let Some((_, child)) = children.iter().find(|(member, _)| member == key) {
                used_fields(child, value, table, used);
            }
        }
    }
}

#[test]
fn the_corpus_uses_every_field_the_sdk_models() {
    let table = shapes();
    let mut used = std::collections::BTreeSet::new();
    for (_, text) in CORPUS {
        used_fields(
            "RegisterTaskDefinition",
            &Value::Object(object(text)),
            &table,
            &mut used,
        );
    }
    let mut modeled = Vec::new();
    for (shape, schema, _) in &table {
        for member in schema.members() {
            modeled.push((*shape, member.member_name().unwrap_or_default().to_string()));
        }
    }
    let missing: Vec<_> = modeled
        .iter()
        .filter(|field| !used.contains(field))
        .collect();
    let unknown: Vec<_> = used
        .iter()
        .filter(|field| !modeled.contains(field))
        .collect();
    let count = |shape: &str| modeled.iter().filter(|(s, _)| *s == shape).count();
    println!(
        "the corpus uses {} of the {} fields aws-sdk-ecs models in {} shapes ({} of RegisterTaskDefinition, {} of ContainerDefinition)",
        modeled.len() - missing.len(),
        modeled.len(),
        table.len(),
        count("RegisterTaskDefinition"),
        count("ContainerDefinition"),
    );
    assert!(
        missing.is_empty(),
        "fields the corpus does not use: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "fields the SDK does not model: {unknown:?}"
    );
    assert_eq!(count("RegisterTaskDefinition"), 18);
    assert!(count("ContainerDefinition") >= 42);
}

/// A server in ECS's place that keeps every request body and answers RegisterTaskDefinition
/// with a revision; its SDK clients and the bodies.
async fn capturing_ecs() -> (Clients, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = bodies.clone();
    let ecs = axum::Router::new().route(
        "/",
        axum::routing::post(move |body: String| {
            kept.lock().expect("bodies").push(body);
            async {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/x-amz-json-1.1")],
                    r#"{"taskDefinition": {"family": "embed", "revision": 1, "taskDefinitionArn": "arn:aws:ecs:us-east-1:123456789012:task-definition/embed:1"}}"#,
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(async move {
        let _ = axum::serve(listener, ecs).await;
    });
    let clients = Clients::new(&Target::Emulator {
        endpoint: format!("http://{address}"),
    })
    .await;
    (clients, bodies)
}

/// What goes over the wire: the SDK writes `"value": ""` beside a sharing strategy (it models
/// `value` as required), ECS's model says one or the other, and the console's request leaves it
/// out while a whole-GPU requirement keeps its value.
#[tokio::test]
async fn an_mps_registration_goes_out_without_an_empty_value() {
    let (clients, bodies) = capturing_ecs().await;
    let text = serde_json::json!({
        "family": "embed",
        "containerDefinitions": [
            {"name": "model", "image": "embed:1", "memory": 2048, "resourceRequirements": [
                {"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}}}]},
            {"name": "trainer", "image": "train:1", "memory": 2048, "resourceRequirements": [
                {"type": "GPU", "value": "2"}]},
        ],
    })
    .to_string();
    let requirements = |body: &str| {
        let sent: Value = serde_json::from_str(body).expect("a JSON body");
        (
            sent["containerDefinitions"][0]["resourceRequirements"][0].clone(),
            sent["containerDefinitions"][1]["resourceRequirements"][0].clone(),
        )
    };

    json::register_call(&clients.ecs, json::parse_register(&text).expect("valid"))
        .send()
        .await
        .expect("answered");
    let (mps, _) = requirements(&bodies.lock().expect("bodies")[0]);
    assert_eq!(
        mps["value"], "",
        "the SDK alone writes an empty value: {mps}"
    );

    json::register(&clients.ecs, json::parse_register(&text).expect("valid"))
        .await
        .expect("answered");
    let (mps, whole) = requirements(&bodies.lock().expect("bodies")[1]);
    assert!(
        mps.get("value").is_none(),
        "no value beside the strategy: {mps}"
    );
    assert_eq!(mps["sharingStrategy"]["nvidiaMps"]["memory"], 8192);
    assert_eq!(mps["sharingStrategy"]["nvidiaMps"]["maxComputePercent"], 50);
    assert_eq!(whole["value"], "2", "{whole}");
}
