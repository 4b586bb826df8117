//! A capacity provider for GPU sharing (admins): ECS's CreateCapacityProvider request read as the
//! AWS SDK reads it, checked before anything is created (its name, that its requirements or
//! group take instance types that can share GPUs), then created and — for an Auto Scaling group,
//! or a new default strategy — added to the cluster's providers, each step in one audit record
//! that says how far it got.

use serde_json::{Map, Value};

use crate::{
    model::{
        audit::{AuditAction, AuditIntent, AuditOutcome, Outcome},
        capacity::{LaunchOption, ProviderType, ProviderView, StrategyItem},
        identity::{Actor, Role},
        new_provider::{check_provider_name, provider_cli, ProviderCheck, ProviderForm},
        new_service::{field, refusal, BODY_LIMIT},
        task_definition::{check_description, FieldError},
        ServiceError,
    },
    service::{audit, capacity::with_prices, context::ServiceContext, detached, lookup},
};

/// The audit intent of adding provider `name` to `cluster`.
fn intent(actor: &Actor, cluster: &str, name: &str, form: &ProviderForm) -> AuditIntent {
    AuditIntent {
        description: Some(form.description.trim().to_string()).filter(|d| !d.is_empty()),
        ..AuditIntent::by(
            actor,
            AuditAction::AddProvider,
            format!("{cluster}/capacity-provider/{name}"),
        )
    }
}

/// Who may add a provider (admins), and the form's own limits.
fn admitted(
    context: &ServiceContext,
    actor: &Actor,
    form: &ProviderForm,
) -> Result<(), ServiceError> {
    if actor.role != Role::Admin {
        return Err(ServiceError::forbidden(format!(
            "Adding a capacity provider needs the admin role (it launches instances the whole account pays for): ask {}.",
            context.policy.admins()
        )));
    }
    check_description(&form.description).map_err(ServiceError::invalid)?;
    if form.create.len() > BODY_LIMIT {
        return Err(ServiceError::invalid(format!(
            "the request is longer than {BODY_LIMIT} bytes"
        )));
    }
    Ok(())
}

/// The errors of the provider's kind: a Managed Instances provider names this cluster (set when
/// missing), an Auto Scaling group exists, Fargate is not offered.
fn kind_errors(
    provider: &ProviderView,
    create: &mut Map<String, Value>,
    cluster: &str,
    errors: &mut Vec<FieldError>,
) {
    match provider.kind {
        ProviderType::ManagedInstances => {
            match create.get("cluster").and_then(Value::as_str) {
                Some(named) if named != cluster => errors.push(field(
                    "cluster",
                    format!("the request names cluster {named}, and it is sent to {cluster}: make them the same"),
                )),
                _ => {}
            }
            // A Managed Instances provider belongs to the cluster it is made for.
            create.insert("cluster".into(), Value::String(cluster.to_string()));
            errors.extend(launch_errors(create));
        }
        ProviderType::AutoScalingGroup => {
            if provider
                .auto_scaling_group
                .as_ref()
                .is_some_and(|g| g.group.is_none())
            {
                errors.push(field(
                    "autoScalingGroupProvider.autoScalingGroupArn",
                    "EC2 Auto Scaling has no such group in this region (or it could not be read): give the ARN of an existing group of GPU instances",
                ));
            }
        }
        _ => errors.push(field(
            "",
            "give a managedInstancesProvider or an autoScalingGroupProvider: Fargate capacity runs no GPU tasks",
        )),
    }
}

/// What ECS requires of a Managed Instances provider to launch anything: the infrastructure role
/// it launches with, the instance profile its instances run as, and their network.
fn launch_errors(create: &Map<String, Value>) -> Vec<FieldError> {
    let settings = create.get("managedInstancesProvider");
    let at = |path: &[&str]| {
        path.iter()
            .try_fold(settings?, |value, key| value.get(*key))
            .filter(|v| !v.is_null() && v.as_str() != Some(""))
    };
    let mut errors = Vec::new();
    let base = "managedInstancesProvider";
    if at(&["infrastructureRoleArn"]).is_none() {
        errors.push(field(
            &format!("{base}.infrastructureRoleArn"),
            "give the infrastructure role ECS launches and manages the instances with (arn:aws:iam::ACCOUNT:role/ecsInfrastructureRole; see ECS's Managed Instances infrastructure IAM role)",
        ));
    }
    let template = format!("{base}.instanceLaunchTemplate");
    if at(&["instanceLaunchTemplate", "ec2InstanceProfileArn"]).is_none() {
        errors.push(field(
            &format!("{template}.ec2InstanceProfileArn"),
            "give the instance profile the instances run as (arn:aws:iam::ACCOUNT:instance-profile/ecsInstanceRole)",
        ));
    }
    if at(&["instanceLaunchTemplate", "networkConfiguration"]).is_none() {
        errors.push(field(
            &format!("{template}.networkConfiguration"),
            "give the subnets (and security groups) the instances are launched in",
        ));
    }
    errors
}

