//! Reading and checking a new service, step by step: the request itself, its task definition,
//! where its tasks go, its team, the defaults the console adds, and the pre-check of its whole
//! desired count with its budget.

use serde_json::{Map, Value};

use super::{
    intent, refusal,
    rules::{
        check_network, check_providers, containers, deployment_number, existing_task, strategy_of,
        taken_in_ecs,
    },
    Prepared,
};
use crate::{
    model::{
        budget::{BudgetVerdict, TaskGpu},
        capacity::{ClusterCapacity, StrategyItem},
        identity::{Actor, Role},
        new_service::{
            check_image, check_service_name, cli_commands, cloudformation, desired_of, field,
            set_tag, tag_of, NewServiceCheck, NewServiceForm, BODY_LIMIT,
        },
        rollout::{pre_check as simulate, Cluster, RolloutCheck, RolloutPlan},
        task_definition::{check_description, gpu_settings, FieldError},
        ClusterView, FleetSnapshot, ServiceError, ServiceRef,
    },
    service::{audit, budget, context::ServiceContext, lookup},
};

/// A task definition's JSON.
type Task = Map<String, Value>;

/// Reads and checks the requests; every error found at once, each with its field. `creating`:
/// the checks of a creation (viewers refused, a wrong team audited), not of a preview.
pub(super) async fn prepare(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: &NewServiceForm,
    creating: bool,
) -> Result<Prepared, ServiceError> {
    admitted(context, actor, form, creating)?;
    let snapshot = lookup::snapshot(context)?;
    let view = lookup::cluster(&snapshot, cluster)?;
    let mut create = context
        .schema
        .create_service(form.create.clone())
        .await
        .map_err(|errors| refusal(&errors))?;
    let mut errors = Vec::new();
    let (name, desired, launch_type) =
        service_fields(context, view, &mut create, &mut errors).await;
    let (task, register) = task_of(context, form, &mut create, &mut errors).await;
    let capacity = context.ecs.capacity(vec![cluster.to_string()]).await?;
    let capacity = capacity
        .into_iter()
        .find(|c| c.cluster == cluster)
        .unwrap_or(ClusterCapacity {
            cluster: cluster.to_string(),
            ..ClusterCapacity::default()
        });
    let strategy = match create.get("capacityProviderStrategy") {
        Some(items) => strategy_of(items),
        None if launch_type.is_none() => capacity.default_strategy.clone(),
        None => Vec::new(),
    };
    if let Some(task) = &task {
        check_providers(&capacity, &strategy, task, &snapshot, cluster, &mut errors);
        check_network(&create, task, &mut errors);
    }
    let named = (cluster, name.as_str());
    let team = team_of(context, actor, named, form, &create, &mut errors, creating).await?;
    let mut register = register;
    let added = with_defaults(context, &team, &mut create, register.as_mut());
    if !errors.is_empty() {
        return Err(refusal(&errors));
    }
    let task = task.unwrap_or_default();
    let new = NewShape {
        cluster,
        name: &name,
        team: &team,
        desired,
        strategy: &strategy,
    };
    let (rollout, provider, budget) = pre_check(context, &snapshot, &new, &create, &task).await?;
    let check = checked(
        &new,
        (&create, register.as_ref(), &task),
        (rollout, provider, budget),
        added,
    );
    Ok(Prepared {
        check,
        create,
        register,
        desired,
        per_task: TaskGpu::of(&gpu_settings(&task)),
    })
}

/// Who may create a service (not a viewer), and the form's own limits.
fn admitted(
    context: &ServiceContext,
    actor: &Actor,
    form: &NewServiceForm,
    creating: bool,
) -> Result<(), ServiceError> {
    if creating && actor.role == Role::Viewer {
        return Err(ServiceError::forbidden(format!(
            "You are a viewer, and creating a service needs the deployer or admin role: ask {}.",
            context.policy.admins()
        )));
    }
    check_description(&form.description).map_err(ServiceError::invalid)?;
    for (name, text) in [
        ("create", Some(&form.create)),
        ("register", form.register.as_ref()),
    ] {
        if text.is_some_and(|t| t.len() > BODY_LIMIT) {
            return Err(ServiceError::invalid(format!(
                "{name}: the request is longer than {BODY_LIMIT} bytes"
            )));
        }
    }
    Ok(())
}

