//! Token ids to a Python `list[int]`, sharing one `int` object per id.
//!
//! A 300k-token prompt returned as a list of fresh ints allocates 300k objects; ids below
//! [`SHARED_IDS`] (every id of the DeepSeek vocabularies) instead reuse ints made once per
//! process, so the list is built by reference counting alone. Ids above it get their own.

use deepseek_tokenize::{push_varint, IdsFormat, PromptIds};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyInt, PyList};

/// Ids up to here share their int (a little above the DeepSeek vocabularies, ~129k).
const SHARED_IDS: u32 = 1 << 18;

/// The largest protobuf field number.
const MAX_FIELD: u32 = (1 << 29) - 1;

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

/// A prompt's token ids as the core holds them: `len()`, indexing and `tolist()` like a list,
/// and `to_json()`, the JSON array for an engine's request body, written without making a
/// Python int per id (a 300k-token agent turn is sent every turn).
#[pyclass(
    name = "TokenIds",
    frozen,
    sequence,
    module = "deepseek_recipe._native"
)]
pub struct PyTokenIds {
    ids: PromptIds,
}

impl PyTokenIds {
    pub fn new(ids: PromptIds) -> Self {
        Self { ids }
    }

    /// The ids as consecutive slices.
    pub fn slices(&self) -> Vec<&[u32]> {
        self.ids.slices()
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.ids
            .slices()
            .into_iter()
            .flat_map(|slice| slice.iter().copied())
    }
}

#[pymethods]
impl PyTokenIds {
    /// Ids made elsewhere (any sequence of ints from 0 to 2**32 - 1).
    #[new]
    fn py_new(ids: Vec<u32>) -> Self {
        Self::new(PromptIds::from(ids))
    }

    /// Pickles as its ids (`TokenIds(list)` on loading).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, pyo3::types::PyType>, (Bound<'py, PyList>,))> {
        let py = slf.py();
        Ok((py.get_type::<Self>(), (slf.get().tolist(py)?,)))
    }

    /// The first position of `value` at or after `start`; `ValueError` when it is absent
    /// (as `list.index`).
    #[pyo3(signature = (value, start=0))]
    fn index(&self, py: Python<'_>, value: i64, start: usize) -> PyResult<usize> {
        let found = u32::try_from(value).ok().and_then(|value| {
            py.detach(|| {
                self.iter()
                    .skip(start)
                    .position(|id| id == value)
                    .map(|at| at + start)
            })
        });
        found.ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("{value} is not in the ids"))
        })
    }

    /// One chained 64-bit hash per full block of `block_size` ids (the engine's KV blocks),
    /// computed on the ids as held (no second encode). See `deepseek_recipe.block_hashes`.
    #[pyo3(signature = (block_size=128))]
    fn block_hashes(&self, py: Python<'_>, block_size: usize) -> PyResult<Vec<u64>> {
        let size = crate::blocks::block_size(block_size)?;
        Ok(py.detach(|| deepseek_blocks::block_hashes(self.ids.slices(), size)))
    }

    /// The chained hash of the first `length` ids; the last block may be partial.
    #[pyo3(signature = (length, block_size=128))]
    fn prefix_hash(&self, py: Python<'_>, length: usize, block_size: usize) -> PyResult<u64> {
        let size = crate::blocks::block_size(block_size)?;
        Ok(py.detach(|| deepseek_blocks::prefix_hash(self.ids.slices(), length, size)))
    }

    fn __len__(&self) -> usize {
        self.ids.len()
    }

    fn __getitem__(&self, index: isize) -> PyResult<u32> {
        let len = self.ids.len() as isize;
        let at = if index < 0 { index + len } else { index };
        if !(0..len).contains(&at) {
            return Err(pyo3::exceptions::PyIndexError::new_err(
                "token index out of range",
            ));
        }
        let mut at = at as usize;
        for slice in self.ids.slices() {
            match slice.get(at) {
                Some(id) => return Ok(*id),
                None => at -= slice.len(),
            }
        }
        Err(pyo3::exceptions::PyIndexError::new_err(
            "token index out of range",
        ))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.tolist(py)?.try_iter().map(Bound::into_any)
    }

    /// Equal to another `TokenIds` or to any sequence of the same ints.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        if let Ok(other) = other.cast::<PyTokenIds>() {
            return self.iter().eq(other.get().iter());
        }
        match other.extract::<Vec<u32>>() {
            Ok(ids) => self.ids.len() == ids.len() && self.iter().eq(ids),
            Err(_) => false,
        }
    }

    fn __repr__(&self) -> String {
        format!("TokenIds(<{} ids>)", self.ids.len())
    }

    /// The ids as a new list.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        id_list_of(py, &self.ids.slices())
    }

    /// The JSON array of the ids (`[0,1,2]`), as bytes. The ids of a prompt that extends an
    /// earlier one reuse the JSON already written for it.
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.json_between(py, b"", b"")
    }

    /// How many ids `to_json` would write as JSON for the first time (the rest is copied).
    fn unwritten_json(&self) -> usize {
        self.ids.unwritten_json()
    }

    /// `before`, the JSON array of the ids and `after`, as one bytes object: an engine's
    /// request body written with one copy of the ids' JSON (kept for an encoded prompt), not
    /// one per layer that wraps it.
    fn json_between<'py>(
        &self,
        py: Python<'py>,
        before: &[u8],
        after: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        // Writing any JSON not kept yet, and finding the kept pieces, needs no GIL.
        let (pieces, whole) = py.detach(|| match self.ids.json_pieces() {
            Some(pieces) => (pieces, None),
            None => (Vec::new(), Some(self.ids.to_json())),
        });
        let pieces = match &whole {
            Some(json) => vec![json.as_slice()],
            None => pieces,
        };
        concatenated(py, before, &pieces, after)
    }

    /// How many ids `protobuf_between` would write as varints for the first time (the rest
    /// is copied).
    fn unwritten_varints(&self) -> usize {
        self.ids.unwritten(IdsFormat::Varints)
    }

    /// `before`, the ids as a packed `repeated uint32` protobuf field, and `after`, as one
    /// bytes object: a gRPC engine's request written with one copy of the ids' varints (kept
    /// for an encoded prompt, like their JSON). `fields` are the field numbers from the outer
    /// message in: `[2, 2]` is field 2 (the ids) of the message in field 2 of the one that
    /// `before` and `after` belong to. Protobuf reads fields in any order, so `before` and
    /// `after` may be any serialized fields of the outer message.
    fn protobuf_between<'py>(
        &self,
        py: Python<'py>,
        before: &[u8],
        fields: Vec<u32>,
        after: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        if fields.is_empty() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "fields must name at least the ids' own field",
            ));
        }
        if fields.iter().any(|&field| field == 0 || field > MAX_FIELD) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "a protobuf field number is between 1 and 2^29 - 1",
            ));
        }
        let pieces = py.detach(|| self.ids.varint_pieces());
        let payload: usize = pieces.iter().map(|piece| piece.len()).sum();
        // Each field's tag and length, innermost first; each length counts what is inside.
        let mut heads: Vec<Vec<u8>> = Vec::with_capacity(fields.len());
        let mut inside = payload;
        for &field in fields.iter().rev() {
            let mut head = Vec::with_capacity(10);
            push_varint(u64::from(field) << 3 | 2, &mut head);
            push_varint(inside as u64, &mut head);
            inside += head.len();
            heads.push(head);
        }
        let mut all: Vec<&[u8]> = heads.iter().rev().map(Vec::as_slice).collect();
        all.extend(pieces.iter().map(|piece| &**piece));
        concatenated(py, before, &all, after)
    }

    /// The ids from `start` on as little-endian `u32`s (4 bytes each), for storage.
    #[pyo3(signature = (start=0))]
    fn to_bytes<'py>(&self, py: Python<'py>, start: usize) -> Bound<'py, PyBytes> {
        let bytes = py.detach(|| {
            let mut out = Vec::with_capacity(self.ids.len().saturating_sub(start) * 4);
            for id in self.iter().skip(start) {
                out.extend_from_slice(&id.to_le_bytes());
            }
            out
        });
        PyBytes::new(py, &bytes)
    }

    /// Ids stored as little-endian `u32`s (`to_bytes`); `ValueError` for a length that is
    /// not a multiple of 4.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        if !data.len().is_multiple_of(4) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "stored ids must be 4 bytes each",
            ));
        }
        Ok(Self::new(PromptIds::from(ids_from_le_bytes(data))))
    }

    /// How many leading ids this and `other` share.
    fn common_prefix(&self, py: Python<'_>, other: PyRef<'_, PyTokenIds>) -> usize {
        let other: &PyTokenIds = &other;
        py.detach(|| common_prefix(&self.ids.slices(), &other.ids.slices()))
    }
}

