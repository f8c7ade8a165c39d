//! `CancelToken`: cooperative cancellation of conversions (`deepseek_model::cancel`). Inside a
//! `with token:` block, conversions on this thread stop soon after `token.cancel()` is called
//! from any thread, with the `ConversionError` "The request was cancelled".

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use deepseek_model::cancel;
use pyo3::prelude::*;

/// A flag that stops the conversions run inside `with token:` once `cancel()` is called.
#[pyclass(name = "CancelToken", frozen, module = "deepseek_recipe._native")]
pub struct PyCancelToken {
    flag: Arc<AtomicBool>,
}

#[pymethods]
impl PyCancelToken {
    #[new]
    fn new() -> Self {
        Self {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Stop the conversions running (and any later one) inside this token's `with` blocks.
    fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether `cancel()` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        cancel::enter(Arc::clone(&slf.flag));
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        cancel::leave();
        false
    }
}
