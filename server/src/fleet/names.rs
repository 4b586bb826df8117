//! Names the fleet's state repeats thousands of times, kept once. On `large` some 20,000 tasks
//! name about 2,000 container instances, a few hundred task definitions and services, and
//! each their containers; kept as a string per task, these names were a fifth of the console's
//! heap. A name is shared (`Arc<str>`) among everything that holds it, and let go once nothing
//! does.

use std::{
    collections::HashSet,
    sync::{Arc, LazyLock, Mutex},
};

/// The names in use, each kept once.
#[derive(Default)]
pub struct Names {
    set: Mutex<HashSet<Arc<str>>>,
}

/// The fleet reader's names.
pub static NAMES: LazyLock<Names> = LazyLock::new(Names::default);

impl Names {
    /// `name`, shared with whatever else holds it.
    pub fn get(&self, name: &str) -> Arc<str> {
        let mut set = self.set.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kept) = set.get(name) {
            return kept.clone();
        }
        let kept: Arc<str> = Arc::from(name);
        set.insert(kept.clone());
        kept
    }

    /// Lets go of the names nothing else holds (after a refresh replaced the state that did).
    pub fn prune(&self) {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|name| Arc::strong_count(name) > 1);
    }

    /// How many names are kept.
    pub fn len(&self) -> usize {
        self.set.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_kept_once_while_something_holds_it_and_let_go_after() {
        let names = Names::default();
        let a = names.get("arn:aws:ecs:us-east-1:1:container-instance/c/1");
        let b = names.get("arn:aws:ecs:us-east-1:1:container-instance/c/1");
        assert!(Arc::ptr_eq(&a, &b), "the same name is one allocation");
        let other = names.get("arn:aws:ecs:us-east-1:1:container-instance/c/2");
        assert_eq!(names.len(), 2);
        drop(other);
        names.prune();
        assert_eq!(names.len(), 1, "a name nothing holds is let go");
        drop((a, b));
        names.prune();
        assert!(names.is_empty());
    }
}