/// The request's cluster (set to the one it is sent to), its name (free in the snapshot and in
/// ECS), its desired count and its launch type.
async fn service_fields(
    context: &ServiceContext,
    view: &ClusterView,
    create: &mut Map<String, Value>,
    errors: &mut Vec<FieldError>,
) -> (String, u32, Option<String>) {
    let cluster = view.name.as_str();
    match create.get("cluster").and_then(Value::as_str) {
        Some(named) if named != cluster => errors.push(field(
            "cluster",
            format!("the request names cluster {named}, and it is sent to {cluster}: make them the same"),
        )),
        _ => {}
    }
    create.insert("cluster".into(), Value::String(cluster.to_string()));
    let name = create
        .get("serviceName")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Err(why) = check_service_name(&name) {
        errors.push(field("serviceName", why));
    } else if view.service_list.iter().any(|s| s.name == name)
        || taken_in_ecs(context, cluster, &name).await
    {
        errors.push(field(
            "serviceName",
            format!("cluster {cluster} already has a service {name}; choose another name"),
        ));
    }
    let desired = desired_of(create).unwrap_or_else(|error| {
        errors.push(error);
        0
    });
    let launch_type = create
        .get("launchType")
        .and_then(Value::as_str)
        .map(str::to_string);
    match launch_type.as_deref() {
        Some(_) if create.contains_key("capacityProviderStrategy") => errors.push(field(
            "launchType",
            "give a launchType or a capacityProviderStrategy, not both",
        )),
        Some("EC2") | None => {}
        Some(other) => errors.push(field(
            "launchType",
            format!("{other} cannot run tasks that share GPUs: use EC2, or a capacity provider of GPU instances"),
        )),
    }
    (name, desired, launch_type)
}

/// The task definition: the template's, registered first (its family set as the service's
/// `taskDefinition`), or one that exists; its images checked. The task, and the registration.
async fn task_of(
    context: &ServiceContext,
    form: &NewServiceForm,
    create: &mut Map<String, Value>,
    errors: &mut Vec<FieldError>,
) -> (Option<Task>, Option<Task>) {
    let (task, register) = match &form.register {
        Some(text) => match context.schema.validate(text.clone()).await {
            Ok((task, _)) => {
                let task = context.schema.registration_as_sent(task);
                let family = task
                    .get("family")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                create.insert("taskDefinition".into(), Value::String(family.to_string()));
                (Some(task.clone()), Some(task))
            }
            Err(found) => {
                errors.extend(found.into_iter().map(|e| {
                    FieldError {
                        field: format!("register.{}", e.field)
                            .trim_end_matches('.')
                            .to_string(),
                        ..e
                    }
                }));
                (None, None)
            }
        },
        None => {
            let named = create
                .get("taskDefinition")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            (existing_task(context, &named, errors).await, None)
        }
    };
    let place = if register.is_some() {
        "register."
    } else {
        "taskDefinition: "
    };
    for (index, container) in task.iter().flat_map(containers).enumerate() {
        let image = container.get("image").and_then(Value::as_str).unwrap_or("");
        if let Err(why) = check_image(image) {
            errors.push(field(
                &format!("{place}containerDefinitions[{index}].image"),
                why,
            ));
        }
    }
    (task, register)
}

/// The service's team: its team tag, which must be one of the requester's teams (an admin's any),
/// or the requester's one team. A tag key given twice is refused (AWS takes one value per key),
/// so no second team rides along. `(cluster, name)` names the service for the audit.
async fn team_of(
    context: &ServiceContext,
    actor: &Actor,
    (cluster, name): (&str, &str),
    form: &NewServiceForm,
    create: &Map<String, Value>,
    errors: &mut Vec<FieldError>,
    creating: bool,
) -> Result<String, ServiceError> {
    let team_tag = &context.team_tag;
    let twice = crate::model::task_definition::duplicate_tag_keys(create);
    if !twice.is_empty() {
        return Err(ServiceError::invalid(format!(
            "tags: {} given more than once; give each tag key once",
            twice.join(", ")
        )));
    }
    match tag_of(create, team_tag) {
        Some(team) if actor.role == Role::Admin || actor.on_team(&team) => Ok(team),
        Some(team) => {
            let refused = ServiceError::forbidden(format!(
                "tags: the team tag says {team}, and you are on {}: a deployer creates services for their own team; ask {} or an admin",
                if actor.teams.is_empty() { "no team".to_string() } else { actor.teams.join(", ") },
                context.policy.members(&team)
            ));
            if !creating {
                return Err(refused);
            }
            let intent = intent(actor, cluster, name, form);
            Err(audit::refused(context, intent, refused).await)
        }
        None => match actor.teams.as_slice() {
            [only] => Ok(only.clone()),
            _ => {
                errors.push(field(
                    "tags",
                    format!(
                        "give the {team_tag} tag ({{\"key\": \"{team_tag}\", \"value\": \"<team>\"}}): {}",
                        if actor.teams.is_empty() {
                            "you are on no team, so the console cannot choose one".to_string()
                        } else {
                            format!("you are on {}", actor.teams.join(", "))
                        }
                    ),
                ));
                Ok(String::new())
            }
        },
    }
}

