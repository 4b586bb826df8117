//! The fleet API's answers kept as bytes, per snapshot version and filter.

use std::{collections::HashMap, sync::Mutex};

use app::service::fleet::FleetFilter;
use axum::body::Bytes;

use crate::error::AppError;

/// Filtered snapshots as JSON, kept per snapshot version and filter: a snapshot never changes,
/// so each view is serialized once, and requests share the bytes.
#[derive(Default)]
pub struct FleetJsonCache {
    entries: Mutex<HashMap<(u64, FleetFilter), Bytes>>,
}

/// Views kept at once.
const CACHED_VIEWS: usize = 32;

impl FleetJsonCache {
    pub(crate) fn get_or_make(
        &self,
        version: u64,
        filter: &FleetFilter,
        make: impl FnOnce() -> Result<Bytes, AppError>,
    ) -> Result<Bytes, AppError> {
        let key = (version, filter.clone());
        if let Some(bytes) = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(bytes.clone());
        }
        let bytes = make()?;
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|(v, _), _| *v == version);
        if entries.len() >= CACHED_VIEWS {
            entries.clear();
        }
        entries.insert(key, bytes.clone());
        Ok(bytes)
    }
}
