//! Task definitions: families and revisions as ECS has them, joined with the services of the
//! fleet snapshot; one revision's JSON and exports; two revisions compared; a task definition
//! validated and fitted on the fleet; and an edit (the GPU form or the whole JSON) checked, then
//! registered with its audit record.

use serde_json::{Map, Value};

use crate::{
    model::{
        arn::family_of,
        audit::{AuditAction, AuditIntent, AuditOutcome, Outcome},
        fit::fit_check as place_one,
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
    service::{audit, context::ServiceContext, detached, lookup, ports::ValidRequest},
};

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
    let (cluster, needs) = (cluster.map(str::to_string), needs_besides_gpus(&task));
    let report = context
        .heavy
        .run(move || place_one(&snapshot, cluster.as_deref(), &request, &needs))
        .await?;
    Ok(FitAnswer::Fits(report))
}

/// What one task of `task` needs of an instance besides GPUs; a `memberOf` expression the
/// check cannot read is left out (ECS refuses it at registration).
fn needs_besides_gpus(task: &serde_json::Map<String, Value>) -> placement::resources::Needs {
    placement::resources::needs_of(task, &[]).unwrap_or_default()
}

/// An edit applied to its source and checked: the new request's JSON and GPU request, or what
/// to fix. Masked values of a JSON edit are put back from the source, and its family must stay.
async fn apply(
    context: &ServiceContext,
    source: &SourceRevision,
    spec: &EditSpec,
) -> Result<ValidRequest, Vec<FieldError>> {
    let text = match spec {
        EditSpec::Settings(settings) => {
            return check_edit(source, settings).map(|checked| (checked.task, checked.request))
        }
        EditSpec::Form(inputs) => {
            return check_edit(source, &parse_inputs(inputs)?)
                .map(|checked| (checked.task, checked.request))
        }
        EditSpec::Json(text) => text,
    };
    let (mut task, request) = match checked(context, text).await {
        Ok(answer) => answer?,
        Err(busy) => {
            return Err(vec![FieldError {
                message: busy.message().to_string(),
                ..FieldError::default()
            }])
        }
    };
    let family = &source.detail.family;
    let named = task
        .get("family")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if named != family {
        let at = locate(text, "family");
        return Err(vec![FieldError {
            field: "family".into(),
            message: format!(
                "The family is {named:?}, but this edit makes a revision of {family:?}; keep the family, or edit the other family from its own page."
            ),
            line: at.map(|(line, _)| line),
            column: at.map(|(_, column)| column),
            ..FieldError::default()
        }]);
    }
    let still_masked = unmask_secrets(&mut task, &source.task);
    if let Some(refusal) = context
        .policy
        .gpu_variables_refused(&gpu_variables_set(&source.task, &task))
    {
        let at = locate(text, "environment");
        return Err(vec![FieldError {
            field: "containerDefinitions.environment".into(),
            message: refusal,
            line: at.map(|(line, _)| line),
            column: at.map(|(_, column)| column),
            ..FieldError::default()
        }]);
    }
    if !still_masked.is_empty() {
        return Err(still_masked
            .into_iter()
            .map(|place| FieldError {
                field: "containerDefinitions".into(),
                message: format!(
                    "{place} is masked and revision {} has no value for it; type its value.",
                    source.detail.revision
                ),
                ..FieldError::default()
            })
            .collect());
    }
    Ok((task, request))
}