/// The types the provider takes that can share GPUs, and those it takes (or would, but for a
/// fractional GPU) that cannot; an error when none can.
fn types_of(provider: &ProviderView) -> (Vec<LaunchOption>, Vec<LaunchOption>, Option<FieldError>) {
    let (sharing, mut not_sharing): (Vec<_>, Vec<_>) = provider
        .may_launch
        .iter()
        .filter(|o| o.not_matched.is_none())
        .cloned()
        .partition(|o| o.shares_gpus);
    not_sharing.extend(
        provider
            .may_launch
            .iter()
            .filter(|o| {
                o.not_matched
                    .as_deref()
                    .is_some_and(|why| why.contains("fractional GPU"))
            })
            .cloned(),
    );
    if !sharing.is_empty() {
        return (sharing, not_sharing, None);
    }
    let place = if provider.kind == ProviderType::AutoScalingGroup {
        "autoScalingGroupProvider.autoScalingGroupArn"
    } else {
        "managedInstancesProvider.instanceLaunchTemplate.instanceRequirements"
    };
    let named: Vec<String> = not_sharing.iter().map(|o| o.facts.name.clone()).collect();
    let error = field(
        place,
        if named.is_empty() {
            "they take no GPU instance type of the region: widen the accelerator names, counts or allowed types".to_string()
        } else {
            format!(
                "they take only types that cannot share GPUs with MPS ({}): allow NVIDIA types with whole GPUs, e.g. g5, g6, g6e, p4d, p5",
                named.join(", ")
            )
        },
    );
    (sharing, not_sharing, Some(error))
}

/// What the provider would be, checked, with nothing created. Admins only.
pub async fn check(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: &ProviderForm,
) -> Result<ProviderCheck, ServiceError> {
    admitted(context, actor, form)?;
    let snapshot = lookup::snapshot(context)?;
    lookup::cluster(&snapshot, cluster)?;
    let (mut create, provider) = context
        .ecs
        .draft_provider(form.create.clone())
        .await
        .map_err(|errors| refusal(&errors))?;
    let mut errors = Vec::new();
    let name = provider.name.clone();
    if let Err(why) = check_provider_name(&name) {
        errors.push(field("name", why));
    }
    let capacity = context.ecs.capacity(vec![cluster.to_string()]).await?;
    let current = capacity
        .into_iter()
        .find(|c| c.cluster == cluster)
        .unwrap_or_default();
    if current.providers.iter().any(|p| p.name == name) {
        errors.push(field(
            "name",
            format!(
                "cluster {cluster} already has a capacity provider {name}; choose another name"
            ),
        ));
    }
    kind_errors(&provider, &mut create, cluster, &mut errors);
    let (sharing, not_sharing, none_share) = types_of(&provider);
    let (sharing, not_sharing) = (
        with_prices(context, &provider.kind, sharing),
        with_prices(context, &provider.kind, not_sharing),
    );
    if errors.is_empty() {
        errors.extend(none_share);
    }
    if !errors.is_empty() {
        return Err(refusal(&errors));
    }
    let mut providers_after: Vec<String> =
        current.providers.iter().map(|p| p.name.clone()).collect();
    providers_after.push(name.clone());
    let default_after = if form.make_default {
        vec![StrategyItem {
            capacity_provider: name.clone(),
            weight: 1,
            base: 0,
        }]
    } else {
        current.default_strategy.clone()
    };
    let associate = provider.kind == ProviderType::AutoScalingGroup || form.make_default;
    let create = Value::Object(create);
    let cli = provider_cli(
        &create,
        cluster,
        associate.then_some((providers_after.as_slice(), default_after.as_slice())),
    );
    Ok(ProviderCheck {
        cluster: cluster.to_string(),
        name,
        create,
        provider,
        sharing,
        not_sharing,
        providers_after,
        default_after,
        associate,
        cli,
    })
}

