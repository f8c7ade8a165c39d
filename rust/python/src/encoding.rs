//! `DeepseekV4Encoding` / `DeepseekV41Encoding`: render a conversation, and encode it with
//! an attached tokenizer.

use std::sync::Arc;
use std::time::Instant;

use deepseek_model::{ModelVersion, SpecialTokens};
use deepseek_render::{render, render_continuing, RenderedPrompt};
use deepseek_tokenize::{PromptIds, TokenizeError, Tokenizer};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::conversation::PyConversation;
use crate::errors;
use crate::ids::PyTokenIds;
use crate::message::image_to_py;
use crate::tokenizer::PyTokenizer;

/// A rendered prompt: text, special ranges (code-point offsets) and image sources.
#[pyclass(name = "RenderedPrompt", frozen, module = "deepseek_recipe._native")]
pub struct PyRenderedPrompt {
    inner: RenderedPrompt,
    special_ranges: Vec<(usize, usize)>,
}

#[pymethods]
impl PyRenderedPrompt {
    #[getter]
    fn prompt(&self) -> &str {
        &self.inner.prompt
    }
    #[getter]
    fn special_ranges(&self) -> Vec<(usize, usize)> {
        self.special_ranges.clone()
    }
    #[getter]
    fn image_sources<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.inner
            .image_sources
            .iter()
            .map(|s| image_to_py(py, s))
            .collect()
    }

    /// This prompt's token ids with `tokenizer`, without rendering again: what the encoding
    /// that rendered it gives for the conversation.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        tokenizer: PyRef<'_, PyTokenizer>,
    ) -> PyResult<Bound<'py, PyList>> {
        let tokenizer = tokenizer.inner.clone();
        let ids = py
            .detach(|| prompt_ids(&tokenizer, &self.inner))
            .map_err(errors::tokenize)?;
        crate::ids::prompt_list(py, ids)
    }

    /// `encode`, with the ids kept by the core (`TokenIds`).
    fn encode_ids(
        &self,
        py: Python<'_>,
        tokenizer: PyRef<'_, PyTokenizer>,
    ) -> PyResult<PyTokenIds> {
        let tokenizer = tokenizer.inner.clone();
        let ids = py
            .detach(|| prompt_ids(&tokenizer, &self.inner))
            .map_err(errors::tokenize)?;
        Ok(PyTokenIds::new(ids))
    }
}

/// The ids of a rendered prompt: its special ranges by lookup, the text between them plain.
/// The one path from a prompt to ids, whether the prompt was rendered just now or earlier.
fn prompt_ids(tokenizer: &Tokenizer, prompt: &RenderedPrompt) -> Result<PromptIds, TokenizeError> {
    tokenizer.encode_prompt_ids(&prompt.prompt, &prompt.special_ranges)
}

/// Byte ranges of `text` as Python code-point ranges (ranges ascending, on char boundaries).
fn code_point_ranges(text: &str, ranges: &[std::ops::Range<usize>]) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(ranges.len());
    let (mut byte, mut chars) = (0usize, 0usize);
    let mut advance = |to: usize| {
        if let Some(part) = text.get(byte..to) {
            chars += part.chars().count();
            byte = to;
        }
        chars
    };
    for r in ranges {
        let start = advance(r.start);
        let end = advance(r.end);
        out.push((start, end));
    }
    out
}

/// What both encoding classes hold.
#[derive(Clone)]
struct Encoder {
    version: ModelVersion,
    special_tokens: SpecialTokens,
    tokenizer: Option<Arc<Tokenizer>>,
}

impl Encoder {
    fn render(&self, py: Python<'_>, conversation: &PyConversation) -> PyRenderedPrompt {
        let inner = py.detach(|| render(&conversation.inner, self.version, &self.special_tokens));
        let special_ranges = code_point_ranges(&inner.prompt, &inner.special_ranges);
        PyRenderedPrompt {
            inner,
            special_ranges,
        }
    }

    fn prompt_ids(&self, py: Python<'_>, conversation: &PyConversation) -> PyResult<PromptIds> {
        self.prompt_ids_timed(py, conversation).map(|(ids, _)| ids)
    }

