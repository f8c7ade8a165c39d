//! Messages, tool calls, tool definitions and image sources as Python classes.

use deepseek_model::{
    ImageDetail, ImageSource, ImageSourceKind, Message, Role, SpecialToken, ToolCall,
    ToolDefinition,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::PyClassInitializer;

use crate::pyvalue;

/// A call the assistant made; `arguments` is kept exactly as supplied.
#[pyclass(name = "ToolCall", frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyToolCall {
    pub inner: ToolCall,
}

#[pymethods]
impl PyToolCall {
    #[new]
    fn new(id: String, name: String, arguments: String) -> Self {
        Self {
            inner: ToolCall {
                id,
                name,
                arguments,
            },
        }
    }
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    #[getter]
    fn arguments(&self) -> &str {
        &self.inner.arguments
    }
    fn __repr__(&self) -> String {
        let t = &self.inner;
        format!(
            "ToolCall(id={:?}, name={:?}, arguments={:?})",
            t.id, t.name, t.arguments
        )
    }
}

/// A tool the model may call.
#[pyclass(name = "ToolDefinition", frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyToolDefinition {
    pub inner: ToolDefinition,
}

#[pymethods]
impl PyToolDefinition {
    #[new]
    #[pyo3(signature = (name, description=None, parameters=None, strict=None, defer_loading=false))]
    fn new(
        name: String,
        description: Option<String>,
        parameters: Option<&Bound<'_, PyAny>>,
        strict: Option<bool>,
        defer_loading: bool,
    ) -> PyResult<Self> {
        let parameters = match parameters {
            Some(p) if !p.is_none() => Some(pyvalue::to_json(p)?),
            _ => None,
        };
        Ok(Self {
            inner: ToolDefinition {
                name,
                description,
                parameters,
                strict,
                defer_loading,
            },
        })
    }
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    #[getter]
    fn description(&self) -> Option<&str> {
        self.inner.description.as_deref()
    }
    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.inner.parameters {
            Some(p) => pyvalue::to_python(py, p),
            None => Ok(py.None().into_bound(py)),
        }
    }
    #[getter]
    fn strict(&self) -> Option<bool> {
        self.inner.strict
    }
    #[getter]
    fn defer_loading(&self) -> bool {
        self.inner.defer_loading
    }
    fn __repr__(&self) -> String {
        let t = &self.inner;
        let description = match &t.description {
            Some(d) => format!("{d:?}"),
            None => "None".to_owned(),
        };
        let strict = match t.strict {
            Some(true) => "True",
            Some(false) => "False",
            None => "None",
        };
        format!(
            "ToolDefinition(name={:?}, description={description}, strict={strict})",
            t.name
        )
    }
}

/// Base class of the image sources supplied with a conversation.
#[pyclass(
    name = "ImageSource",
    subclass,
    frozen,
    module = "deepseek_recipe._native"
)]
#[derive(Clone)]
pub struct PyImageSource {
    pub inner: ImageSource,
}

fn detail(detail: &str) -> PyResult<ImageDetail> {
    ImageDetail::parse(detail).ok_or_else(|| {
        PyValueError::new_err(format!(
            // The value quoted as Rust's `Debug` quotes it, as in the reference.
            "invalid detail {detail:?}; expected \"low\", \"high\", \"original\", or \"auto\""
        ))
    })
}

#[pymethods]
impl PyImageSource {
    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner.kind {
            ImageSourceKind::DataUrl(_) => "data_url",
            ImageSourceKind::Url(_) => "url",
            ImageSourceKind::Bytes(_) => "bytes",
        }
    }
    #[getter]
    fn detail(&self) -> &'static str {
        self.inner.detail.as_str()
    }
    #[getter]
    fn data_url(&self) -> Option<&str> {
        match &self.inner.kind {
            ImageSourceKind::DataUrl(u) => Some(u),
            _ => None,
        }
    }
    #[getter]
    fn url(&self) -> Option<&str> {
        match &self.inner.kind {
            ImageSourceKind::Url(u) => Some(u),
            _ => None,
        }
    }
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.inner.kind {
            ImageSourceKind::Bytes(b) => Some(PyBytes::new(py, b)),
            _ => None,
        }
    }
    #[getter]
    fn path(&self) -> &str {
        &self.inner.path
    }
    fn __repr__(&self) -> String {
        let s = &self.inner;
        let (class, what) = match &s.kind {
            ImageSourceKind::DataUrl(u) => ("DataUrlImageSource", format!("{u:?}")),
            ImageSourceKind::Url(u) => ("UrlImageSource", format!("{u:?}")),
            ImageSourceKind::Bytes(b) => ("BytesImageSource", format!("<{} bytes>", b.len())),
        };
        format!(
            "{class}({what}, detail={:?}, path={:?})",
            s.detail.as_str(),
            s.path
        )
    }
}

/// An image referenced by a data URL.
#[pyclass(name = "DataUrlImageSource", extends = PyImageSource, frozen, module = "deepseek_recipe._native")]
pub struct PyDataUrlImageSource;

