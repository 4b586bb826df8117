//! The people the sign-in named, as it last named them, in the console's database: an approval
//! re-checks its requester's role and teams with the groups of their latest sign-in. A request
//! writes only when the person's groups or e-mail differ from what this replica last wrote, or
//! when that was a while ago, so a busy console does not write on every request.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use app::{
    model::{identity::Actor, ServiceError},
    service::ports::{BoxFuture, People, SeenPerson},
};
use sqlx::Row;

use crate::audit::SqlAuditLog;

/// How often a person seen again with the same groups is written again.
const REWRITE_AFTER: Duration = Duration::from_secs(300);

/// People written at most in this replica's memory; past it, the memory starts again.
const REMEMBERED: usize = 10_000;

/// What a replica last wrote of a person: their e-mail and groups, and when.
struct Written {
    email: Option<String>,
    groups: Vec<String>,
    at: Instant,
}

/// The people store over the audit log's database.
pub struct SqlPeople {
    log: SqlAuditLog,
    /// What this replica last wrote, by subject.
    written: Mutex<HashMap<String, Written>>,
}

impl SqlPeople {
    pub fn new(log: SqlAuditLog) -> SqlPeople {
        SqlPeople {
            log,
            written: Mutex::default(),
        }
    }

    /// Whether `actor` needs writing: new to this replica, changed, or written long ago.
    fn stale(&self, actor: &Actor) -> bool {
        let written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        written.get(&actor.subject).is_none_or(|said| {
            said.email != actor.email
                || said.groups != actor.groups
                || said.at.elapsed() >= REWRITE_AFTER
        })
    }

    async fn write(&self, actor: &Actor) -> Result<(), sqlx::Error> {
        let groups = serde_json::to_string(&actor.groups).unwrap_or_else(|_| "[]".into());
        sqlx::query(
            "INSERT INTO people (subject, email, groups, auth_mode, seen_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (subject) DO UPDATE SET email = $2, groups = $3, auth_mode = $4, seen_at = $5",
        )
        .bind(&actor.subject)
        .bind(actor.email.clone())
        .bind(groups)
        .bind(actor.auth.as_str())
        .bind(app::service::clock::rfc3339_micros(chrono::Utc::now()))
        .execute(self.log.pool())
        .await?;
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if written.len() >= REMEMBERED {
            written.clear();
        }
        written.insert(
            actor.subject.clone(),
            Written {
                email: actor.email.clone(),
                groups: actor.groups.clone(),
                at: Instant::now(),
            },
        );
        Ok(())
    }

    async fn read(&self, subject: &str) -> Result<Option<SeenPerson>, sqlx::Error> {
        let row =
            sqlx::query("SELECT subject, email, groups, seen_at FROM people WHERE subject = $1")
                .bind(subject)
                .fetch_optional(self.log.pool())
                .await?;
        row.map(|row| {
            let groups: String = row.try_get("groups")?;
            Ok(SeenPerson {
                subject: row.try_get("subject")?,
                email: row.try_get("email")?,
                groups: serde_json::from_str(&groups).unwrap_or_default(),
                seen_at: row.try_get("seen_at")?,
            })
        })
        .transpose()
    }
}

impl People for SqlPeople {
    fn seen(&self, actor: &Actor) -> BoxFuture<'_, Result<(), ServiceError>> {
        let actor = actor.clone();
        Box::pin(async move {
            if !self.stale(&actor) {
                return Ok(());
            }
            self.write(&actor).await.map_err(|error| {
                ServiceError::unavailable(format!(
                    "the console's database could not note who signed in: {error}"
                ))
            })
        })
    }

    fn latest(&self, subject: String) -> BoxFuture<'_, Result<Option<SeenPerson>, ServiceError>> {
        Box::pin(async move {
            self.read(&subject).await.map_err(|error| {
                ServiceError::unavailable(format!(
                    "the console's database could not say who {subject} is now: {error}"
                ))
            })
        })
    }
}
