//! Bytes computed once, on first access, by whichever thread needs them
//! first.
//!
//! Why: the array core runs behind the driver's engine lock, one thread at
//! a time, so arithmetic done inside it (a stripe's parity, a row rebuilt
//! from the members that survive) serialises every connection. What that
//! arithmetic needs is immutable once the core has it, so the core hands
//! out the recipe instead, and the thread that writes the parity or sends
//! the reply computes it, outside the lock.

use bytes::Bytes;
use std::sync::{Mutex, OnceLock};

/// Computes the pieces, once.
pub type Recipe = Box<dyn FnOnce() -> Vec<Bytes> + Send>;

/// Pieces of bytes computed by a [`Recipe`] on first access.
pub struct Deferred {
    /// Taken by the one computation `get` runs.
    recipe: Mutex<Option<Recipe>>,
    pieces: OnceLock<Vec<Bytes>>,
}

impl Deferred {
    /// Not computed yet (wrap it in an `Arc` to share it, or keep it
    /// inside what shares it).
    pub fn new(recipe: Recipe) -> Deferred {
        Deferred {
            recipe: Mutex::new(Some(recipe)),
            pieces: OnceLock::new(),
        }
    }

    /// The pieces, computing them first if no one has.
    pub fn get(&self) -> &[Bytes] {
        self.pieces.get_or_init(|| {
            // OnceLock runs this once: the recipe is still there.
            let recipe = self
                .recipe
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .expect("deferred bytes are computed once");
            recipe()
        })
    }

    /// Whether the pieces were computed (never computes).
    pub fn is_computed(&self) -> bool {
        self.pieces.get().is_some()
    }
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never computes: Debug output must not do the work.
        f.debug_struct("Deferred")
            .field("computed", &self.is_computed())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn computed_once_on_first_access_from_any_thread() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let deferred = Arc::new(Deferred::new(Box::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cd")]
        })));
        assert!(!deferred.is_computed());
        let shared = Arc::clone(&deferred);
        let first = std::thread::spawn(move || shared.get()[1].clone())
            .join()
            .expect("thread");
        assert_eq!(first, Bytes::from_static(b"cd"));
        assert!(deferred.is_computed());
        assert_eq!(deferred.get()[0], Bytes::from_static(b"ab"));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
