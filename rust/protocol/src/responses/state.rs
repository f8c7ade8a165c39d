//! The fields of a Responses request that only a stateful server reads: `store`,
//! `previous_response_id`, `conversation`, `metadata` and `background`. The reference ignores them (it keeps
//! no state), so they are read aside from the wire shape and checked only when asked
//! ([`StateSource::fields`]), with the official API's messages.

use deepseek_model::ConversionError;
use serde_json::{Map, Value};

/// `metadata`: at most this many pairs, keys and values at most this long (the official limits).
pub const METADATA_PAIRS: usize = 16;
pub const METADATA_KEY_CHARS: usize = 64;
pub const METADATA_VALUE_CHARS: usize = 512;

const EXCLUSIVE: &str = "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.";

/// The state fields as sent (small values, copied out of the body before it is consumed).
#[derive(Debug, Clone, Default)]
pub(crate) struct StateSource {
    store: Option<Value>,
    previous_response_id: Option<Value>,
    conversation: Option<Value>,
    metadata: Option<Value>,
    background: Option<Value>,
}

/// The state fields, checked. `None` where the request left a field out (or sent `null`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateFields {
    pub store: Option<bool>,
    pub previous_response_id: Option<String>,
    /// The conversation's id (sent as the id or as `{"id": …}`).
    pub conversation: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    /// `background`: run the response after answering, to be polled (or its stream resumed).
    pub background: Option<bool>,
}

impl StateSource {
    pub(crate) fn read(body: &Value) -> Self {
        let field = |key: &str| body.get(key).filter(|v| !v.is_null()).cloned();
        Self {
            store: field("store"),
            previous_response_id: field("previous_response_id"),
            conversation: field("conversation"),
            metadata: field("metadata"),
            background: field("background"),
        }
    }

    pub(crate) fn fields(&self) -> Result<StateFields, ConversionError> {
        let store = boolean("store", &self.store)?;
        let background = boolean("background", &self.background)?;
        let previous_response_id = match &self.previous_response_id {
            None => None,
            Some(Value::String(id)) => Some(non_empty("previous_response_id", id)?),
            Some(other) => return Err(wrong_type("previous_response_id", "a string", other)),
        };
        let conversation = match &self.conversation {
            None => None,
            Some(Value::String(id)) => Some(non_empty("conversation", id)?),
            Some(Value::Object(object)) => match object.get("id") {
                Some(Value::String(id)) => Some(non_empty("conversation.id", id)?),
                None => {
                    return Err(ConversionError::new(
                        "Missing required parameter: 'conversation.id'.",
                    ))
                }
                Some(other) => return Err(wrong_type("conversation.id", "a string", other)),
            },
            Some(other) => {
                return Err(wrong_type(
                    "conversation",
                    "a string or an object with an 'id'",
                    other,
                ))
            }
        };
        if previous_response_id.is_some() && conversation.is_some() {
            return Err(ConversionError::new(EXCLUSIVE));
        }
        let metadata = match &self.metadata {
            None => None,
            Some(Value::Object(pairs)) => Some(checked_metadata(pairs)?),
            Some(other) => return Err(wrong_type("metadata", "an object", other)),
        };
        Ok(StateFields {
            store,
            previous_response_id,
            conversation,
            metadata,
            background,
        })
    }
}

/// `metadata` checked against the official limits: at most 16 pairs, string values, keys up to
/// 64 characters and values up to 512.
pub fn checked_metadata(pairs: &Map<String, Value>) -> Result<Map<String, Value>, ConversionError> {
    if pairs.len() > METADATA_PAIRS {
        return Err(ConversionError::new(format!(
            "Invalid 'metadata': too many properties. Expected an object with at most {METADATA_PAIRS} properties, but got an object with {} properties instead.",
            pairs.len()
        )));
    }
    for (key, value) in pairs {
        if key.chars().count() > METADATA_KEY_CHARS {
            return Err(ConversionError::new(format!(
                "Invalid 'metadata': keys can be at most {METADATA_KEY_CHARS} characters long."
            )));
        }
        let Value::String(text) = value else {
            return Err(wrong_type("metadata values", "a string", value));
        };
        if text.chars().count() > METADATA_VALUE_CHARS {
            return Err(ConversionError::new(format!(
                "Invalid 'metadata': values can be at most {METADATA_VALUE_CHARS} characters long."
            )));
        }
    }
    Ok(pairs.clone())
}

