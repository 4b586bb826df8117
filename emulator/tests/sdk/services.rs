//! Services: a rollout, a broken revision rolled back by the circuit breaker, and a service
//! that cannot be placed.

use aws_sdk_ecs::types::{
    ContainerDefinition, DeploymentCircuitBreaker, DeploymentConfiguration, KeyValuePair,
};
use emulator::Scenario;

use crate::harness::*;

#[tokio::test]
async fn services_roll_out_and_a_broken_revision_rolls_back() {
    let h = start(Scenario::Demo, 1.0).await;
    let services = h
        .ecs
        .list_services()
        .cluster("inference-prod")
        .send()
        .await
        .expect("list services");
    assert_eq!(services.service_arns().len(), 7);

    let before = h
        .ecs
        .describe_services()
        .cluster("inference-prod")
        .services("rerank")
        .include(aws_sdk_ecs::types::ServiceField::Tags)
        .send()
        .await
        .expect("describe");
    let service = &before.services()[0];
    assert_eq!(service.running_count(), 4);
    assert_eq!(service.tags()[0].value(), Some("search"));
    let td = h
        .ecs
        .describe_task_definition()
        .task_definition(service.task_definition().unwrap_or_default())
        .send()
        .await
        .expect("td");
    let mut container = td.task_definition().expect("td").container_definitions()[0].clone();
    container.resource_requirements = Some(vec![mps_requirement(6_144, Some(50))]);
    let new_arn = h.register("rerank", container.clone()).await;

    let updated = h
        .ecs
        .update_service()
        .cluster("inference-prod")
        .service("rerank")
        .task_definition(&new_arn)
        .deployment_configuration(
            DeploymentConfiguration::builder()
                .maximum_percent(200)
                .minimum_healthy_percent(100)
                .deployment_circuit_breaker(
                    DeploymentCircuitBreaker::builder()
                        .enable(true)
                        .rollback(true)
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .expect("update");
    let deployments = updated.service().expect("service").deployments();
    assert_eq!(deployments.len(), 2);
    assert_eq!(deployments[0].status(), Some("PRIMARY"));
    assert_eq!(
        deployments[0].rollout_state().map(|s| s.as_str()),
        Some("IN_PROGRESS")
    );

    h.emulator.advance(120);
    let after = h
        .ecs
        .describe_services()
        .cluster("inference-prod")
        .services("rerank")
        .send()
        .await
        .expect("describe");
    let service = &after.services()[0];
    assert_eq!(service.deployments().len(), 1);
    assert_eq!(
        service.deployments()[0].rollout_state().map(|s| s.as_str()),
        Some("COMPLETED")
    );
    assert_eq!(service.task_definition(), Some(new_arn.as_str()));
    assert_eq!(service.running_count(), 4);
    assert!(service.events().iter().any(|e| e
        .message()
        .unwrap_or_default()
        .contains("deployment completed")));

    // A revision whose container exits on start: the circuit breaker fails it and rolls back.
    container.environment = Some(vec![KeyValuePair::builder()
        .name("EMULATOR_EXIT_CODE")
        .value("1")
        .build()]);
    let broken_arn = h.register("rerank", container).await;
    h.ecs
        .update_service()
        .cluster("inference-prod")
        .service("rerank")
        .task_definition(&broken_arn)
        .send()
        .await
        .expect("update");
    h.emulator.advance(300);
    let after = h
        .ecs
        .describe_services()
        .cluster("inference-prod")
        .services("rerank")
        .send()
        .await
        .expect("describe");
    let service = &after.services()[0];
    assert_eq!(
        service.task_definition(),
        Some(new_arn.as_str()),
        "rolled back to the last good revision"
    );
    let messages: Vec<&str> = service
        .events()
        .iter()
        .filter_map(|e| e.message())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("deployment failed: tasks failed to start")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("rolling back")),
        "{messages:?}"
    );
    assert_eq!(service.running_count(), 4);

    let stopped = h
        .ecs
        .list_tasks()
        .cluster("inference-prod")
        .service_name("rerank")
        .desired_status(aws_sdk_ecs::types::DesiredStatus::Stopped)
        .send()
        .await
        .expect("stopped");
    let stopped = h
        .ecs
        .describe_tasks()
        .cluster("inference-prod")
        .set_tasks(Some(stopped.task_arns().to_vec()))
        .send()
        .await
        .expect("describe stopped");
    assert!(stopped
        .tasks()
        .iter()
        .any(|t| t.stopped_reason() == Some("Essential container in task exited")));
}

#[tokio::test]
async fn a_service_that_cannot_be_placed_reports_it() {
    let h = start(Scenario::Demo, 1.0).await;
    let huge = ContainerDefinition::builder()
        .name("huge")
        .image("i")
        .resource_requirements(mps_requirement(200_000, None))
        .build();
    let arn = h.register("huge", huge).await;
    let created = h
        .ecs
        .create_service()
        .cluster("ml-dev")
        .service_name("huge")
        .task_definition(arn)
        .desired_count(1)
        .deployment_configuration(
            DeploymentConfiguration::builder()
                .deployment_circuit_breaker(
                    DeploymentCircuitBreaker::builder()
                        .enable(true)
                        .rollback(false)
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .expect("create");
    let service = created.service().expect("service");
    assert_eq!(service.running_count(), 0);
    assert!(service.events().iter().any(|e| e
        .message()
        .unwrap_or_default()
        .contains("unable to place a task")));
    h.emulator.advance(120);
    let after = h
        .ecs
        .describe_services()
        .cluster("ml-dev")
        .services("huge")
        .send()
        .await
        .expect("describe");
    assert_eq!(
        after.services()[0].deployments()[0]
            .rollout_state()
            .map(|s| s.as_str()),
        Some("FAILED")
    );
}
