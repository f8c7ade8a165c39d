//! `Slot<T>`: a value a Python object holds until one call consumes it (a request by
//! `convert`, a chunk generator by a `StreamProcessor` or a `with_*` call, an event by a
//! response's `accumulate`). Any use after that raises the `ConsumedError` of its kind.

use std::sync::{Mutex, PoisonError};

use pyo3::PyResult;

use crate::errors::{self, Consumable};

pub struct Slot<T> {
    value: Mutex<Option<T>>,
    what: Consumable,
}

impl<T> Slot<T> {
    pub fn new(what: Consumable, value: T) -> Self {
        Self {
            value: Mutex::new(Some(value)),
            what,
        }
    }

    /// `f` of the value, unless it was consumed.
    pub fn read<R>(&self, f: impl FnOnce(&T) -> R) -> PyResult<R> {
        // A poisoned lock would mean a panic while the value was read, which the crate's lints
        // rule out; the value itself is still whole.
        let guard = self.value.lock().unwrap_or_else(PoisonError::into_inner);
        guard
            .as_ref()
            .map(f)
            .ok_or_else(|| errors::consumed(self.what))
    }

    /// The value, consumed: every later `read` or `take` fails.
    pub fn take(&self) -> PyResult<T> {
        let mut guard = self.value.lock().unwrap_or_else(PoisonError::into_inner);
        guard.take().ok_or_else(|| errors::consumed(self.what))
    }
}
