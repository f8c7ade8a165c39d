//! The way back: `InferenceChunk`, `PromptUsage`, `InferenceFinishReason` and the
//! `StreamProcessor` that drives one protocol's emitter (`deepseek_stream::processor`).
//!
//! Extension point (one per protocol; Chat lives in `reply_chat.rs`). A protocol binding
//! file adds exactly two things:
//! 1. `impl IntoPyEvent for <its event type>` (how one event becomes its Python object);
//! 2. a `processor_from(generator, options, vocabulary)` function with the [`Builder`]
//!    signature that recognises its generator class, consumes it ("chunk generator has been
//!    consumed"), and returns `Some(Box::new(deepseek_stream::processor::StreamProcessor::new(
//!    emitter, options, thinking, vocabulary)))`, or `Ok(None)` for another class;
//!
//! then one line in [`BUILDERS`] below. Nothing else here changes: the generic
//! [`ProtocolProcessor`] impl covers every `StreamProcessor<E, TokenizerVocabulary>` whose
//! emitter is `Send + Sync + 'static` and whose event implements [`IntoPyEvent`].

use std::sync::{Arc, Mutex, PoisonError};

use deepseek_model::ParsingOptions;
use deepseek_stream::emit::{Emitter, FinishReason, PromptUsage};
use deepseek_stream::processor::{
    ChunkLogprob, EngineChecks, InferenceChunk, StreamError, StreamProcessor, Vocabulary,
};
use deepseek_stream::{ParseEvent, Segment};
use deepseek_tokenize::Tokenizer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::conversation::PyParsingOptions;
use crate::errors;
use crate::tokenizer::PyTokenizer;

/// A tokenizer seen as the processor's vocabulary.
pub struct TokenizerVocabulary(Arc<Tokenizer>);

impl Vocabulary for TokenizerVocabulary {
    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.0.token_bytes(id)
    }

    fn is_added(&self, id: u32) -> bool {
        self.0
            .token_bytes(id)
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
            .and_then(|spelling| self.0.added_token_id(spelling))
            == Some(id)
    }

    fn count_tokens(&self, text: &str) -> u64 {
        self.0.encode(text).map_or(0, |ids| ids.len() as u64)
    }
}

/// One protocol event turned into its Python object.
pub trait IntoPyEvent: Send + 'static {
    fn into_py_event(self, py: Python<'_>) -> PyResult<Py<PyAny>>;
}

