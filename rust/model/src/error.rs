//! The error a semantic check raises during conversion (HTTP 400, OpenAI error body).

use std::fmt;

/// `type` and `code` of every conversion error body.
pub const DEFAULT_CONTEXT_ERROR_TYPE: &str = "invalid_request_error";

const CANCELLED: &str = "The request was cancelled";

/// A request that parsed but cannot be served: status 400 with an OpenAI-style body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionError {
    pub message: String,
}

impl ConversionError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The error a conversion stops with once its caller cancelled it ([`crate::cancel`]).
    pub fn cancelled() -> Self {
        Self::new(CANCELLED)
    }

    /// Whether this is the error of a cancelled conversion.
    pub fn is_cancelled(&self) -> bool {
        self.message == CANCELLED
    }

    pub fn status_code(&self) -> u16 {
        400
    }

    /// `{"error":{"message":…,"type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`
    pub fn body(&self) -> String {
        let message = serde_json::Value::String(self.message.clone()).to_string();
        format!(
            "{{\"error\":{{\"message\":{message},\"type\":\"{t}\",\"param\":null,\"code\":\"{t}\"}}}}",
            t = DEFAULT_CONTEXT_ERROR_TYPE
        )
    }
}

impl fmt::Display for ConversionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConversionError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_escapes_message() {
        let e = ConversionError::new("a \"b\"\n");
        assert_eq!(
            e.body(),
            r#"{"error":{"message":"a \"b\"\n","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#
        );
    }
}
