//! Token ids to a Python `list[int]`, sharing one `int` object per id.
//!
//! A 300k-token prompt returned as a list of fresh ints allocates 300k objects; ids below
//! [`SHARED_IDS`] (every id of the DeepSeek vocabularies) instead reuse ints made once per
//! process, so the list is built by reference counting alone. Ids above it get their own.
//!
//! A prompt that extends a recent one (the next turn of an agent conversation) shares its
//! front ids with it in memory (`PromptIds`); its list starts as a copy of that prompt's
//! list (kept privately, as a tuple) cut where the two part, which CPython copies in C
//! (~1 ns an id, against ~5 for building it id by id). See [`prompt_list`].

use std::sync::Mutex;

use deepseek_tokenize::PromptIds;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyInt, PyList, PyTuple};

/// Lists of recently returned prompts kept (private copies) at most, and their ids at
/// most in all (8 bytes each, plus the prompts' own ids they keep alive). A longer prompt
/// is not kept: copying its list would cost more than a later turn saves.
const RECENT_LISTS: usize = 4;
const RECENT_IDS: usize = 1 << 20;

/// Fewer shared ids than this are not worth a slice: the list is built id by id.
const MIN_SHARED_IDS: usize = 4096;

/// A returned prompt's ids and a private copy of its list (the caller may change theirs),
/// as a tuple: the cycle collector stops tracking a tuple of ints after its first look at
/// it, where a kept list would be walked by every full collection (1M ids: ~4 ms each).
struct Recent {
    ids: PromptIds,
    copy: Py<PyTuple>,
}

static RECENT: Mutex<Vec<Recent>> = Mutex::new(Vec::new());

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

/// A prompt's ids as a new Python list: from a recent prompt's kept copy when the two
/// share their front ids in memory, else id by id.
///
/// Sharing is decided by identity, not by comparing ids: a `PromptIds` holds its ids
/// alive and never changes them, so two slices that start at the same address hold the
/// same ids for as long as both are held (a recent prompt's ids are held with its copy).
pub fn prompt_list<'py>(py: Python<'py>, ids: PromptIds) -> PyResult<Bound<'py, PyList>> {
    let slices = ids.slices();
    if !ids.shares_ids() || ids.len() > RECENT_IDS {
        return id_list_of(py, &slices);
    }
    // Never wait on the lock: building a list can run Python code (a collection's
    // finalizers) that encodes again on this thread. A busy lock means no reuse.
    let Ok(mut recent) = RECENT.try_lock() else {
        return id_list_of(py, &slices);
    };
    let reused = recent
        .iter()
        .map(|kept| (shared_front(&slices, &kept.ids.slices()), kept))
        .max_by_key(|(shared, _)| *shared)
        .filter(|(shared, _)| *shared >= MIN_SHARED_IDS);
    let list = match reused {
        Some((shared, kept)) => {
            let list = kept.copy.bind(py).to_list();
            list.del_slice(shared, list.len())?;
            list.call_method1("extend", (id_list_of(py, &skip_ids(&slices, shared))?,))?;
            list
        }
        None => id_list_of(py, &slices)?,
    };
    drop(slices);
    keep_copy(&mut recent, &list, ids);
    Ok(list)
}

fn keep_copy(recent: &mut Vec<Recent>, list: &Bound<'_, PyList>, ids: PromptIds) {
    recent.push(Recent {
        ids,
        copy: list.to_tuple().unbind(),
    });
    while recent.len() > RECENT_LISTS
        || recent.iter().map(|kept| kept.ids.len()).sum::<usize>() > RECENT_IDS
    {
        recent.remove(0);
    }
}

/// The number of leading ids two prompts share in memory: whole slices at the same address
/// and length, then the common length of the first pair at the same address.
fn shared_front(new: &[&[u32]], old: &[&[u32]]) -> usize {
    let mut shared = 0;
    for (mine, theirs) in new.iter().zip(old) {
        if !std::ptr::eq(mine.as_ptr(), theirs.as_ptr()) {
            break;
        }
        shared += mine.len().min(theirs.len());
        if mine.len() != theirs.len() {
            break;
        }
    }
    shared
}

/// `slices` without their first `count` ids.
fn skip_ids<'a>(slices: &[&'a [u32]], mut count: usize) -> Vec<&'a [u32]> {
    let mut rest = Vec::with_capacity(slices.len());
    for slice in slices {
        let skipped = count.min(slice.len());
        count -= skipped;
        rest.push(slice.get(skipped..).unwrap_or_default());
    }
    rest
}
