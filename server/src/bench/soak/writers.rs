//! The soak's writers: for each team a deployer who scales, registers and deploys, rolls back
//! and restarts the team's services every few seconds (some hanging up mid-request), and a lead
//! who approves or rejects the team's requests past its budget.

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use rand::{Rng as _, SeedableRng as _};
use serde_json::{json, Value};

use super::{http::Person, load::Shared};

/// The writes' tally.
#[derive(Default)]
pub struct Writes {
    /// Answers by what was done and status.
    pub answers: BTreeMap<(&'static str, u16), u64>,
    /// Writes whose client hung up before the answer, on purpose.
    pub hung_up: u64,
    /// Writes that got no answer (the console down, or the connection broke).
    pub no_answer: u64,
    /// Examples of 5xx answers.
    pub errors: Vec<String>,
}

impl Writes {
    pub fn total(&self) -> u64 {
        self.answers.values().sum::<u64>() + self.hung_up + self.no_answer
    }
}

/// What a writer knows to act with.
pub struct Writer {
    pub shared: Arc<Shared>,
    pub writes: Arc<Mutex<Writes>>,
    /// Writes in flight now, for the kill to land mid-write.
    pub in_flight: Arc<AtomicUsize>,
}

impl Writer {
    /// A POST, hung up after a few milliseconds one time in ten.
    async fn post(
        &self,
        what: &'static str,
        person: &Person,
        path: &str,
        body: &Value,
        rng: &mut rand::rngs::StdRng,
    ) -> Option<Value> {
        let url = format!("{}{path}", self.shared.base);
        let hang_up = rng
            .random_bool(0.1)
            .then(|| Duration::from_millis(rng.random_range(2..150)));
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let sent = self.shared.http.post(&url, person, body);
        let answer = match hang_up {
            Some(after) => tokio::time::timeout(after, sent).await.ok(),
            None => Some(sent.await),
        };
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let mut writes = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        match answer {
            None => {
                writes.hung_up += 1;
                None
            }
            Some(Err(_)) => {
                writes.no_answer += 1;
                None
            }
            Some(Ok(answer)) => {
                *writes.answers.entry((what, answer.status)).or_default() += 1;
                if answer.status >= 500 && writes.errors.len() < 10 {
                    let text: String = String::from_utf8_lossy(&answer.body)
                        .chars()
                        .take(300)
                        .collect();
                    writes
                        .errors
                        .push(format!("{what} {path}: {} {text}", answer.status));
                }
                (answer.status < 300).then(|| answer.json()).flatten()
            }
        }
    }

    async fn get(&self, person: &Person, path: &str) -> Option<Value> {
        let answer = self
            .shared
            .http
            .get(&format!("{}{path}", self.shared.base), Some(person))
            .await
            .ok()?;
        (answer.status == 200).then(|| answer.json()).flatten()
    }

    /// Waits 1 to 4 seconds; whether the run goes on.
    async fn pause(&self, rng: &mut rand::rngs::StdRng, from: u64, to: u64) -> bool {
        let mut stop = self.shared.stop.clone();
        let wait = Duration::from_millis(rng.random_range(from..to));
        tokio::select! {
            _ = tokio::time::sleep(wait) => !self.shared.stopped(),
            _ = stop.changed() => false,
        }
    }

