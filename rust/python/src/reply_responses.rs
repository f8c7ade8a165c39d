//! OpenAI Responses on the way back: the chunk generator a `StreamProcessor` consumes, the
//! reported request settings (`ResponsesEcho`), the stream events, and the accumulated
//! `ResponsesResponse`. Thin wrappers over `deepseek_reply::responses`.

use std::collections::BTreeMap;

use deepseek_model::{ConversationRequest, ParsingOptions, ReportedSettings};
use deepseek_reply::responses::{ResponsesGenerator, ResponsesResponse, ResponsesStreamEvent};
use deepseek_stream::processor::StreamProcessor;
use pyo3::prelude::*;

use crate::errors::Consumable;
use crate::slot::Slot;
use crate::stream::{IntoPyEvent, ProtocolProcessor, TokenizerVocabulary};

/// Request settings that Responses response objects report, as the request specified them.
///
/// `ResponsesRequest.echo` reads them from a request; the constructor builds the settings of
/// an unspecified request. The getters expose the scalar settings; the reasoning, text, tool
/// choice and tool settings are reported only through the response.
#[pyclass(name = "ResponsesEcho", frozen, module = "deepseek_recipe._native")]
pub struct PyResponsesEcho {
    pub inner: ReportedSettings,
}

#[pymethods]
impl PyResponsesEcho {
    #[new]
    fn new() -> Self {
        Self {
            inner: ReportedSettings::default(),
        }
    }

    #[getter]
    fn instructions(&self) -> Option<String> {
        self.inner.scalars.instructions.clone()
    }

    #[getter]
    fn max_output_tokens(&self) -> Option<u32> {
        self.inner.scalars.max_output_tokens
    }

    /// The requested temperature as the `f32` the request was read into.
    #[getter]
    fn temperature(&self) -> f64 {
        f64::from(self.inner.scalars.temperature)
    }

    #[getter]
    fn top_p(&self) -> f64 {
        f64::from(self.inner.scalars.top_p)
    }

    #[getter]
    fn top_logprobs(&self) -> u8 {
        self.inner.scalars.top_logprobs
    }

    #[getter]
    fn user(&self) -> Option<String> {
        self.inner.scalars.user.clone()
    }
}

/// A Rust Responses generator consumed by a stream processor.
#[pyclass(
    name = "ResponsesChunkGenerator",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyResponsesChunkGenerator {
    generator: Slot<ResponsesGenerator>,
}

impl PyResponsesChunkGenerator {
    fn from_generator(generator: ResponsesGenerator) -> Self {
        Self {
            generator: Slot::new(Consumable::Generator, generator),
        }
    }

    /// The generator for a converted request (`ResponsesRequest.chunk_generator`): it reports
    /// the request's own settings and names namespaced tools as the request declared them.
    pub fn from_request(request: &ConversationRequest, id: &str, model: &str) -> Self {
        Self::from_generator(ResponsesGenerator::from_request(
            request,
            id.to_owned(),
            model.to_owned(),
        ))
    }
}

#[pymethods]
impl PyResponsesChunkGenerator {
    /// Consume this generator and configure the namespace tool names: a parsed name found in
    /// the map is reported as its `(namespace, local name)`.
    fn with_namespace_tool_map(
        &self,
        namespace_tool_map: BTreeMap<String, (String, String)>,
    ) -> PyResult<Self> {
        let generator = self.generator.take()?;
        Ok(Self::from_generator(
            generator.with_namespace_tools(namespace_tool_map),
        ))
    }

