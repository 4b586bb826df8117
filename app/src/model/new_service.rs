//! A new GPU service: ECS's CreateService request (and, from the template, the
//! RegisterTaskDefinition request before it), the rules the console checks before anything is
//! created, and the same requests as AWS CLI input and CloudFormation to copy into
//! infrastructure code.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::model::{
    budget::BudgetVerdict, deployment::MAX_DESIRED, rollout::RolloutCheck,
    task_definition::FieldError,
};

/// The largest CreateService or RegisterTaskDefinition request text taken, in bytes.
pub const BODY_LIMIT: usize = 64 * 1024;

/// A new service as the form or the API sends it: the CreateService request as JSON text, the
/// RegisterTaskDefinition request to register first (from the template), why, and whether to
/// create it even when the pre-check says its tasks would not all be placed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewServiceForm {
    pub create: String,
    #[serde(default)]
    pub register: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub force: bool,
}

/// What a new service would be, checked and nothing created: the requests as they will be sent,
/// the pre-check of its desired count (with what its capacity provider would launch), the team's
/// budget, and the same requests as AWS CLI input and CloudFormation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewServiceCheck {
    pub cluster: String,
    pub service: String,
    pub team: String,
    /// The CreateService request as it will be sent (the team tag and the defaults added);
    /// `taskDefinition` names the family alone when the revision is still to be registered.
    pub create: Value,
    /// The RegisterTaskDefinition request sent first, when the service starts from the template.
    pub register: Option<Value>,
    /// `family:N`, or `family` (a new revision) from the template.
    pub task_definition: String,
    /// The GPU settings of its containers, in words.
    pub gpu: Vec<String>,
    /// The capacity provider its tasks go to; `None` for the EC2 launch type.
    pub provider: Option<String>,
    pub rollout: RolloutCheck,
    pub budget: Option<BudgetVerdict>,
    /// The AWS CLI commands that make the same requests.
    pub cli: String,
    /// The same service as a CloudFormation resource (YAML).
    pub cloudformation: String,
    /// What was added to the request, in words (the team tag, the circuit breaker).
    pub added: Vec<String>,
}

/// The template of an MPS inference service: one container sharing a GPU with MPS.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Template {
    pub family: String,
    pub image: String,
    pub port: u16,
    /// Task-level CPU units and memory (MiB).
    pub cpu: u32,
    pub memory_mib: u32,
    /// GPU memory for MPS (MiB) and the optional compute limit (percent).
    pub gpu_memory_mib: u32,
    pub compute_percent: Option<u32>,
    /// The health check's path on the port (`CMD-SHELL curl -f`), or none.
    pub health_path: String,
    /// The CloudWatch Logs group; none for no log configuration.
    pub log_group: String,
    pub region: String,
    /// `awsvpc` (the default) or `bridge`/`host`.
    pub network_mode: String,
    /// Whether the service runs on a Managed Instances provider (`MANAGED_INSTANCES` with `EC2`).
    pub managed_instances: bool,
    pub execution_role_arn: String,
}

impl Default for Template {
    fn default() -> Template {
        Template {
            family: String::new(),
            image: String::new(),
            port: 8080,
            cpu: 4096,
            memory_mib: 16_384,
            gpu_memory_mib: 8192,
            compute_percent: Some(50),
            health_path: "/health".into(),
            log_group: String::new(),
            region: "us-east-1".into(),
            network_mode: "awsvpc".into(),
            managed_instances: true,
            execution_role_arn: String::new(),
        }
    }
}

impl Template {
    /// The RegisterTaskDefinition request of the template, tagged for `team` under `team_tag`.
    pub fn register_json(&self, team_tag: &str, team: &str) -> Map<String, Value> {
        let mut strategy = json!({"memory": self.gpu_memory_mib});
        if let Some(percent) = self.compute_percent {
            strategy["maxComputePercent"] = json!(percent);
        }
        let mut container = json!({
            "name": "model",
            "image": self.image.trim(),
            "essential": true,
            "portMappings": [{"containerPort": self.port, "protocol": "tcp"}],
            "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": strategy}}],
        });
        if !self.health_path.trim().is_empty() {
            container["healthCheck"] = json!({
                "command": ["CMD-SHELL", format!("curl -f http://localhost:{}{} || exit 1", self.port, self.health_path.trim())],
                "interval": 30, "timeout": 5, "retries": 3, "startPeriod": 120,
            });
        }
        if !self.log_group.trim().is_empty() {
            container["logConfiguration"] = json!({
                "logDriver": "awslogs",
                "options": {
                    "awslogs-group": self.log_group.trim(),
                    "awslogs-region": self.region,
                    "awslogs-stream-prefix": self.family.trim(),
                },
            });
        }
        let compatibilities = if self.managed_instances {
            json!(["EC2", "MANAGED_INSTANCES"])
        } else {
            json!(["EC2"])
        };
        let mut task = json!({
            "family": self.family.trim(),
            "networkMode": self.network_mode,
            "requiresCompatibilities": compatibilities,
            "cpu": self.cpu.to_string(),
            "memory": self.memory_mib.to_string(),
            "containerDefinitions": [container],
            "tags": [{"key": team_tag, "value": team}],
        });
        if !self.execution_role_arn.trim().is_empty() {
            task["executionRoleArn"] = json!(self.execution_role_arn.trim());
        }
        match task {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

/// The service's own choices in the form, made into a CreateService request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceChoices {
    pub cluster: String,
    pub name: String,
    /// `family` or `family:N`.
    pub task_definition: String,
    /// The capacity provider; empty for the cluster's default strategy.
    pub provider: String,
    pub desired: u32,
    /// Comma-separated subnets and security groups, for `awsvpc`.
    pub subnets: String,
    pub security_groups: String,
    /// A target group to register the tasks with, and the container and port it reaches.
    pub target_group_arn: String,
    pub container: String,
    pub port: u16,
    pub circuit_breaker: bool,
}

