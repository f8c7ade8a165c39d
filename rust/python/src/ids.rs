//! Token ids to a Python `list[int]`, sharing one `int` object per id.
//!
//! A 300k-token prompt returned as a list of fresh ints allocates 300k objects; ids below
//! [`SHARED_IDS`] (every id of the DeepSeek vocabularies) instead reuse ints made once per
//! process, so the list is built by reference counting alone. Ids above it get their own.

use deepseek_tokenize::PromptIds;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyInt, PyList};

/// Ids up to here share their int (a little above the DeepSeek vocabularies, ~129k).
const SHARED_IDS: u32 = 1 << 18;

static INTS: PyOnceLock<Vec<Py<PyInt>>> = PyOnceLock::new();

/// The shared ints, made on first use.
fn shared_ints(py: Python<'_>) -> &[Py<PyInt>] {
    INTS.get_or_init(py, || {
        (0..SHARED_IDS)
            .map(|id| PyInt::new(py, id).unbind())
            .collect()
    })
}

/// `ids` as a new Python list.
pub fn id_list<'py>(py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
    id_list_of(py, &[ids])
}

/// The concatenation of `slices` as a new Python list, made at its size and filled in
/// place: appending would grow it step by step (CPython copies a growing list's array,
/// ~3 ms of the ~10 for 1M ids). Filling in place needs CPython's full API (see the
/// workspace's `Cargo.toml`): through the stable ABI each id costs two calls, and
/// appending was faster.
pub fn id_list_of<'py>(py: Python<'py>, slices: &[&[u32]]) -> PyResult<Bound<'py, PyList>> {
    let ints = shared_ints(py);
    let len = slices.iter().map(|slice| slice.len()).sum();
    let ids = Counted {
        ids: slices.iter().flat_map(|slice| slice.iter().copied()),
        left: len,
    };
    PyList::new(
        py,
        ids.map(|id| match ints.get(id as usize) {
            Some(shared) => shared.bind(py).clone(),
            None => PyInt::new(py, id),
        }),
    )
}

/// An iterator that knows how many items it has left, so a list is made at its size.
struct Counted<I> {
    ids: I,
    left: usize,
}

impl<I: Iterator<Item = u32>> Iterator for Counted<I> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let id = self.ids.next()?;
        self.left = self.left.saturating_sub(1);
        Some(id)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator<Item = u32>> ExactSizeIterator for Counted<I> {}

/// A prompt's ids as a new Python list. A prompt that extends a recent one shares its
/// front ids with it in memory, but its list is still built id by id: copying a kept list
/// costs as much per id (CPython increments each int's count either way), and keeping a
/// copy of every list returned cost a second pass over it.
pub fn prompt_list<'py>(py: Python<'py>, ids: PromptIds) -> PyResult<Bound<'py, PyList>> {
    id_list_of(py, &ids.slices())
}
