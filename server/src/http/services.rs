//! `GET /api/v1/services` and `GET /api/v1/services/{cluster}/{service}/pre-check`: services
//! with their revision, counts and deployment configuration, and the capacity pre-check of a
//! rollout.

use axum::{
    extract::{rejection::QueryRejection, Path, Query, State},
    Json,
};
use serde::Deserialize;

use app::{
    server_fns::deployments::{PreCheck, ServiceRow},
    ssr::deployments,
};

use crate::{error::AppError, state::AppState};

/// `?cluster=` limits the list to one cluster.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServicesQuery {
    pub cluster: Option<String>,
}

fn parameters<T>(query: Result<Query<T>, QueryRejection>, known: &str) -> Result<T, AppError> {
    query.map(|Query(q)| q).map_err(|rejection| {
        AppError::BadRequest(format!(
            "{}; the parameters are {known}",
            rejection.body_text()
        ))
    })
}

/// `GET /api/v1/services[?cluster=]`: every service of the fleet snapshot.
pub async fn list(
    State(state): State<AppState>,
    query: Result<Query<ServicesQuery>, QueryRejection>,
) -> Result<Json<Vec<ServiceRow>>, AppError> {
    let query = parameters(query, "cluster")?;
    Ok(Json(
        deployments::services(&state.console, query.cluster.as_deref()).await?,
    ))
}

/// `?revision=` is a revision number of the service's family, or `family:revision`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreCheckQuery {
    pub revision: Option<String>,
}

/// The revision number a `revision` parameter names, refusing another family's.
fn revision_of(text: &str, family: &str) -> Result<u32, AppError> {
    let (named, number) = match text.rsplit_once(':') {
        Some((named, number)) => (Some(named), number),
        None => (None, text),
    };
    if let Some(named) = named.filter(|named| *named != family) {
        return Err(AppError::BadRequest(format!(
            "{text:?} is a revision of {named}, but the service runs {family}; roll out a revision of {family}"
        )));
    }
    number
        .parse::<u32>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| {
            AppError::BadRequest(format!(
                "{text:?} is not a revision: give a number from 1, or {family}:<number>"
            ))
        })
}

/// `GET /api/v1/services/{cluster}/{service}/pre-check[?revision=]`: the rolling update of the
/// revision (the family's newest active one by default) simulated on the fleet snapshot with
/// the service's deployment configuration, and the diff against what runs now.
pub async fn pre_check(
    State(state): State<AppState>,
    Path((cluster, service)): Path<(String, String)>,
    query: Result<Query<PreCheckQuery>, QueryRejection>,
) -> Result<Json<PreCheck>, AppError> {
    let query = parameters(query, "revision")?;
    let revision = match query.revision {
        Some(text) => {
            let rows = deployments::services(&state.console, Some(&cluster)).await?;
            let family = rows
                .iter()
                .find(|row| row.service.name == service)
                .map(|row| row.family.clone())
                .ok_or_else(|| {
                    AppError::NotFound(format!(
                        "cluster {cluster} has no service {service:?}; GET /api/v1/services?cluster={cluster} lists them"
                    ))
                })?;
            Some(revision_of(&text, &family)?)
        }
        None => None,
    };
    Ok(Json(
        deployments::pre_check(&state.console, &cluster, &service, revision).await?,
    ))
}

#[cfg(test)]
mod tests {
    use super::revision_of;

    #[test]
    fn a_revision_is_a_number_of_the_services_family() {
        assert_eq!(revision_of("3", "embed").ok(), Some(3));
        assert_eq!(revision_of("embed:4", "embed").ok(), Some(4));
        assert!(revision_of("other:4", "embed")
            .err()
            .is_some_and(|e| e.to_string().contains("a revision of other")));
        assert!(revision_of("0", "embed").is_err());
        assert!(revision_of("latest", "embed").is_err());
    }
}