impl ServiceChoices {
    /// The CreateService request the choices make (the console adds the team tag).
    pub fn create_json(&self, awsvpc: bool) -> Map<String, Value> {
        let list = |text: &str| -> Vec<String> {
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        };
        let mut body = json!({
            "cluster": self.cluster,
            "serviceName": self.name.trim(),
            "taskDefinition": self.task_definition.trim(),
            "desiredCount": self.desired,
            "deploymentConfiguration": {
                "deploymentCircuitBreaker": {"enable": self.circuit_breaker, "rollback": self.circuit_breaker},
                "maximumPercent": 200,
                "minimumHealthyPercent": 100,
            },
        });
        if !self.provider.trim().is_empty() {
            body["capacityProviderStrategy"] =
                json!([{"capacityProvider": self.provider.trim(), "weight": 1, "base": 0}]);
        }
        if awsvpc {
            body["networkConfiguration"] = json!({"awsvpcConfiguration": {
                "subnets": list(&self.subnets),
                "securityGroups": list(&self.security_groups),
                "assignPublicIp": "DISABLED",
            }});
        }
        if !self.target_group_arn.trim().is_empty() {
            body["loadBalancers"] = json!([{
                "targetGroupArn": self.target_group_arn.trim(),
                "containerName": self.container,
                "containerPort": self.port,
            }]);
            body["healthCheckGracePeriodSeconds"] = json!(120);
        }
        match body {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

/// Whether `name` is a service name ECS takes: 1 to 255 letters, numbers, hyphens and
/// underscores.
pub fn check_service_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("give the service a name".into());
    }
    if name.len() > 255 {
        return Err(format!(
            "{} characters is longer than ECS's 255 for a service name",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(format!(
            "{bad:?} is not allowed in a service name: use letters, numbers, hyphens and underscores"
        ));
    }
    Ok(())
}

/// Whether `image` reads as an image reference (`[registry[:port]/]path[:tag][@sha256:digest]`,
/// the path in lower case), as Docker's reference grammar has it.
pub fn check_image(image: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("{image:?} is not an image reference: {why}"));
    if image.is_empty() {
        return bad("give one, e.g. 123456789012.dkr.ecr.us-east-1.amazonaws.com/embed:1.4");
    }
    if image.len() > 255 || image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("no spaces, at most 255 characters");
    }
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    if let Some(digest) = digest {
        let hex = digest.strip_prefix("sha256:").unwrap_or("");
        if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return bad("a digest is sha256: and 64 hexadecimal digits");
        }
    }
    // A tag follows the last colon after the last slash.
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (path, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && tag
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !ok {
            return bad("a tag is up to 128 letters, digits, '_', '.' and '-'");
        }
    }
    let mut parts: Vec<&str> = path.split('/').collect();
    // A first part with a dot, a colon or "localhost" is a registry.
    if parts.len() > 1
        && (parts[0].contains('.') || parts[0].contains(':') || parts[0] == "localhost")
    {
        parts.remove(0);
    }
    for part in parts {
        let ok = !part.is_empty()
            && part.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
            })
            && part
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
            && part
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric());
        if !ok {
            return bad(
                "its path is lower-case letters and digits, separated by '/', '.', '_' or '-'",
            );
        }
    }
    Ok(())
}

/// The value of tag `key` in a request's `tags` (`[{"key", "value"}]`).
pub fn tag_of(body: &Map<String, Value>, key: &str) -> Option<String> {
    body.get("tags")?
        .as_array()?
        .iter()
        .find(|t| t.get("key").and_then(Value::as_str) == Some(key))
        .and_then(|t| t.get("value").and_then(Value::as_str))
        .map(str::to_string)
}

/// Sets tag `key` to `value` in a request's `tags`.
pub fn set_tag(body: &mut Map<String, Value>, key: &str, value: &str) {
    let tags = body
        .entry("tags")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !tags.is_array() {
        *tags = Value::Array(Vec::new());
    }
    if let Some(list) = tags.as_array_mut() {
        list.retain(|t| t.get("key").and_then(Value::as_str) != Some(key));
        list.push(json!({"key": key, "value": value}));
    }
}

/// A field error.
pub fn field(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: field.into(),
        message: message.into(),
        ..FieldError::default()
    }
}

