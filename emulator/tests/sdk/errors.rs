//! Errors come back as the SDK's typed exceptions.

use emulator::Scenario;

use crate::harness::*;

#[tokio::test]
async fn errors_come_back_typed() {
    let h = start(Scenario::Demo, 1.0).await;
    let error = h
        .ecs
        .list_services()
        .cluster("no-such-cluster")
        .send()
        .await
        .expect_err("unknown cluster");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_cluster_not_found_exception()),
        "{error:?}"
    );

    let error = h
        .ecs
        .update_service()
        .cluster("ml-dev")
        .service("no-such-service")
        .desired_count(1)
        .send()
        .await
        .expect_err("unknown service");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_service_not_found_exception()),
        "{error:?}"
    );

    let too_many: Vec<String> = (0..101).map(|i| format!("instance-{i}")).collect();
    let error = h
        .ecs
        .describe_container_instances()
        .cluster("ml-dev")
        .set_container_instances(Some(too_many))
        .send()
        .await
        .expect_err("101 ARNs");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_invalid_parameter_exception()),
        "{error:?}"
    );

    let eleven: Vec<String> = (0..11).map(|i| format!("svc-{i}")).collect();
    let error = h
        .ecs
        .describe_services()
        .cluster("ml-dev")
        .set_services(Some(eleven))
        .send()
        .await
        .expect_err("11 services");
    assert!(
        error
            .as_service_error()
            .is_some_and(|e| e.is_invalid_parameter_exception()),
        "{error:?}"
    );

    let error = h
        .ecs
        .list_clusters()
        .next_token("garbage")
        .send()
        .await
        .expect_err("bad token");
    assert_code(&error, "InvalidParameterException");
}
