//! `Conversation`, `ConversationRequest` and the options a conversion derives.

use std::sync::Arc;

use deepseek_model::{
    Conversation, ConversationRequest, InferenceOptions, OutputConstraint, ParsingOptions,
    ReasoningEffort, ResponseFormat, ThinkingInitialStage, ToolChoice,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors;
use crate::message::{image_to_py, message_to_py, PyMessage, PyToolDefinition};
use crate::options::PyModelVersion;
use crate::pyvalue;
use crate::special::PySpecialTokens;

/// A whole conversation plus the settings that shape its prompt.
#[pyclass(name = "Conversation", frozen, module = "deepseek_recipe._native")]
///
/// Immutable, so it shares its conversation with the `ConversationRequest` it came from:
/// reading `ConversationRequest.conversation` copies nothing.
#[derive(Clone)]
pub struct PyConversation {
    pub inner: Arc<Conversation>,
}

#[pymethods]
impl PyConversation {
    #[new]
    #[pyo3(signature = (
        messages=None, *, thinking_mode=true, tools=None, tool_choice="auto", reasoning_effort=None,
        response_format="text", response_schema=None, response_regex=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        messages: Option<Vec<PyRef<'_, PyMessage>>>,
        thinking_mode: bool,
        tools: Option<Vec<PyRef<'_, PyToolDefinition>>>,
        tool_choice: &str,
        reasoning_effort: Option<&str>,
        response_format: &str,
        response_schema: Option<&Bound<'_, PyAny>>,
        response_regex: Option<String>,
    ) -> PyResult<Self> {
        let tool_choice = ToolChoice::parse(tool_choice).ok_or_else(|| {
            PyValueError::new_err(format!(
                "invalid tool_choice \"{tool_choice}\"; expected \"auto\", \"none\", or \"required\""
            ))
        })?;
        let reasoning_effort = reasoning_effort
            .map(|e| {
                ReasoningEffort::parse(e).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "invalid reasoning_effort \"{e}\"; expected \"low\", \"high\", \"xhigh\", or \"max\""
                    ))
                })
            })
            .transpose()?;
        let json_object = match response_format {
            "text" => false,
            "json_object" => true,
            other => {
                return Err(PyValueError::new_err(format!(
                    "invalid response_format \"{other}\"; expected \"text\" or \"json_object\""
                )))
            }
        };
        let response_schema = match response_schema {
            Some(s) if !s.is_none() => Some(pyvalue::to_json(s)?),
            _ => None,
        };
        let response_format = match (json_object, response_schema, response_regex) {
            (_, Some(_), Some(_)) => {
                return Err(PyValueError::new_err("response_schema and response_regex cannot be combined"))
            }
            (true, Some(_), None) | (true, None, Some(_)) => {
                return Err(PyValueError::new_err(
                    "response_format \"json_object\" cannot be combined with response_schema or response_regex",
                ))
            }
            (true, None, None) => ResponseFormat::JsonObject,
            (false, Some(schema), None) => ResponseFormat::JsonSchema(schema),
            (false, None, Some(regex)) => ResponseFormat::Regex(regex),
            (false, None, None) => ResponseFormat::Text,
        };
        Ok(Self {
            inner: Arc::new(Conversation {
                messages: messages
                    .unwrap_or_default()
                    .iter()
                    .map(|m| Arc::new(m.inner.clone()))
                    .collect(),
                thinking_mode,
                tools: tools
                    .unwrap_or_default()
                    .iter()
                    .map(|t| t.inner.clone())
                    .collect(),
                tool_choice,
                reasoning_effort,
                response_format,
            }),
        })
    }

    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.inner
            .messages
            .iter()
            .map(|m| message_to_py(py, m))
            .collect()
    }
    /// Every message's image sources, in order (what `[s for m in messages for s in
    /// m.image_sources]` gives, without copying the messages).
    #[getter]
    fn image_sources<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.inner
            .messages
            .iter()
            .flat_map(|m| &m.image_sources)
            .map(|s| image_to_py(py, s))
            .collect()
    }
    #[getter]
    fn thinking_mode(&self) -> bool {
        self.inner.thinking_mode
    }
    #[getter]
    fn tools(&self) -> Vec<PyToolDefinition> {
        self.inner
            .tools
            .iter()
            .map(|t| PyToolDefinition { inner: t.clone() })
            .collect()
    }
    #[getter]
    fn tool_choice(&self) -> &'static str {
        self.inner.tool_choice.as_str()
    }
    #[getter]
    fn reasoning_effort(&self) -> Option<&'static str> {
        self.inner.reasoning_effort.map(ReasoningEffort::as_str)
    }
    #[getter]
    fn response_format(&self) -> &'static str {
        self.inner.response_format.name()
    }
    #[getter]
    fn response_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.inner.response_format {
            ResponseFormat::JsonSchema(schema) => pyvalue::to_python(py, schema),
            _ => Ok(py.None().into_bound(py)),
        }
    }
    #[getter]
    fn response_regex(&self) -> Option<&str> {
        match &self.inner.response_format {
            ResponseFormat::Regex(regex) => Some(regex),
            _ => None,
        }
    }
    fn __repr__(&self) -> String {
        let c = &self.inner;
        format!(
            "Conversation(messages={}, thinking_mode={}, tools={}, tool_choice={:?}, reasoning_effort={}, response_format={:?})",
            c.messages.len(),
            if c.thinking_mode { "True" } else { "False" },
            c.tools.len(),
            c.tool_choice.as_str(),
            c.reasoning_effort.map_or("None".to_owned(), |e| format!("{:?}", e.as_str())),
            c.response_format.name()
        )
    }
}

