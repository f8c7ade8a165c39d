//! Cooperative cancellation of a conversion: a caller that gives up on a request (its client
//! went away) raises a flag, and the long loops of the conversion (the JSON-schema checks)
//! look at it between steps and stop with [`ConversionError::cancelled`].
//!
//! The flag is installed for the current thread ([`with_flag`]): a conversion runs on the
//! thread that calls it, so no signature changes along the way. Without a flag installed,
//! [`cancelled`] is always false and costs one thread-local read.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::ConversionError;

thread_local! {
    static CURRENT: RefCell<Vec<Arc<AtomicBool>>> = const { RefCell::new(Vec::new()) };
}

/// Run `work` with `flag` installed for this thread (nested calls install theirs on top).
pub fn with_flag<R>(flag: &Arc<AtomicBool>, work: impl FnOnce() -> R) -> R {
    enter(Arc::clone(flag));
    let out = work();
    leave();
    out
}

/// Install `flag` for this thread until the matching [`leave`] (for callers that cannot
/// wrap the work in a closure, such as a Python `with` block).
pub fn enter(flag: Arc<AtomicBool>) {
    CURRENT.with(|current| current.borrow_mut().push(flag));
}

/// Remove the flag the last [`enter`] of this thread installed.
pub fn leave() {
    CURRENT.with(|current| current.borrow_mut().pop());
}

/// Whether a flag installed for this thread has been raised.
pub fn cancelled() -> bool {
    CURRENT.with(|current| {
        current
            .borrow()
            .iter()
            .any(|flag| flag.load(Ordering::Relaxed))
    })
}

/// `Err(ConversionError::cancelled())` once the work should stop.
pub fn check() -> Result<(), ConversionError> {
    if cancelled() {
        Err(ConversionError::cancelled())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raised_flag_is_seen_only_inside_its_scope() {
        let flag = Arc::new(AtomicBool::new(false));
        assert!(!cancelled());
        with_flag(&flag, || {
            assert!(!cancelled());
            flag.store(true, Ordering::Relaxed);
            assert!(cancelled());
            assert_eq!(check(), Err(ConversionError::cancelled()));
        });
        assert!(!cancelled());
        let other = std::thread::spawn(move || with_flag(&flag, cancelled));
        assert!(
            other.join().unwrap_or(false),
            "a flag installed on another thread"
        );
    }
}
