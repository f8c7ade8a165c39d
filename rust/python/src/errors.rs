//! Every error kind of the stage crates mapped to its Python exception, in one place.

use deepseek_protocol::ProtocolError;
use deepseek_tokenize::TokenizeError;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    ConversionError,
    pyo3::exceptions::PyException,
    "A request that parsed but cannot be served. `status_code` is the HTTP status and `body` the OpenAI-style error body."
);
pyo3::create_exception!(
    _native,
    ImageError,
    pyo3::exceptions::PyException,
    "An image could not be fetched or decoded. `kind` names the failure; `is_retryable` says whether retrying may help."
);
pyo3::create_exception!(
    _native,
    CalcResizeError,
    pyo3::exceptions::PyValueError,
    "An image size that cannot be fitted to the model's grid."
);

/// A `ConversionError` carrying `status_code` and `body`.
pub fn conversion(err: deepseek_model::ConversionError) -> PyErr {
    Python::attach(|py| {
        let e = ConversionError::new_err(err.message.clone());
        let value = e.value(py);
        let annotated = value
            .setattr("status_code", err.status_code())
            .and_then(|()| value.setattr("body", err.body()));
        match annotated {
            Ok(()) => e,
            Err(failure) => failure,
        }
    })
}

/// An `ImageError` carrying `kind` (the reference's variant name) and `is_retryable`.
pub fn image(err: deepseek_images::ImageError) -> PyErr {
    Python::attach(|py| {
        let e = ImageError::new_err(err.message.clone());
        let value = e.value(py);
        let annotated = value
            .setattr("kind", err.kind.name())
            .and_then(|()| value.setattr("is_retryable", err.is_retryable()))
            .and_then(|()| value.setattr("status_code", err.kind.http_status()));
        match annotated {
            Ok(()) => e,
            Err(failure) => failure,
        }
    })
}

pub fn protocol(err: ProtocolError) -> PyErr {
    match err {
        ProtocolError::Conversion(e) => conversion(e),
        other => PyValueError::new_err(other.to_string()),
    }
}

pub fn tokenize(err: TokenizeError) -> PyErr {
    PyRuntimeError::new_err(err.message)
}

pub fn consumed_request() -> PyErr {
    PyRuntimeError::new_err("protocol request has been consumed")
}

/// Every stream error is a `RuntimeError` with the processor's message.
pub fn stream(err: deepseek_stream::processor::StreamError) -> PyErr {
    PyRuntimeError::new_err(err.to_string())
}

pub fn consumed_generator() -> PyErr {
    PyRuntimeError::new_err("chunk generator has been consumed")
}

pub fn consumed_chunk() -> PyErr {
    PyRuntimeError::new_err("protocol chunk has been consumed")
}
