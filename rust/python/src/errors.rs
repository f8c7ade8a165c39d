//! Every error kind of the stage crates mapped to its Python exception, in one place.
//!
//! Each exception subclasses the builtin the reference raises for the same failure (so an
//! `except RuntimeError` written for the reference still catches it) and carries `kind`, a
//! short stable name of the failure. Messages are the reference's, byte for byte.

use deepseek_protocol::ProtocolError;
use deepseek_stream::processor::StreamError as StreamFailure;
use deepseek_tokenize::{TokenizeError, TokenizeErrorKind};
use pyo3::exceptions::{PyBaseException, PyException, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    ConversionError,
    PyException,
    "A request that parsed but cannot be served. `status_code` is the HTTP status and `body` the OpenAI-style error body."
);
pyo3::create_exception!(
    _native,
    ImageError,
    PyException,
    "An image could not be fetched or decoded. `kind` names the failure; `is_retryable` says whether retrying may help."
);
pyo3::create_exception!(
    _native,
    CalcResizeError,
    PyValueError,
    "An image size that cannot be fitted to the model's grid."
);
pyo3::create_exception!(
    _native,
    TokenizerError,
    PyRuntimeError,
    "A tokenizer that cannot be loaded, or a prompt it cannot encode. `kind`: `load`, `no_tokenizer`, `missing_special_token`, `invalid_range` or `encode`."
);
pyo3::create_exception!(
    _native,
    StreamError,
    PyRuntimeError,
    "A stream processor call that cannot be served. `kind`: `finished`, `closed`, `no_tokenizer`, `logprob_count` or `unknown_token_id`."
);
pyo3::create_exception!(
    _native,
    ConsumedError,
    PyRuntimeError,
    "A request, chunk generator or event used after a call consumed it. `kind`: `request`, `generator` or `chunk`."
);

/// `error` with the attributes `set` gives it; a failure to set one is raised instead.
fn annotated(error: PyErr, set: impl FnOnce(&Bound<'_, PyBaseException>) -> PyResult<()>) -> PyErr {
    Python::attach(|py| match set(error.value(py)) {
        Ok(()) => error,
        Err(failure) => failure,
    })
}

/// `error` carrying `kind`.
fn with_kind(error: PyErr, kind: &'static str) -> PyErr {
    annotated(error, |value| value.setattr("kind", kind))
}

/// A `ConversionError` carrying `status_code` and `body`.
pub fn conversion(err: deepseek_model::ConversionError) -> PyErr {
    let (status_code, body) = (err.status_code(), err.body());
    annotated(ConversionError::new_err(err.message), |value| {
        value.setattr("status_code", status_code)?;
        value.setattr("body", body)
    })
}

/// An `ImageError` carrying `kind` (the reference's variant name) and `is_retryable`.
pub fn image(err: deepseek_images::ImageError) -> PyErr {
    let (kind, is_retryable, status_code) =
        (err.kind.name(), err.is_retryable(), err.kind.http_status());
    annotated(ImageError::new_err(err.message), |value| {
        value.setattr("kind", kind)?;
        value.setattr("is_retryable", is_retryable)?;
        value.setattr("status_code", status_code)
    })
}

/// A body that is not JSON or has the wrong shape is a `ValueError`; a refused conversion a
/// `ConversionError`.
pub fn protocol(err: ProtocolError) -> PyErr {
    match err {
        ProtocolError::Conversion(e) => conversion(e),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// A `TokenizerError` (a `RuntimeError`, as the reference raises).
pub fn tokenize(err: TokenizeError) -> PyErr {
    let kind = match err.kind {
        TokenizeErrorKind::Load => "load",
        TokenizeErrorKind::MissingSpecialToken => "missing_special_token",
        TokenizeErrorKind::InvalidRange => "invalid_range",
        TokenizeErrorKind::Encode => "encode",
    };
    tokenizer_error(kind, err.message)
}

/// A `tokenizer.json` that could not be read (the message is the I/O error's).
pub fn tokenizer_unreadable(err: &std::io::Error) -> PyErr {
    tokenizer_error("load", err.to_string())
}

/// An encoding asked for ids without a tokenizer attached.
pub fn no_tokenizer() -> PyErr {
    tokenizer_error(
        "no_tokenizer",
        "no tokenizer is attached to the encoding".to_owned(),
    )
}

fn tokenizer_error(kind: &'static str, message: String) -> PyErr {
    with_kind(TokenizerError::new_err(message), kind)
}

/// A `StreamError` (a `RuntimeError`) with the processor's message.
pub fn stream(err: StreamFailure) -> PyErr {
    let kind = match err {
        StreamFailure::Finished => "finished",
        StreamFailure::Closed => "closed",
        StreamFailure::NoTokenizer => "no_tokenizer",
        StreamFailure::LogprobCount { .. } => "logprob_count",
        StreamFailure::UnknownTokenId(_) => "unknown_token_id",
    };
    with_kind(StreamError::new_err(err.to_string()), kind)
}

/// What a consumed object was, for its `ConsumedError`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumable {
    /// A protocol request, consumed by `convert`.
    Request,
    /// A chunk generator, consumed by a `StreamProcessor` or a `with_*` call.
    Generator,
    /// A chunk or stream event, consumed by a response's `accumulate`.
    Chunk,
}

/// A `ConsumedError` (a `RuntimeError`) with the reference's message.
pub fn consumed(what: Consumable) -> PyErr {
    let (kind, message) = match what {
        Consumable::Request => ("request", "protocol request has been consumed"),
        Consumable::Generator => ("generator", "chunk generator has been consumed"),
        Consumable::Chunk => ("chunk", "protocol chunk has been consumed"),
    };
    with_kind(ConsumedError::new_err(message), kind)
}
