//! `Tokenizer`: any Hugging Face `tokenizer.json`.

use std::sync::Arc;

use deepseek_tokenize::Tokenizer;
use pyo3::prelude::*;

use crate::errors;

/// A Hugging Face `tokenizer.json`, loaded for prompt encoding.
#[pyclass(name = "Tokenizer", frozen, module = "deepseek_recipe._native")]
pub struct PyTokenizer {
    pub inner: Arc<Tokenizer>,
}

#[pymethods]
impl PyTokenizer {
    #[staticmethod]
    fn from_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let inner = py.detach(|| Tokenizer::from_file(&path)).map_err(errors::tokenize)?;
        Ok(Self { inner: Arc::new(inner) })
    }

    #[staticmethod]
    fn from_str(py: Python<'_>, text: &str) -> PyResult<Self> {
        let inner = py.detach(|| Tokenizer::from_str(text)).map_err(errors::tokenize)?;
        Ok(Self { inner: Arc::new(inner) })
    }

    /// Full-vocabulary encode (added tokens matched), no BOS.
    fn encode(&self, py: Python<'_>, text: &str) -> PyResult<Vec<u32>> {
        py.detach(|| self.inner.encode(text)).map_err(errors::tokenize)
    }
}
