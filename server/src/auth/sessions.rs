//! Sessions, in the console's database beside the audit log: a session is kept by the SHA-256 of
//! its id (the cookie's value), so that reading the database does not give anyone a session.
//! Beside them, the console's own keys (the one that signs a sign-in under way).

use std::time::Duration;

use sqlx::Row;

use super::proxy::SignedIn;
use crate::audit::SqlAuditLog;

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

fn at(time: chrono::DateTime<chrono::Utc>) -> String {
    app::service::clock::rfc3339_micros(time)
}

impl SqlAuditLog {
    /// The console's key `name`: 32 random bytes made the first time any replica asks, the same
    /// for every replica sharing the database after that.
    pub async fn console_key(&self, name: &str) -> Result<Vec<u8>, sqlx::Error> {
        let mut fresh = [0u8; 32];
        aws_lc_rs::rand::fill(&mut fresh)
            .map_err(|_| sqlx::Error::Protocol("the system's random source failed".into()))?;
        let hex: String = fresh.iter().map(|b| format!("{b:02x}")).collect();
        sqlx::query(
            "INSERT INTO console_keys (name, key, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(&hex)
        .bind(at(now()))
        .execute(self.pool())
        .await?;
        let row = sqlx::query("SELECT key FROM console_keys WHERE name = $1")
            .bind(name)
            .fetch_one(self.pool())
            .await?;
        let kept: String = row.try_get("key")?;
        (0..kept.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(kept.get(i..i + 2).unwrap_or("zz"), 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| sqlx::Error::Decode(format!("the console key {name:?} is not hex").into()))
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