#[pymethods]
impl PyDataUrlImageSource {
    #[new]
    #[pyo3(signature = (data_url, detail="high", *, path=String::new()))]
    fn new(data_url: String, detail: &str, path: String) -> PyResult<PyClassInitializer<Self>> {
        let inner = ImageSource {
            kind: ImageSourceKind::DataUrl(data_url),
            detail: self::detail(detail)?,
            path,
        };
        Ok(PyClassInitializer::from(PyImageSource { inner }).add_subclass(Self))
    }
}

/// An image referenced by an external URL.
#[pyclass(name = "UrlImageSource", extends = PyImageSource, frozen, module = "deepseek_recipe._native")]
pub struct PyUrlImageSource;

#[pymethods]
impl PyUrlImageSource {
    #[new]
    #[pyo3(signature = (url, detail="high", *, path=String::new()))]
    fn new(url: String, detail: &str, path: String) -> PyResult<PyClassInitializer<Self>> {
        let inner = ImageSource {
            kind: ImageSourceKind::Url(url),
            detail: self::detail(detail)?,
            path,
        };
        Ok(PyClassInitializer::from(PyImageSource { inner }).add_subclass(Self))
    }
}

/// An image supplied as encoded bytes.
#[pyclass(name = "BytesImageSource", extends = PyImageSource, frozen, module = "deepseek_recipe._native")]
pub struct PyBytesImageSource;

#[pymethods]
impl PyBytesImageSource {
    #[new]
    #[pyo3(signature = (data, detail="high", *, path=String::new()))]
    fn new(data: Vec<u8>, detail: &str, path: String) -> PyResult<PyClassInitializer<Self>> {
        let inner = ImageSource {
            kind: ImageSourceKind::Bytes(data),
            detail: self::detail(detail)?,
            path,
        };
        Ok(PyClassInitializer::from(PyImageSource { inner }).add_subclass(Self))
    }
}

/// Build the Python object of the right subclass for an image source.
pub fn image_to_py<'py>(py: Python<'py>, source: &ImageSource) -> PyResult<Bound<'py, PyAny>> {
    let base = PyClassInitializer::from(PyImageSource {
        inner: source.clone(),
    });
    Ok(match source.kind {
        ImageSourceKind::DataUrl(_) => {
            Bound::new(py, base.add_subclass(PyDataUrlImageSource))?.into_any()
        }
        ImageSourceKind::Url(_) => Bound::new(py, base.add_subclass(PyUrlImageSource))?.into_any(),
        ImageSourceKind::Bytes(_) => {
            Bound::new(py, base.add_subclass(PyBytesImageSource))?.into_any()
        }
    })
}

fn images(sources: Option<Vec<PyRef<'_, PyImageSource>>>) -> Vec<ImageSource> {
    sources
        .unwrap_or_default()
        .iter()
        .map(|s| s.inner.clone())
        .collect()
}

fn image_token(token: Option<String>) -> PyResult<String> {
    match token {
        Some(t) if t.is_empty() => Err(PyValueError::new_err("image_token must not be empty")),
        Some(t) => Ok(t),
        None => Ok(SpecialToken::Image.default_str().to_owned()),
    }
}

/// Base class of the messages in a conversation.
#[pyclass(name = "Message", subclass, frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyMessage {
    pub inner: Message,
}

#[pymethods]
impl PyMessage {
    #[getter]
    fn role(&self) -> &'static str {
        self.inner.role.as_str()
    }
    #[getter]
    fn content(&self) -> &str {
        &self.inner.content
    }
    #[getter]
    fn reasoning_content(&self) -> Option<&str> {
        self.inner.reasoning_content.as_deref()
    }
    #[getter]
    fn tool_calls(&self) -> Option<Vec<PyToolCall>> {
        self.inner.tool_calls.as_ref().map(|calls| {
            calls
                .iter()
                .map(|c| PyToolCall { inner: c.clone() })
                .collect()
        })
    }
    #[getter]
    fn tool_call_id(&self) -> Option<&str> {
        self.inner.tool_call_id.as_deref()
    }
    #[getter]
    fn image_sources<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.inner
            .image_sources
            .iter()
            .map(|s| image_to_py(py, s))
            .collect()
    }
    #[getter]
    fn prefix(&self) -> bool {
        self.inner.prefix
    }
    fn __repr__(&self) -> String {
        let m = &self.inner;
        match m.role {
            Role::System => format!("SystemMessage({:?})", m.content),
            Role::User => format!(
                "UserMessage({:?}, image_sources={})",
                m.content,
                m.image_sources.len()
            ),
            Role::Assistant => format!(
                "AssistantMessage({:?}, reasoning_content={}, tool_calls={}, prefix={})",
                m.content,
                if m.reasoning_content.is_some() {
                    "True"
                } else {
                    "False"
                },
                m.calls().len(),
                if m.prefix { "True" } else { "False" }
            ),
            Role::Tool => format!(
                "ToolMessage({:?}, tool_call_id={:?}, image_sources={})",
                m.content,
                m.tool_call_id,
                m.image_sources.len()
            ),
            Role::LatestReminder => format!("LatestReminderMessage({:?})", m.content),
        }
    }
}

