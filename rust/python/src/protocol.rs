//! The three protocol request classes. Each is consumed by `convert`.

use deepseek_protocol::{
    intake, ChatCompletionRequest, MessagesRequest, ProtocolError, ResponsesRequest,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use serde_json::Value;

use crate::conversation::PyConversationRequest;
use crate::errors::{self, Consumable};
use crate::options::PyConversionOptions;
use crate::pyvalue;
use crate::slot::Slot;

/// A request body given as bytes, JSON text, or a Python value tree, as a JSON value.
///
/// Bytes and text are parsed in place with the GIL released: `bytes` and `str` objects
/// never change, and `body` keeps them alive meanwhile.
fn body_value(body: &Bound<'_, PyAny>) -> PyResult<Value> {
    if let Ok(bytes) = body.cast::<PyBytes>() {
        let bytes = bytes.as_bytes();
        return body
            .py()
            .detach(|| intake::parse_json(bytes))
            .map_err(errors::protocol);
    }
    if let Ok(text) = body.cast::<PyString>() {
        let text = text.to_str()?;
        return body
            .py()
            .detach(|| intake::parse_json(text.as_bytes()))
            .map_err(errors::protocol);
    }
    pyvalue::to_json(body)
}

/// `generator: T` adds the static `chunk_generator(request, id, model)`, built by
/// `T::from_request(&ConversationRequest, &str, &str) -> T`. `methods: { … }` adds a
/// protocol's own methods.
macro_rules! request_class {
    ($py_name:literal, $rust:ident, $inner:ty, $doc:literal $(, generator: $generator:ty)? $(, methods: { $($methods:tt)* })?) => {
        #[doc = $doc]
        #[pyclass(name = $py_name, frozen, module = "deepseek_recipe._native")]
        pub struct $rust {
            slot: Slot<$inner>,
        }

        // Not used for Responses: its bodies are not resumed (stored responses continue them).
        #[allow(dead_code)]
        impl $rust {
            /// The Python object of a request parsed elsewhere (a resumed body).
            pub(crate) fn from_request(request: $inner) -> Self {
                Self { slot: Slot::new(Consumable::Request, request) }
            }

            /// `f` of the request, unless it was consumed.
            pub(crate) fn read<R>(&self, f: impl FnOnce(&$inner) -> R) -> PyResult<R> {
                self.slot.read(f)
            }
        }

        #[pymethods]
        impl $rust {
            #[new]
            fn new(py: Python<'_>, body: &Bound<'_, PyAny>) -> PyResult<Self> {
                let value = body_value(body)?;
                let request = py.detach(|| <$inner>::from_value(value)).map_err(errors::protocol)?;
                Ok(Self { slot: Slot::new(Consumable::Request, request) })
            }

            /// The requested model name.
            #[getter]
            fn model(&self) -> PyResult<String> {
                self.slot.read(|r| r.model().to_owned())
            }

            /// Convert into a `ConversationRequest`; consumes the request either way.
            fn convert(&self, py: Python<'_>, options: PyRef<'_, PyConversionOptions>) -> PyResult<PyConversationRequest> {
                let request = self.slot.take()?;
                let options = options.inner.clone();
                let converted = py.detach(move || request.convert(&options));
                converted
                    .map(|inner| PyConversationRequest { inner })
                    .map_err(|e| errors::protocol(ProtocolError::from(e)))
            }

            $(
            /// Construct this protocol's chunk generator from the resolved settings of
            /// `request`. `id` identifies the response; `model` is the name it reports.
            #[staticmethod]
            fn chunk_generator(request: PyRef<'_, PyConversationRequest>, id: &str, model: &str) -> $generator {
                <$generator>::from_request(&request.inner, id, model)
            }
            )?

            $($($methods)*)?
        }
    };
}

request_class!(
    "ChatCompletionRequest",
    PyChatCompletionRequest,
    ChatCompletionRequest,
    "An OpenAI Chat Completions request body, shape-checked.",
    generator: crate::reply_chat::PyChatCompletionChunkGenerator
);
request_class!(
    "ResponsesRequest",
    PyResponsesRequest,
    ResponsesRequest,
    "An OpenAI Responses request body, shape-checked.",
    generator: crate::reply_responses::PyResponsesChunkGenerator,
    methods: {
        /// The request settings that response objects report. Conversion preserves them for
        /// the chunk generator. Raises `ConsumedError` after `convert`.
        fn echo(&self) -> PyResult<crate::reply_responses::PyResponsesEcho> {
            self.slot.read(|r| crate::reply_responses::PyResponsesEcho { inner: r.reported_settings() })
        }

        /// The function names of the declared namespace tools mapped to `(namespace, local
        /// name)`, as conversion with `options` assigns them. Raises `ConversionError` for an
        /// invalid tool declaration and `ConsumedError` after `convert`.
        fn namespace_tool_map(
            &self,
            options: PyRef<'_, PyConversionOptions>,
        ) -> PyResult<std::collections::BTreeMap<String, (String, String)>> {
            self.slot.read(|r| r.namespace_tool_map(&options.inner))?.map_err(errors::conversion)
        }

        /// `store`, `previous_response_id`, `conversation` and `metadata`, checked (the
        /// reference ignores them). Raises `ConversionError` for one of the wrong type, or for
        /// both `previous_response_id` and `conversation`; `ConsumedError` after `convert`.
        fn state_fields(&self) -> PyResult<crate::stored::PyResponsesStateFields> {
            self.slot
                .read(|r| r.state_fields())?
                .map(|inner| crate::stored::PyResponsesStateFields { inner })
                .map_err(errors::conversion)
        }

        /// Convert as `convert` would with `history`'s items before the request's own input
        /// (and the request's own `instructions`); also returns the history after the
        /// request's input items. Consumes the request either way.
        fn convert_continuing(
            &self,
            py: Python<'_>,
            options: PyRef<'_, PyConversionOptions>,
            history: PyRef<'_, crate::stored::PyResponsesHistory>,
        ) -> PyResult<(PyConversationRequest, crate::stored::PyResponsesHistory)> {
            let request = self.slot.take()?;
            let options = options.inner.clone();
            let history = history.inner.clone();
            let converted = py.detach(move || request.convert_continuing(&options, &history));
            converted
                .map(|(inner, after)| {
                    (PyConversationRequest { inner }, crate::stored::PyResponsesHistory { inner: after })
                })
                .map_err(|e| errors::protocol(ProtocolError::from(e)))
        }
    }
);
request_class!(
    "MessagesRequest",
    PyMessagesRequest,
    MessagesRequest,
    "An Anthropic Messages request body, shape-checked.",
    generator: crate::reply_messages::PyMessagesChunkGenerator
);

/// Whether a JSON request body nests arrays and objects deeper than `limit` (checked before
/// parsing, for a limit below the parser's own 128).
#[pyfunction]
pub fn json_nesting_exceeds(py: Python<'_>, body: &[u8], limit: usize) -> bool {
    py.detach(|| deepseek_protocol::intake::nesting_exceeds(body, limit))
}