/// What the console adds when the request leaves it out: the team tag (on the service and the
/// revision it registers) and the circuit breaker with rollback. What was added, in words.
fn with_defaults(
    context: &ServiceContext,
    team: &str,
    create: &mut Map<String, Value>,
    register: Option<&mut Task>,
) -> Vec<String> {
    let team_tag = &context.team_tag;
    let mut added = Vec::new();
    if tag_of(create, team_tag).is_none() && !team.is_empty() {
        set_tag(create, team_tag, team);
        added.push(format!("the {team_tag} tag {team}"));
    }
    if let Some(task) = register {
        if !team.is_empty() && tag_of(task, team_tag).as_deref() != Some(team) {
            set_tag(task, team_tag, team);
            added.push(format!("the {team_tag} tag {team} on the task definition"));
        }
    }
    if !create.contains_key("deploymentConfiguration") {
        create.insert(
            "deploymentConfiguration".into(),
            serde_json::json!({
                "deploymentCircuitBreaker": {"enable": true, "rollback": true},
                "maximumPercent": 200,
                "minimumHealthyPercent": 100,
            }),
        );
        added.push("the deployment circuit breaker with rollback".into());
    }
    added
}

/// The new service as the pre-check and the budget take it.
struct NewShape<'a> {
    cluster: &'a str,
    name: &'a str,
    team: &'a str,
    desired: u32,
    strategy: &'a [StrategyItem],
}

/// The pre-check of the whole desired count on the provider's instances, with what it would
/// launch; the provider; the team's budget.
async fn pre_check(
    context: &ServiceContext,
    snapshot: &FleetSnapshot,
    new: &NewShape<'_>,
    create: &Map<String, Value>,
    task: &Task,
) -> Result<(RolloutCheck, Option<String>, Option<BudgetVerdict>), ServiceError> {
    let found = ServiceRef {
        name: new.name.to_string(),
        team: Some(new.team.to_string()),
        desired: new.desired,
        maximum_percent: deployment_number(create, "maximumPercent"),
        minimum_healthy_percent: deployment_number(create, "minimumHealthyPercent"),
        capacity_provider_strategy: new.strategy.to_vec(),
        placement_constraints: create
            .get("placementConstraints")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        ..ServiceRef::default()
    };
    let request = crate::service::deployments::request_of(task)?;
    let needs = crate::service::deployments::needs_of(task, &found.placement_constraints)?;
    let growth =
        crate::service::capacity::growth::growth_of(context, snapshot, new.cluster, &found).await?;
    let plan = RolloutPlan {
        cluster: new.cluster.to_string(),
        service: new.name.to_string(),
        desired: new.desired,
        running: 0,
        maximum_percent: found.maximum_percent.unwrap_or(200),
        minimum_healthy_percent: found.minimum_healthy_percent.unwrap_or(100),
        old: request.clone(),
        new: request,
        old_needs: needs.clone(),
        new_needs: needs,
        strategy: None,
        placement_strategy: Vec::new(),
        growth,
    };
    let provider = crate::service::capacity::growth::provider_of(new.strategy).map(str::to_string);
    let layout = Cluster::of_provider(snapshot, new.cluster, new.name, provider.as_deref())
        .ok_or_else(|| lookup::no_cluster(snapshot, new.cluster))?;
    let rollout = context.heavy.run(move || simulate(&layout, &plan)).await?;
    let per_task = TaskGpu::of(&gpu_settings(task));
    let what = "this new service";
    let budget = budget::judge_new(
        context,
        snapshot,
        new.cluster,
        new.team,
        new.desired,
        per_task,
        what,
    )
    .await?
    .map(|(_, verdict)| verdict);
    Ok((rollout, provider, budget))
}

/// The check as the page and the API show it.
fn checked(
    new: &NewShape<'_>,
    (create, register, task): (&Map<String, Value>, Option<&Task>, &Task),
    (rollout, provider, budget): (RolloutCheck, Option<String>, Option<BudgetVerdict>),
    added: Vec<String>,
) -> NewServiceCheck {
    let task_definition = match register {
        Some(task) => format!(
            "{} (a new revision)",
            task.get("family")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        None => create
            .get("taskDefinition")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    };
    let (create, register) = (
        Value::Object(create.clone()),
        register.cloned().map(Value::Object),
    );
    NewServiceCheck {
        cluster: new.cluster.to_string(),
        service: new.name.to_string(),
        team: new.team.to_string(),
        cli: cli_commands(register.as_ref(), &create),
        cloudformation: cloudformation(register.as_ref(), &create),
        create,
        register,
        task_definition,
        gpu: gpu_settings(task)
            .into_iter()
            .filter(|(_, s)| s.uses_gpu())
            .map(|(name, s)| format!("{name}: {}", s.describe()))
            .collect(),
        provider,
        rollout,
        budget,
        added,
    }
}
