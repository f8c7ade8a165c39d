//! OpenAI Responses requests.

use deepseek_model::{ConversionError, ConversationRequest, ConversionOptions};
use serde_json::Value;

use crate::ProtocolError;

/// A parsed OpenAI Responses request (shape-checked, not yet converted).
#[derive(Debug, Clone)]
pub struct ResponsesRequest {
    model: String,
}

impl ResponsesRequest {
    pub fn from_value(value: Value) -> Result<Self, ProtocolError> {
        let model = value.get("model").and_then(Value::as_str).unwrap_or_default().to_owned();
        Ok(Self { model })
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn convert(self, options: &ConversionOptions) -> Result<ConversationRequest, ConversionError> {
        let version = options.model_version(&self.model)?;
        Err(ConversionError::new(format!("conversion for {} is not built yet", version.name())))
    }
}
