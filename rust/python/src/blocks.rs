//! KV-cache block hashes (`deepseek-blocks`) of any ids: a `TokenIds`, a buffer of
//! unsigned 32-bit ints (`array('I')`, a `numpy.uint32` array) or any sequence of ints.

use std::num::NonZeroUsize;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::ids::PyTokenIds;

/// The block size as the crate takes it (a `ValueError` for 0).
pub fn block_size(size: usize) -> PyResult<NonZeroUsize> {
    NonZeroUsize::new(size).ok_or_else(|| PyValueError::new_err("block_size must be at least 1"))
}

/// Hashes `ids` hold, whatever their kind, with the GIL released while hashing.
fn with_ids<T: Send>(
    ids: &Bound<'_, PyAny>,
    hash: impl FnOnce(Vec<&[u32]>) -> T + Send,
) -> PyResult<T> {
    let py = ids.py();
    if let Ok(token_ids) = ids.cast::<PyTokenIds>() {
        let token_ids = token_ids.get();
        return Ok(py.detach(|| hash(token_ids.slices())));
    }
    let owned: Vec<u32> = match PyBuffer::<u32>::get(ids) {
        Ok(buffer) if buffer.dimensions() == 1 => buffer.to_vec(py)?,
        _ => ids.extract()?,
    };
    Ok(py.detach(|| hash(vec![owned.as_slice()])))
}

/// One chained 64-bit hash per full block of `block_size` ids (see `deepseek-blocks`). The
/// default, 128, is `deepseek_blocks::DEFAULT_BLOCK_SIZE`, written out so the signature shows it.
#[pyfunction]
#[pyo3(signature = (ids, block_size=128))]
pub fn block_hashes(ids: &Bound<'_, PyAny>, block_size: usize) -> PyResult<Vec<u64>> {
    let size = self::block_size(block_size)?;
    with_ids(ids, |pieces| deepseek_blocks::block_hashes(pieces, size))
}

/// The chained hash of the first `length` ids (the last block may be partial).
#[pyfunction]
#[pyo3(signature = (ids, length, block_size=128))]
pub fn prefix_hash(ids: &Bound<'_, PyAny>, length: usize, block_size: usize) -> PyResult<u64> {
    let size = self::block_size(block_size)?;
    with_ids(ids, |pieces| {
        deepseek_blocks::prefix_hash(pieces, length, size)
    })
}