/// A system message; `tools` are tools announced mid-conversation (rendered by V4.1).
#[pyclass(name = "SystemMessage", extends = PyMessage, frozen, module = "deepseek_recipe._native")]
pub struct PySystemMessage;

#[pymethods]
impl PySystemMessage {
    #[new]
    #[pyo3(signature = (content, image_sources=None, tools=None, *, image_token=None))]
    fn new(
        content: String,
        image_sources: Option<Vec<PyRef<'_, PyImageSource>>>,
        tools: Option<Vec<PyRef<'_, PyToolDefinition>>>,
        image_token: Option<String>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let mut inner = Message::system(content).with_images_at_first_occurrences(
            images(image_sources),
            &self::image_token(image_token)?,
        );
        inner.tools = tools.map(|ts| ts.iter().map(|t| t.inner.clone()).collect());
        Ok(PyClassInitializer::from(PyMessage { inner }).add_subclass(Self))
    }
    #[getter]
    fn tools(slf: &Bound<'_, Self>) -> Option<Vec<PyToolDefinition>> {
        let base: &PyMessage = slf.as_super().get();
        base.inner.tools.as_ref().map(|ts| {
            ts.iter()
                .map(|t| PyToolDefinition { inner: t.clone() })
                .collect()
        })
    }
}

/// A user message.
#[pyclass(name = "UserMessage", extends = PyMessage, frozen, module = "deepseek_recipe._native")]
pub struct PyUserMessage;

#[pymethods]
impl PyUserMessage {
    #[new]
    #[pyo3(signature = (content, image_sources=None, *, image_token=None))]
    fn new(
        content: String,
        image_sources: Option<Vec<PyRef<'_, PyImageSource>>>,
        image_token: Option<String>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let inner = Message::user(content).with_images_at_first_occurrences(
            images(image_sources),
            &self::image_token(image_token)?,
        );
        Ok(PyClassInitializer::from(PyMessage { inner }).add_subclass(Self))
    }
}

/// An assistant turn: content, optional reasoning, optional tool calls, or a prefix to continue.
#[pyclass(name = "AssistantMessage", extends = PyMessage, frozen, module = "deepseek_recipe._native")]
pub struct PyAssistantMessage;

#[pymethods]
impl PyAssistantMessage {
    #[new]
    #[pyo3(signature = (content, reasoning_content=None, tool_calls=None, prefix=false))]
    fn new(
        content: String,
        reasoning_content: Option<String>,
        tool_calls: Option<Vec<PyRef<'_, PyToolCall>>>,
        prefix: bool,
    ) -> PyClassInitializer<Self> {
        let calls = tool_calls.map(|cs| cs.iter().map(|c| c.inner.clone()).collect());
        PyClassInitializer::from(PyMessage {
            inner: Message::assistant(content, reasoning_content, calls, prefix),
        })
        .add_subclass(Self)
    }
}

/// The result of a tool call.
#[pyclass(name = "ToolMessage", extends = PyMessage, frozen, module = "deepseek_recipe._native")]
pub struct PyToolMessage;

#[pymethods]
impl PyToolMessage {
    #[new]
    #[pyo3(signature = (content, tool_call_id=None, image_sources=None, *, image_token=None))]
    fn new(
        content: String,
        tool_call_id: Option<String>,
        image_sources: Option<Vec<PyRef<'_, PyImageSource>>>,
        image_token: Option<String>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let inner = Message::tool(content, tool_call_id).with_images_at_first_occurrences(
            images(image_sources),
            &self::image_token(image_token)?,
        );
        Ok(PyClassInitializer::from(PyMessage { inner }).add_subclass(Self))
    }
}

/// A reminder rendered just before the model's turn.
#[pyclass(name = "LatestReminderMessage", extends = PyMessage, frozen, module = "deepseek_recipe._native")]
pub struct PyLatestReminderMessage;

#[pymethods]
impl PyLatestReminderMessage {
    #[new]
    fn new(content: String) -> PyClassInitializer<Self> {
        PyClassInitializer::from(PyMessage {
            inner: Message::latest_reminder(content),
        })
        .add_subclass(Self)
    }
}

/// Build the Python object of the right subclass for a message.
pub fn message_to_py<'py>(py: Python<'py>, message: &Message) -> PyResult<Bound<'py, PyAny>> {
    let base = PyClassInitializer::from(PyMessage {
        inner: message.clone(),
    });
    Ok(match message.role {
        Role::System => Bound::new(py, base.add_subclass(PySystemMessage))?.into_any(),
        Role::User => Bound::new(py, base.add_subclass(PyUserMessage))?.into_any(),
        Role::Assistant => Bound::new(py, base.add_subclass(PyAssistantMessage))?.into_any(),
        Role::Tool => Bound::new(py, base.add_subclass(PyToolMessage))?.into_any(),
        Role::LatestReminder => {
            Bound::new(py, base.add_subclass(PyLatestReminderMessage))?.into_any()
        }
    })
}
