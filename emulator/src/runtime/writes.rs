//! The emulator's own record of the ECS calls that change something, with their bodies as
//! received: what a client sent, to hold against what it says it sent.

use axum::{extract::State, Json};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Emulator;

/// How many ECS writes [`Emulator::writes`] keeps.
pub const WRITES_KEPT: usize = 1_000;

/// One ECS call that changes something, as the emulator received it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WriteRecord {
    /// The operation, e.g. `CreateService`.
    pub operation: String,
    /// The request's JSON body as received.
    pub request: Value,
    /// `null` when ECS took it, else the error's type (e.g. `InvalidParameterException`).
    pub error: Option<String>,
}

impl Emulator {
    /// The latest ECS calls that changed something or were refused, oldest first (at most
    /// [`WRITES_KEPT`]); throttled and faulted calls, which ECS never ran, are left out.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.inner
            .writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    pub(super) fn record_write(&self, record: WriteRecord) {
        let mut writes = self.inner.writes.lock().unwrap_or_else(|p| p.into_inner());
        if writes.len() >= WRITES_KEPT {
            writes.pop_front();
        }
        writes.push_back(record);
    }
}

/// `GET /_emulator/writes`: the latest ECS writes as received, oldest first.
pub(super) async fn writes(State(emulator): State<Emulator>) -> Json<Vec<WriteRecord>> {
    Json(emulator.writes())
}