/// A batch of events of some protocol, converted once the GIL is held again.
pub trait PyEvents: Send {
    fn into_py(self: Box<Self>, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>>;
}

impl<T: IntoPyEvent> PyEvents for Vec<T> {
    fn into_py(self: Box<Self>, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        self.into_iter()
            .map(|event| event.into_py_event(py))
            .collect()
    }
}

/// What `StreamProcessor` needs from any protocol's processor.
pub trait ProtocolProcessor: Send + Sync {
    fn push(&mut self, chunk: InferenceChunk) -> Result<Box<dyn PyEvents>, StreamError>;
    fn finish(&mut self) -> Result<Box<dyn PyEvents>, StreamError>;
    fn close(&mut self);
    fn finished(&self) -> bool;
    fn update_prompt_usage(&mut self, prompt: PromptUsage);
    fn check_engine(&mut self, checks: EngineChecks);
    fn held_back(&self) -> Vec<ParseEvent>;
}

impl<E> ProtocolProcessor for StreamProcessor<E, TokenizerVocabulary>
where
    E: Emitter + Send + Sync + 'static,
    E::Event: IntoPyEvent,
{
    fn push(&mut self, chunk: InferenceChunk) -> Result<Box<dyn PyEvents>, StreamError> {
        let mut out = Vec::new();
        StreamProcessor::push(self, chunk, &mut out)?;
        Ok(Box::new(out))
    }

    fn finish(&mut self) -> Result<Box<dyn PyEvents>, StreamError> {
        let mut out = Vec::new();
        StreamProcessor::finish(self, &mut out)?;
        Ok(Box::new(out))
    }

    fn close(&mut self) {
        StreamProcessor::close(self);
    }

    fn finished(&self) -> bool {
        StreamProcessor::finished(self)
    }

    fn update_prompt_usage(&mut self, prompt: PromptUsage) {
        StreamProcessor::update_prompt_usage(self, prompt);
    }

    fn check_engine(&mut self, checks: EngineChecks) {
        StreamProcessor::check_engine(self, checks);
    }

    fn held_back(&self) -> Vec<ParseEvent> {
        StreamProcessor::held_back(self)
    }
}

/// One piece of held-back output as Python sees it: `(kind, text, index)`.
type HeldPiece = (&'static str, String, Option<usize>);

/// The parser's flush as `(kind, text, index)`: `reasoning` and `content` text, a tool call's
/// name (`tool`) and argument text (`arguments`) with the call's index; neighbours of one kind
/// and index joined.
fn held_pieces(events: Vec<ParseEvent>) -> Vec<HeldPiece> {
    let mut pieces: Vec<HeldPiece> = Vec::new();
    let each = events.into_iter().filter_map(|event| match event {
        ParseEvent::Text { segment, text, .. } if !text.is_empty() => {
            let kind = match segment {
                Segment::Reasoning => "reasoning",
                Segment::Content => "content",
            };
            Some((kind, text, None))
        }
        ParseEvent::ToolCallStart { index, name } => Some(("tool", name, Some(index))),
        ParseEvent::ToolCallArguments { index, fragment } if !fragment.is_empty() => {
            Some(("arguments", fragment, Some(index)))
        }
        _ => None,
    });
    for (kind, text, index) in each {
        match pieces.last_mut() {
            Some((last, joined, at)) if *last == kind && *at == index && kind != "tool" => {
                joined.push_str(&text);
            }
            _ => pieces.push((kind, text, index)),
        }
    }
    pieces
}

/// Recognise one protocol's generator and build its processor (consuming the generator).
pub type Builder = fn(
    &Bound<'_, PyAny>,
    &ParsingOptions,
    Option<TokenizerVocabulary>,
) -> PyResult<Option<Box<dyn ProtocolProcessor>>>;

/// Every protocol's builder; the first that recognises the generator wins.
const BUILDERS: &[Builder] = &[
    crate::reply_chat::processor_from,
    crate::reply_messages::processor_from,
    crate::reply_responses::processor_from,
];

/// Prompt-side usage reported when the backend accepts the prompt.
#[pyclass(
    name = "PromptUsage",
    frozen,
    from_py_object,
    module = "deepseek_recipe._native"
)]
#[derive(Clone, Copy)]
pub struct PyPromptUsage {
    pub inner: PromptUsage,
}

#[pymethods]
impl PyPromptUsage {
    #[new]
    #[pyo3(signature = (*, prompt_tokens=0, prompt_cache_hit_tokens=0))]
    fn new(prompt_tokens: u64, prompt_cache_hit_tokens: u64) -> Self {
        Self {
            inner: PromptUsage {
                prompt_tokens,
                prompt_cache_hit_tokens,
            },
        }
    }

    #[getter]
    fn prompt_tokens(&self) -> u64 {
        self.inner.prompt_tokens
    }

    #[getter]
    fn prompt_cache_hit_tokens(&self) -> u64 {
        self.inner.prompt_cache_hit_tokens
    }
}

/// Why the backend stopped generating.
#[pyclass(
    name = "InferenceFinishReason",
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    module = "deepseek_recipe._native"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyInferenceFinishReason {
    Stop,
    Length,
    ContentFilter,
}

impl From<PyInferenceFinishReason> for FinishReason {
    fn from(v: PyInferenceFinishReason) -> Self {
        match v {
            PyInferenceFinishReason::Stop => FinishReason::Stop,
            PyInferenceFinishReason::Length => FinishReason::Length,
            PyInferenceFinishReason::ContentFilter => FinishReason::ContentFilter,
        }
    }
}