    /// A team's deployer, acting on the team's services until the run stops.
    pub async fn deployer(self, team: String, seed: u64) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let person = Person::new(format!("{team}-dev"), format!("soak-deployers,{team}-eng"));
        let mine: Vec<_> = self
            .shared
            .services
            .iter()
            .filter(|s| s.3 == team)
            .cloned()
            .collect();
        if mine.is_empty() {
            return;
        }
        while self.pause(&mut rng, 1_000, 4_000).await {
            if self.shared.down() {
                continue;
            }
            let (cluster, service, family, _) = &mine[rng.random_range(0..mine.len())];
            let Some(now) = self.service_now(&person, cluster, service).await else {
                continue;
            };
            let (desired, revision) = now;
            let path = format!("/api/v1/services/{cluster}/{service}");
            let roll = rng.random_range(0..100);
            if roll < 55 {
                // Up or down by one; up past the team's budget becomes a request.
                let to = if desired <= 1 || roll >= 40 {
                    desired + 1
                } else {
                    desired - 1
                };
                let body = json!({"desired": to, "expected_desired": desired, "description": "soak: scale"});
                self.post("scale", &person, &format!("{path}/scale"), &body, &mut rng)
                    .await;
            } else if roll < 75 {
                self.register_and_deploy(&person, family, &path, revision, &mut rng)
                    .await;
            } else if roll < 87 && revision > 1 {
                let body = json!({"revision": revision - 1, "expected_revision": revision, "force": true, "description": "soak: roll back"});
                self.post(
                    "rollback",
                    &person,
                    &format!("{path}/rollback"),
                    &body,
                    &mut rng,
                )
                .await;
            } else {
                let body = json!({"expected_revision": revision, "force": true, "description": "soak: restart"});
                self.post(
                    "restart",
                    &person,
                    &format!("{path}/restart"),
                    &body,
                    &mut rng,
                )
                .await;
            }
        }
    }

    /// A new revision of `family` registered, then deployed to the service at `path`.
    async fn register_and_deploy(
        &self,
        person: &Person,
        family: &str,
        path: &str,
        revision: u64,
        rng: &mut rand::rngs::StdRng,
    ) {
        let Some(edit) = self.edit(person, family).await else {
            return;
        };
        let registered = self
            .post(
                "register",
                person,
                &format!("/api/v1/task-definitions/{family}/{revision}/register"),
                &edit,
                rng,
            )
            .await
            .and_then(|a| a.get("registered").and_then(Value::as_u64));
        if let Some(new) = registered {
            let body = json!({"revision": new, "expected_revision": revision, "force": rng.random_bool(0.5), "description": "soak: deploy"});
            self.post("deploy", person, &format!("{path}/deploy"), &body, rng)
                .await;
        }
    }

    /// The service's desired count and running revision, as the console reads them.
    async fn service_now(
        &self,
        person: &Person,
        cluster: &str,
        service: &str,
    ) -> Option<(u64, u64)> {
        let all = self
            .get(person, &format!("/api/v1/services?cluster={cluster}"))
            .await?;
        let found = all
            .as_array()?
            .iter()
            .find(|s| s["service"]["name"] == service)?;
        Some((
            found["service"]["desired"].as_u64()?,
            found["revision"].as_u64()?,
        ))
    }

    /// An edit of the family's newest revision: its first MPS container's compute limit moved
    /// between 50 and 60 %.
    async fn edit(&self, person: &Person, family: &str) -> Option<Value> {
        let found = self
            .get(person, &format!("/api/v1/task-definitions/{family}"))
            .await?;
        let newest = found["revisions"].as_array()?.first()?;
        let container = newest["containers"]
            .as_array()?
            .iter()
            .find(|c| c["gpu"]["kind"] == "mps")?;
        let percent = if container["gpu"]["max_compute_percent"] == 50 {
            60
        } else {
            50
        };
        Some(json!({
            "edits": [{"container": container["name"], "gpu": {"kind": "mps", "memory_mib": container["gpu"]["memory_mib"], "max_compute_percent": percent}}],
            "description": "soak: compute limit"
        }))
    }

    /// A team's lead, deciding the team's requests until the run stops.
    pub async fn lead(self, team: String, seed: u64) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let person = Person::new(format!("{team}-lead"), format!("soak-viewers,{team}-leads"));
        while self.pause(&mut rng, 2_000, 5_000).await {
            if self.shared.down() {
                continue;
            }
            let Some(waiting) = self
                .get(
                    &person,
                    &format!("/api/v1/approvals?state=pending&team={team}"),
                )
                .await
            else {
                continue;
            };
            let ids: Vec<String> = waiting["requests"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["request"]["id"].as_str().map(str::to_string))
                .collect();
            for id in ids.into_iter().take(2) {
                let (what, word) = if rng.random_bool(0.8) {
                    ("approve", "approve")
                } else {
                    ("reject", "reject")
                };
                let body = json!({"note": "soak"});
                self.post(
                    what,
                    &person,
                    &format!("/api/v1/approvals/{id}/{word}"),
                    &body,
                    &mut rng,
                )
                .await;
            }
        }
    }
}
