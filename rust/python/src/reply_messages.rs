//! Anthropic Messages on the way back: `MessagesChunkGenerator` (consumed by a
//! `StreamProcessor`), `MessagesStreamEvent` and the accumulated `MessagesResponse`. Thin
//! wrappers over `deepseek_reply::messages`.

use deepseek_model::{ConversationRequest, ParsingOptions};
use deepseek_reply::messages::{MessagesEmitter, MessagesResponse, MessagesStreamEvent};
use deepseek_stream::emit::PromptUsage;
use deepseek_stream::processor::StreamProcessor;
use pyo3::prelude::*;

use crate::errors::Consumable;
use crate::slot::Slot;
use crate::stream::{IntoPyEvent, ProtocolProcessor, TokenizerVocabulary};

/// A Messages generator, consumed by a `StreamProcessor` (or by `with_signature`).
#[pyclass(
    name = "MessagesChunkGenerator",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyMessagesChunkGenerator {
    slot: Slot<MessagesEmitter>,
}

impl PyMessagesChunkGenerator {
    fn from_emitter(emitter: MessagesEmitter) -> Self {
        Self {
            slot: Slot::new(Consumable::Generator, emitter),
        }
    }

    /// The generator for a converted request (`MessagesRequest.chunk_generator`): thinking
    /// mode as the request resolved it.
    pub fn from_request(request: &ConversationRequest, id: &str, model: &str) -> Self {
        Self::from_emitter(MessagesEmitter::for_request(request, id, model))
    }
}

#[pymethods]
impl PyMessagesChunkGenerator {
    #[new]
    fn new(id: &str, model: &str, thinking_mode: bool) -> Self {
        Self::from_emitter(MessagesEmitter::new(id, model, thinking_mode))
    }

    /// Consume this generator and return one that ends each thinking block with
    /// `signature` instead of the response ID.
    fn with_signature(&self, signature: &str) -> PyResult<Self> {
        Ok(Self::from_emitter(
            self.slot.take()?.with_signature(signature),
        ))
    }
}

/// The Messages builder of `StreamProcessor` (see the extension point in `stream.rs`).
pub fn processor_from(
    generator: &Bound<'_, PyAny>,
    options: &ParsingOptions,
    vocabulary: Option<TokenizerVocabulary>,
) -> PyResult<Option<Box<dyn ProtocolProcessor>>> {
    let Ok(generator) = generator.cast::<PyMessagesChunkGenerator>() else {
        return Ok(None);
    };
    let emitter = generator.get().slot.take()?;
    let thinking = emitter.thinking_mode();
    Ok(Some(Box::new(StreamProcessor::new(
        emitter, options, thinking, vocabulary,
    ))))
}

/// One Messages stream event; consumed by `MessagesResponse.accumulate`.
#[pyclass(
    name = "MessagesStreamEvent",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyMessagesStreamEvent {
    slot: Slot<MessagesStreamEvent>,
}

impl IntoPyEvent for MessagesStreamEvent {
    fn into_py_event(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(Py::new(
            py,
            PyMessagesStreamEvent {
                slot: Slot::new(Consumable::Chunk, self),
            },
        )?
        .into_any())
    }
}

#[pymethods]
impl PyMessagesStreamEvent {
    /// The event as compact JSON, keys in wire order.
    fn to_json(&self) -> PyResult<String> {
        self.slot.read(MessagesStreamEvent::to_json)
    }
}

/// The non-streaming Messages response, accumulated from stream events.
#[pyclass(name = "MessagesResponse", module = "deepseek_recipe._native")]
pub struct PyMessagesResponse {
    inner: MessagesResponse,
}

#[pymethods]
impl PyMessagesResponse {
    /// `created` is accepted like the other protocols' responses; a Messages response
    /// reports no creation time.
    #[new]
    fn new(
        id: &str,
        model: &str,
        created: u64,
        prompt_tokens: u64,
        prompt_cache_hit_tokens: u64,
    ) -> Self {
        let _ = created;
        let prompt = PromptUsage {
            prompt_tokens,
            prompt_cache_hit_tokens,
        };
        Self {
            inner: MessagesResponse::new(id, model, prompt),
        }
    }

    /// Apply `chunk`, which is consumed: using it afterwards raises `ConsumedError`.
    fn accumulate(&mut self, chunk: PyRef<'_, PyMessagesStreamEvent>) -> PyResult<()> {
        let event = chunk.slot.take()?;
        self.inner.accumulate(event);
        Ok(())
    }

    /// The response as accumulated so far, as compact JSON.
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// The SSE event name of `chunk`: its `type`.
    #[staticmethod]
    fn sse_event_name(chunk: PyRef<'_, PyMessagesStreamEvent>) -> PyResult<&'static str> {
        chunk.slot.read(MessagesStreamEvent::event_name)
    }

    /// Messages streams end without a terminal data message.
    #[staticmethod]
    fn sse_done_data() -> Option<&'static str> {
        None
    }
}
