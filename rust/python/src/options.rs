//! `ConversionOptions` and the enums that configure conversion.

use std::collections::BTreeMap;

use deepseek_model::{
    ConversionOptions, ModelVersion, ReasoningContentBehavior, WebSearchBehavior,
};
use pyo3::prelude::*;

use crate::special::PySpecialTokens;

/// How an enum member pickles: `getattr(its type, its name)`.
pub type ByName<'py> = (
    Bound<'py, PyAny>,
    (Bound<'py, pyo3::types::PyType>, &'static str),
);

/// Which prompt format and rules apply.
#[pyclass(
    name = "ModelVersion",
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    module = "deepseek_recipe._native"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyModelVersion {
    DeepseekV4Pro,
    DeepseekV41Flash,
}

#[pymethods]
impl PyModelVersion {
    /// Pickles as the member's name (`getattr(ModelVersion, name)`), like a Python enum.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<ByName<'py>> {
        let getattr = py.import("builtins")?.getattr("getattr")?;
        Ok((getattr, (py.get_type::<Self>(), self.name())))
    }

    /// The member's name (`"DeepseekV4Pro"`), like a Python enum's `name`.
    #[getter]
    fn name(&self) -> &'static str {
        ModelVersion::from(*self).name()
    }

    /// A new encoding of this version's prompt format (`DeepseekV4Encoding` or
    /// `DeepseekV41Encoding`), with no tokenizer and the default special tokens.
    fn encoding(&self) -> crate::encoding::AnyEncoding {
        crate::encoding::for_version((*self).into())
    }
}

impl From<PyModelVersion> for ModelVersion {
    fn from(v: PyModelVersion) -> Self {
        match v {
            PyModelVersion::DeepseekV4Pro => ModelVersion::DeepseekV4Pro,
            PyModelVersion::DeepseekV41Flash => ModelVersion::DeepseekV41Flash,
        }
    }
}

impl From<ModelVersion> for PyModelVersion {
    fn from(v: ModelVersion) -> Self {
        match v {
            ModelVersion::DeepseekV4Pro => PyModelVersion::DeepseekV4Pro,
            ModelVersion::DeepseekV41Flash => PyModelVersion::DeepseekV41Flash,
        }
    }
}

/// What to do with assistant history that lacks reasoning in thinking mode.
#[pyclass(
    name = "ReasoningContentBehavior",
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    module = "deepseek_recipe._native"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyReasoningContentBehavior {
    FillEmpty,
    Reject,
}

#[pymethods]
impl PyReasoningContentBehavior {
    /// Pickles as the member's name (`getattr(ReasoningContentBehavior, name)`), like a Python enum.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<ByName<'py>> {
        let name = match self {
            Self::FillEmpty => "FillEmpty",
            Self::Reject => "Reject",
        };
        let getattr = py.import("builtins")?.getattr("getattr")?;
        Ok((getattr, (py.get_type::<Self>(), name)))
    }
}

impl From<PyReasoningContentBehavior> for ReasoningContentBehavior {
    fn from(v: PyReasoningContentBehavior) -> Self {
        match v {
            PyReasoningContentBehavior::FillEmpty => ReasoningContentBehavior::FillEmpty,
            PyReasoningContentBehavior::Reject => ReasoningContentBehavior::Reject,
        }
    }
}

impl From<ReasoningContentBehavior> for PyReasoningContentBehavior {
    fn from(v: ReasoningContentBehavior) -> Self {
        match v {
            ReasoningContentBehavior::FillEmpty => PyReasoningContentBehavior::FillEmpty,
            ReasoningContentBehavior::Reject => PyReasoningContentBehavior::Reject,
        }
    }
}

/// What to do with web-search server tools the deployment cannot run.
#[pyclass(
    name = "WebSearchBehavior",
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    module = "deepseek_recipe._native"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyWebSearchBehavior {
    Drop,
    Reject,
}

