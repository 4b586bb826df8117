//! Unit tests of the new-service rules and the requests' other forms.

#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn image_references_are_read_as_docker_reads_them() {
    for good in [
        "nginx",
        "nginx:1.27",
        "library/nginx:latest",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/embed:1.4",
        "localhost:5000/team/model_server:v2-rc.1",
        "ghcr.io/org/model@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ] {
        assert!(check_image(good).is_ok(), "{good}");
    }
    for bad in [
        "",
        "Embed:1",
        "embed:",
        "embed:-x",
        "embed with space",
        "registry.io//embed",
        "embed@sha256:abc",
        "-embed",
        &format!("embed:{}", "x".repeat(129)),
    ] {
        let error = check_image(bad).expect_err(bad);
        assert!(
            error.contains("is not an image reference"),
            "{bad}: {error}"
        );
    }
}

#[test]
fn service_names_follow_ecs() {
    assert!(check_service_name("embed-v2_eu").is_ok());
    assert!(check_service_name("").is_err());
    assert!(check_service_name("embed.v2").unwrap_err().contains("'.'"));
    assert!(check_service_name(&"a".repeat(256))
        .unwrap_err()
        .contains("255"));
}

#[test]
fn the_template_makes_an_mps_task_definition_and_the_choices_a_service() {
    let template = Template {
        family: "embed-v2".into(),
        image: "repo/embed:2".into(),
        log_group: "/ecs/embed-v2".into(),
        ..Template::default()
    };
    let task = template.register_json("team", "search");
    assert_eq!(
        task["containerDefinitions"][0]["resourceRequirements"][0]["sharingStrategy"],
        json!({"nvidiaMps": {"memory": 8192, "maxComputePercent": 50}})
    );
    assert_eq!(
        task["requiresCompatibilities"],
        json!(["EC2", "MANAGED_INSTANCES"])
    );
    assert_eq!(task["tags"], json!([{"key": "team", "value": "search"}]));
    assert_eq!(
        task["containerDefinitions"][0]["logConfiguration"]["options"]["awslogs-stream-prefix"],
        "embed-v2"
    );
    let choices = ServiceChoices {
        cluster: "prod".into(),
        name: "embed-v2".into(),
        task_definition: "embed-v2".into(),
        provider: "gpu-mi".into(),
        desired: 2,
        subnets: "subnet-a, subnet-b".into(),
        security_groups: "sg-1".into(),
        circuit_breaker: true,
        ..ServiceChoices::default()
    };
    let create = choices.create_json(true);
    assert_eq!(
        create["networkConfiguration"]["awsvpcConfiguration"]["subnets"],
        json!(["subnet-a", "subnet-b"])
    );
    assert_eq!(
        create["capacityProviderStrategy"][0]["capacityProvider"],
        "gpu-mi"
    );
    assert!(choices
        .create_json(false)
        .get("networkConfiguration")
        .is_none());
    assert_eq!(desired_of(&create), Ok(2));
}

#[test]
fn the_requests_read_as_cli_input_and_cloudformation() {
    let register = Value::Object(
        Template {
            family: "embed-v2".into(),
            image: "repo/embed:2".into(),
            log_group: "/ecs/embed-v2".into(),
            ..Template::default()
        }
        .register_json("team", "search"),
    );
    let mut create = ServiceChoices {
        cluster: "prod".into(),
        name: "embed-v2".into(),
        task_definition: "embed-v2".into(),
        desired: 2,
        circuit_breaker: true,
        ..ServiceChoices::default()
    }
    .create_json(false);
    set_tag(&mut create, "team", "search");
    let create = Value::Object(create);
    let cli = cli_commands(Some(&register), &create);
    assert!(cli.starts_with("aws ecs register-task-definition --cli-input-json '{"));
    assert!(cli.contains("aws ecs create-service --cli-input-json '{"));
    // The JSON in the CLI command is the request itself.
    let json_part = cli
        .split("create-service --cli-input-json '")
        .nth(1)
        .and_then(|rest| rest.rsplit_once('\''))
        .map(|(json, _)| json)
        .unwrap();
    assert_eq!(serde_json::from_str::<Value>(json_part).unwrap(), create);
    let yaml = cloudformation(Some(&register), &create);
    assert!(yaml.contains("Type: AWS::ECS::Service"), "{yaml}");
    assert!(
        yaml.contains("TaskDefinition: !Ref GpuTaskDefinition"),
        "{yaml}"
    );
    assert!(yaml.contains("DeploymentCircuitBreaker:"), "{yaml}");
    assert!(yaml.contains("awslogs-group: \"/ecs/embed-v2\""), "{yaml}");
    assert!(yaml.contains("- Key: \"team\""), "{yaml}");
}

#[test]
fn the_team_tag_is_set_once() {
    let mut body = Map::new();
    set_tag(&mut body, "team", "vision");
    set_tag(&mut body, "team", "search");
    assert_eq!(tag_of(&body, "team").as_deref(), Some("search"));
    assert_eq!(body["tags"].as_array().map(Vec::len), Some(1));
}