/// The output constraint a backend should enforce while decoding.
#[pyclass(name = "OutputConstraint", frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyOutputConstraint {
    pub inner: OutputConstraint,
}

#[pymethods]
impl PyOutputConstraint {
    #[getter]
    fn kind(&self) -> &str {
        &self.inner.kind
    }
    #[getter]
    fn schema(&self) -> &str {
        &self.inner.schema
    }
}

/// Sampling and budget settings for the backend.
#[pyclass(name = "InferenceOptions", frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyInferenceOptions {
    pub inner: InferenceOptions,
}

#[pymethods]
impl PyInferenceOptions {
    #[getter]
    fn max_tokens(&self) -> Option<u32> {
        self.inner.max_tokens
    }
    #[getter]
    fn temperature(&self) -> Option<f64> {
        self.inner.temperature.map(f64::from)
    }
    #[getter]
    fn top_p(&self) -> Option<f64> {
        self.inner.top_p.map(f64::from)
    }
    #[getter]
    fn logprobs(&self) -> bool {
        self.inner.logprobs
    }
    #[getter]
    fn top_logprobs(&self) -> Option<u8> {
        self.inner.top_logprobs
    }
    #[getter]
    fn seed(&self) -> Option<u64> {
        self.inner.seed
    }
    /// Ours: how many choices to sample (Chat's `n`, when `ConversionOptions.max_choices`
    /// allows more than one).
    #[getter]
    fn n(&self) -> u8 {
        self.inner.n.unwrap_or(1)
    }
    #[getter]
    fn output_constraint(&self) -> Option<PyOutputConstraint> {
        self.inner
            .output_constraint
            .clone()
            .map(|inner| PyOutputConstraint { inner })
    }
}

/// Where parsing of the model's output starts.
#[pyclass(
    name = "ThinkingInitialStage",
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    module = "deepseek_recipe._native"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyThinkingInitialStage {
    ReasoningStart,
    ReasoningContinuation,
    ContentContinuation,
}

impl From<PyThinkingInitialStage> for ThinkingInitialStage {
    fn from(v: PyThinkingInitialStage) -> Self {
        match v {
            PyThinkingInitialStage::ReasoningStart => ThinkingInitialStage::ReasoningStart,
            PyThinkingInitialStage::ReasoningContinuation => {
                ThinkingInitialStage::ReasoningContinuation
            }
            PyThinkingInitialStage::ContentContinuation => {
                ThinkingInitialStage::ContentContinuation
            }
        }
    }
}

impl From<ThinkingInitialStage> for PyThinkingInitialStage {
    fn from(v: ThinkingInitialStage) -> Self {
        match v {
            ThinkingInitialStage::ReasoningStart => PyThinkingInitialStage::ReasoningStart,
            ThinkingInitialStage::ReasoningContinuation => {
                PyThinkingInitialStage::ReasoningContinuation
            }
            ThinkingInitialStage::ContentContinuation => {
                PyThinkingInitialStage::ContentContinuation
            }
        }
    }
}

#[pymethods]
impl PyThinkingInitialStage {
    /// Pickles as the member's name (`getattr(ThinkingInitialStage, name)`), like a Python enum.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<crate::options::ByName<'py>> {
        let name = match self {
            PyThinkingInitialStage::ReasoningStart => "ReasoningStart",
            PyThinkingInitialStage::ReasoningContinuation => "ReasoningContinuation",
            PyThinkingInitialStage::ContentContinuation => "ContentContinuation",
        };
        let getattr = py.import("builtins")?.getattr("getattr")?;
        Ok((getattr, (py.get_type::<Self>(), name)))
    }

    fn starts_in_reasoning(&self) -> bool {
        ThinkingInitialStage::from(*self).starts_in_reasoning()
    }
}

/// How to parse the model's output. Mutable: not for sharing across threads while changed.
#[pyclass(name = "ParsingOptions", module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyParsingOptions {
    pub inner: ParsingOptions,
}

