//! Sessions and sign-ins under way, in the console's database beside the audit log: a session
//! is kept by the SHA-256 of its id (the cookie's value), so that reading the database does not
//! give anyone a session; a sign-in under way is taken back once.

use std::time::Duration;

use sqlx::Row;

use super::proxy::SignedIn;
use crate::audit::SqlAuditLog;

/// A sign-in under way, as `/auth/login` left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingSignIn {
    pub verifier: String,
    pub nonce: String,
    pub next: String,
}

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

fn at(time: chrono::DateTime<chrono::Utc>) -> String {
    app::service::clock::rfc3339_micros(time)
}

impl SqlAuditLog {
    /// Keeps a sign-in under way; sign-ins older than ten minutes go.
    pub async fn save_sign_in(
        &self,
        state: &str,
        verifier: &str,
        nonce: &str,
        next: &str,
    ) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM sign_ins WHERE created_at < $1")
            .bind(at(
                now() - chrono::Duration::seconds(super::oidc::LOGIN_SECONDS)
            ))
            .execute(self.pool())
            .await?;
        sqlx::query(
            "INSERT INTO sign_ins (state, verifier, nonce, next, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(state)
        .bind(verifier)
        .bind(nonce)
        .bind(next)
        .bind(at(now()))
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Takes back the sign-in `state` if it is younger than `seconds`: once only.
    pub async fn take_sign_in(
        &self,
        state: &str,
        seconds: i64,
    ) -> Result<Option<PendingSignIn>, sqlx::Error> {
        let row = sqlx::query(
            "DELETE FROM sign_ins WHERE state = $1 AND created_at >= $2 RETURNING verifier, nonce, next",
        )
        .bind(state)
        .bind(at(now() - chrono::Duration::seconds(seconds)))
        .fetch_optional(self.pool())
        .await?;
        row.map(|row| {
            Ok(PendingSignIn {
                verifier: row.try_get("verifier")?,
                nonce: row.try_get("nonce")?,
                next: row.try_get("next")?,
            })
        })
        .transpose()
    }

    /// Opens a session for `person`, kept by `hash`, lasting `ttl`; expired sessions go.
    pub async fn create_session(
        &self,
        hash: &str,
        person: &SignedIn,
        ttl: Duration,
    ) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM sessions WHERE expires_at < $1")
            .bind(at(now()))
            .execute(self.pool())
            .await?;
        let ttl = chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::hours(8));
        sqlx::query(
            "INSERT INTO sessions (id_hash, subject, email, groups, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(hash)
        .bind(&person.subject)
        .bind(person.email.clone())
        .bind(serde_json::to_string(&person.groups).unwrap_or_else(|_| "[]".into()))
        .bind(at(now()))
        .bind(at(now() + ttl))
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The person of the session kept by `hash`, if it has not expired.
    pub async fn session(
        &self,
        hash: &str,
    ) -> Result<Option<(SignedIn, chrono::DateTime<chrono::Utc>)>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT subject, email, groups, expires_at FROM sessions WHERE id_hash = $1 AND expires_at > $2",
        )
        .bind(hash)
        .bind(at(now()))
        .fetch_optional(self.pool())
        .await?;
        row.map(|row| {
            let groups: String = row.try_get("groups")?;
            let expires_at: String = row.try_get("expires_at")?;
            let expires_at = chrono::DateTime::parse_from_rfc3339(&expires_at)
                .map_err(|e| sqlx::Error::Decode(Box::new(e)))?
                .with_timezone(&chrono::Utc);
            let person = SignedIn {
                subject: row.try_get("subject")?,
                email: row.try_get("email")?,
                groups: serde_json::from_str(&groups).unwrap_or_default(),
            };
            Ok((person, expires_at))
        })
        .transpose()
    }

    /// Ends the session kept by `hash`.
    pub async fn end_session(&self, hash: &str) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM sessions WHERE id_hash = $1")
            .bind(hash)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}
