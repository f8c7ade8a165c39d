//! `Tokenizer`: any Hugging Face `tokenizer.json`.

use std::sync::Arc;

use deepseek_tokenize::Tokenizer;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::{errors, ids};

/// A Hugging Face `tokenizer.json`, loaded for prompt encoding. Pickles as the file's text,
/// so a copy in another process (a Ray worker) is the same tokenizer, wherever it runs.
#[pyclass(name = "Tokenizer", frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyTokenizer {
    pub inner: Arc<Tokenizer>,
    /// The `tokenizer.json` text it was loaded from, for pickling.
    source: Arc<str>,
}

#[pymethods]
impl PyTokenizer {
    /// Load a `tokenizer.json` from `path` (a `str` or `os.PathLike`).
    #[staticmethod]
    fn from_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        // Read here (the message of a failed read is the one `Tokenizer::from_file` gives),
        // so the text can be kept for pickling.
        let text = py
            .detach(|| std::fs::read_to_string(&path))
            .map_err(|error| errors::tokenizer_unreadable(&error))?;
        Self::from_str(py, &text)
    }

    #[staticmethod]
    fn from_str(py: Python<'_>, text: &str) -> PyResult<Self> {
        let inner = py
            .detach(|| Tokenizer::from_str(text))
            .map_err(errors::tokenize)?;
        Ok(Self {
            inner: Arc::new(inner),
            source: Arc::from(text),
        })
    }

    /// Pickles as `Tokenizer.from_str(<its tokenizer.json text>)`.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, pyo3::types::PyString>,))> {
        let py = slf.py();
        let load = py.get_type::<Self>().getattr("from_str")?;
        Ok((load, (pyo3::types::PyString::new(py, &slf.get().source),)))
    }

    /// Full-vocabulary encode (added tokens matched), no BOS.
    fn encode<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let ids = py
            .detach(|| self.inner.encode(text))
            .map_err(errors::tokenize)?;
        ids::id_list(py, &ids)
    }

    /// Injection-safe encode: `text` is plain text, spellings of added tokens included (the
    /// rule every prompt gap follows). tiktoken calls this `encode_ordinary`.
    fn encode_ordinary<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let ids = py
            .detach(|| self.inner.encode_plain(text))
            .map_err(errors::tokenize)?;
        ids::id_list(py, &ids)
    }

    /// Ids to text with the file's decoder; added tokens are written out unless skipped, and
    /// bytes that do not form UTF-8 become U+FFFD.
    #[pyo3(signature = (ids, skip_special_tokens=false))]
    fn decode(&self, py: Python<'_>, ids: Vec<u32>, skip_special_tokens: bool) -> PyResult<String> {
        py.detach(|| self.inner.decode(&ids, skip_special_tokens))
            .map_err(errors::tokenize)
    }

    /// The raw bytes of token `id` (`None` for an id outside the vocabulary).
    fn token_bytes<'py>(
        &self,
        py: Python<'py>,
        id: u32,
    ) -> Option<Bound<'py, pyo3::types::PyBytes>> {
        self.inner
            .token_bytes(id)
            .map(|bytes| pyo3::types::PyBytes::new(py, bytes))
    }
}
