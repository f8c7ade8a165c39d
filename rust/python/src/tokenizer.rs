//! `Tokenizer`: any Hugging Face `tokenizer.json`.

use std::sync::Arc;

use deepseek_tokenize::Tokenizer;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::{errors, ids};

/// A Hugging Face `tokenizer.json`, loaded for prompt encoding.
#[pyclass(name = "Tokenizer", frozen, module = "deepseek_recipe._native")]
pub struct PyTokenizer {
    pub inner: Arc<Tokenizer>,
}

#[pymethods]
impl PyTokenizer {
    #[staticmethod]
    fn from_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let inner = py
            .detach(|| Tokenizer::from_file(&path))
            .map_err(errors::tokenize)?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    #[staticmethod]
    fn from_str(py: Python<'_>, text: &str) -> PyResult<Self> {
        let inner = py
            .detach(|| Tokenizer::from_str(text))
            .map_err(errors::tokenize)?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Full-vocabulary encode (added tokens matched), no BOS.
    fn encode<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let ids = py
            .detach(|| self.inner.encode(text))
            .map_err(errors::tokenize)?;
        ids::id_list(py, &ids)
    }
}
