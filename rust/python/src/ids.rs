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
    id_list_of(py, &[ids])
}

/// The concatenation of `slices` as a new Python list.
pub fn id_list_of<'py>(py: Python<'py>, slices: &[&[u32]]) -> PyResult<Bound<'py, PyList>> {
    let ints = INTS.get_or_init(py, || {
        (0..SHARED_IDS)
            .map(|id| PyInt::new(py, id).unbind())
            .collect()
    });
    let len = slices.iter().map(|slice| slice.len()).sum();
    let ids = slices.iter().flat_map(|slice| slice.iter());
    PyList::new(
        py,
        Counted(len, ids).map(|&id| match ints.get(id as usize) {
            Some(shared) => shared.bind(py).clone(),
            None => PyInt::new(py, id),
        }),
    )
}

/// An iterator that knows how many items it has left (`PyList::new` sizes the list first).
struct Counted<I>(usize, I);

impl<I: Iterator> Iterator for Counted<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let item = self.1.next()?;
        self.0 = self.0.saturating_sub(1);
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.0, Some(self.0))
    }
}

impl<I: Iterator> ExactSizeIterator for Counted<I> {}
