//! The demo's policy and its first requests. On the embedded emulator's `demo` scenario, with no
//! --policy and no sign-in, the console runs with the policy in `demo/policy.toml` (teams, their
//! budgets and approvers; the local user an admin) so that the approvals page, the budgets and the
//! team views have something true to show. Once the first snapshot after the demo's past is in,
//! members of the demo's teams make requests through the use cases every page calls — one waits
//! for approval, one is approved and sent, one is approved after the service changed and is
//! refused — unless the audit log already has requests (a restart keeps what it had).

use std::{sync::Arc, time::Duration};

use app::{
    model::{
        approval::ApprovalState,
        deployment::ScaleRequest,
        identity::{Actor, AuthMode},
        policy::Policy,
        ServiceError,
    },
    service::{approvals, context::ServiceContext, deployments, ports::ApprovalQuery},
};

use crate::{config::ServeArgs, cost_history::SqlCostHistory};

/// The demo's policy file.
pub const POLICY_TOML: &str = include_str!("demo/policy.toml");

/// The demo's policy.
pub fn policy() -> Result<Policy, String> {
    crate::auth::policy::parse(POLICY_TOML).map_err(|e| format!("the demo's policy: {e}"))
}

/// Whether the console runs the demo's policy: the embedded emulator's `demo` scenario, nobody
/// signing in, no policy of the user's own, and --demo-policy on.
pub fn applies(args: &ServeArgs, source: &app::model::FleetSource) -> bool {
    let demo =
        matches!(source, app::model::FleetSource::Emulator { scenario, .. } if scenario == "demo");
    demo && args.access.demo_policy == "on"
        && args.access.policy.is_none()
        && args.access.auth == crate::config::AuthFlag::None
}

/// One member of a demo team, as a sign-in would name them.
fn member(policy: &Policy, name: &str, groups: &[&str]) -> Actor {
    let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    Actor {
        subject: format!("{name}@example.com"),
        email: Some(format!("{name}@example.com")),
        role: policy.role_for(&groups).unwrap_or_default(),
        teams: policy.teams_for(&groups),
        groups,
        auth: AuthMode::Proxy,
        ..Actor::default()
    }
}

/// How long the requests wait for the first snapshot after the demo's past (its replay takes
/// minutes on a slow machine).
const WAIT: Duration = Duration::from_secs(1800);

/// Makes the demo's requests in the background once the fleet has been read after the demo's
/// past was replayed; says in the log what was made, or why not.
pub fn spawn(context: ServiceContext, history: Arc<SqlCostHistory>) {
    tokio::spawn(async move {
        if let Err(why) = ready(&context, &history).await {
            tracing::warn!("the demo's requests for approval were not made: {why}");
            return;
        }
        match seed(&context).await {
            Ok(0) => tracing::info!("the audit log has requests already; the demo adds none"),
            Ok(made) => tracing::info!(made, "the demo's requests for approval are on /approvals"),
            Err(error) => {
                tracing::warn!("the demo's requests for approval were not all made: {error}")
            }
        }
    });
}

