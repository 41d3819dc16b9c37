//! The caller's side of one user request.

use eraid_core::io::UserError;

/// The result a caller receives: `Ok(Some(bytes))` for reads, `Ok(None)`
/// otherwise.
pub type UserResult = Result<Option<eraid_core::io::ReadData>, UserError>;

/// Called once with the request's result, on the thread that runs it (the
/// submitter's or the engine thread), never under the engine's lock: it must be
/// quick and must not call the blocking `EngineHandle` methods (that would
/// deadlock the engine).
pub type ReplyFn = Box<dyn FnOnce(UserResult) + Send>;

/// Owns a reply callback and guarantees it is called exactly once: if the
/// sink is dropped unanswered (engine stopped, request stuck in a closed
/// channel, engine thread unwinding) the caller gets `ShuttingDown` rather
/// than waiting forever.
pub(crate) struct ReplySink(Option<ReplyFn>);

impl ReplySink {
    pub(crate) fn new(done: ReplyFn) -> ReplySink {
        ReplySink(Some(done))
    }

    pub(crate) fn send(mut self, result: UserResult) {
        if let Some(done) = self.0.take() {
            call(done, result);
        }
    }
}

impl Drop for ReplySink {
    fn drop(&mut self) {
        if let Some(done) = self.0.take() {
            call(done, Err(UserError::ShuttingDown));
        }
    }
}

/// A panicking callback is the caller's bug; it must not take the array
/// (and every other caller) down with it.
fn call(done: ReplyFn, result: UserResult) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || done(result)));
    if outcome.is_err() {
        tracing::error!("a user request's reply callback panicked");
    }
}
