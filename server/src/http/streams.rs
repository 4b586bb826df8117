//! Caps on the live-update streams (server-sent events) a client and the whole server hold open:
//! each stream keeps a connection and a task, so one client with a loop cannot hold them all.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use app::model::identity::{Actor, AuthMode};

use crate::error::AppError;

/// Streams one client may hold open by default.
pub const PER_CLIENT: usize = crate::limits::STREAMS_PER_CLIENT;

/// Streams the server holds open by default.
pub const TOTAL: usize = crate::limits::STREAMS_TOTAL;

/// The streams open now, by client.
#[derive(Debug)]
pub struct StreamLimits {
    per_client: usize,
    total: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_client: HashMap<String, usize>,
}

/// One open stream; dropping it (when the stream ends or the client goes) frees its place.
#[derive(Debug)]
pub struct StreamTicket {
    limits: Arc<StreamLimits>,
    client: String,
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        let mut open = self.limits.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.by_client.get_mut(&self.client) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.by_client.remove(&self.client);
            }
        }
    }
}

/// Whom a stream is counted against: the signed-in person, or without sign-in the address the
/// request came from (everyone is "local" then).
pub fn client_of(actor: &Actor) -> String {
    if actor.auth == AuthMode::None {
        format!("address {}", actor.source.as_deref().unwrap_or("unknown"))
    } else {
        format!("user {}", actor.subject)
    }
}

impl StreamLimits {
    /// At most `per_client` streams for one client and `total` in all.
    pub fn new(per_client: usize, total: usize) -> StreamLimits {
        StreamLimits {
            per_client: per_client.max(1),
            total: total.max(1),
            open: Mutex::new(Open::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for one more stream of `client`, or 429 with what to do.
    pub fn admit(self: &Arc<Self>, client: &str) -> Result<StreamTicket, AppError> {
        let mut open = self.lock();
        let mine = open.by_client.get(client).copied().unwrap_or(0);
        if mine >= self.per_client {
            return Err(AppError::TooManyRequests(format!(
                "{mine} live-update streams are open for you, the most one person may hold; close console tabs you are not using, or reload them later"
            )));
        }
        if open.total >= self.total {
            return Err(AppError::TooManyRequests(format!(
                "the server holds {} live-update streams, its most; reload in a minute, and ask the operator to raise --max-streams if it keeps happening",
                open.total
            )));
        }
        open.total += 1;
        *open.by_client.entry(client.to_string()).or_default() += 1;
        Ok(StreamTicket {
            limits: self.clone(),
            client: client.to_string(),
        })
    }

    /// Streams open now, in all.
    pub fn open(&self) -> usize {
        self.lock().total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_client_and_the_server_are_capped_and_places_come_back() {
        let limits = Arc::new(StreamLimits::new(2, 3));
        let a1 = limits.admit("a").expect("first");
        let a2 = limits.admit("a").expect("second");
        let refused = limits.admit("a").expect_err("a third for one client");
        assert!(
            refused.to_string().contains("2 live-update streams"),
            "{refused}"
        );
        let b1 = limits.admit("b").expect("another client");
        let full = limits.admit("c").expect_err("the server is full");
        assert!(full.to_string().contains("--max-streams"), "{full}");
        assert_eq!(limits.open(), 3);
        drop(a1);
        assert_eq!(limits.open(), 2);
        let a3 = limits.admit("a").expect("a place came back");
        drop((a2, a3, b1));
        assert_eq!(limits.open(), 0);
        assert!(limits.lock().by_client.is_empty());
    }
}