/// Waits until the demo's past is replayed and the fleet read after it.
async fn ready(context: &ServiceContext, history: &SqlCostHistory) -> Result<(), String> {
    use app::service::ports::CostHistory as _;
    let started = std::time::Instant::now();
    let mut replayed_at = None;
    while started.elapsed() < WAIT {
        match (history.replaying(), replayed_at) {
            (Some(_), _) => replayed_at = None,
            (None, None) => replayed_at = Some(chrono::Utc::now()),
            (None, Some(at)) => {
                if context
                    .fleet
                    .state()
                    .taken_at
                    .is_some_and(|taken| taken > at)
                {
                    return Ok(());
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(format!(
        "the fleet was not read within {} s of the start",
        WAIT.as_secs()
    ))
}

/// A scale of `service` on inference-prod from `from` to `to` tasks, as `who`'s.
async fn scale(
    context: &ServiceContext,
    who: &Actor,
    service: &str,
    (from, to): (u32, u32),
    why: &str,
) -> Result<Option<String>, ServiceError> {
    context.people.seen(who).await?;
    let answer = deployments::scale(
        context,
        who,
        "inference-prod",
        service,
        ScaleRequest {
            desired: to,
            expected_desired: from,
            expected_revision: None,
            description: why.into(),
        },
    )
    .await?;
    Ok(answer.approval)
}

/// The demo's requests, made as its teams' members; how many were made (none when the audit log
/// has requests already).
pub async fn seed(context: &ServiceContext) -> Result<usize, ServiceError> {
    let (any, total) = context
        .approvals
        .list(ApprovalQuery {
            limit: 1,
            ..ApprovalQuery::default()
        })
        .await?;
    if total > 0 || !any.is_empty() {
        return Ok(0);
    }
    waiting(context).await?;
    approved(context).await?;
    refused(context).await?;
    Ok(3)
}

/// A deployer of `team`'s group, and a lead who approves for `leads`.
fn engineer(context: &ServiceContext, name: &str, team: &str) -> Actor {
    member(&context.policy, name, &["ml-engineers", team])
}

fn lead(context: &ServiceContext, name: &str, leads: &str) -> Actor {
    member(&context.policy, name, &["team-leads", leads])
}

/// Why a scale the demo expects to wait was sent instead.
fn within(what: &str) -> ServiceError {
    ServiceError::conflict(format!(
        "{what} was within its team's budget, so no request was made; the demo's fleet is not what its policy expects"
    ))
}

/// Waiting: search wants embed-api at 12 tasks for a launch, past its 72 GiB.
async fn waiting(context: &ServiceContext) -> Result<String, ServiceError> {
    let ben = engineer(context, "ben", "search-eng");
    let why = "Launch of the new ranking on Monday: about 50 % more queries for two weeks.";
    scale(context, &ben, "embed-api", (8, 12), why)
        .await?
        .ok_or_else(|| within("embed-api at 12 tasks"))
}

/// Approved and sent: vision's ocr at 9 tasks.
async fn approved(context: &ServiceContext) -> Result<(), ServiceError> {
    let cleo = engineer(context, "cleo", "vision-eng");
    let why = "Invoice backlog from the quarter's close.";
    let ocr = scale(context, &cleo, "ocr", (6, 9), why)
        .await?
        .ok_or_else(|| within("ocr at 9 tasks"))?;
    let dev = lead(context, "dev", "vision-leads");
    context.people.seen(&dev).await?;
    let note = "Fine until the backlog is gone; scale back after.";
    approvals::approve(context, &dev, &ocr, note).await?;
    Ok(())
}

/// Refused: speech asks for asr-stream at 6 tasks; a colleague scales it to 3 before the
/// approval, so the approval finds another count than the one asked from and sends nothing.
async fn refused(context: &ServiceContext) -> Result<(), ServiceError> {
    let eli = engineer(context, "eli", "speech-eng");
    let why = "Two new languages in the live captions.";
    let asr = scale(context, &eli, "asr-stream", (4, 6), why)
        .await?
        .ok_or_else(|| within("asr-stream at 6 tasks"))?;
    let fay = engineer(context, "fay", "speech-eng");
    let why = "Night traffic is low; one task less until the morning.";
    scale(context, &fay, "asr-stream", (4, 3), why).await?;
    let gus = lead(context, "gus", "speech-leads");
    context.people.seen(&gus).await?;
    match approvals::approve(context, &gus, &asr, "OK for the languages.").await {
        Err(_) => Ok(()),
        Ok(request) if request.state == ApprovalState::Refused => Ok(()),
        Ok(request) => Err(ServiceError::conflict(format!(
            "the asr-stream request was {} rather than refused",
            request.state
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AuthFlag;
    use app::model::FleetSource;

    fn demo() -> FleetSource {
        FleetSource::Emulator {
            endpoint: "http://127.0.0.1:1".into(),
            scenario: "demo".into(),
        }
    }

    fn on() -> ServeArgs {
        let mut args = ServeArgs::default();
        args.access.demo_policy = "on".into();
        args
    }

    #[test]
    fn the_demo_policy_reads_and_names_the_demo_teams() {
        let policy = policy().expect("the demo's policy reads");
        let teams: Vec<&str> = policy.budgets.iter().map(|b| b.team.as_str()).collect();
        assert_eq!(teams, ["search", "vision", "speech", "research"]);
        let ben = member(&policy, "ben", &["ml-engineers", "search-eng"]);
        assert_eq!(ben.role, app::model::identity::Role::Deployer);
        assert_eq!(ben.teams, ["search"]);
        let dev = member(&policy, "dev", &["team-leads", "vision-leads"]);
        assert!(policy.may_approve(&dev, "vision", "inference-prod").is_ok());
        assert!(policy
            .may_approve(&dev, "search", "inference-prod")
            .is_err());
    }

    #[test]
    fn only_the_demo_without_a_policy_or_a_sign_in_runs_it() {
        assert!(applies(&on(), &demo()));
        let mut own = on();
        own.access.policy = Some("policy.toml".into());
        assert!(
            !applies(&own, &demo()),
            "a policy of the user's own replaces it"
        );
        let mut signed = on();
        signed.access.auth = AuthFlag::Proxy;
        assert!(!applies(&signed, &demo()));
        let mut off = on();
        off.access.demo_policy = "off".into();
        assert!(!applies(&off, &demo()));
        let large = FleetSource::Emulator {
            endpoint: String::new(),
            scenario: "large".into(),
        };
        assert!(!applies(&on(), &large));
        let aws = FleetSource::Aws {
            region: "us-east-1".into(),
        };
        assert!(!applies(&on(), &aws));
    }
}