/// Checks an edit of `family:revision`: ECS's rules, the changes, the diff, where one task
/// would fit in `cluster` (or the whole fleet), and the new revision's exports (secret-looking
/// values masked unless `reveal`).
pub async fn check(
    context: &ServiceContext,
    actor: &Actor,
    family: &str,
    revision: u32,
    spec: EditSpec,
    cluster: Option<String>,
    reveal: bool,
) -> Result<EditCheck, ServiceError> {
    let source = source_revision(context, family, revision).await?;
    let owner = family_owner(context, family).await?;
    let owner = owner.as_deref();
    // A check answers with the edit's diff, so it would confirm a guessed masked value by an
    // empty one: only those who may change the family check edits of it.
    let what = format!("Task definition family {family}");
    context
        .policy
        .may_change(actor, owner, &format!("Checking an edit of {what}"))
        .map_err(ServiceError::forbidden)?;
    check_reveal(context, actor, owner, reveal)?;
    let (task, request) = match apply(context, &source, &spec).await {
        Ok(checked) => checked,
        Err(errors) => {
            return Ok(EditCheck {
                errors,
                ..EditCheck::default()
            })
        }
    };
    let cluster = cluster.filter(|c| !c.trim().is_empty());
    let fit = if request == placement::GpuRequest::None {
        None
    } else {
        let snapshot = context.fleet.state().snapshot;
        if let (Some(snapshot), Some(name)) = (&snapshot, &cluster) {
            if let Err(missing) = lookup::cluster(snapshot, name) {
                return Ok(EditCheck {
                    errors: vec![FieldError {
                        field: "cluster".into(),
                        message: format!("{missing}; pick one of them."),
                        ..FieldError::default()
                    }],
                    ..EditCheck::default()
                });
            }
        }
        let needs = needs_besides_gpus(&task);
        match snapshot {
            Some(snapshot) => {
                let (cluster, request) = (cluster.clone(), request.clone());
                Some(
                    context
                        .heavy
                        .run(move || place_one(&snapshot, cluster.as_deref(), &request, &needs))
                        .await?,
                )
            }
            None => None,
        }
    };
    let register = Permission::of(
        context
            .policy
            .may_change(actor, owner, &what)
            .and_then(|()| {
                context.policy.may_edit(
                    actor,
                    &diff(&source.task, &task),
                    (owner, tag_value(&task, &context.team_tag).as_deref()),
                    &context.team_tag,
                )
            }),
    );
    let (mut before, mut after) = (source.task.clone(), task.clone());
    let mut exported = task.clone();
    let masked = if reveal {
        0
    } else {
        let level = mask_level(context, actor, owner);
        mask_pair_at(&mut before, &mut after, level);
        mask_at(&mut exported, level)
    };
    Ok(EditCheck {
        register,
        errors: Vec::new(),
        changes: gpu_changes(&source, &task),
        diff: diff(&before, &after),
        fit,
        export_json: cli_json(&exported),
        cloudformation: cloudformation_yaml(&exported),
        masked,
    })
}

/// An edit's answer that refuses it with `errors`.
fn refused(errors: Vec<FieldError>) -> EditResult {
    EditResult {
        errors,
        ..EditResult::default()
    }
}

