//! Token ids to a Python `list[int]`, sharing one `int` object per id.
//!
//! A 300k-token prompt returned as a list of fresh ints allocates 300k objects; ids below
//! [`SHARED_IDS`] (every id of the DeepSeek vocabularies) instead reuse ints made once per
//! process, so the list is built by reference counting alone. Ids above it get their own.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyInt, PyList};

/// Ids up to here share their int (a little above the DeepSeek vocabularies, ~129k).
const SHARED_IDS: u32 = 1 << 18;

static INTS: PyOnceLock<Vec<Py<PyInt>>> = PyOnceLock::new();

/// `ids` as a new Python list.
pub fn id_list<'py>(py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
    let ints = INTS.get_or_init(py, || {
        (0..SHARED_IDS)
            .map(|id| PyInt::new(py, id).unbind())
            .collect()
    });
    PyList::new(
        py,
        ids.iter().map(|&id| match ints.get(id as usize) {
            Some(shared) => shared.bind(py).clone(),
            None => PyInt::new(py, id),
        }),
    )
}
