//! The emulator's own record of the ECS calls that change something, with their bodies as
//! received: what a client sent, to hold against what it says it sent.

use axum::{
    extract::{Query, State},
    Json,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Emulator;

/// How many ECS writes [`Emulator::writes`] keeps.
pub const WRITES_KEPT: usize = 5_000;

/// One ECS call that changes something, as the emulator received it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WriteRecord {
    /// Its place among the writes received, from 1: a gap in a reader's sequence means records
    /// were dropped (more than [`WRITES_KEPT`] came between two reads).
    #[serde(default)]
    pub seq: u64,
    /// The operation, e.g. `CreateService`.
    pub operation: String,
    /// The request's JSON body as received.
    pub request: Value,
    /// `null` when ECS took it, else the error's type (e.g. `InvalidParameterException`).
    pub error: Option<String>,
    /// The request id the answer carried (`x-amzn-RequestId`).
    #[serde(default)]
    pub request_id: Option<String>,
    /// Whether the answer reached the caller: `false` when the connection was dropped after the
    /// call was carried out (a `lost` fault), so the caller cannot know what happened.
    #[serde(default = "answered")]
    pub answered: bool,
}

fn answered() -> bool {
    true
}

impl Emulator {
    /// The latest ECS calls that changed something or were refused, oldest first (at most
    /// [`WRITES_KEPT`]); throttled and faulted calls, which ECS never ran, are left out.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.writes_since(0)
    }

    /// [`Emulator::writes`] after the one numbered `since`.
    pub fn writes_since(&self, since: u64) -> Vec<WriteRecord> {
        self.inner
            .writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|w| w.seq > since)
            .cloned()
            .collect()
    }

    /// Keeps `record`, numbered next.
    pub(super) fn record_write(&self, mut record: WriteRecord) {
        let mut writes = self.inner.writes.lock().unwrap_or_else(|p| p.into_inner());
        record.seq = writes.back().map_or(1, |last| last.seq + 1);
        if writes.len() >= WRITES_KEPT {
            writes.pop_front();
        }
        writes.push_back(record);
    }
}

/// `?since=N` of `/_emulator/writes`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Since {
    #[serde(default)]
    since: u64,
}

/// `GET /_emulator/writes[?since=N]`: the latest ECS writes as received, oldest first; with
/// `since`, those after the one numbered `since`.
pub(super) async fn writes(
    State(emulator): State<Emulator>,
    Query(since): Query<Since>,
) -> Json<Vec<WriteRecord>> {
    Json(emulator.writes_since(since.since))
}
