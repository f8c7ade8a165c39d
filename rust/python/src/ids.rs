//! Token ids to a Python `list[int]`, sharing one `int` object per id.
//!
//! A 300k-token prompt returned as a list of fresh ints allocates 300k objects; ids below
//! [`SHARED_IDS`] (every id of the DeepSeek vocabularies) instead reuse ints made once per
//! process, so the list is built by reference counting alone. Ids above it get their own.
//!
//! A prompt that extends a recent one (the next turn of an agent conversation) shares its
//! front ids with it in memory (`PromptIds`); its list starts as a copy of that prompt's
//! list (kept privately, as a tuple) cut where the two part, which CPython copies in C
//! (~1 ns an id, against ~8 for building it id by id through the stable ABI). See
//! [`prompt_list`].

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

/// `ids` as a new Python list.
pub fn id_list<'py>(py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
    id_list_of(py, &[ids])
}

/// The concatenation of `slices` as a new Python list. Appending costs one call into
/// Python per id; filling a pre-sized list costs two through the stable ABI (a reference
/// count and the store): bench (e)'s 5.5M ids take ~30 ms less.
pub fn id_list_of<'py>(py: Python<'py>, slices: &[&[u32]]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for slice in slices {
        extend_list(&list, slice)?;
    }
    Ok(list)
}

/// Append `ids` to `list`.
pub fn extend_list(list: &Bound<'_, PyList>, ids: &[u32]) -> PyResult<()> {
    let py = list.py();
    let ints = INTS.get_or_init(py, || {
        (0..SHARED_IDS)
            .map(|id| PyInt::new(py, id).unbind())
            .collect()
    });
    for &id in ids {
        match ints.get(id as usize) {
            Some(shared) => list.append(shared.bind(py))?,
            None => list.append(PyInt::new(py, id))?,
        }
    }
    Ok(())
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

/// Remember `list`, just built from `ids` (see [`prompt_list`]), for later prompts that
/// extend it.
pub fn remember_list(list: &Bound<'_, PyList>, ids: PromptIds) {
    if !ids.shares_ids() || ids.len() > RECENT_IDS {
        return;
    }
    if let Ok(mut recent) = RECENT.try_lock() {
        keep_copy(&mut recent, list, ids);
    }
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
