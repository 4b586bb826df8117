//! Task definitions: register, describe, list, deregister, and ECS's rules for a GPU requirement.

use aws_sdk_ecs::{
    error::ProvideErrorMetadata,
    types::{
        ContainerDefinition, KeyValuePair, NvidiaMpsAllocation, ResourceRequirement, ResourceType,
        SharingStrategy, Tag, TaskDefinitionField,
    },
};
use emulator::Scenario;

use crate::harness::*;

#[tokio::test]
async fn task_definitions_register_describe_list_and_deregister() {
    let h = start(Scenario::Empty, 1.0).await;
    let container = ContainerDefinition::builder()
        .name("model")
        .image("example/model:1")
        .memory(2048)
        .environment(KeyValuePair::builder().name("MODEL").value("small").build())
        .resource_requirements(mps_requirement(8192, Some(50)))
        .build();
    let registered = h
        .ecs
        .register_task_definition()
        .family("embedder")
        .container_definitions(container.clone())
        .tags(Tag::builder().key("team").value("search").build())
        .customize()
        .mutate_request(without_empty_value)
        .send()
        .await
        .expect("register");
    let td = registered.task_definition().expect("td");
    assert_eq!(td.revision(), 1);
    let again = h
        .ecs
        .register_task_definition()
        .family("embedder")
        .container_definitions(container)
        .customize()
        .mutate_request(without_empty_value)
        .send()
        .await
        .expect("register 2");
    assert_eq!(again.task_definition().map(|t| t.revision()), Some(2));

    let described = h
        .ecs
        .describe_task_definition()
        .task_definition("embedder:1")
        .include(TaskDefinitionField::Tags)
        .send()
        .await
        .expect("describe");
    assert_eq!(described.tags()[0].value(), Some("search"));
    let requirement = &described
        .task_definition()
        .expect("td")
        .container_definitions()[0]
        .resource_requirements()[0];
    match requirement.sharing_strategy() {
        Some(SharingStrategy::NvidiaMps(mps)) => {
            assert_eq!((mps.memory(), mps.max_compute_percent()), (8192, Some(50)))
        }
        other => panic!("sharing strategy lost: {other:?}"),
    }
    assert_eq!(
        requirement.value(),
        "",
        "the value is returned exactly as given"
    );

    let families = h
        .ecs
        .list_task_definition_families()
        .send()
        .await
        .expect("families");
    assert_eq!(families.families(), ["embedder"]);
    let revisions = h
        .ecs
        .list_task_definitions()
        .family_prefix("embedder")
        .send()
        .await
        .expect("revisions");
    assert_eq!(revisions.task_definition_arns().len(), 2);

    h.ecs
        .deregister_task_definition()
        .task_definition("embedder:2")
        .send()
        .await
        .expect("deregister");
    let active = h
        .ecs
        .list_task_definitions()
        .family_prefix("embedder")
        .send()
        .await
        .expect("revisions");
    assert_eq!(active.task_definition_arns().len(), 1);

    // ECS's rules: value and sharingStrategy together are refused.
    let both = ResourceRequirement::builder()
        .r#type(ResourceType::Gpu)
        .value("1")
        .sharing_strategy(SharingStrategy::NvidiaMps(
            NvidiaMpsAllocation::builder()
                .memory(1)
                .build()
                .expect("mps"),
        ))
        .build()
        .expect("requirement");
    let error = h
        .ecs
        .register_task_definition()
        .family("bad")
        .container_definitions(
            ContainerDefinition::builder()
                .name("c")
                .image("i")
                .resource_requirements(both)
                .build(),
        )
        .send()
        .await
        .expect_err("both");
    assert!(
        error.message().unwrap_or_default().contains("not both"),
        "{error:?}"
    );
    // The SDK's own request, with its `"value":""` beside the strategy, is refused the same way.
    let error = h
        .ecs
        .register_task_definition()
        .family("bad")
        .container_definitions(
            ContainerDefinition::builder()
                .name("c")
                .image("i")
                .resource_requirements(mps_requirement(1024, None))
                .build(),
        )
        .send()
        .await
        .expect_err("an empty value beside the strategy");
    assert!(
        error
            .message()
            .unwrap_or_default()
            .contains("even an empty one"),
        "{error:?}"
    );
}
