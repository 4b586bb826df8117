//! A new GPU service for a team: the CreateService request (and, from the template, the
//! RegisterTaskDefinition before it) read as the AWS SDK reads them, checked against the fleet
//! and its capacity providers, pre-checked for its whole desired count with what its provider
//! would launch, judged against the team's budget — then registered, created and watched, each
//! step audited, under the new service's lock.

use serde_json::{Map, Value};

use crate::{
    model::{
        arn::TaskDefinitionId,
        audit::{AuditAction, AuditIntent, AuditOutcome, Lock, Outcome},
        budget::TaskGpu,
        capacity::{ClusterCapacity, ProviderType, StrategyItem},
        deployment::{DeployAnswer, WatchState},
        identity::{Actor, Role},
        new_service::{
            check_image, check_service_name, cli_commands, cloudformation, desired_of, field,
            set_tag, tag_of, NewServiceCheck, NewServiceForm, BODY_LIMIT,
        },
        rollout::{pre_check as simulate, Cluster, RolloutPlan, Verdict},
        task_definition::{check_description, gpu_settings, set_audit_tag, FieldError},
        ServiceError, ServiceRef,
    },
    service::{
        audit, budget, clock, context::ServiceContext, detached, lookup, ports::RolloutToWatch,
        task_definitions::find_revision,
    },
};

/// A new service checked: what the page shows, and what is sent.
struct Prepared {
    check: NewServiceCheck,
    create: Map<String, Value>,
    register: Option<Map<String, Value>>,
    desired: u32,
}