/// Field errors as one refusal, each with its field.
pub fn refusal(errors: &[FieldError]) -> crate::model::ServiceError {
    crate::model::ServiceError::invalid(
        errors
            .iter()
            .map(|e| {
                if e.field.is_empty() {
                    e.message.clone()
                } else {
                    format!("{}: {}", e.field, e.message)
                }
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The desired count of a CreateService request: required, 0 to ECS's 5,000.
pub fn desired_of(body: &Map<String, Value>) -> Result<u32, FieldError> {
    let Some(value) = body.get("desiredCount") else {
        return Err(field(
            "desiredCount",
            "give the number of tasks to run (0 to 5,000)",
        ));
    };
    value
        .as_u64()
        .filter(|n| *n <= u64::from(MAX_DESIRED))
        .map(|n| n as u32)
        .ok_or_else(|| {
            field(
                "desiredCount",
                format!("{value} is not a number of tasks from 0 to {MAX_DESIRED}"),
            )
        })
}

/// The AWS CLI commands that make the same requests: the registration (when there is one),
/// then the service, each with its JSON as `--cli-input-json`.
pub fn cli_commands(register: Option<&Value>, create: &Value) -> String {
    let quoted = |value: &Value| {
        serde_json::to_string_pretty(value)
            .unwrap_or_default()
            .replace('\'', "'\\''")
    };
    let mut out = String::new();
    if let Some(register) = register {
        out.push_str(&format!(
            "aws ecs register-task-definition --cli-input-json '{}'\n\n",
            quoted(register)
        ));
    }
    out.push_str(&format!(
        "aws ecs create-service --cli-input-json '{}'\n",
        quoted(create)
    ));
    out
}

/// ECS's JSON member name as CloudFormation's property name.
fn pascal(name: &str) -> String {
    match name {
        "placementStrategy" => "PlacementStrategies".into(),
        "enableECSManagedTags" => "EnableECSManagedTags".into(),
        _ => {
            let mut chars = name.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        }
    }
}

/// A JSON value with its object keys as CloudFormation names them.
fn to_cloudformation(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| match k.as_str() {
                    // Free-form maps keep their keys.
                    "options" | "dockerLabels" => (pascal(k), v.clone()),
                    _ => (pascal(k), to_cloudformation(v)),
                })
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.iter().map(to_cloudformation).collect()),
        other => other.clone(),
    }
}

/// The YAML of a JSON value, indented by `depth` levels (strings quoted as JSON, which YAML
/// reads).
fn yaml(value: &Value, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                match item {
                    Value::Object(inner) if !inner.is_empty() => {
                        out.push_str(&format!("{pad}{key}:\n"));
                        yaml(item, depth + 1, out);
                    }
                    Value::Array(list) if !list.is_empty() => {
                        out.push_str(&format!("{pad}{key}:\n"));
                        yaml(item, depth + 1, out);
                    }
                    scalar => out.push_str(&format!("{pad}{key}: {}\n", scalar_yaml(scalar))),
                }
            }
        }
        Value::Array(list) => {
            for item in list {
                match item {
                    Value::Object(_) | Value::Array(_) => {
                        let mut inner = String::new();
                        yaml(item, depth + 1, &mut inner);
                        let trimmed = inner.trim_start_matches(' ');
                        out.push_str(&format!("{pad}- {trimmed}"));
                    }
                    scalar => out.push_str(&format!("{pad}- {}\n", scalar_yaml(scalar))),
                }
            }
        }
        scalar => out.push_str(&format!("{pad}{}\n", scalar_yaml(scalar))),
    }
}

fn scalar_yaml(value: &Value) -> String {
    match value {
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => other.to_string(),
    }
}

/// The service (and the task definition from the template) as CloudFormation resources, in
/// YAML. The registration becomes an `AWS::ECS::TaskDefinition` the service refers to.
pub fn cloudformation(register: Option<&Value>, create: &Value) -> String {
    let mut out = String::from("Resources:\n");
    let mut service = create.clone();
    if let Some(map) = service.as_object_mut() {
        // The service's name and cluster stay as given.
        map.remove("clientToken");
    }
    let mut properties = to_cloudformation(&service);
    if let Some(register) = register {
        let mut task = to_cloudformation(register);
        if let Some(map) = task.as_object_mut() {
            // CloudFormation names the tags' members Key and Value too; nothing else changes.
            map.remove("Revision");
        }
        out.push_str("  GpuTaskDefinition:\n    Type: AWS::ECS::TaskDefinition\n    Properties:\n");
        yaml(&task, 3, &mut out);
        if let Some(map) = properties.as_object_mut() {
            map.insert("TaskDefinition".into(), json!("!Ref GpuTaskDefinition"));
        }
    }
    out.push_str("  GpuService:\n    Type: AWS::ECS::Service\n    Properties:\n");
    yaml(&properties, 3, &mut out);
    // `!Ref` is a tag, not a string.
    out.replace("\"!Ref GpuTaskDefinition\"", "!Ref GpuTaskDefinition")
}

#[cfg(test)]
mod tests;
