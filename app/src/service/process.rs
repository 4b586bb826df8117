//! What this process keeps between requests, beside the ports: the changes it runs now and the
//! in-process locks of the teams' budgets. Both are shared by every use case through the
//! [`ServiceContext`](crate::service::context::ServiceContext).

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
};

/// The audit records whose change runs in this process now.
#[derive(Debug, Default)]
pub struct InFlight {
    ids: Mutex<HashSet<String>>,
}

impl InFlight {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes that the change of record `id` runs in this process.
    pub(crate) fn start(&self, id: &str) {
        self.ids().insert(id.to_string());
    }

    /// Notes that the change of record `id` ended.
    pub(crate) fn end(&self, id: &str) {
        self.ids().remove(id);
    }

    /// Whether the change of record `id` runs in this process.
    pub fn contains(&self, id: &str) -> bool {
        self.ids().contains(id)
    }

    /// How many changes run in this process.
    pub fn len(&self) -> usize {
        self.ids().len()
    }

    /// Whether no change runs in this process.
    pub fn is_empty(&self) -> bool {
        self.ids().is_empty()
    }
}

/// The in-process locks of the teams' budgets, by `team@cluster`.
#[derive(Debug, Default)]
pub struct BudgetLocks {
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl BudgetLocks {
    /// The lock of `key`, made on first use.
    pub(crate) fn of(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(key.to_string()).or_default().clone()
    }
}