/// The edit `task` of `source` with the change `description`, or why it cannot be registered:
/// an edit that changes nothing is refused.
fn described_edit(
    source: &SourceRevision,
    mut task: Map<String, Value>,
    description: &str,
) -> Result<Map<String, Value>, Vec<FieldError>> {
    let mut unchanged = source.task.clone();
    set_change_tag(&mut unchanged, "").ok();
    let mut compared = task.clone();
    set_change_tag(&mut compared, "").ok();
    if compared == unchanged {
        return Err(vec![FieldError {
            field: "edits".into(),
            message: format!(
                "Nothing changes: the edit is the same as revision {}. Change a setting first.",
                source.detail.revision
            ),
            ..FieldError::default()
        }]);
    }
    set_change_tag(&mut task, description).map_err(|message| {
        vec![FieldError {
            field: "description".into(),
            message,
            ..FieldError::default()
        }]
    })?;
    Ok(task)
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
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::{model::task_definition::EditInput, service::fake::Fake};

    fn mps(memory: &str) -> EditSpec {
        EditSpec::Form(vec![EditInput {
            container: "model".into(),
            kind: "mps".into(),
            memory_mib: memory.into(),
            ..EditInput::default()
        }])
    }

    /// `edits` of revision 2 of family `embed`, registered by a deployer of its team.
    async fn register_embed(
        fake: &std::sync::Arc<Fake>,
        edits: EditSpec,
        description: &str,
    ) -> Result<EditResult, ServiceError> {
        register(
            &fake.context(),
            &Fake::deployer(),
            "embed",
            2,
            edits,
            description,
        )
        .await
    }

    #[tokio::test]
    async fn a_registration_is_audited_around_the_ecs_call() {
        let fake = Fake::new();
        let answer = register_embed(&fake, mps("6144"), "more memory")
            .await
            .expect("answered");
        assert_eq!(answer.registered.map(|r| r.revision), Some(3));
        let calls = fake.calls();
        assert_eq!(
            calls,
            ["audit.begin", "ecs.register", "audit.finish registered"],
            "intent first, outcome after"
        );
        let record = &fake.records()[0];
        assert_eq!(record.action, AuditAction::Register);
        assert_eq!(record.to_revision.as_deref(), Some("embed:3"));
    }

    #[tokio::test]
    async fn an_edit_that_breaks_a_rule_or_changes_nothing_sends_nothing() {
        let fake = Fake::new();
        let context = fake.context();
        let broken = register(&context, &Fake::deployer(), "embed", 2, mps("lots"), "")
            .await
            .expect("answered");
        assert_eq!(broken.errors[0].field, "memory_mib");
        let same = register(&context, &Fake::deployer(), "embed", 2, mps("4096"), "")
            .await
            .expect("answered");
        assert!(
            same.errors[0].message.starts_with("Nothing changes"),
            "{same:?}"
        );
        assert!(fake.calls().is_empty(), "{:?}", fake.calls());
        assert_eq!(
            register(&context, &Fake::deployer(), "embed", 9, mps("1"), "")
                .await
                .expect_err("no such revision")
                .status(),
            404
        );
        assert_eq!(
            register(&context, &Fake::deployer(), "bad name", 1, mps("1"), "")
                .await
                .expect_err("no such family")
                .status(),
            400
        );
    }

    #[tokio::test]
    async fn a_registration_the_audit_log_cannot_record_is_an_error() {
        let fake = Fake::new();
        fake.fail_begin.store(true, Ordering::SeqCst);
        let error = register_embed(&fake, mps("6144"), "")
            .await
            .expect_err("no intent");
        assert!(
            error.message().ends_with("nothing was registered"),
            "{error}"
        );
        assert!(!fake.calls().iter().any(|c| c == "ecs.register"));

        let fake = Fake::new();
        fake.fail_finish.store(true, Ordering::SeqCst);
        let error = register_embed(&fake, mps("6144"), "")
            .await
            .expect_err("no outcome");
        assert!(
            error.message().contains("the revision was registered"),
            "says what happened: {error}"
        );
    }

    #[tokio::test]
    async fn ecs_refusing_a_registration_is_answered_and_audited() {
        let fake = Fake::new();
        fake.refuse_writes.store(true, Ordering::SeqCst);
        let answer = register_embed(&fake, mps("6144"), "")
            .await
            .expect("answered");
        assert!(answer
            .ecs_error
            .is_some_and(|e| e.starts_with("ECS refused RegisterTaskDefinition")));
        assert_eq!(fake.records()[0].outcome, Outcome::Refused);
    }

    #[tokio::test]
    async fn another_teams_deployer_is_refused_and_the_attempt_audited() {
        let fake = Fake::new();
        let error = register(
            &fake.context(),
            &Fake::outsider(),
            "embed",
            2,
            mps("6144"),
            "",
        )
        .await
        .expect_err("another team's family");
        assert_eq!(error.status(), 403);
        assert!(
            error.message().contains("belongs to team search"),
            "{error}"
        );
        assert!(!fake.calls().iter().any(|c| c == "ecs.register"));
        let record = &fake.records()[0];
        assert_eq!(record.outcome, Outcome::Refused);
        assert_eq!(record.actor, "bo");
        assert_eq!(
            record.actor_role,
            Some(crate::model::identity::Role::Deployer)
        );
    }

    #[tokio::test]
    async fn a_deployer_may_not_widen_what_the_task_may_do() {
        let fake = Fake::new();
        let mut task = fake.revision_json(2);
        task["taskRoleArn"] = serde_json::json!("arn:aws:iam::1:role/everything");
        let error = register_embed(&fake, EditSpec::Json(task.to_string()), "")
            .await
            .expect_err("a role is an admin's");
        assert_eq!(error.status(), 403);
        assert!(error.message().contains("taskRoleArn"), "{error}");
        assert!(!fake.calls().iter().any(|c| c == "ecs.register"));
        let checked = check(
            &fake.context(),
            &Fake::deployer(),
            "embed",
            2,
            EditSpec::Json(task.to_string()),
            None,
            false,
        )
        .await
        .expect("checked");
        assert!(
            !checked.register.allowed,
            "the check says so before registering"
        );
    }

    #[tokio::test]
    async fn revealing_needs_the_owning_team() {
        let fake = Fake::new();
        let context = fake.context();
        let shown = revision(&context, &Fake::deployer(), "embed", 2, true)
            .await
            .expect("revealed")
            .expect("exists");
        assert!(shown.reveal.allowed && shown.register.allowed);
        let error = revision(&context, &Fake::outsider(), "embed", 2, true)
            .await
            .expect_err("not their team");
        assert_eq!(error.status(), 403);
        let masked = revision(&context, &Fake::outsider(), "embed", 2, false)
            .await
            .expect("masked is fine")
            .expect("exists");
        assert!(!masked.reveal.allowed && !masked.register.allowed);
        assert!(masked
            .register
            .reason
            .is_some_and(|r| r.contains("team search")));
    }
}
