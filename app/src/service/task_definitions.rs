//! Task definitions: families and revisions as ECS has them, joined with the services of the
//! fleet snapshot; one revision's JSON and exports; two revisions compared; a task definition
//! validated and fitted on the fleet; and an edit (the GPU form or the whole JSON) checked, then
//! registered with its audit record.

mod edit;

use serde_json::{Map, Value};

use crate::{
    model::{
        arn::family_of,
        audit::{AuditAction, AuditIntent, AuditOutcome, Outcome},
        fit::{fit_check as place_one, FitReport},
        identity::Actor,
        identity::Permission,
        task_definition::{
            check_description, check_edit, cli_json, cloudformation_yaml, diff, gpu_changes,
            gpu_variables_set, invalid_family, locate, mask_at, mask_pair_at, parse_inputs,
            set_audit_tag, set_change_tag, tag_value, unmask_secrets, valid_family, Comparison,
            EditCheck, EditInput, EditResult, FamilyDetail, FamilySummary, FieldError, FitAnswer,
            GpuSetting, MaskLevel, RevisionDetail, RevisionView, SourceRevision, Validation,
        },
        FleetSnapshot, ServiceError,
    },
    service::{audit, capacity, context::ServiceContext, detached, lookup, ports::ValidRequest},
};

pub use self::edit::check;
use self::edit::{apply, described_edit, refused};

/// Revisions of one family shown at most.
pub const REVISIONS_SHOWN: usize = 25;

/// An edit of a revision: new GPU settings for named containers, as the API sends them or as
/// the page's form holds them (text, checked here), or the whole request's JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum EditSpec {
    Settings(Vec<(String, GpuSetting)>),
    Form(Vec<EditInput>),
    Json(String),
}

/// Refuses a family name ECS would refuse.
pub fn check_family(family: &str) -> Result<(), ServiceError> {
    if valid_family(family) {
        Ok(())
    } else {
        Err(ServiceError::invalid(invalid_family(family)))
    }
}

/// `cluster/service` of every service of the snapshot running a revision of `family`.
fn services_of(snapshot: Option<&FleetSnapshot>, family: &str) -> Vec<String> {
    let Some(snapshot) = snapshot else {
        return Vec::new();
    };
    let mut services: Vec<String> = snapshot
        .clusters
        .iter()
        .flat_map(|c| {
            c.service_list
                .iter()
                .filter(|s| family_of(&s.task_definition_arn) == family)
                .map(move |s| format!("{}/{}", c.name, s.name))
        })
        .collect();
    services.sort();
    services
}

/// The GPU settings of a revision's GPU containers, in words.
pub fn gpu_words(revision: &RevisionDetail) -> Vec<String> {
    revision
        .containers
        .iter()
        .filter(|c| c.gpu.uses_gpu())
        .map(|c| format!("{}: {}", c.name, c.gpu.describe()))
        .collect()
}

/// Every active family, described by its latest revision, with the services that run it.
pub async fn families(context: &ServiceContext) -> Result<Vec<FamilySummary>, ServiceError> {
    let latest = context.ecs.latest_revisions().await?;
    let snapshot = context.fleet.state().snapshot;
    Ok(latest
        .into_iter()
        .map(|revision| FamilySummary {
            services: services_of(snapshot.as_deref(), &revision.family),
            gpu: gpu_words(&revision),
            family: revision.family,
            latest_revision: revision.revision,
            team: revision.team,
        })
        .collect())
}

/// One family's revisions, active and inactive, newest first; `None` when there is no such
/// family.
pub async fn family(
    context: &ServiceContext,
    family: &str,
) -> Result<Option<FamilyDetail>, ServiceError> {
    check_family(family)?;
    let revisions = context.ecs.revisions(family.to_string()).await?;
    if revisions.is_empty() {
        return Ok(None);
    }
    let snapshot = context.fleet.state().snapshot;
    Ok(Some(FamilyDetail {
        services: services_of(snapshot.as_deref(), family),
        family: family.to_string(),
        revisions,
    }))
}

/// A revision and its JSON, or `None` when ECS has no such revision.
pub async fn find_revision(
    context: &ServiceContext,
    family: &str,
    revision: u32,
) -> Result<Option<SourceRevision>, ServiceError> {
    check_family(family)?;
    context.ecs.revision(family.to_string(), revision).await
}

