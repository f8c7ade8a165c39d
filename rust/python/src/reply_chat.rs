//! Chat Completions on the way back: `ChatCompletionChunkGenerator`, `ChatCompletionChunk`
//! and `ChatCompletionResponse` (`deepseek_reply::chat`).

use std::sync::{Mutex, PoisonError};

use deepseek_model::{ConversationRequest, ParsingOptions};
use deepseek_reply::chat::{
    ChatCompletionChunk, ChatCompletionChunkGenerator, ChatCompletionResponse,
};
use deepseek_stream::processor::StreamProcessor;
use pyo3::prelude::*;

use crate::errors::Consumable;
use crate::slot::Slot;
use crate::stream::{IntoPyEvent, ProtocolProcessor, TokenizerVocabulary};

/// A Chat Completions generator, consumed by a `StreamProcessor`.
#[pyclass(
    name = "ChatCompletionChunkGenerator",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyChatCompletionChunkGenerator {
    slot: Slot<ChatCompletionChunkGenerator>,
}

impl PyChatCompletionChunkGenerator {
    /// The generator for a converted request (`ChatCompletionRequest.chunk_generator`).
    pub fn from_request(request: &ConversationRequest, id: &str, model: &str) -> Self {
        Self {
            slot: Slot::new(
                Consumable::Generator,
                ChatCompletionChunkGenerator::new(request, id, model),
            ),
        }
    }
}

#[pymethods]
impl PyChatCompletionChunkGenerator {
    /// Consume this generator; it makes choice `index` of several (a request's `n`): every
    /// chunk names the choice, and the final chunk's usage is held for the chunk that reports
    /// the usage of all choices (`ChatCompletionResponse.usage_chunk_json`).
    fn with_choice(&self, index: usize) -> PyResult<Self> {
        let generator = self.slot.take()?;
        Ok(Self {
            slot: Slot::new(Consumable::Generator, generator.with_choice(index)),
        })
    }
}

/// The Chat builder of `StreamProcessor` (see the extension point in `stream.rs`).
pub fn processor_from(
    generator: &Bound<'_, PyAny>,
    options: &ParsingOptions,
    vocabulary: Option<TokenizerVocabulary>,
) -> PyResult<Option<Box<dyn ProtocolProcessor>>> {
    let Ok(generator) = generator.cast::<PyChatCompletionChunkGenerator>() else {
        return Ok(None);
    };
    let generator = generator.get().slot.take()?;
    let thinking = generator.thinking;
    let processor = StreamProcessor::new(generator.emitter(), options, thinking, vocabulary);
    Ok(Some(Box::new(processor)))
}

/// One `chat.completion.chunk`; consumed by `ChatCompletionResponse.accumulate`.
#[pyclass(
    name = "ChatCompletionChunk",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyChatCompletionChunk {
    slot: Slot<ChatCompletionChunk>,
}

impl IntoPyEvent for ChatCompletionChunk {
    fn into_py_event(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(Py::new(
            py,
            PyChatCompletionChunk {
                slot: Slot::new(Consumable::Chunk, self),
            },
        )?
        .into_any())
    }
}

#[pymethods]
impl PyChatCompletionChunk {
    /// The chunk as compact JSON.
    fn to_json(&self) -> PyResult<String> {
        self.slot.read(ChatCompletionChunk::to_json)
    }
}

/// A `chat.completion` built by accumulating chunks.
#[pyclass(
    name = "ChatCompletionResponse",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyChatCompletionResponse {
    inner: Mutex<ChatCompletionResponse>,
}

impl PyChatCompletionResponse {
    /// The response; a poisoned lock would mean a panic while accumulating, which the crate's
    /// lints rule out.
    fn response(&self) -> std::sync::MutexGuard<'_, ChatCompletionResponse> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl PyChatCompletionResponse {
    #[new]
    fn new(
        id: &str,
        model: &str,
        created: u64,
        prompt_tokens: u64,
        prompt_cache_hit_tokens: u64,
    ) -> Self {
        let response =
            ChatCompletionResponse::new(id, model, created, prompt_tokens, prompt_cache_hit_tokens);
        Self {
            inner: Mutex::new(response),
        }
    }

    /// Consume `chunk` and apply it to the response.
    fn accumulate(&self, chunk: PyRef<'_, PyChatCompletionChunk>) -> PyResult<()> {
        let chunk = chunk.slot.take()?;
        self.response().accumulate(chunk);
        Ok(())
    }

    fn to_json(&self) -> String {
        self.response().to_json()
    }

    /// The chunk that ends a stream of several choices (``choices: []`` and the usage of them
    /// all), as JSON; `None` before any usage was accumulated.
    fn usage_chunk_json(&self) -> Option<String> {
        self.response().usage_chunk_json()
    }

    /// Chat events are unnamed SSE `data:` events.
    #[staticmethod]
    fn sse_event_name(chunk: PyRef<'_, PyChatCompletionChunk>) -> PyResult<Option<&'static str>> {
        chunk.slot.read(ChatCompletionResponse::sse_event_name)
    }

    /// The data of the terminal SSE message, `[DONE]`.
    #[staticmethod]
    fn sse_done_data() -> Option<&'static str> {
        ChatCompletionResponse::sse_done_data()
    }
}