#[pymethods]
impl PyWebSearchBehavior {
    /// Pickles as the member's name (`getattr(WebSearchBehavior, name)`), like a Python enum.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<ByName<'py>> {
        let name = match self {
            Self::Drop => "Drop",
            Self::Reject => "Reject",
        };
        let getattr = py.import("builtins")?.getattr("getattr")?;
        Ok((getattr, (py.get_type::<Self>(), name)))
    }
}

impl From<PyWebSearchBehavior> for WebSearchBehavior {
    fn from(v: PyWebSearchBehavior) -> Self {
        match v {
            PyWebSearchBehavior::Drop => WebSearchBehavior::Drop,
            PyWebSearchBehavior::Reject => WebSearchBehavior::Reject,
        }
    }
}

impl From<WebSearchBehavior> for PyWebSearchBehavior {
    fn from(v: WebSearchBehavior) -> Self {
        match v {
            WebSearchBehavior::Drop => PyWebSearchBehavior::Drop,
            WebSearchBehavior::Reject => PyWebSearchBehavior::Reject,
        }
    }
}

/// The deployment's policy for converting requests. Immutable; `with_*` return copies.
#[pyclass(name = "ConversionOptions", frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PyConversionOptions {
    pub inner: ConversionOptions,
}

impl PyConversionOptions {
    fn with(&self, change: impl FnOnce(&mut ConversionOptions)) -> Self {
        let mut inner = self.inner.clone();
        change(&mut inner);
        Self { inner }
    }
}