/// The team a family belongs to now: the team tag of its newest active revision (of its newest
/// revision when none is active). Changes of the family are authorized against it, whichever
/// revision they start from, so that naming an old revision tagged for another team does not
/// reach a family that has moved.
pub async fn family_owner(
    context: &ServiceContext,
    family: &str,
) -> Result<Option<String>, ServiceError> {
    check_family(family)?;
    if let Some(newest) = context.ecs.latest_active(family.to_string()).await? {
        return Ok(newest.detail.team);
    }
    let revisions = context.ecs.revisions(family.to_string()).await?;
    Ok(revisions.first().and_then(|r| r.team.clone()))
}

/// How much of a family's JSON `actor` sees masked: what looks secret for its team and admins,
/// every environment value and log option for everyone else.
fn mask_level(context: &ServiceContext, actor: &Actor, owner: Option<&str>) -> MaskLevel {
    match context.policy.may_reveal(actor, owner) {
        Ok(()) => MaskLevel::SecretLooking,
        Err(_) => MaskLevel::Everything,
    }
}

/// The revision an edit starts from.
async fn source_revision(
    context: &ServiceContext,
    family: &str,
    revision: u32,
) -> Result<SourceRevision, ServiceError> {
    find_revision(context, family, revision)
        .await?
        .ok_or_else(|| {
            ServiceError::not_found(format!(
                "{family} has no revision {revision}; the family's page lists its revisions"
            ))
        })
}

/// One revision with its JSON (secret-looking values masked unless `reveal`) and its
/// CloudFormation requirements; `None` when there is no such revision.
pub async fn revision(
    context: &ServiceContext,
    actor: &Actor,
    family: &str,
    revision: u32,
    reveal: bool,
) -> Result<Option<RevisionView>, ServiceError> {
    let Some(source) = find_revision(context, family, revision).await? else {
        return Ok(None);
    };
    let owner = family_owner(context, family).await?;
    let owner = owner.as_deref();
    let may_reveal = context.policy.may_reveal(actor, owner);
    if reveal {
        may_reveal.clone().map_err(ServiceError::forbidden)?;
    }
    let what = format!("Task definition family {family}");
    let mut task = source.task;
    let masked = if reveal {
        0
    } else {
        mask_at(&mut task, mask_level(context, actor, owner))
    };
    Ok(Some(RevisionView {
        register: Permission::of(context.policy.may_change(actor, owner, &what)),
        reveal: Permission::of(may_reveal),
        detail: source.detail,
        json: cli_json(&task),
        masked,
        cloudformation: cloudformation_yaml(&task),
    }))
}

/// Refuses to reveal the masked values of a family of `owner` to a person who may not see them.
fn check_reveal(
    context: &ServiceContext,
    actor: &Actor,
    owner: Option<&str>,
    reveal: bool,
) -> Result<(), ServiceError> {
    if reveal {
        context
            .policy
            .may_reveal(actor, owner)
            .map_err(ServiceError::forbidden)?;
    }
    Ok(())
}

/// Two revisions of `family` compared: GPU settings first, then every difference of the JSON;
/// `None` when either does not exist. Values are masked as `actor` sees them unless `reveal`.
pub async fn compare(
    context: &ServiceContext,
    actor: &Actor,
    family: &str,
    from: u32,
    to: u32,
    reveal: bool,
) -> Result<Option<Comparison>, ServiceError> {
    let owner = family_owner(context, family).await?;
    check_reveal(context, actor, owner.as_deref(), reveal)?;
    let level = (!reveal).then(|| mask_level(context, actor, owner.as_deref()));
    compare_masked(context, family, from, to, level).await
}