#[pymethods]
impl PyParsingOptions {
    #[new]
    #[pyo3(signature = (
        *, parse_tool_calls=true, starts_in_tool_calls=false, parse_json_output=false,
        thinking_initial_stage=None, stop_sequences=None, special_tokens=None,
    ))]
    fn new(
        parse_tool_calls: bool,
        starts_in_tool_calls: bool,
        parse_json_output: bool,
        thinking_initial_stage: Option<PyThinkingInitialStage>,
        stop_sequences: Option<Vec<String>>,
        special_tokens: Option<PyRef<'_, PySpecialTokens>>,
    ) -> Self {
        Self {
            inner: ParsingOptions {
                parse_tool_calls,
                starts_in_tool_calls,
                parse_json_output,
                thinking_initial_stage: thinking_initial_stage.map(Into::into),
                stop_sequences: stop_sequences.unwrap_or_default(),
                special_tokens: special_tokens.map(|s| s.inner.clone()).unwrap_or_default(),
            },
        }
    }

    /// Pickles as `ParsingOptions(**every setting)`.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<((), Bound<'py, pyo3::types::PyDict>)> {
        let settings = pyo3::types::PyDict::new(py);
        settings.set_item("parse_tool_calls", self.inner.parse_tool_calls)?;
        settings.set_item("starts_in_tool_calls", self.inner.starts_in_tool_calls)?;
        settings.set_item("parse_json_output", self.inner.parse_json_output)?;
        settings.set_item("thinking_initial_stage", self.get_thinking_initial_stage())?;
        settings.set_item("stop_sequences", self.get_stop_sequences())?;
        settings.set_item("special_tokens", self.get_special_tokens())?;
        Ok(((), settings))
    }

    #[getter]
    fn get_parse_tool_calls(&self) -> bool {
        self.inner.parse_tool_calls
    }
    #[setter]
    fn set_parse_tool_calls(&mut self, value: bool) {
        self.inner.parse_tool_calls = value;
    }
    #[getter]
    fn get_starts_in_tool_calls(&self) -> bool {
        self.inner.starts_in_tool_calls
    }
    #[setter]
    fn set_starts_in_tool_calls(&mut self, value: bool) {
        self.inner.starts_in_tool_calls = value;
    }
    #[getter]
    fn get_parse_json_output(&self) -> bool {
        self.inner.parse_json_output
    }
    #[setter]
    fn set_parse_json_output(&mut self, value: bool) {
        self.inner.parse_json_output = value;
    }
    #[getter]
    fn get_thinking_initial_stage(&self) -> Option<PyThinkingInitialStage> {
        self.inner.thinking_initial_stage.map(Into::into)
    }
    #[setter]
    fn set_thinking_initial_stage(&mut self, value: Option<PyThinkingInitialStage>) {
        self.inner.thinking_initial_stage = value.map(Into::into);
    }
    #[getter]
    fn get_stop_sequences(&self) -> Vec<String> {
        self.inner.stop_sequences.clone()
    }
    #[setter]
    fn set_stop_sequences(&mut self, value: Vec<String>) {
        self.inner.stop_sequences = value;
    }
    #[getter]
    fn get_special_tokens(&self) -> PySpecialTokens {
        PySpecialTokens {
            inner: self.inner.special_tokens.clone(),
        }
    }
    #[setter]
    fn set_special_tokens(&mut self, value: PyRef<'_, PySpecialTokens>) {
        self.inner.special_tokens = value.inner.clone();
    }
}

/// A converted request: the conversation plus inference and parsing options.
#[pyclass(
    name = "ConversationRequest",
    frozen,
    module = "deepseek_recipe._native"
)]
#[derive(Clone)]
pub struct PyConversationRequest {
    pub inner: ConversationRequest,
}

#[pymethods]
impl PyConversationRequest {
    #[new]
    fn new(conversation: PyRef<'_, PyConversation>, model_version: PyModelVersion) -> Self {
        Self {
            inner: ConversationRequest::new(Arc::clone(&conversation.inner), model_version.into()),
        }
    }
    #[getter]
    fn conversation(&self) -> PyConversation {
        PyConversation {
            inner: Arc::clone(&self.inner.conversation),
        }
    }
    #[getter]
    fn inference_options(&self) -> PyInferenceOptions {
        PyInferenceOptions {
            inner: self.inner.inference_options.clone(),
        }
    }
    #[getter]
    fn parsing_options(&self) -> PyParsingOptions {
        PyParsingOptions {
            inner: self.inner.parsing_options.clone(),
        }
    }
    #[getter]
    fn model_version(&self) -> PyModelVersion {
        self.inner.model_version.into()
    }
    #[getter]
    fn stream(&self) -> bool {
        self.inner.stream
    }
    fn resolve_max_tokens(&self, prompt_tokens: u32, context_limit: u32) -> PyResult<u32> {
        self.inner
            .resolve_max_tokens(prompt_tokens, context_limit)
            .map_err(errors::conversion)
    }
}