impl From<FinishReason> for PyInferenceFinishReason {
    fn from(v: FinishReason) -> Self {
        match v {
            FinishReason::Stop => PyInferenceFinishReason::Stop,
            FinishReason::Length => PyInferenceFinishReason::Length,
            FinishReason::ContentFilter => PyInferenceFinishReason::ContentFilter,
        }
    }
}

/// One token's logprob as Python gives it: `(logprob, [(token_id, logprob), …])`.
type PyLogprob = (f64, Vec<(u32, f64)>);

/// One chunk from the inference backend: `ready`, `text`, `tokens` or `finish`.
#[pyclass(name = "InferenceChunk", frozen, module = "deepseek_recipe._native")]
pub struct PyInferenceChunk {
    pub inner: InferenceChunk,
}

#[pymethods]
impl PyInferenceChunk {
    #[staticmethod]
    #[pyo3(signature = (*, prompt_usage=None, system_fingerprint=None))]
    fn ready(prompt_usage: Option<PyPromptUsage>, system_fingerprint: Option<String>) -> Self {
        let prompt_usage = prompt_usage.map(|p| p.inner).unwrap_or_default();
        Self {
            inner: InferenceChunk::Ready {
                prompt_usage,
                system_fingerprint,
            },
        }
    }

    #[staticmethod]
    #[pyo3(signature = (content, token_count=0))]
    fn text(content: String, token_count: u64) -> Self {
        Self {
            inner: InferenceChunk::Text {
                content,
                token_count,
            },
        }
    }

    /// `logprobs` holds one `(logprob, [(token_id, logprob), …])` pair per token id.
    #[staticmethod]
    #[pyo3(signature = (token_ids, logprobs=None))]
    fn tokens(token_ids: Vec<u32>, logprobs: Option<Vec<PyLogprob>>) -> Self {
        let logprobs = logprobs.map(|list| {
            list.into_iter()
                .map(|(logprob, top)| ChunkLogprob { logprob, top })
                .collect()
        });
        Self {
            inner: InferenceChunk::Tokens {
                token_ids,
                logprobs,
            },
        }
    }

    #[staticmethod]
    fn finish(finish_reason: PyInferenceFinishReason) -> Self {
        Self {
            inner: InferenceChunk::Finish(finish_reason.into()),
        }
    }

    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner {
            InferenceChunk::Ready { .. } => "ready",
            InferenceChunk::Text { .. } => "text",
            InferenceChunk::Tokens { .. } => "tokens",
            InferenceChunk::Finish(_) => "finish",
        }
    }

    #[getter]
    fn content(&self) -> Option<String> {
        match &self.inner {
            InferenceChunk::Text { content, .. } => Some(content.clone()),
            _ => None,
        }
    }

    #[getter]
    fn token_ids(&self) -> Option<Vec<u32>> {
        match &self.inner {
            InferenceChunk::Tokens { token_ids, .. } => Some(token_ids.clone()),
            _ => None,
        }
    }

    #[getter]
    fn finish_reason(&self) -> Option<PyInferenceFinishReason> {
        match self.inner {
            InferenceChunk::Finish(reason) => Some(reason.into()),
            _ => None,
        }
    }

    #[getter]
    fn prompt_usage(&self) -> Option<PyPromptUsage> {
        match self.inner {
            InferenceChunk::Ready { prompt_usage, .. } => Some(PyPromptUsage {
                inner: prompt_usage,
            }),
            _ => None,
        }
    }

    #[getter]
    fn token_count(&self) -> Option<u64> {
        match self.inner {
            InferenceChunk::Text { token_count, .. } => Some(token_count),
            _ => None,
        }
    }

    #[getter]
    fn system_fingerprint(&self) -> Option<String> {
        match &self.inner {
            InferenceChunk::Ready {
                system_fingerprint, ..
            } => system_fingerprint.clone(),
            _ => None,
        }
    }
}

/// Parses one response's output and produces its protocol's chunks or events.
///
/// The one mutable object of the package. Calls from several threads are serialized, as the
/// reference does: each call waits for the processor with the GIL released (so the thread
/// holding it can finish), and holds it only while it works.
#[pyclass(name = "StreamProcessor", frozen, module = "deepseek_recipe._native")]
pub struct PyStreamProcessor {
    inner: Mutex<Box<dyn ProtocolProcessor>>,
}