/// Two revisions compared with their values masked at `level` (`None`: unmasked), for the
/// audit log and the approvers, who may be of any team: [`MaskLevel::Everything`].
pub async fn compare_masked(
    context: &ServiceContext,
    family: &str,
    from: u32,
    to: u32,
    level: Option<MaskLevel>,
) -> Result<Option<Comparison>, ServiceError> {
    let (Some(old), Some(new)) = (
        find_revision(context, family, from).await?,
        find_revision(context, family, to).await?,
    ) else {
        return Ok(None);
    };
    let (mut before, mut after) = (old.task.clone(), new.task.clone());
    if let Some(level) = level {
        mask_pair_at(&mut before, &mut after, level);
    }
    Ok(Some(Comparison {
        diff: diff(&before, &after),
        gpu: gpu_changes(&old, &new.task),
        from: old.detail,
        to: new.detail,
    }))
}

/// A task definition's JSON text through every check before registering, in its turn: past the
/// queue's bound the request is refused as busy rather than waiting without end.
async fn checked(
    context: &ServiceContext,
    text: &str,
) -> Result<Result<ValidRequest, Vec<FieldError>>, ServiceError> {
    context
        .heavy
        .with_turn(context.schema.validate(text.to_string()))
        .await
}

/// Every check the console makes before registering, on a task definition's JSON text.
pub async fn validate(context: &ServiceContext, text: &str) -> Result<Validation, ServiceError> {
    Ok(match checked(context, text).await? {
        Ok((_, request)) => Validation::valid(&request),
        Err(errors) => Validation::invalid(errors),
    })
}

/// Where one task of the task definition `text` could go in the fleet now (in `cluster`, or
/// anywhere), or why the task definition is invalid.
pub async fn fit_check(
    context: &ServiceContext,
    text: &str,
    cluster: Option<&str>,
) -> Result<FitAnswer, ServiceError> {
    let (task, request) = match checked(context, text).await? {
        Ok(checked) => checked,
        Err(errors) => return Ok(FitAnswer::Invalid(Validation::invalid(errors))),
    };
    if request == placement::GpuRequest::None {
        return Err(ServiceError::invalid(
            "the task definition asks for no GPU; give a container a GPU resource requirement to check its fit",
        ));
    }
    let snapshot = lookup::snapshot(context)?;
    lookup::known_cluster(&snapshot, cluster)?;
    let report = fit_on(
        context,
        snapshot,
        cluster,
        request,
        needs_besides_gpus(&task),
    )
    .await?;
    Ok(FitAnswer::Fits(report))
}

/// The fit of one task on `snapshot` (in `cluster`, or anywhere), with what the clusters'
/// capacity providers would launch for it when no instance has room. Providers ECS could not
/// describe leave a note, not an error: the fit on the fleet stands.
async fn fit_on(
    context: &ServiceContext,
    snapshot: std::sync::Arc<FleetSnapshot>,
    cluster: Option<&str>,
    request: placement::GpuRequest,
    needs: placement::resources::Needs,
) -> Result<FitReport, ServiceError> {
    let clusters: Vec<String> = snapshot
        .clusters
        .iter()
        .filter(|c| cluster.is_none_or(|name| c.name == name))
        .map(|c| c.name.clone())
        .collect();
    let shape = placement::growth::Shape {
        gpu: request.clone(),
        needs: needs.clone(),
        group: "fit-check".into(),
    };
    let (placed, cluster) = (snapshot.clone(), cluster.map(str::to_string));
    let report = context
        .heavy
        .run(move || place_one(&placed, cluster.as_deref(), &request, &needs))
        .await?;
    Ok(
        match capacity::growth::launches_for_one(context, &snapshot, clusters, &shape).await {
            Ok(growth) => report.with_growth(growth),
            Err(error) => FitReport {
                growth_unread: Some(format!(
                    "what the capacity providers would launch could not be read: {}",
                    error.message()
                )),
                ..report
            },
        },
    )
}

/// What one task of `task` needs of an instance besides GPUs; a `memberOf` expression the
/// check cannot read is left out (ECS refuses it at registration).
fn needs_besides_gpus(task: &serde_json::Map<String, Value>) -> placement::resources::Needs {
    placement::resources::needs_of(task, &[]).unwrap_or_default()
}