fn boolean(name: &str, value: &Option<Value>) -> Result<Option<bool>, ConversionError> {
    match value {
        None => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(other) => Err(wrong_type(name, "a boolean", other)),
    }
}

fn non_empty(name: &str, id: &str) -> Result<String, ConversionError> {
    if id.is_empty() {
        return Err(ConversionError::new(format!(
            "Invalid '{name}': empty string. Expected a string with minimum length 1, but got an empty string instead."
        )));
    }
    Ok(id.to_owned())
}

fn wrong_type(name: &str, expected: &str, got: &Value) -> ConversionError {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a decimal",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    ConversionError::new(format!(
        "Invalid type for '{name}': expected {expected}, but got {kind} instead."
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use serde_json::json;

    fn fields(body: Value) -> Result<StateFields, String> {
        StateSource::read(&body).fields().map_err(|e| e.message)
    }

    #[test]
    fn state_fields_table() {
        let ok = |store,
                  previous: Option<&str>,
                  conversation: Option<&str>|
         -> Result<StateFields, String> {
            Ok(StateFields {
                store,
                previous_response_id: previous.map(str::to_owned),
                conversation: conversation.map(str::to_owned),
                metadata: None,
                background: None,
            })
        };
        let cases: Vec<(&str, Value, Result<StateFields, String>)> = vec![
            ("nothing", json!({}), ok(None, None, None)),
            ("nulls are left out", json!({"store": null, "previous_response_id": null, "conversation": null}), ok(None, None, None)),
            ("store", json!({"store": false}), ok(Some(false), None, None)),
            ("previous", json!({"previous_response_id": "resp_1"}), ok(None, Some("resp_1"), None)),
            ("conversation id", json!({"conversation": "conv_1"}), ok(None, None, Some("conv_1"))),
            ("conversation object", json!({"conversation": {"id": "conv_1"}}), ok(None, None, Some("conv_1"))),
            ("background", json!({"background": true}), Ok(StateFields { background: Some(true), ..StateFields::default() })),
            ("background of the wrong type", json!({"background": 1}), Err("Invalid type for 'background': expected a boolean, but got an integer instead.".to_owned())),
            ("store of the wrong type", json!({"store": "yes"}), Err("Invalid type for 'store': expected a boolean, but got a string instead.".to_owned())),
            ("an empty previous id", json!({"previous_response_id": ""}), Err("Invalid 'previous_response_id': empty string. Expected a string with minimum length 1, but got an empty string instead.".to_owned())),
            ("a conversation without id", json!({"conversation": {}}), Err("Missing required parameter: 'conversation.id'.".to_owned())),
            ("a conversation of the wrong type", json!({"conversation": 3}), Err("Invalid type for 'conversation': expected a string or an object with an 'id', but got an integer instead.".to_owned())),
            ("both", json!({"previous_response_id": "resp_1", "conversation": "conv_1"}), Err(EXCLUSIVE.to_owned())),
            ("metadata of the wrong type", json!({"metadata": []}), Err("Invalid type for 'metadata': expected an object, but got an array instead.".to_owned())),
            ("a metadata value of the wrong type", json!({"metadata": {"a": 1}}), Err("Invalid type for 'metadata values': expected a string, but got an integer instead.".to_owned())),
        ];
        for (name, body, expected) in cases {
            assert_eq!(fields(body), expected, "{name}");
        }
    }

    #[test]
    fn metadata_limits() {
        let many: Map<String, Value> = (0..17).map(|k| (format!("k{k}"), json!("v"))).collect();
        assert!(fields(json!({"metadata": many}))
            .unwrap_err()
            .contains("too many properties"));
        let sixteen: Map<String, Value> = (0..16).map(|k| (format!("k{k}"), json!("v"))).collect();
        assert_eq!(
            fields(json!({"metadata": sixteen.clone()}))
                .unwrap()
                .metadata,
            Some(sixteen)
        );
        let long_key = "k".repeat(65);
        assert!(fields(json!({"metadata": {long_key: "v"}}))
            .unwrap_err()
            .contains("keys can be at most 64"));
        let long_value = "é".repeat(513);
        assert!(fields(json!({"metadata": {"k": long_value}}))
            .unwrap_err()
            .contains("values can be at most 512"));
        assert!(fields(json!({"metadata": {"k": "é".repeat(512)}})).is_ok());
    }
}
