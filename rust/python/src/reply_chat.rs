//! Chat Completions on the way back: `ChatCompletionChunkGenerator`, `ChatCompletionChunk`
//! and `ChatCompletionResponse` (`deepseek_reply::chat`).

use std::sync::Mutex;

use deepseek_model::{ConversationRequest, ParsingOptions};
use deepseek_reply::chat::{
    ChatCompletionChunk, ChatCompletionChunkGenerator, ChatCompletionResponse,
};
use deepseek_stream::processor::StreamProcessor;
use pyo3::prelude::*;

use crate::errors;
use crate::stream::{IntoPyEvent, ProtocolProcessor, TokenizerVocabulary};

/// A Chat Completions generator, consumed by a `StreamProcessor`.
#[pyclass(
    name = "ChatCompletionChunkGenerator",
    frozen,
    module = "deepseek_recipe._native"
)]
pub struct PyChatCompletionChunkGenerator {
    slot: Mutex<Option<ChatCompletionChunkGenerator>>,
}

impl PyChatCompletionChunkGenerator {
    /// The generator for a converted request (`ChatCompletionRequest.chunk_generator`).
    pub fn from_request(request: &ConversationRequest, id: &str, model: &str) -> Self {
        Self {
            slot: Mutex::new(Some(ChatCompletionChunkGenerator::new(request, id, model))),
        }
    }

    fn take(&self) -> PyResult<ChatCompletionChunkGenerator> {
        let mut guard = self.slot.lock().map_err(|_| errors::consumed_generator())?;
        guard.take().ok_or_else(errors::consumed_generator)
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
    let generator = generator.get().take()?;
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
    slot: Mutex<Option<ChatCompletionChunk>>,
}

impl PyChatCompletionChunk {
    fn take(&self) -> PyResult<ChatCompletionChunk> {
        let mut guard = self.slot.lock().map_err(|_| errors::consumed_chunk())?;
        guard.take().ok_or_else(errors::consumed_chunk)
    }
}

impl IntoPyEvent for ChatCompletionChunk {
    fn into_py_event(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(Py::new(
            py,
            PyChatCompletionChunk {
                slot: Mutex::new(Some(self)),
            },
        )?
        .into_any())
    }
}

#[pymethods]
impl PyChatCompletionChunk {
    /// The chunk as compact JSON.
    fn to_json(&self) -> PyResult<String> {
        let guard = self.slot.lock().map_err(|_| errors::consumed_chunk())?;
        guard
            .as_ref()
            .map(ChatCompletionChunk::to_json)
            .ok_or_else(errors::consumed_chunk)
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
        let chunk = chunk.take()?;
        let mut inner = self.inner.lock().map_err(|_| errors::consumed_chunk())?;
        inner.accumulate(chunk);
        Ok(())
    }

    fn to_json(&self) -> PyResult<String> {
        let inner = self.inner.lock().map_err(|_| errors::consumed_chunk())?;
        Ok(inner.to_json())
    }

    /// Chat events are unnamed SSE `data:` events.
    #[staticmethod]
    fn sse_event_name(chunk: PyRef<'_, PyChatCompletionChunk>) -> PyResult<Option<&'static str>> {
        let guard = chunk.slot.lock().map_err(|_| errors::consumed_chunk())?;
        guard
            .as_ref()
            .map(ChatCompletionResponse::sse_event_name)
            .ok_or_else(errors::consumed_chunk)
    }

    /// The data of the terminal SSE message, `[DONE]`.
    #[staticmethod]
    fn sse_done_data() -> Option<&'static str> {
        ChatCompletionResponse::sse_done_data()
    }
}
