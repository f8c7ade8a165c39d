//! `SpecialToken` and `SpecialTokens`.

use deepseek_model::{SpecialToken, SpecialTokens};
use pyo3::prelude::*;

/// One template token of the DeepSeek V4 family.
#[pyclass(
    name = "SpecialToken",
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    module = "deepseek_recipe._native"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PySpecialToken {
    Bos,
    Eos,
    ThinkingStart,
    ThinkingEnd,
    System,
    User,
    Assistant,
    LatestReminder,
    Dsml,
    Image,
    Ref,
    RefEnd,
    Box,
    BoxEnd,
    Point,
    PointEnd,
    Polygon,
    PolygonEnd,
}

impl From<PySpecialToken> for SpecialToken {
    fn from(t: PySpecialToken) -> Self {
        match t {
            PySpecialToken::Bos => SpecialToken::Bos,
            PySpecialToken::Eos => SpecialToken::Eos,
            PySpecialToken::ThinkingStart => SpecialToken::ThinkingStart,
            PySpecialToken::ThinkingEnd => SpecialToken::ThinkingEnd,
            PySpecialToken::System => SpecialToken::System,
            PySpecialToken::User => SpecialToken::User,
            PySpecialToken::Assistant => SpecialToken::Assistant,
            PySpecialToken::LatestReminder => SpecialToken::LatestReminder,
            PySpecialToken::Dsml => SpecialToken::Dsml,
            PySpecialToken::Image => SpecialToken::Image,
            PySpecialToken::Ref => SpecialToken::Ref,
            PySpecialToken::RefEnd => SpecialToken::RefEnd,
            PySpecialToken::Box => SpecialToken::Box,
            PySpecialToken::BoxEnd => SpecialToken::BoxEnd,
            PySpecialToken::Point => SpecialToken::Point,
            PySpecialToken::PointEnd => SpecialToken::PointEnd,
            PySpecialToken::Polygon => SpecialToken::Polygon,
            PySpecialToken::PolygonEnd => SpecialToken::PolygonEnd,
        }
    }
}

#[pymethods]
impl PySpecialToken {
    /// The spelling in the DeepSeek V4 family vocabulary.
    fn default_str(&self) -> &'static str {
        SpecialToken::from(*self).default_str()
    }
}

/// `SpecialTokens`' keyword for each token, in the order of `SpecialToken::ALL`.
const KEYWORDS: [&str; 18] = [
    "bos",
    "eos",
    "thinking_start",
    "thinking_end",
    "system",
    "user",
    "assistant",
    "latest_reminder",
    "dsml",
    "image",
    "ref",
    "ref_end",
    "box",
    "box_end",
    "point",
    "point_end",
    "polygon",
    "polygon_end",
];

/// The spelling of every special token; `SpecialTokens(user="<|U|>")` overrides some.
#[pyclass(name = "SpecialTokens", frozen, module = "deepseek_recipe._native")]
#[derive(Clone)]
pub struct PySpecialTokens {
    pub inner: SpecialTokens,
}

#[pymethods]
impl PySpecialTokens {
    #[new]
    #[pyo3(signature = (*, bos=None, eos=None, thinking_start=None, thinking_end=None, system=None, user=None, assistant=None, latest_reminder=None, dsml=None, image=None, r#ref=None, ref_end=None, r#box=None, box_end=None, point=None, point_end=None, polygon=None, polygon_end=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        bos: Option<String>,
        eos: Option<String>,
        thinking_start: Option<String>,
        thinking_end: Option<String>,
        system: Option<String>,
        user: Option<String>,
        assistant: Option<String>,
        latest_reminder: Option<String>,
        dsml: Option<String>,
        image: Option<String>,
        r#ref: Option<String>,
        ref_end: Option<String>,
        r#box: Option<String>,
        box_end: Option<String>,
        point: Option<String>,
        point_end: Option<String>,
        polygon: Option<String>,
        polygon_end: Option<String>,
    ) -> Self {
        let mut inner = SpecialTokens::default();
        for (token, spelling) in [
            (SpecialToken::Bos, bos),
            (SpecialToken::Eos, eos),
            (SpecialToken::ThinkingStart, thinking_start),
            (SpecialToken::ThinkingEnd, thinking_end),
            (SpecialToken::System, system),
            (SpecialToken::User, user),
            (SpecialToken::Assistant, assistant),
            (SpecialToken::LatestReminder, latest_reminder),
            (SpecialToken::Dsml, dsml),
            (SpecialToken::Image, image),
            (SpecialToken::Ref, r#ref),
            (SpecialToken::RefEnd, ref_end),
            (SpecialToken::Box, r#box),
            (SpecialToken::BoxEnd, box_end),
            (SpecialToken::Point, point),
            (SpecialToken::PointEnd, point_end),
            (SpecialToken::Polygon, polygon),
            (SpecialToken::PolygonEnd, polygon_end),
        ] {
            if let Some(spelling) = spelling {
                inner.set(token, spelling);
            }
        }
        Self { inner }
    }

    fn token(&self, token: PySpecialToken) -> String {
        self.inner.get(token.into()).to_owned()
    }

    /// Pickles as `SpecialTokens(**every spelling)`.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<((), Bound<'py, pyo3::types::PyDict>)> {
        let spellings = pyo3::types::PyDict::new(py);
        for (name, token) in KEYWORDS.iter().zip(SpecialToken::ALL) {
            spellings.set_item(name, self.inner.get(token))?;
        }
        Ok(((), spellings))
    }
}
