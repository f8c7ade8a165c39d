//! What an OpenAI Responses reply reports about its request: the settings every response
//! object echoes ([`ReportedSettings`]) and what the stream needs besides them
//! ([`RequestReply`]). Conversion (`deepseek-protocol`) reads them from the request body and
//! stores them in [`ReplySettings::echo`] as one JSON object; the reply (`deepseek-reply`)
//! reads them back. They live here, between the two directions, like the rest of
//! [`crate::ConversationRequest`]; reading them from a body is the protocol crate's.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::ReplySettings;

/// The scalar request fields a Responses reply echoes back (reference defaults filled in), as
/// Python's `ResponsesEcho` exposes them.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesEcho {
    pub instructions: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub temperature: f32,
    pub top_p: f32,
    pub top_logprobs: u8,
    pub user: Option<String>,
}

impl ResponsesEcho {
    /// The scalar settings of a request that specifies none.
    pub fn default_reported() -> Self {
        ResponsesEcho {
            instructions: None,
            max_output_tokens: None,
            temperature: 1.0,
            top_p: 1.0,
            top_logprobs: 0,
            user: None,
        }
    }
}

/// What a response object reports about the request. `Default` is an unspecified request
/// (what `deepseek-protocol` reads from an empty body; its `empty_body_reports_the_defaults`
/// test pins that the two agree).
#[derive(Debug, Clone, PartialEq)]
pub struct ReportedSettings {
    /// The scalar settings (instructions, max_output_tokens, temperature, top_p,
    /// top_logprobs, user) as conversion typed them.
    pub scalars: ResponsesEcho,
    /// `{"effort","summary"}`.
    pub reasoning: Value,
    /// `{"format":{…},"verbosity"}`.
    pub text: Value,
    /// `"auto"`, `"none"`, `"required"` or the choice object.
    pub tool_choice: Value,
    /// The declared tools that are reported (unsupported types are left out).
    pub tools: Vec<Value>,
    /// What a stateful server stores about the response (the reference stores nothing).
    pub state: StoredState,
}

/// What a response object reports about its storage: `store`, the response it continues,
/// its conversation, its `metadata` and whether it runs in the `background`. The reference keeps no state, so by default
/// `store: false`, neither of the others and empty metadata; a server that stores responses
/// sets them (`ResponsesChunkGenerator::with_state`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredState {
    pub store: bool,
    pub previous_response_id: Option<String>,
    /// The conversation's id, reported as `"conversation": {"id": …}`.
    pub conversation: Option<String>,
    pub metadata: serde_json::Map<String, Value>,
    /// Run in the background (polled, or its stream resumed, by id).
    pub background: bool,
}

impl Default for ReportedSettings {
    fn default() -> Self {
        ReportedSettings {
            scalars: ResponsesEcho::default_reported(),
            reasoning: json!({"effort": null, "summary": null}),
            text: json!({"format": {"type": "text"}, "verbosity": null}),
            tool_choice: json!("auto"),
            tools: Vec::new(),
            state: StoredState::default(),
        }
    }
}

impl ReportedSettings {
    /// These settings with the scalar settings as conversion typed them.
    pub fn with_scalars(self, scalars: &ResponsesEcho) -> Self {
        ReportedSettings {
            scalars: scalars.clone(),
            ..self
        }
    }

    /// The settings as one JSON object (the form `ReplySettings.echo` carries), moved in: a
    /// request's declared tools (their parameter schemas) are not copied again. Floats are
    /// stored as the shortest decimal of the `f32`, so `0.3` stays `0.3`.
    pub fn into_value(self) -> Value {
        let scalars = self.scalars;
        json_object([
            (
                "instructions",
                scalars.instructions.map_or(Value::Null, Value::String),
            ),
            (
                "max_output_tokens",
                scalars.max_output_tokens.map_or(Value::Null, Value::from),
            ),
            ("reasoning", self.reasoning),
            ("temperature", f32_value(scalars.temperature)),
            ("text", self.text),
            ("tool_choice", self.tool_choice),
            ("tools", Value::Array(self.tools)),
            ("top_logprobs", Value::from(scalars.top_logprobs)),
            ("top_p", f32_value(scalars.top_p)),
            ("user", scalars.user.map_or(Value::Null, Value::String)),
        ])
    }

