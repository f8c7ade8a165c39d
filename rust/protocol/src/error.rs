//! The errors a protocol request can raise before or during conversion.

use deepseek_model::ConversionError;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// The body is not JSON text. Python: `ValueError("invalid JSON request: …")`.
    InvalidJson(String),
    /// The JSON has the wrong shape. Python: `ValueError("invalid request body: …")`.
    InvalidBody(String),
    /// A semantic check failed. Python: `ConversionError` (400).
    Conversion(ConversionError),
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::InvalidJson(m) => write!(f, "invalid JSON request: {m}"),
            ProtocolError::InvalidBody(m) => write!(f, "invalid request body: {m}"),
            ProtocolError::Conversion(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ProtocolError {}

impl From<ConversionError> for ProtocolError {
    fn from(e: ConversionError) -> Self {
        ProtocolError::Conversion(e)
    }
}