/// How many leading ids two sequences of slices share, compared a run at a time (a turn's
/// ids and the last turn's share most of their slices, often the same memory).
fn common_prefix(a: &[&[u32]], b: &[&[u32]]) -> usize {
    let (mut a, mut b) = (a.iter().copied(), b.iter().copied());
    let (mut x, mut y): (&[u32], &[u32]) = (&[], &[]);
    let mut shared = 0;
    loop {
        if x.is_empty() {
            match a.next() {
                Some(next) => x = next,
                None => return shared,
            }
            continue;
        }
        if y.is_empty() {
            match b.next() {
                Some(next) => y = next,
                None => return shared,
            }
            continue;
        }
        let run = x.len().min(y.len());
        let (head_x, head_y) = (&x[..run], &y[..run]);
        if std::ptr::eq(head_x, head_y) || head_x == head_y {
            shared += run;
            x = &x[run..];
            y = &y[run..];
        } else {
            return shared
                + head_x
                    .iter()
                    .zip(head_y)
                    .take_while(|(p, q)| p == q)
                    .count();
        }
    }
}

/// Little-endian `u32`s (a trailing partial one is dropped).
pub fn ids_from_le_bytes(data: &[u8]) -> Vec<u32> {
    data.chunks_exact(4)
        .map(|chunk| u32::from_le_bytes(chunk.try_into().unwrap_or_default()))
        .collect()
}

/// `before`, `pieces` and `after` concatenated into one new bytes object.
fn concatenated<'py>(
    py: Python<'py>,
    before: &[u8],
    pieces: &[&[u8]],
    after: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let len = before.len() + pieces.iter().map(|piece| piece.len()).sum::<usize>() + after.len();
    PyBytes::new_with(py, len, |out| {
        let mut at = 0;
        for piece in std::iter::once(before)
            .chain(pieces.iter().copied())
            .chain([after])
        {
            if let Some(place) = out.get_mut(at..at + piece.len()) {
                place.copy_from_slice(piece);
            }
            at += piece.len();
        }
        Ok(())
    })
}
