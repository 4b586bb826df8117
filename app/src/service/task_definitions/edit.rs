//! An edit of a task definition checked: applied to its source, validated against ECS's schema and
//! the placement rules, the team rules and the policy, with the diff and the fit on the fleet.

use super::*;

/// An edit applied to its source and checked: the new request's JSON and GPU request, or what
/// to fix. Masked values of a JSON edit are put back from the source, and its family must stay.
pub(super) async fn apply(
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
        if let Some(unknown) = unknown_cluster(snapshot.as_deref(), cluster.as_deref()) {
            return Ok(unknown);
        }
        match snapshot {
            Some(snapshot) => Some(
                fit_on(
                    context,
                    snapshot,
                    cluster.as_deref(),
                    request.clone(),
                    needs_besides_gpus(&task),
                )
                .await?,
            ),
            None => None,
        }
    };
    let register = may_register(context, actor, owner, &what, (&source.task, &task));
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

/// Whether `actor` may register the edit (`before`, `after`): the family is theirs to change,
/// and the change itself passes the policy's rules for edits.
fn may_register(
    context: &ServiceContext,
    actor: &Actor,
    owner: Option<&str>,
    what: &str,
    (before, after): (
        &serde_json::Map<String, Value>,
        &serde_json::Map<String, Value>,
    ),
) -> Permission {
    Permission::of(
        context
            .policy
            .may_change(actor, owner, what)
            .and_then(|()| {
                context.policy.may_edit(
                    actor,
                    &diff(before, after),
                    (owner, tag_value(after, &context.team_tag).as_deref()),
                    &context.team_tag,
                )
            }),
    )
}

/// The check's answer when it names a cluster the fleet does not have.
fn unknown_cluster(snapshot: Option<&FleetSnapshot>, cluster: Option<&str>) -> Option<EditCheck> {
    let missing = lookup::cluster(snapshot?, cluster?).err()?;
    Some(EditCheck {
        errors: vec![FieldError {
            field: "cluster".into(),
            message: format!("{missing}; pick one of them."),
            ..FieldError::default()
        }],
        ..EditCheck::default()
    })
}

/// An edit's answer that refuses it with `errors`.
pub(super) fn refused(errors: Vec<FieldError>) -> EditResult {
    EditResult {
        errors,
        ..EditResult::default()
    }
}

/// The edit `task` of `source` with the change `description`, or why it cannot be registered:
/// an edit that changes nothing is refused.
pub(super) fn described_edit(
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