/// Registers an edit of `family:revision` as a new revision with the change `description`,
/// after the same checks. The intent is written to the audit log before RegisterTaskDefinition
/// and the outcome after; without the intent nothing is sent. ECS's refusal comes back with its
/// code, in the answer.
pub async fn register(
    context: &ServiceContext,
    actor: &Actor,
    family: &str,
    revision: u32,
    spec: EditSpec,
    description: &str,
) -> Result<EditResult, ServiceError> {
    if let Err(message) = check_description(description) {
        return Ok(refused(vec![FieldError {
            field: "description".into(),
            message,
            ..FieldError::default()
        }]));
    }
    let source = source_revision(context, family, revision).await?;
    let intent = AuditIntent {
        from_revision: Some(format!("{family}:{revision}")),
        description: Some(description.trim().to_string()).filter(|d| !d.is_empty()),
        ..AuditIntent::by(actor, AuditAction::Register, family)
    };
    let owner = family_owner(context, family).await?;
    let owner = owner.as_deref();
    let what = format!("Task definition family {family}");
    if let Err(reason) = context.policy.may_change(actor, owner, &what) {
        return Err(audit::refused(context, intent, ServiceError::forbidden(reason)).await);
    }
    let task = match apply(context, &source, &spec)
        .await
        .and_then(|(task, _)| described_edit(&source, task, description))
    {
        Ok(task) => task,
        Err(errors) => return Ok(refused(errors)),
    };
    if let Err(reason) = context.policy.may_edit(
        actor,
        &diff(&source.task, &task),
        (owner, tag_value(&task, &context.team_tag).as_deref()),
        &context.team_tag,
    ) {
        return Err(audit::refused(context, intent, ServiceError::forbidden(reason)).await);
    }
    // The audit log is read by every team: its diff tells what changed, not the values.
    let (mut masked_before, mut masked_after) = (source.task.clone(), task.clone());
    mask_pair_at(&mut masked_before, &mut masked_after, MaskLevel::Everything);
    let intent = AuditIntent {
        diff: serde_json::to_string(&diff(&masked_before, &masked_after)).unwrap_or_default(),
        ..intent
    };
    let audit_id = context
        .audit
        .begin(intent)
        .await
        .map_err(|error| error.with_suffix("; nothing was registered"))?;
    // The revision names its audit record, so that a registration whose answer was lost can be
    // found in ECS. From here it runs to its end, and to its outcome, whatever the request does.
    let mut task = task;
    set_audit_tag(&mut task, &audit_id);
    let owned = context.clone();
    let id = audit_id.clone();
    detached::run_to_end(context, &audit_id, async move {
        register_after_intent(&owned, task, id).await
    })
    .await
}

/// What follows a registration's intent: RegisterTaskDefinition and the outcome. A call that got
/// no answer is recorded `unknown` until a reconcile finds the revision by its audit tag.
async fn register_after_intent(
    context: &ServiceContext,
    task: Map<String, Value>,
    audit_id: String,
) -> Result<EditResult, ServiceError> {
    let (result, outcome) = match context.ecs_writes.register(task).await {
        Ok(registered) => (
            EditResult {
                registered: Some(registered.revision.clone()),
                ..EditResult::default()
            },
            AuditOutcome {
                outcome: Outcome::Registered,
                request_id: registered.request_id,
                to_revision: Some(format!(
                    "{}:{}",
                    registered.revision.family, registered.revision.revision
                )),
                ..AuditOutcome::default()
            },
        ),
        Err(ServiceError::NoAnswer { message }) => {
            let unknown = AuditOutcome {
                outcome: Outcome::Unknown,
                detail: Some(message.clone()),
                ..AuditOutcome::default()
            };
            let recorded = context.audit.finish(audit_id, unknown).await;
            return Err(match recorded {
                Ok(()) => ServiceError::no_answer(message),
                Err(error) => error.with_suffix(&format!("; and {message}")),
            });
        }
        Err(error) => (
            EditResult {
                ecs_error: Some(error.message().to_string()),
                ..EditResult::default()
            },
            AuditOutcome {
                outcome: Outcome::Refused,
                detail: Some(error.message().to_string()),
                ..AuditOutcome::default()
            },
        ),
    };
    context
        .audit
        .finish(audit_id, outcome)
        .await
        .map_err(|error| {
            error.with_suffix(match &result.registered {
                Some(_) => "; the revision was registered, but the audit log does not say so",
                None => "; nothing was registered",
            })
        })?;
    Ok(result)
}

#[cfg(test)]
mod tests;
