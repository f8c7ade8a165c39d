//! Request bytes to a JSON value, and a JSON value to a typed request shape.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ProtocolError;

/// Parse JSON text (serde_json's own recursion limit of 128 applies).
pub fn parse_json(text: &[u8]) -> Result<Value, ProtocolError> {
    serde_json::from_slice(text).map_err(|e| ProtocolError::InvalidJson(e.to_string()))
}

/// Deserialize a typed request shape from a JSON value (errors carry no position).
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ProtocolError> {
    serde_json::from_value(value).map_err(|e| ProtocolError::InvalidBody(e.to_string()))
}
