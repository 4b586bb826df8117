//! Identities already verified, remembered for a short while: a load balancer's token whose
//! signature checked out stays good until it expires, and a session read from the database
//! stays good for a few seconds, so that a page's many requests pay for one check.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use super::proxy::SignedIn;

/// How many identities are remembered at most; past this, the expired go, then all.
pub const CAPACITY: usize = 4096;

/// Verified identities by a key (a digest of the token, a session's hash), each until a time.
#[derive(Debug, Default)]
pub struct Remembered {
    entries: Mutex<HashMap<Vec<u8>, (SignedIn, Instant)>>,
}

impl Remembered {
    /// The identity remembered under `key`, if it is still good.
    pub fn get(&self, key: &[u8]) -> Option<SignedIn> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(key)
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(person, _)| person.clone())
    }

    /// Remembers `person` under `key` for `good_for`.
    pub fn put(&self, key: Vec<u8>, person: &SignedIn, good_for: Duration) {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CAPACITY {
            entries.retain(|_, (_, until)| now < *until);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, (person.clone(), now + good_for));
    }

    /// Forgets `key` (a session that ended).
    pub fn forget(&self, key: &[u8]) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(key);
    }
}

/// The SHA-256 of `text`.
pub fn digest(text: &str) -> Vec<u8> {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, text.as_bytes())
        .as_ref()
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(name: &str) -> SignedIn {
        SignedIn {
            subject: name.into(),
            email: None,
            groups: Vec::new(),
        }
    }

    #[test]
    fn identities_are_remembered_until_their_time_and_no_longer() {
        let remembered = Remembered::default();
        remembered.put(digest("a"), &person("ana"), Duration::from_secs(60));
        remembered.put(digest("b"), &person("bo"), Duration::ZERO);
        assert_eq!(
            remembered.get(&digest("a")).map(|p| p.subject),
            Some("ana".into())
        );
        assert!(remembered.get(&digest("b")).is_none(), "its time is up");
        assert!(remembered.get(&digest("c")).is_none());
        remembered.forget(&digest("a"));
        assert!(remembered.get(&digest("a")).is_none(), "forgotten");
    }

    #[test]
    fn a_full_memory_makes_room() {
        let remembered = Remembered::default();
        for n in 0..CAPACITY + 10 {
            remembered.put(
                digest(&n.to_string()),
                &person("x"),
                Duration::from_secs(60),
            );
        }
        let size = remembered.entries.lock().map(|e| e.len()).unwrap_or(0);
        assert!(size <= CAPACITY, "{size}");
        assert!(remembered
            .get(&digest(&(CAPACITY + 9).to_string()))
            .is_some());
    }
}