#[pymethods]
impl PyConversionOptions {
    #[new]
    #[pyo3(signature = (
        *,
        default_thinking_mode=true,
        reasoning_content_behavior=PyReasoningContentBehavior::FillEmpty,
        responses_web_search=PyWebSearchBehavior::Drop,
        messages_web_search=PyWebSearchBehavior::Reject,
        thinking_max_tokens_upper_bound=393_216,
        non_thinking_max_tokens_upper_bound=393_216,
        special_tokens=None,
        model_versions_by_name=None,
        max_choices=1,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        default_thinking_mode: bool,
        reasoning_content_behavior: PyReasoningContentBehavior,
        responses_web_search: PyWebSearchBehavior,
        messages_web_search: PyWebSearchBehavior,
        thinking_max_tokens_upper_bound: u32,
        non_thinking_max_tokens_upper_bound: u32,
        special_tokens: Option<PyRef<'_, PySpecialTokens>>,
        model_versions_by_name: Option<BTreeMap<String, PyModelVersion>>,
        max_choices: u8,
    ) -> Self {
        let defaults = ConversionOptions::default();
        Self {
            inner: ConversionOptions {
                default_thinking_mode,
                reasoning_content_behavior: reasoning_content_behavior.into(),
                responses_web_search: responses_web_search.into(),
                messages_web_search: messages_web_search.into(),
                thinking_max_tokens_upper_bound,
                non_thinking_max_tokens_upper_bound,
                special_tokens: special_tokens.map_or(defaults.special_tokens, |s| s.inner.clone()),
                model_versions_by_name: model_versions_by_name
                    .map_or(defaults.model_versions_by_name, |names| {
                        names.into_iter().map(|(k, v)| (k, v.into())).collect()
                    }),
                max_choices,
            },
        }
    }

    /// Pickles as `ConversionOptions(**every setting)`.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<((), Bound<'py, pyo3::types::PyDict>)> {
        let settings = pyo3::types::PyDict::new(py);
        settings.set_item("default_thinking_mode", self.default_thinking_mode())?;
        settings.set_item(
            "reasoning_content_behavior",
            self.reasoning_content_behavior(),
        )?;
        settings.set_item("responses_web_search", self.responses_web_search())?;
        settings.set_item("messages_web_search", self.messages_web_search())?;
        settings.set_item(
            "thinking_max_tokens_upper_bound",
            self.thinking_max_tokens_upper_bound(),
        )?;
        settings.set_item(
            "non_thinking_max_tokens_upper_bound",
            self.non_thinking_max_tokens_upper_bound(),
        )?;
        settings.set_item("special_tokens", self.special_tokens())?;
        settings.set_item("model_versions_by_name", self.model_versions_by_name())?;
        settings.set_item("max_choices", self.inner.max_choices)?;
        Ok(((), settings))
    }

    #[getter]
    fn default_thinking_mode(&self) -> bool {
        self.inner.default_thinking_mode
    }
    #[getter]
    fn model_versions_by_name(&self) -> BTreeMap<String, PyModelVersion> {
        self.inner
            .model_versions_by_name
            .iter()
            .map(|(k, v)| (k.clone(), (*v).into()))
            .collect()
    }
    #[getter]
    fn thinking_max_tokens_upper_bound(&self) -> u32 {
        self.inner.thinking_max_tokens_upper_bound
    }
    #[getter]
    fn non_thinking_max_tokens_upper_bound(&self) -> u32 {
        self.inner.non_thinking_max_tokens_upper_bound
    }
    #[getter]
    fn reasoning_content_behavior(&self) -> PyReasoningContentBehavior {
        self.inner.reasoning_content_behavior.into()
    }
    #[getter]
    fn responses_web_search(&self) -> PyWebSearchBehavior {
        self.inner.responses_web_search.into()
    }
    #[getter]
    fn messages_web_search(&self) -> PyWebSearchBehavior {
        self.inner.messages_web_search.into()
    }
    #[getter]
    fn special_tokens(&self) -> PySpecialTokens {
        PySpecialTokens {
            inner: self.inner.special_tokens.clone(),
        }
    }
    /// Ours: the most choices a Chat request may ask for with `n` (1, the reference's, refuses
    /// any other `n`).
    #[getter]
    fn max_choices(&self) -> u8 {
        self.inner.max_choices
    }
    /// Ours: a copy allowing Chat requests up to `max_choices` choices (`n`).
    fn with_max_choices(&self, max_choices: u8) -> Self {
        self.with(|o| o.max_choices = max_choices)
    }
    fn with_default_thinking_mode(&self, default_thinking_mode: bool) -> Self {
        self.with(|o| o.default_thinking_mode = default_thinking_mode)
    }
    fn with_reasoning_content_behavior(
        &self,
        reasoning_content_behavior: PyReasoningContentBehavior,
    ) -> Self {
        self.with(|o| o.reasoning_content_behavior = reasoning_content_behavior.into())
    }
    fn with_responses_web_search(&self, responses_web_search: PyWebSearchBehavior) -> Self {
        self.with(|o| o.responses_web_search = responses_web_search.into())
    }
    fn with_messages_web_search(&self, messages_web_search: PyWebSearchBehavior) -> Self {
        self.with(|o| o.messages_web_search = messages_web_search.into())
    }
    fn with_special_tokens(&self, special_tokens: PyRef<'_, PySpecialTokens>) -> Self {
        self.with(|o| o.special_tokens = special_tokens.inner.clone())
    }
    fn with_model_alias(&self, model: String, model_version: PyModelVersion) -> Self {
        self.with(|o| {
            o.model_versions_by_name.insert(model, model_version.into());
        })
    }
    fn with_model_versions_by_name(
        &self,
        model_versions_by_name: BTreeMap<String, PyModelVersion>,
    ) -> Self {
        self.with(|o| {
            o.model_versions_by_name = model_versions_by_name
                .into_iter()
                .map(|(k, v)| (k, v.into()))
                .collect()
        })
    }
    fn with_thinking_max_tokens_upper_bound(&self, thinking_max_tokens_upper_bound: u32) -> Self {
        self.with(|o| o.thinking_max_tokens_upper_bound = thinking_max_tokens_upper_bound)
    }
    fn with_non_thinking_max_tokens_upper_bound(
        &self,
        non_thinking_max_tokens_upper_bound: u32,
    ) -> Self {
        self.with(|o| o.non_thinking_max_tokens_upper_bound = non_thinking_max_tokens_upper_bound)
    }
}