    /// Consume this generator; response objects report this storage state (`store`, the
    /// response continued, the conversation, `metadata` as JSON text, `background`) instead
    /// of the reference's (nothing stored, not in the background).
    #[pyo3(signature = (store, previous_response_id=None, conversation=None, metadata=None, background=false))]
    fn with_state(
        &self,
        store: bool,
        previous_response_id: Option<String>,
        conversation: Option<String>,
        metadata: Option<&str>,
        background: bool,
    ) -> PyResult<Self> {
        let metadata = match metadata.map(serde_json::from_str::<serde_json::Value>) {
            None => serde_json::Map::new(),
            Some(Ok(serde_json::Value::Object(map))) => map,
            Some(_) => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "metadata must be a JSON object",
                ))
            }
        };
        let state = deepseek_model::StoredState {
            store,
            previous_response_id,
            conversation,
            metadata,
            background,
        };
        let generator = self.generator.take()?;
        Ok(Self::from_generator(generator.with_state(state)))
    }

    /// Consume this generator; the usage reports `cache_write_tokens` (0) as today's API does,
    /// unlike the reference, whose usage predates the field.
    fn with_cache_write_tokens(&self) -> PyResult<Self> {
        let generator = self.generator.take()?;
        Ok(Self::from_generator(generator.with_cache_write_tokens()))
    }

    /// Consume this generator and configure the reported request settings.
    fn with_echo(&self, echo: PyRef<'_, PyResponsesEcho>) -> PyResult<Self> {
        let generator = self.generator.take()?;
        Ok(Self::from_generator(
            generator.with_settings(echo.inner.clone()),
        ))
    }
}

/// One Responses stream event; consumed by `ResponsesResponse.accumulate`.
#[pyclass(
    name = "ResponsesStreamEvent",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyResponsesStreamEvent {
    event: Slot<ResponsesStreamEvent>,
}

impl PyResponsesStreamEvent {
    pub fn new(event: ResponsesStreamEvent) -> Self {
        Self {
            event: Slot::new(Consumable::Chunk, event),
        }
    }
}

#[pymethods]
impl PyResponsesStreamEvent {
    /// Compact JSON, keys in wire order.
    fn to_json(&self) -> PyResult<String> {
        self.event.read(ResponsesStreamEvent::to_json)
    }
}

/// The non-streaming Responses response, accumulated from stream events.
#[pyclass(name = "ResponsesResponse", module = "deepseek_recipe._native")]
pub struct PyResponsesResponse {
    inner: ResponsesResponse,
}

#[pymethods]
impl PyResponsesResponse {
    /// The in-progress response before any event. The events supply the id, model, creation
    /// time and usage of the final response; the prompt usage is accepted for symmetry with
    /// the other protocols.
    #[new]
    fn new(
        id: &str,
        model: &str,
        created_at: u64,
        prompt_tokens: u64,
        prompt_cache_hit_tokens: u64,
    ) -> Self {
        let _ = (prompt_tokens, prompt_cache_hit_tokens);
        Self {
            inner: ResponsesResponse::new(id.to_owned(), model.to_owned(), created_at),
        }
    }

    /// Apply `chunk`, which is consumed: using it afterwards raises `ConsumedError`.
    fn accumulate(&mut self, chunk: PyRef<'_, PyResponsesStreamEvent>) -> PyResult<()> {
        let event = chunk.event.take()?;
        self.inner.accumulate(event);
        Ok(())
    }

    /// The response as accumulated so far, as compact JSON.
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// The SSE event name of `chunk`: its `type`.
    #[staticmethod]
    fn sse_event_name(chunk: PyRef<'_, PyResponsesStreamEvent>) -> PyResult<&'static str> {
        chunk.event.read(ResponsesStreamEvent::event_type)
    }

    /// Responses streams end without a terminal data message.
    #[staticmethod]
    fn sse_done_data() -> Option<&'static str> {
        None
    }
}

impl IntoPyEvent for ResponsesStreamEvent {
    fn into_py_event(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(Py::new(py, PyResponsesStreamEvent::new(self))?.into_any())
    }
}

/// The [`crate::stream::Builder`] for Responses generators.
pub fn processor_from(
    generator: &Bound<'_, PyAny>,
    options: &ParsingOptions,
    vocabulary: Option<TokenizerVocabulary>,
) -> PyResult<Option<Box<dyn ProtocolProcessor>>> {
    let Ok(generator) = generator.cast::<PyResponsesChunkGenerator>() else {
        return Ok(None);
    };
    let generator = generator.get().generator.take()?;
    let thinking = generator.thinking;
    let emitter = generator.into_emitter();
    Ok(Some(Box::new(StreamProcessor::new(
        emitter, options, thinking, vocabulary,
    ))))
}