impl PyStreamProcessor {
    /// Run `f` on the processor with the GIL released, waiting for other threads' calls.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut dyn ProtocolProcessor) -> T + Send,
    ) -> T {
        py.detach(|| {
            // A poisoned lock would mean a panic inside the processor, which the crate's
            // lints rule out; the processor's state is still whole, so keep using it.
            let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            f(guard.as_mut())
        })
    }
}

#[pymethods]
impl PyStreamProcessor {
    #[new]
    #[pyo3(signature = (generator, options, tokenizer=None))]
    fn new(
        generator: &Bound<'_, PyAny>,
        options: PyRef<'_, PyParsingOptions>,
        tokenizer: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let tokenizer = match tokenizer.filter(|t| !t.is_none()) {
            None => None,
            Some(object) => match object.cast::<PyTokenizer>() {
                Ok(tokenizer) => Some(tokenizer.get().inner.clone()),
                Err(_) => {
                    let kind = object.get_type().name()?;
                    return Err(PyTypeError::new_err(format!(
                        "argument 'tokenizer': '{kind}' object cannot be cast as 'Tokenizer'"
                    )));
                }
            },
        };
        for build in BUILDERS {
            let vocabulary = tokenizer.clone().map(TokenizerVocabulary);
            if let Some(inner) = build(generator, &options.inner, vocabulary)? {
                return Ok(Self {
                    inner: Mutex::new(inner),
                });
            }
        }
        Err(PyTypeError::new_err("expected a protocol chunk generator"))
    }

    /// True once the stream completed and the processor was not closed.
    #[getter]
    fn finished(&self, py: Python<'_>) -> bool {
        self.with(py, |inner| inner.finished())
    }

    /// Process one chunk; returns the protocol chunks or events it produced.
    fn push(&self, py: Python<'_>, chunk: PyRef<'_, PyInferenceChunk>) -> PyResult<Vec<Py<PyAny>>> {
        let chunk = chunk.inner.clone();
        let events = self
            .with(py, move |inner| inner.push(chunk))
            .map_err(errors::stream)?;
        events.into_py(py)
    }

    /// End the input and flush; after completion this returns `[]`.
    fn finish(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let events = self
            .with(py, |inner| inner.finish())
            .map_err(errors::stream)?;
        events.into_py(py)
    }

    /// Release the processor without completing the stream.
    fn close(&self, py: Python<'_>) {
        self.with(py, |inner| inner.close());
    }

    /// Ours: check the engine's output from now on (call it before the first chunk): output
    /// past ``max_tokens`` is cut there and ends the stream with ``length``, a token id outside
    /// the vocabulary fails it (``StreamError``, kind ``unknown_token_id``), and reasoning tokens
    /// are the ids that made reasoning text, never more than the completion tokens.
    #[pyo3(signature = (max_tokens=None))]
    fn check_engine(&self, py: Python<'_>, max_tokens: Option<u64>) {
        let checks = EngineChecks { max_tokens };
        self.with(py, move |inner| inner.check_engine(checks));
    }

    /// Ours: what ending the output now would flush, the processor left as it is: ``(kind,
    /// text, index)`` for each piece of text or tool call it is holding back (kind
    /// ``reasoning``, ``content``, ``tool`` or ``arguments``; ``index``: the tool call's).
    fn held_back(&self, py: Python<'_>) -> Vec<HeldPiece> {
        held_pieces(self.with(py, |inner| inner.held_back()))
    }

    /// Report ``prompt_usage`` at completion instead of the ``ready`` chunk's (for engines that
    /// count cached prompt tokens only at the end); events already produced keep theirs.
    fn update_prompt_usage(&self, py: Python<'_>, prompt_usage: PyRef<'_, PyPromptUsage>) {
        let usage = prompt_usage.inner;
        self.with(py, move |inner| inner.update_prompt_usage(usage));
    }
}