/// Creates the provider after the checks, and adds it to the cluster's providers (keeping the
/// default strategy unless `make_default`). One `add-provider` record: when ECS refuses the
/// second step, it and the error say that the provider exists and what did not happen.
pub async fn create(
    context: &ServiceContext,
    actor: &Actor,
    cluster: &str,
    form: ProviderForm,
) -> Result<ProviderCheck, ServiceError> {
    let checked = match check(context, actor, cluster, &form).await {
        Ok(checked) => checked,
        Err(error) if error.status() == 403 => {
            let name = serde_json::from_str::<Value>(&form.create)
                .ok()
                .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_default();
            return Err(audit::refused(context, intent(actor, cluster, &name, &form), error).await);
        }
        Err(error) => return Err(error),
    };
    let id = context
        .audit
        .begin(intent(actor, cluster, &checked.name, &form))
        .await
        .map_err(|error| error.with_suffix("; nothing was created"))?;
    let owned = context.clone();
    let record = id.clone();
    detached::run_to_end(
        context,
        &id,
        async move { send(&owned, checked, record).await },
    )
    .await
}

/// PutClusterCapacityProviders after the provider was made; when ECS refuses, the record and
/// the error say that the provider exists and is not in the cluster's list.
async fn associate(
    context: &ServiceContext,
    checked: &ProviderCheck,
    id: &str,
    request_id: Option<String>,
) -> Result<(), ServiceError> {
    let (cluster, name) = (&checked.cluster, &checked.name);
    let Err(error) = context
        .ecs_writes
        .put_cluster_providers(
            cluster.clone(),
            checked.providers_after.clone(),
            checked.default_after.clone(),
        )
        .await
    else {
        return Ok(());
    };
    let now = format!(
        "the capacity provider {name} was created, but adding it to cluster {cluster}'s providers {}: {}. It exists and no service can use it from {cluster} yet: add it with PutClusterCapacityProviders, or delete it",
        if matches!(error, ServiceError::NoAnswer { .. }) { "got no answer" } else { "was refused" },
        error.message()
    );
    context
        .audit
        .finish(
            id.to_string(),
            AuditOutcome {
                outcome: Outcome::Failed,
                request_id,
                detail: Some(now.clone()),
                ..AuditOutcome::default()
            },
        )
        .await?;
    Err(ServiceError::refused_by_aws(now))
}