    /// The prompt's ids, and how long rendering and then encoding took (seconds).
    fn prompt_ids_timed(
        &self,
        py: Python<'_>,
        conversation: &PyConversation,
    ) -> PyResult<(PromptIds, (f64, f64))> {
        let tokenizer = self.tokenizer.clone().ok_or_else(errors::no_tokenizer)?;
        py.detach(|| {
            let started = Instant::now();
            let prompt = render(&conversation.inner, self.version, &self.special_tokens);
            let rendered = started.elapsed();
            let ids = prompt_ids(&tokenizer, &prompt)?;
            let encoded = started.elapsed() - rendered;
            Ok((ids, (rendered.as_secs_f64(), encoded.as_secs_f64())))
        })
        .map_err(errors::tokenize)
    }

    fn encode<'py>(
        &self,
        py: Python<'py>,
        conversation: &PyConversation,
    ) -> PyResult<Bound<'py, PyList>> {
        let ids = self.prompt_ids(py, conversation)?;
        crate::ids::prompt_list(py, ids)
    }

    fn encode_continuing(
        &self,
        py: Python<'_>,
        conversation: &PyConversation,
        previous: Option<&crate::stored::PyEncodedPrompt>,
        stored_ids: Option<&[u8]>,
    ) -> PyResult<crate::stored::PyEncodedPrompt> {
        let tokenizer = self.tokenizer.clone().ok_or_else(errors::no_tokenizer)?;
        let conversation = Arc::clone(&conversation.inner);
        py.detach(|| {
            let rendered = render_continuing(
                conversation,
                self.version,
                &self.special_tokens,
                previous.map(|p| &p.rendered),
            );
            let stored = match (previous, stored_ids) {
                (None, Some(bytes)) => {
                    tokenizer.prompt_ids_from_ids(crate::ids::ids_from_le_bytes(bytes))
                }
                _ => None,
            };
            // The bytes the render copied from the previous prompt are its ids' text too.
            let (base, same_bytes) = match previous {
                Some(previous) => (Some(&previous.ids), rendered.reused_bytes()),
                None => (stored.as_ref(), 0),
            };
            let prompt = rendered.prompt();
            let ids = tokenizer.encode_prompt_ids_extending(
                &prompt.prompt,
                &prompt.special_ranges,
                base,
                same_bytes,
            )?;
            Ok(crate::stored::PyEncodedPrompt { rendered, ids })
        })
        .map_err(errors::tokenize)
    }
}