/// The errors as one refusal, each with its field.
fn refusal(errors: &[FieldError]) -> ServiceError {
    ServiceError::invalid(
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

/// What the new service would be, checked, with nothing created.
pub async fn check(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: &NewServiceForm,
) -> Result<NewServiceCheck, ServiceError> {
    Ok(prepare(context, actor, cluster, form, false).await?.check)
}

/// The audit intent of creating `cluster/service`.
fn intent(actor: &Actor, cluster: &str, service: &str, form: &NewServiceForm) -> AuditIntent {
    AuditIntent {
        description: Some(form.description.trim().to_string()).filter(|d| !d.is_empty()),
        ..AuditIntent::by(actor, AuditAction::Create, format!("{cluster}/{service}"))
    }
}

/// Reads and checks the requests; every error found at once, each with its field.
async fn prepare(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: &NewServiceForm,
    creating: bool,
) -> Result<Prepared, ServiceError> {
    if creating && actor.role == Role::Viewer {
        return Err(ServiceError::forbidden(format!(
            "You are a viewer, and creating a service needs the deployer or admin role: ask {}.",
            context.policy.admins()
        )));
    }
    check_description(&form.description).map_err(ServiceError::invalid)?;
    let snapshot = lookup::snapshot(context)?;
    let view = lookup::cluster(&snapshot, cluster)?;
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
    let mut create = context
        .schema
        .create_service(form.create.clone())
        .await
        .map_err(|errors| refusal(&errors))?;
    let mut errors = Vec::new();
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
    let desired = desired_of(&create).unwrap_or_else(|error| {
        errors.push(error);
        0
    });
    let launch_type = create
        .get("launchType")
        .and_then(Value::as_str)
        .map(str::to_string);
    let given_strategy = create.get("capacityProviderStrategy").is_some();
    match launch_type.as_deref() {
        Some(_) if given_strategy => errors.push(field(
            "launchType",
            "give a launchType or a capacityProviderStrategy, not both",
        )),
        Some("EC2") | None => {}
        Some(other) => errors.push(field(
            "launchType",
            format!("{other} cannot run tasks that share GPUs: use EC2, or a capacity provider of GPU instances"),
        )),
    }

    // The task definition: registered first from the template, or one that exists.
    let (task, register) = match &form.register {
        Some(text) => match context.schema.validate(text.clone()).await {
            Ok((task, _)) => {
                let family = task
                    .get("family")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                create.insert("taskDefinition".into(), Value::String(family));
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
            (existing_task(context, &named, &mut errors).await, None)
        }
    };
    if let Some(task) = &task {
        for (index, container) in containers(task).iter().enumerate() {
            let image = container.get("image").and_then(Value::as_str).unwrap_or("");
            if let Err(why) = check_image(image) {
                let place = if register.is_some() {
                    "register."
                } else {
                    "taskDefinition: "
                };
                errors.push(field(
                    &format!("{place}containerDefinitions[{index}].image"),
                    why,
                ));
            }
        }
    }

    // The providers the tasks go to, and whether they can run them.
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

    // The team: the requester's, on the service and on the revision registered for it. A key
    // given twice is refused (AWS takes one value per key), so no second team rides along.
    let team_tag = context.team_tag.clone();
    let twice = crate::model::task_definition::duplicate_tag_keys(&create);
    if !twice.is_empty() {
        return Err(ServiceError::invalid(format!(
            "tags: {} given more than once; give each tag key once",
            twice.join(", ")
        )));
    }
    let team = match tag_of(&create, &team_tag) {
        Some(team) => {
            if actor.role != Role::Admin && !actor.on_team(&team) {
                let refused = ServiceError::forbidden(format!(
                        "tags: the team tag says {team}, and you are on {}: a deployer creates services for their own team; ask {} or an admin",
                        if actor.teams.is_empty() { "no team".to_string() } else { actor.teams.join(", ") },
                        context.policy.members(&team)
                ));
                if !creating {
                    return Err(refused);
                }
                let intent = intent(actor, cluster, &name, form);
                return Err(audit::refused(context, intent, refused).await);
            }
            team
        }
        None => match actor.teams.as_slice() {
            [only] => only.clone(),
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
                String::new()
            }
        },
    };
    let mut added = Vec::new();
    if tag_of(&create, &team_tag).is_none() && !team.is_empty() {
        set_tag(&mut create, &team_tag, &team);
        added.push(format!("the {team_tag} tag {team}"));
    }
    let mut register = register;
    if let Some(task) = register.as_mut() {
        if !team.is_empty() && tag_of(task, &team_tag).as_deref() != Some(team.as_str()) {
            set_tag(task, &team_tag, &team);
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
    if !errors.is_empty() {
        return Err(refusal(&errors));
    }
    let task = task.unwrap_or_default();

    // The pre-check of the whole desired count, with what its provider would launch.
    let found = ServiceRef {
        name: name.clone(),
        team: Some(team.clone()),
        desired,
        maximum_percent: deployment_number(&create, "maximumPercent"),
        minimum_healthy_percent: deployment_number(&create, "minimumHealthyPercent"),
        capacity_provider_strategy: strategy.clone(),
        placement_constraints: create
            .get("placementConstraints")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        ..ServiceRef::default()
    };
    let request = super::deployments::request_of(&task)?;
    let needs = super::deployments::needs_of(&task, &found.placement_constraints)?;
    let plan = RolloutPlan {
        cluster: cluster.to_string(),
        service: name.clone(),
        desired,
        running: 0,
        maximum_percent: found.maximum_percent.unwrap_or(200),
        minimum_healthy_percent: found.minimum_healthy_percent.unwrap_or(100),
        old: request.clone(),
        new: request,
        old_needs: needs.clone(),
        new_needs: needs,
        strategy: None,
        placement_strategy: Vec::new(),
        growth: crate::service::capacity::growth::growth_of(context, &snapshot, cluster, &found)
            .await?,
    };
    let provider = crate::service::capacity::growth::provider_of(&strategy).map(str::to_string);
    let layout = Cluster::of_provider(&snapshot, cluster, &name, provider.as_deref())
        .ok_or_else(|| lookup::no_cluster(&snapshot, cluster))?;
    let rollout = context.heavy.run(move || simulate(&layout, &plan)).await?;
    let per_task = TaskGpu::of(&gpu_settings(&task));
    let budget = budget::judge_new(
        context,
        &snapshot,
        cluster,
        &team,
        desired,
        per_task,
        "this new service",
    )
    .await?
    .map(|(_, verdict)| verdict);
    let task_definition = match &register {
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
    let (create_value, register_value) = (
        Value::Object(create.clone()),
        register.clone().map(Value::Object),
    );
    Ok(Prepared {
        check: NewServiceCheck {
            cluster: cluster.to_string(),
            service: name,
            team,
            cli: cli_commands(register_value.as_ref(), &create_value),
            cloudformation: cloudformation(register_value.as_ref(), &create_value),
            create: create_value,
            register: register_value,
            task_definition,
            gpu: gpu_settings(&task)
                .into_iter()
                .filter(|(_, s)| s.uses_gpu())
                .map(|(name, s)| format!("{name}: {}", s.describe()))
                .collect(),
            provider,
            rollout,
            budget,
            added,
        },
        create,
        register,
        desired,
    })
}

/// Whether ECS has a service `name` in `cluster` that takes the name (ACTIVE or DRAINING): the
/// snapshot may not show one made a moment ago. When ECS cannot say, CreateService will.
async fn taken_in_ecs(context: &ServiceContext, cluster: &str, name: &str) -> bool {
    match context
        .ecs
        .service(cluster.to_string(), name.to_string())
        .await
    {
        Ok(live) => live.status != "INACTIVE",
        Err(_) => false,
    }
}

/// A `deploymentConfiguration` percentage of the request.
fn deployment_number(create: &Map<String, Value>, key: &str) -> Option<u32> {
    create
        .get("deploymentConfiguration")?
        .get(key)?
        .as_u64()
        .map(|n| n as u32)
}

/// The containers of a task definition's JSON.
fn containers(task: &Map<String, Value>) -> Vec<Map<String, Value>> {
    task.get("containerDefinitions")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|c| c.as_object().cloned()).collect())
        .unwrap_or_default()
}

/// A request's `capacityProviderStrategy`.
fn strategy_of(items: &Value) -> Vec<StrategyItem> {
    items
        .as_array()
        .map(|list| {
            list.iter()
                .map(|item| StrategyItem {
                    capacity_provider: item
                        .get("capacityProvider")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    weight: item.get("weight").and_then(Value::as_u64).unwrap_or(0) as u32,
                    base: item.get("base").and_then(Value::as_u64).unwrap_or(0) as u32,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The revision `named` (`family`, `family:N` or its ARN), or an error on `taskDefinition`.
async fn existing_task(
    context: &ServiceContext,
    named: &str,
    errors: &mut Vec<FieldError>,
) -> Option<Map<String, Value>> {
    if named.is_empty() {
        errors.push(field(
            "taskDefinition",
            "give the task definition (family or family:revision), or start from the template",
        ));
        return None;
    }
    let tail = named.rsplit('/').next().unwrap_or(named);
    let found = match TaskDefinitionId::parse(named).or_else(|| {
        let (family, revision) = tail.split_once(':')?;
        Some(TaskDefinitionId::new(
            family.to_string(),
            revision.parse().ok()?,
        ))
    }) {
        Some(id) => find_revision(context, &id.family, id.revision).await,
        None => context.ecs.latest_active(tail.to_string()).await,
    };
    match found {
        Ok(Some(source)) => Some(source.task),
        Ok(None) => {
            errors.push(field(
                "taskDefinition",
                format!("ECS has no active revision {named}"),
            ));
            None
        }
        Err(error) => {
            errors.push(field(
                "taskDefinition",
                format!("{named} could not be read: {error}"),
            ));
            None
        }
    }
}

/// Whether the strategy's providers are the cluster's and can run the task: EC2 capacity for a
/// GPU task, a type that shares GPUs for an MPS task, `MANAGED_INSTANCES` for a Managed
/// Instances provider.
fn check_providers(
    capacity: &ClusterCapacity,
    strategy: &[StrategyItem],
    task: &Map<String, Value>,
    snapshot: &crate::model::FleetSnapshot,
    cluster: &str,
    errors: &mut Vec<FieldError>,
) {
    let settings = gpu_settings(task);
    let uses_gpu = settings.iter().any(|(_, s)| s.uses_gpu());
    let shares = settings
        .iter()
        .any(|(_, s)| matches!(s, crate::model::task_definition::GpuSetting::Mps { .. }));
    let compatibilities: Vec<&str> = task
        .get("requiresCompatibilities")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let names: Vec<&str> = capacity.providers.iter().map(|p| p.name.as_str()).collect();
    for (index, item) in strategy.iter().enumerate() {
        let place = format!("capacityProviderStrategy[{index}].capacityProvider");
        let Some(provider) = capacity
            .providers
            .iter()
            .find(|p| p.name == item.capacity_provider)
        else {
            errors.push(field(
                &place,
                format!(
                    "cluster {cluster} has no capacity provider {}; its providers are {}",
                    item.capacity_provider,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
            continue;
        };
        if uses_gpu && !provider.can_share_gpus {
            errors.push(field(
                &place,
                format!(
                    "{} is Fargate capacity, which runs no GPU tasks",
                    provider.name
                ),
            ));
            continue;
        }
        let has_mps_instance = snapshot
            .clusters
            .iter()
            .filter(|c| c.name == cluster)
            .flat_map(|c| c.instances.iter())
            .any(|i| {
                i.capacity_provider.as_deref() == Some(provider.name.as_str()) && i.mps_capable
            });
        let matched: Vec<&crate::model::capacity::LaunchOption> = provider
            .may_launch
            .iter()
            .filter(|o| o.not_matched.is_none())
            .collect();
        if shares
            && !has_mps_instance
            && !matched.is_empty()
            && !matched.iter().any(|o| o.shares_gpus)
        {
            errors.push(field(
                &place,
                format!(
                    "{} launches no instance type that can share GPUs with MPS ({}), and has no instance that can: choose a provider of NVIDIA GPU instances",
                    provider.name,
                    matched
                        .iter()
                        .map(|o| o.facts.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        if provider.kind == ProviderType::ManagedInstances
            && !compatibilities.contains(&"MANAGED_INSTANCES")
        {
            errors.push(field(
                &place,
                format!(
                    "{} is a Managed Instances provider, and the task definition does not list MANAGED_INSTANCES in requiresCompatibilities: register a revision that does",
                    provider.name
                ),
            ));
        }
    }
}

/// `awsvpc` needs the service's subnets; another network mode takes no network configuration.
fn check_network(
    create: &Map<String, Value>,
    task: &Map<String, Value>,
    errors: &mut Vec<FieldError>,
) {
    let awsvpc = task.get("networkMode").and_then(Value::as_str) == Some("awsvpc");
    let subnets = create
        .get("networkConfiguration")
        .and_then(|n| n.get("awsvpcConfiguration"))
        .and_then(|a| a.get("subnets"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if awsvpc && subnets == 0 {
        errors.push(field(
            "networkConfiguration.awsvpcConfiguration.subnets",
            "the task definition's network mode is awsvpc: give the subnets (and security groups) its tasks get their network interfaces in",
        ));
    }
    if !awsvpc && create.contains_key("networkConfiguration") {
        errors.push(field(
            "networkConfiguration",
            "only a task definition with the awsvpc network mode takes a network configuration; remove it",
        ));
    }
}

/// Creates the service after the checks (again, on the fleet as it is now): the revision from the
/// template registered first (its own audit record), then CreateService (a `create` record), and
/// its first deployment watched. A pre-check that does not complete refuses unless forced; past
/// the team's budget it is refused with the arithmetic.
pub async fn create(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: NewServiceForm,
) -> Result<DeployAnswer, ServiceError> {
    let prepared = prepare(context, actor, cluster, &form, true).await?;
    let name = prepared.check.service.clone();
    if prepared.check.rollout.verdict != Verdict::Completes && !form.force {
        return Err(ServiceError::PreCheck {
            message: format!(
                "the pre-check says the service's {} tasks would not all be placed; change it, or create it anyway (force)",
                prepared.desired
            ),
            check: Box::new(prepared.check.rollout.clone()),
        });
    }
    if let Some(verdict) = prepared.check.budget.as_ref().filter(|v| v.over) {
        return Err(ServiceError::conflict(format!(
            "{} Ask the team's approvers to raise the budget, or create it with fewer tasks.",
            verdict.arithmetic
        )));
    }
    let lock = Lock::Service {
        cluster: cluster.to_string(),
        service: name.clone(),
    };
    let intent = AuditIntent {
        to_revision: None,
        ..intent(actor, cluster, &name, &form)
    };
    let id = context
        .audit
        .begin(intent)
        .await
        .map_err(|error| error.with_suffix("; nothing was created"))?;
    let (owned, actor, cluster, record) = (
        context.clone(),
        actor.clone(),
        cluster.to_string(),
        id.clone(),
    );
    detached::run_to_end(context, &id, async move {
        let answer = send_create(&owned, &actor, &cluster, prepared, &form, &record).await;
        if !matches!(answer, Err(ServiceError::NoAnswer { .. })) {
            let _ = owned.audit.unlock(lock, record).await;
        }
        answer
    })
    .await
}

/// Under the service's lock: the registration (when there is one), CreateService and the watch.
async fn send_create(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    prepared: Prepared,
    form: &NewServiceForm,
    id: &str,
) -> Result<DeployAnswer, ServiceError> {
    let Prepared {
        mut create,
        register,
        desired,
        check,
        ..
    } = prepared;
    let name = check.service.clone();
    let lock = Lock::Service {
        cluster: cluster.to_string(),
        service: name.clone(),
    };
    super::deployments::lock_or_refuse(context, &lock, id, AuditAction::Create).await?;
    let fail = |detail: String| AuditOutcome {
        outcome: Outcome::Refused,
        detail: Some(detail),
        ..AuditOutcome::default()
    };
    let target = match register {
        Some(task) => match register_first(context, actor, task, form).await {
            Ok(target) => target,
            Err(error) => {
                let detail = format!(
                    "the task definition was not registered, so the service was not created: {}",
                    error.message()
                );
                context.audit.finish(id.to_string(), fail(detail)).await?;
                return Err(error.with_suffix("; the service was not created"));
            }
        },
        None => create
            .get("taskDefinition")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    };
    create.insert("taskDefinition".into(), Value::String(target.clone()));
    let to = format!(
        "{} × {desired}",
        TaskDefinitionId::parse(&target).map_or(target.clone(), |t| t.to_string())
    );
    let created = match context.ecs_writes.create_service(create).await {
        Ok(created) => created,
        Err(error) => {
            let unknown = matches!(error, ServiceError::NoAnswer { .. });
            let outcome = AuditOutcome {
                outcome: if unknown {
                    Outcome::Unknown
                } else {
                    Outcome::Refused
                },
                to_revision: Some(to.clone()),
                detail: Some(format!(
                    "{}CreateService {}: {}",
                    if check.register.is_some() {
                        format!("{target} was registered; ")
                    } else {
                        String::new()
                    },
                    if unknown {
                        "got no answer"
                    } else {
                        "was refused"
                    },
                    error.message()
                )),
                ..AuditOutcome::default()
            };
            context.audit.finish(id.to_string(), outcome).await?;
            return Err(if check.register.is_some() {
                error.with_suffix(&format!(
                    "; {target} was registered and stays, the service was not created"
                ))
            } else {
                error
            });
        }
    };
    let recorded = context
        .audit
        .finish(
            id.to_string(),
            AuditOutcome {
                outcome: Outcome::InProgress,
                request_id: created.request_id.clone(),
                deployment_id: created.deployment_id.clone(),
                to_revision: Some(to),
                ..AuditOutcome::default()
            },
        )
        .await;
    let live = context
        .ecs
        .service(cluster.to_string(), name.clone())
        .await
        .unwrap_or_default();
    context.watches.start(RolloutToWatch {
        initial: WatchState {
            audit_id: id.to_string(),
            cluster: cluster.to_string(),
            service: name,
            action: AuditAction::Create,
            deployment_id: created.deployment_id.clone(),
            target: TaskDefinitionId::parse(&target).map_or(target.clone(), |t| t.to_string()),
            from: String::new(),
            live,
            read_at: clock::now(),
            ..WatchState::default()
        },
        from_task_definition: String::new(),
        known_events: Vec::new(),
    });
    if let Err(error) = recorded {
        return Err(ServiceError::unavailable(format!(
            "the service was created and is watched at /rollouts/{id}, but the audit log could not record it: {error}"
        )));
    }
    Ok(DeployAnswer {
        audit_id: id.to_string(),
        deployment_id: created.deployment_id,
        request_id: created.request_id,
        action: AuditAction::Create,
        approval: None,
        already_asked: false,
    })
}

/// Registers the template's revision under its own audit record (tagged with it, as every
/// registration is); the `family:N` registered.
async fn register_first(
    context: &ServiceContext,
    actor: &Actor,
    mut task: Map<String, Value>,
    form: &NewServiceForm,
) -> Result<String, ServiceError> {
    let family = task
        .get("family")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let intent = AuditIntent {
        description: Some(form.description.trim().to_string()).filter(|d| !d.is_empty()),
        ..AuditIntent::by(actor, AuditAction::Register, family.clone())
    };
    let record = context.audit.begin(intent).await?;
    set_audit_tag(&mut task, &record);
    match context.ecs_writes.register(task).await {
        Ok(registered) => {
            let target = format!(
                "{}:{}",
                registered.revision.family, registered.revision.revision
            );
            context
                .audit
                .finish(
                    record,
                    AuditOutcome {
                        outcome: Outcome::Registered,
                        request_id: registered.request_id,
                        to_revision: Some(target.clone()),
                        ..AuditOutcome::default()
                    },
                )
                .await?;
            Ok(target)
        }
        Err(error) => {
            let unknown = matches!(error, ServiceError::NoAnswer { .. });
            context
                .audit
                .finish(
                    record,
                    AuditOutcome {
                        outcome: if unknown {
                            Outcome::Unknown
                        } else {
                            Outcome::Refused
                        },
                        detail: Some(error.message().to_string()),
                        ..AuditOutcome::default()
                    },
                )
                .await?;
            Err(error)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