/// CreateCapacityProvider, then PutClusterCapacityProviders when it is needed; the outcome.
async fn send(
    context: &ServiceContext,
    checked: ProviderCheck,
    id: String,
) -> Result<ProviderCheck, ServiceError> {
    let body = checked.create.as_object().cloned().unwrap_or_default();
    let created = context.ecs_writes.create_provider(body).await;
    let request_id = match created {
        Ok(request_id) => request_id,
        Err(error) => {
            let unknown = matches!(error, ServiceError::NoAnswer { .. });
            let outcome = AuditOutcome {
                outcome: if unknown {
                    Outcome::Unknown
                } else {
                    Outcome::Refused
                },
                detail: Some(format!(
                    "CreateCapacityProvider {}: {}",
                    if unknown {
                        "got no answer"
                    } else {
                        "was refused, nothing was created"
                    },
                    error.message()
                )),
                ..AuditOutcome::default()
            };
            context.audit.finish(id, outcome).await?;
            return Err(error);
        }
    };
    let (cluster, name) = (checked.cluster.clone(), checked.name.clone());
    if checked.associate {
        associate(context, &checked, &id, request_id.clone()).await?;
    }
    context
        .audit
        .finish(
            id,
            AuditOutcome {
                outcome: Outcome::Succeeded,
                request_id,
                detail: Some(format!(
                    "created {name}{}",
                    if checked.associate {
                        format!(
                            " and set cluster {cluster}'s providers to {}",
                            checked.providers_after.join(", ")
                        )
                    } else {
                        format!(" for cluster {cluster}")
                    }
                )),
                ..AuditOutcome::default()
            },
        )
        .await?;
    Ok(checked)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::service::fake::Fake;

    fn admin() -> Actor {
        Actor {
            subject: "root".into(),
            role: Role::Admin,
            teams: Vec::new(),
            ..Fake::deployer()
        }
    }

    fn form(allowed: &str) -> ProviderForm {
        let template = crate::model::new_provider::ManagedTemplate {
            name: "gpu-l40s".into(),
            allowed: allowed.into(),
            subnets: "subnet-1".into(),
            infrastructure_role_arn: "arn:aws:iam::1:role/infra".into(),
            instance_profile_arn: "arn:aws:iam::1:instance-profile/ecs".into(),
            ..crate::model::new_provider::ManagedTemplate::default()
        };
        ProviderForm {
            create: Value::Object(template.create_json("prod")).to_string(),
            make_default: false,
            description: "L40S for embeddings".into(),
        }
    }

    #[tokio::test]
    async fn only_an_admin_adds_a_provider_and_a_refused_attempt_is_audited() {
        let fake = Fake::new();
        let context = fake.context();
        let refused = create(&context, &Fake::deployer(), "prod", form("g6e.12xlarge"))
            .await
            .unwrap_err();
        assert_eq!(refused.status(), 403);
        let record = fake.records().pop().unwrap();
        assert_eq!(
            (record.action, record.outcome),
            (AuditAction::AddProvider, Outcome::Refused)
        );
        assert!(!fake
            .calls()
            .iter()
            .any(|c| c.starts_with("ecs.create_provider")));
        let created = create(&context, &admin(), "prod", form("g6e.12xlarge"))
            .await
            .unwrap();
        assert_eq!(created.sharing.len(), 1);
        assert_eq!(
            created.sharing[0].facts.usd_per_hour,
            Some(10.493),
            "priced from the console's price book"
        );
        assert_eq!(created.providers_after, ["gpu-l40s"]);
        assert!(
            !created.associate,
            "a Managed Instances provider joins its cluster"
        );
        let record = fake.records().pop().unwrap();
        assert_eq!(record.outcome, Outcome::Succeeded);
        assert_eq!(record.resource, "prod/capacity-provider/gpu-l40s");
    }

    #[tokio::test]
    async fn a_managed_instances_provider_without_its_role_profile_or_network_is_refused_before_anything_is_created(
    ) {
        let fake = Fake::new();
        let context = fake.context();
        let bare = crate::model::new_provider::ManagedTemplate {
            name: "gpu-l40s".into(),
            allowed: "g6e.12xlarge".into(),
            ..crate::model::new_provider::ManagedTemplate::default()
        };
        let mut request = form("g6e.12xlarge");
        request.create = Value::Object(bare.create_json("prod")).to_string();
        let error = check(&context, &admin(), "prod", &request)
            .await
            .unwrap_err();
        assert_eq!(error.status(), 400);
        for named in [
            "managedInstancesProvider.infrastructureRoleArn",
            "managedInstancesProvider.instanceLaunchTemplate.ec2InstanceProfileArn",
        ] {
            assert!(error.message().contains(named), "{named}: {error}");
        }
        // Given as empty text, the same.
        let mut empty: serde_json::Value =
            serde_json::from_str(&form("g6e.12xlarge").create).unwrap();
        empty["managedInstancesProvider"]["infrastructureRoleArn"] = "".into();
        request.create = empty.to_string();
        let error = check(&context, &admin(), "prod", &request)
            .await
            .unwrap_err();
        assert!(error.message().contains("infrastructureRoleArn"), "{error}");
        assert!(!fake
            .calls()
            .iter()
            .any(|c| c.starts_with("ecs.create_provider")));
    }

    #[tokio::test]
    async fn requirements_that_take_no_type_that_shares_gpus_are_refused_by_field() {
        let fake = Fake::new();
        let context = fake.context();
        let error = check(&context, &admin(), "prod", &form("g6f.xlarge"))
            .await
            .unwrap_err();
        assert_eq!(error.status(), 400);
        assert!(
            error.message().contains("instanceRequirements")
                && error.message().contains("g6f.xlarge"),
            "{error}"
        );
        let mut named = form("g6e.12xlarge");
        named.create = named.create.replace("gpu-l40s", "ECS-gpu");
        let error = check(&context, &admin(), "prod", &named).await.unwrap_err();
        assert!(error.message().starts_with("name: ECS refuses"), "{error}");
    }

    #[tokio::test]
    async fn a_refusal_half_way_says_the_provider_exists_and_is_recorded() {
        let fake = Fake::new();
        fake.refuse_delete.store(true, Ordering::SeqCst);
        let context = fake.context();
        let mut default = form("g6e.12xlarge");
        default.make_default = true;
        let error = create(&context, &admin(), "prod", default)
            .await
            .unwrap_err();
        assert_eq!(error.status(), 502);
        assert!(
            error.message().contains("gpu-l40s was created")
                && error.message().contains("no service can use it"),
            "{error}"
        );
        let record = fake.records().pop().unwrap();
        assert_eq!(record.outcome, Outcome::Failed);
        assert!(fake
            .calls()
            .iter()
            .any(|c| c.starts_with("ecs.create_provider gpu-l40s")));
    }
}
