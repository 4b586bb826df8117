//! Sending a new service under its lock: the template's revision registered first (its own
//! record), CreateService (the `create` record, with how far it got), and the first deployment
//! watched.

use serde_json::{Map, Value};

use super::Prepared;
use crate::{
    model::{
        arn::TaskDefinitionId,
        audit::{AuditAction, AuditIntent, AuditOutcome, Lock, Outcome},
        deployment::{DeployAnswer, WatchState},
        identity::Actor,
        new_service::NewServiceForm,
        task_definition::set_audit_tag,
        ServiceError,
    },
    service::{clock, context::ServiceContext, ports::RolloutToWatch},
};

/// Under the service's lock: the registration (when there is one), CreateService and the watch.
pub(super) async fn send_create(
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
    crate::service::deployments::lock_or_refuse(context, &lock, id, AuditAction::Create).await?;
    let target = match register {
        Some(task) => match register_first(context, actor, task, form).await {
            Ok(target) => target,
            Err(error) => {
                let detail = format!(
                    "the task definition was not registered, so the service was not created: {}",
                    error.message()
                );
                let refused = AuditOutcome {
                    outcome: Outcome::Refused,
                    detail: Some(detail),
                    ..AuditOutcome::default()
                };
                context.audit.finish(id.to_string(), refused).await?;
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
    let runs = TaskDefinitionId::parse(&target).map_or(target.clone(), |t| t.to_string());
    let registered = check.register.is_some();
    let created = create_and_record(context, id, create, (&runs, desired), registered).await?;
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
            target: runs,
            from: String::new(),
            live,
            read_at: clock::now(),
            ..WatchState::default()
        },
        from_task_definition: String::new(),
        known_events: Vec::new(),
    });
    Ok(DeployAnswer {
        audit_id: id.to_string(),
        deployment_id: created.deployment_id,
        request_id: created.request_id,
        action: AuditAction::Create,
        approval: None,
        already_asked: false,
    })
}

/// CreateService and its outcome in record `id` (`family:N × count`); when ECS refuses, the
/// record and the error say whether a revision was registered for it and stays.
async fn create_and_record(
    context: &ServiceContext,
    id: &str,
    create: Map<String, Value>,
    (runs, desired): (&str, u32),
    registered: bool,
) -> Result<crate::service::ports::ServiceCreated, ServiceError> {
    let to = format!("{runs} × {desired}");
    match context.ecs_writes.create_service(create).await {
        Ok(created) => {
            let outcome = AuditOutcome {
                outcome: Outcome::InProgress,
                request_id: created.request_id.clone(),
                deployment_id: created.deployment_id.clone(),
                to_revision: Some(to),
                ..AuditOutcome::default()
            };
            context.audit.finish(id.to_string(), outcome).await.map_err(|error| {
                ServiceError::unavailable(format!(
                    "the service was created and is watched at /rollouts/{id}, but the audit log could not record it: {error}"
                ))
            })?;
            Ok(created)
        }
        Err(error) => {
            let unknown = matches!(error, ServiceError::NoAnswer { .. });
            let outcome = AuditOutcome {
                outcome: if unknown {
                    Outcome::Unknown
                } else {
                    Outcome::Refused
                },
                to_revision: Some(to),
                detail: Some(format!(
                    "{}CreateService {}: {}",
                    if registered {
                        format!("{runs} was registered; ")
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
            Err(if registered {
                error.with_suffix(&format!(
                    "; {runs} was registered and stays, the service was not created"
                ))
            } else {
                error
            })
        }
    }
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