macro_rules! encoding_class {
    ($py_name:literal, $rust:ident, $version:expr, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(name = $py_name, frozen, module = "deepseek_recipe._native")]
        #[derive(Clone)]
        pub struct $rust {
            encoder: Encoder,
            /// The attached tokenizer as Python holds it (with its `tokenizer.json` text), so
            /// the encoding pickles with it.
            tokenizer: Option<PyTokenizer>,
        }

        #[pymethods]
        impl $rust {
            #[new]
            pub fn new() -> Self {
                Self {
                    encoder: Encoder {
                        version: $version,
                        special_tokens: SpecialTokens::default(),
                        tokenizer: None,
                    },
                    tokenizer: None,
                }
            }

            /// A copy that encodes with `tokenizer`.
            fn with_tokenizer(&self, tokenizer: PyRef<'_, PyTokenizer>) -> Self {
                let mut encoder = self.encoder.clone();
                encoder.tokenizer = Some(tokenizer.inner.clone());
                Self {
                    encoder,
                    tokenizer: Some(tokenizer.clone()),
                }
            }

            /// Pickles as the calls that built it: `Encoding()`, `.with_special_tokens(tokens)`
            /// unless they are the defaults, then `.with_tokenizer(tokenizer)` if one is
            /// attached (the tokenizer pickles as its `tokenizer.json` text, so the copy
            /// encodes to the same ids).
            fn __reduce__<'py>(
                slf: &Bound<'py, Self>,
            ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, pyo3::types::PyTuple>)> {
                let py = slf.py();
                let this = slf.get();
                let class = py.get_type::<Self>();
                let special = crate::special::PySpecialTokens {
                    inner: this.encoder.special_tokens.clone(),
                };
                match &this.tokenizer {
                    None if this.encoder.special_tokens == SpecialTokens::default() => {
                        Ok((class.into_any(), pyo3::types::PyTuple::empty(py)))
                    }
                    None => Ok((
                        class.getattr("with_special_tokens")?,
                        (Self::new(), special).into_pyobject(py)?,
                    )),
                    Some(tokenizer) => {
                        let mut without = this.clone();
                        without.encoder.tokenizer = None;
                        without.tokenizer = None;
                        Ok((
                            class.getattr("with_tokenizer")?,
                            (without, tokenizer.clone()).into_pyobject(py)?,
                        ))
                    }
                }
            }

            /// A copy that renders every template token with these spellings.
            fn with_special_tokens(
                &self,
                special_tokens: PyRef<'_, crate::special::PySpecialTokens>,
            ) -> Self {
                let mut encoder = self.encoder.clone();
                encoder.special_tokens = special_tokens.inner.clone();
                Self {
                    encoder,
                    tokenizer: self.tokenizer.clone(),
                }
            }

            fn render_conversation(
                &self,
                py: Python<'_>,
                conversation: PyRef<'_, PyConversation>,
            ) -> PyRenderedPrompt {
                self.encoder.render(py, &conversation)
            }

            /// The prompt's token ids: special ranges by lookup, text with no added-token matching.
            fn encode<'py>(
                &self,
                py: Python<'py>,
                conversation: PyRef<'_, PyConversation>,
            ) -> PyResult<Bound<'py, PyList>> {
                self.encoder.encode(py, &conversation)
            }

            /// `encode`, with the ids kept by the core (`TokenIds`): no Python int per id
            /// unless asked for, and their JSON written directly.
            fn encode_ids(
                &self,
                py: Python<'_>,
                conversation: PyRef<'_, PyConversation>,
            ) -> PyResult<PyTokenIds> {
                Ok(PyTokenIds::new(self.encoder.prompt_ids(py, &conversation)?))
            }

            /// Ours: `encode_ids`, with how long rendering and then encoding took, in seconds
            /// (the gateway's stages).
            fn encode_ids_timed(
                &self,
                py: Python<'_>,
                conversation: PyRef<'_, PyConversation>,
            ) -> PyResult<(PyTokenIds, (f64, f64))> {
                let (ids, times) = self.encoder.prompt_ids_timed(py, &conversation)?;
                Ok((PyTokenIds::new(ids), times))
            }

            /// Render and encode `conversation` as the next turn of the one `previous` holds:
            /// the blocks both render alike are copied, and the ids are reused up to the last
            /// special token both share. Without `previous`, `stored_ids` (the previous
            /// turn's ids as little-endian `u32`s, read back from storage) serve as the base
            /// the ids are reused from. The ids equal `encode_ids(conversation)` either way.
            #[pyo3(signature = (conversation, previous=None, stored_ids=None))]
            fn encode_continuing(
                &self,
                py: Python<'_>,
                conversation: PyRef<'_, PyConversation>,
                previous: Option<PyRef<'_, crate::stored::PyEncodedPrompt>>,
                stored_ids: Option<&[u8]>,
            ) -> PyResult<crate::stored::PyEncodedPrompt> {
                self.encoder
                    .encode_continuing(py, &conversation, previous.as_deref(), stored_ids)
            }

            /// The model version whose prompt format this is.
            #[getter]
            fn model_version(&self) -> crate::options::PyModelVersion {
                self.encoder.version.into()
            }
        }
    };
}

encoding_class!(
    "DeepseekV4Encoding",
    PyDeepseekV4Encoding,
    ModelVersion::DeepseekV4Pro,
    "The DeepSeek V4 (Pro) prompt format."
);
encoding_class!(
    "DeepseekV41Encoding",
    PyDeepseekV41Encoding,
    ModelVersion::DeepseekV41Flash,
    "The DeepSeek V4.1 (Flash) prompt format."
);

/// Either encoding class, as `ModelVersion.encoding()` returns it.
#[derive(IntoPyObject)]
pub enum AnyEncoding {
    V4(PyDeepseekV4Encoding),
    V41(PyDeepseekV41Encoding),
}

/// The encoding of `version`: the one place a model version picks its prompt format.
pub fn for_version(version: ModelVersion) -> AnyEncoding {
    match version {
        ModelVersion::DeepseekV4Pro => AnyEncoding::V4(PyDeepseekV4Encoding::new()),
        ModelVersion::DeepseekV41Flash => AnyEncoding::V41(PyDeepseekV41Encoding::new()),
    }
}
