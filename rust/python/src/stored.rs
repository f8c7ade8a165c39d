//! A stored Responses conversation continued: `ResponsesHistory` (its items and conversion
//! state, `deepseek-protocol`), `ResponsesStateFields` (a request's `store`,
//! `previous_response_id`, `conversation`, `metadata`) and `EncodedPrompt` (a turn's rendered
//! prompt and ids, kept so the next turn renders and encodes only what it adds).

use deepseek_protocol::responses::{ResponsesHistory, StateFields};
use deepseek_render::RenderedConversation;
use deepseek_tokenize::PromptIds;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors;
use crate::ids::PyTokenIds;

/// Bytes or text, as bytes (text is read as UTF-8, never copied).
fn json_bytes<'a>(value: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(bytes.as_bytes());
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_str()?.as_bytes());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(
        "items must be JSON bytes or text",
    ))
}

/// Every item of a stored Responses conversation (its requests' input items and responses'
/// output items, in order) and the conversion state after them, so a request continuing it
/// converts only its own items (`ResponsesRequest.convert_continuing`). Immutable.
#[pyclass(name = "ResponsesHistory", frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyResponsesHistory {
    pub inner: ResponsesHistory,
}

#[pymethods]
impl PyResponsesHistory {
    /// An empty history.
    #[new]
    fn new() -> Self {
        Self {
            inner: ResponsesHistory::new(),
        }
    }

    /// A history of `items`: a JSON array of Responses items (bytes or text). `ValueError`
    /// for one of the wrong shape.
    #[staticmethod]
    fn from_json(py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Self> {
        let json = json_bytes(items)?;
        py.detach(|| ResponsesHistory::from_json(json))
            .map(|inner| Self { inner })
            .map_err(errors::protocol)
    }

    /// This history with `items` (a JSON array) after its own.
    fn extend(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Self> {
        let json = json_bytes(items)?;
        py.detach(|| self.inner.extend_json(json))
            .map(|inner| Self { inner })
            .map_err(errors::protocol)
    }

    /// Roughly the bytes held, for caches.
    #[getter]
    fn approx_bytes(&self) -> usize {
        self.inner.approx_bytes()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!("ResponsesHistory(<{} items>)", self.inner.len())
    }
}

/// What a stateful server reads from a Responses request (the reference ignores it).
#[pyclass(
    name = "ResponsesStateFields",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyResponsesStateFields {
    pub inner: StateFields,
}

#[pymethods]
impl PyResponsesStateFields {
    /// `store` as sent (`None` when left out).
    #[getter]
    fn store(&self) -> Option<bool> {
        self.inner.store
    }
    #[getter]
    fn previous_response_id(&self) -> Option<String> {
        self.inner.previous_response_id.clone()
    }
    /// The conversation's id (sent as the id or as `{"id": …}`).
    #[getter]
    fn conversation(&self) -> Option<String> {
        self.inner.conversation.clone()
    }
    /// `metadata` as JSON text (`None` when left out).
    #[getter]
    fn metadata(&self) -> Option<String> {
        self.inner
            .metadata
            .as_ref()
            .map(|m| serde_json::Value::Object(m.clone()).to_string())
    }
    /// `background` as sent (`None` when left out).
    #[getter]
    fn background(&self) -> Option<bool> {
        self.inner.background
    }
}

/// One turn's prompt: the conversation rendered and encoded, kept so that the next turn of
/// the same conversation (`encode_continuing(…, previous=this)`) renders only the blocks it
/// adds and encodes only the text after the last special token both share.
#[pyclass(name = "EncodedPrompt", frozen, module = "deepseek_recipe._native")]
pub struct PyEncodedPrompt {
    pub rendered: RenderedConversation,
    pub ids: PromptIds,
}

#[pymethods]
impl PyEncodedPrompt {
    /// The prompt's token ids.
    #[getter]
    fn ids(&self) -> PyTokenIds {
        PyTokenIds::new(self.ids.clone())
    }

    /// The prompt's length in bytes.
    #[getter]
    fn prompt_bytes(&self) -> usize {
        self.rendered.prompt().prompt.len()
    }

    /// How many leading bytes of the prompt were copied from the turn it continued.
    #[getter]
    fn reused_bytes(&self) -> usize {
        self.rendered.reused_bytes()
    }

    /// Roughly the bytes held (prompt, layout, ids and the text they were encoded from; the
    /// conversation is shared with the request), for caches.
    #[getter]
    pub fn approx_bytes(&self) -> usize {
        self.rendered.approx_bytes() + self.rendered.prompt().prompt.len() + self.ids.len() * 10
    }

    fn __repr__(&self) -> String {
        format!(
            "EncodedPrompt(<{} ids, {} bytes>)",
            self.ids.len(),
            self.rendered.prompt().prompt.len()
        )
    }
}