    /// Read back what [`ReportedSettings::into_value`] wrote; missing parts take the defaults.
    pub fn from_value(value: &Value) -> Self {
        let defaults = ReportedSettings::default();
        let string = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let float = |key: &str, default: f32| {
            value
                .get(key)
                .and_then(Value::as_f64)
                .map_or(default, |f| f as f32)
        };
        let object = |key: &str, default: Value| {
            value
                .get(key)
                .filter(|v| v.is_object())
                .cloned()
                .unwrap_or(default)
        };
        ReportedSettings {
            scalars: ResponsesEcho {
                instructions: string("instructions"),
                max_output_tokens: value
                    .get("max_output_tokens")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok()),
                temperature: float("temperature", defaults.scalars.temperature),
                top_p: float("top_p", defaults.scalars.top_p),
                top_logprobs: value
                    .get("top_logprobs")
                    .and_then(Value::as_u64)
                    .and_then(|n| u8::try_from(n).ok())
                    .unwrap_or(0),
                user: string("user"),
            },
            reasoning: object("reasoning", defaults.reasoning),
            text: object("text", defaults.text),
            tool_choice: value
                .get("tool_choice")
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or(defaults.tool_choice),
            tools: value
                .get("tools")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            state: StoredState::default(),
        }
    }
}

/// A JSON object of `fields` in their order. `json!` would serialize each value again (a
/// second copy of every declared tool's parameter schema): these are moved in.
pub fn json_object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
    )
}

/// An `f32` as the JSON number its shortest decimal spells.
fn f32_value(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// Flattened namespaced tool name → (namespace, name inside it).
pub type NamespaceTools = BTreeMap<String, (String, String)>;

/// What the request tells a Responses stream: the settings to report, how namespaced tool
/// names map back, and whether `apply_patch` was declared as the custom tool. Conversion
/// stores this in `ConversationRequest.reply.echo` as one JSON object
/// (`{"settings", "namespace_tools", "custom_apply_patch"}`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestReply {
    pub settings: ReportedSettings,
    pub namespace_tools: NamespaceTools,
    pub custom_apply_patch: bool,
}

impl RequestReply {
    /// This reply with the typed scalar settings and the namespace names conversion assigns.
    pub fn complete(self, scalars: &ResponsesEcho, namespace_tools: NamespaceTools) -> Self {
        RequestReply {
            settings: self.settings.with_scalars(scalars),
            namespace_tools,
            custom_apply_patch: self.custom_apply_patch,
        }
    }

    /// The converted request's reply settings: this reply as its `echo`.
    pub fn reply_settings(self) -> ReplySettings {
        ReplySettings {
            include_usage: false,
            echo: Some(self.into_value()),
        }
    }

    /// The reply as one JSON object, moved in (its settings are not copied again).
    pub fn into_value(self) -> Value {
        let namespace_tools: serde_json::Map<String, Value> = self
            .namespace_tools
            .into_iter()
            .map(|(flat, (ns, name))| (flat, json!([ns, name])))
            .collect();
        json_object([
            ("settings", self.settings.into_value()),
            ("namespace_tools", Value::Object(namespace_tools)),
            ("custom_apply_patch", Value::Bool(self.custom_apply_patch)),
        ])
    }

    /// Read back [`RequestReply::into_value`]; a missing or foreign value gives the defaults.
    pub fn from_value(value: Option<&Value>) -> Self {
        let Some(value) = value else {
            return RequestReply::default();
        };
        let namespace_tools = value
            .get("namespace_tools")
            .and_then(Value::as_object)
            .map(|map| {
                map.iter()
                    .filter_map(|(flat, pair)| {
                        let ns = pair.get(0)?.as_str()?;
                        let name = pair.get(1)?.as_str()?;
                        Some((flat.clone(), (ns.to_owned(), name.to_owned())))
                    })
                    .collect()
            })
            .unwrap_or_default();
        RequestReply {
            settings: value
                .get("settings")
                .map(ReportedSettings::from_value)
                .unwrap_or_default(),
            namespace_tools,
            custom_apply_patch: value
                .get("custom_apply_patch")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn floats_round_trip_as_written() {
        let mut scalars = ResponsesEcho::default_reported();
        scalars.temperature = 0.3;
        scalars.top_p = 0.123_456_79;
        let settings = ReportedSettings::default().with_scalars(&scalars);
        let value = settings.clone().into_value();
        assert_eq!(serde_json::to_string(&value["temperature"]).unwrap(), "0.3");
        assert_eq!(
            serde_json::to_string(&value["top_p"]).unwrap(),
            "0.12345679"
        );
        assert_eq!(ReportedSettings::from_value(&value), settings);
    }

    #[test]
    fn request_reply_round_trips_through_the_echo() {
        let reply = RequestReply {
            settings: ReportedSettings::default(),
            namespace_tools: [("ns__f".to_owned(), ("ns".to_owned(), "f".to_owned()))].into(),
            custom_apply_patch: true,
        };
        let echo = reply.clone().reply_settings().echo;
        assert_eq!(RequestReply::from_value(echo.as_ref()), reply);
        assert_eq!(RequestReply::from_value(None), RequestReply::default());
    }
}
