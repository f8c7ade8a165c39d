//! The request settings a Responses reply reports back in every response object
//! (`tests/responses_reply.rs`, `request_echo_reports_settings_as_written`): the scalar settings as
//! the request typed them, and the reasoning, text, tool-choice and tool settings reduced to the
//! shapes the reference reports.

use serde_json::{json, Value};

use crate::responses::ResponsesEcho;

/// What a response object reports about the request. `Default` is an unspecified request.
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
}

impl Default for ReportedSettings {
    fn default() -> Self {
        Self::from_parts(&ResponsesEcho::default_reported(), &Value::Null)
    }
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

impl ReportedSettings {
    /// The scalar settings as conversion typed them, plus the structured settings read from
    /// the request body as the client sent it.
    pub fn from_parts(scalars: &ResponsesEcho, body: &Value) -> Self {
        ReportedSettings {
            scalars: scalars.clone(),
            reasoning: reasoning(body.get("reasoning")),
            text: text(body.get("text")),
            tool_choice: tool_choice(body.get("tool_choice")),
            tools: tools(body.get("tools")),
        }
    }

    /// The structured settings of a request body as sent, with default scalars (fill them in
    /// with [`ReportedSettings::with_scalars`] once the body is typed).
    pub fn from_body(body: &Value) -> Self {
        Self::from_parts(&ResponsesEcho::default_reported(), body)
    }

    /// These settings with the scalar settings as conversion typed them.
    pub fn with_scalars(&self, scalars: &ResponsesEcho) -> Self {
        ReportedSettings {
            scalars: scalars.clone(),
            ..self.clone()
        }
    }

    /// The settings as one JSON object (the form `ReplySettings.echo` carries). Floats are
    /// stored as the shortest decimal of the `f32`, so `0.3` stays `0.3`.
    pub fn to_value(&self) -> Value {
        json!({
            "instructions": self.scalars.instructions,
            "max_output_tokens": self.scalars.max_output_tokens,
            "reasoning": self.reasoning,
            "temperature": f32_value(self.scalars.temperature),
            "text": self.text,
            "tool_choice": self.tool_choice,
            "tools": self.tools,
            "top_logprobs": self.scalars.top_logprobs,
            "top_p": f32_value(self.scalars.top_p),
            "user": self.scalars.user,
        })
    }

    /// Read back what [`ReportedSettings::to_value`] wrote; missing parts take the defaults.
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
        }
    }
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

/// `key` of `object`, or `null`.
fn field(object: &Value, key: &str) -> Value {
    object.get(key).cloned().unwrap_or(Value::Null)
}

fn type_of(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

fn reasoning(reasoning: Option<&Value>) -> Value {
    let reasoning = reasoning.cloned().unwrap_or(Value::Null);
    let summary = match reasoning.get("summary") {
        Some(s) if !s.is_null() => s.clone(),
        _ => field(&reasoning, "generate_summary"),
    };
    json!({"effort": field(&reasoning, "effort"), "summary": summary})
}

fn text(text: Option<&Value>) -> Value {
    let text = text.cloned().unwrap_or(Value::Null);
    let format = match text.get("format") {
        Some(f) if type_of(f) == Some("json_schema") => json!({
            "type": "json_schema",
            "name": field(f, "name"),
            "schema": field(f, "schema"),
            "description": field(f, "description"),
            "strict": field(f, "strict"),
        }),
        Some(f) if type_of(f).is_some() => json!({"type": type_of(f)}),
        _ => json!({"type": "text"}),
    };
    json!({"format": format, "verbosity": field(&text, "verbosity")})
}

fn tool_choice(choice: Option<&Value>) -> Value {
    match choice {
        None | Some(Value::Null) => json!("auto"),
        Some(choice @ Value::Object(_)) => match type_of(choice) {
            Some(kind @ ("function" | "custom")) => {
                json!({"type": kind, "name": field(choice, "name")})
            }
            Some(kind) => json!({"type": kind}),
            None => choice.clone(),
        },
        Some(other) => other.clone(),
    }
}

fn function(tool: &Value) -> Value {
    json!({
        "type": "function",
        "name": field(tool, "name"),
        "description": field(tool, "description"),
        "parameters": field(tool, "parameters"),
        "strict": field(tool, "strict"),
    })
}

fn custom(tool: &Value) -> Value {
    json!({"type": "custom", "name": field(tool, "name")})
}

fn user_location(location: &Value) -> Value {
    if !location.is_object() {
        return Value::Null;
    }
    json!({
        "city": field(location, "city"),
        "country": field(location, "country"),
        "region": field(location, "region"),
        "timezone": field(location, "timezone"),
    })
}

fn tools(tools: Option<&Value>) -> Vec<Value> {
    let Some(tools) = tools.and_then(Value::as_array) else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|tool| {
            Some(match type_of(tool)? {
                "function" => function(tool),
                "custom" => custom(tool),
                "namespace" => {
                    let members = tool
                        .get("tools")
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or_default();
                    let members: Vec<Value> = members
                        .iter()
                        .filter_map(|m| match type_of(m)? {
                            "function" => Some(function(m)),
                            "custom" => Some(custom(m)),
                            _ => None,
                        })
                        .collect();
                    json!({
                        "type": "namespace",
                        "name": field(tool, "name"),
                        "description": field(tool, "description"),
                        "tools": members,
                    })
                }
                kind @ ("web_search" | "web_search_2025_08_26") => json!({
                    "type": kind,
                    "search_context_size": field(tool, "search_context_size"),
                    "user_location": user_location(&field(tool, "user_location")),
                }),
                "tool_search" => json!({
                    "type": "tool_search",
                    "execution": field(tool, "execution"),
                    "description": field(tool, "description"),
                    "parameters": field(tool, "parameters"),
                }),
                _ => return None,
            })
        })
        .collect()
}

/// Whether the request declared the custom `apply_patch` tool (its calls become
/// `custom_tool_call` items).
pub fn declares_custom_apply_patch(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| {
            tools
                .iter()
                .any(|t| type_of(t) == Some("custom") && field(t, "name") == "apply_patch")
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn reported(body: Value) -> Value {
        ReportedSettings::from_parts(&ResponsesEcho::default_reported(), &body).to_value()
    }

    #[test]
    fn structured_settings_take_the_reported_shapes() {
        let cases = [
            (
                "function tool keeps five keys",
                json!({"tools": [{"type": "function", "name": "f", "foo": 1, "strict": true, "defer_loading": true}]}),
                "tools",
                json!([{"type": "function", "name": "f", "description": null, "parameters": null, "strict": true}]),
            ),
            (
                "web search location is retyped, unsupported tools dropped",
                json!({"tools": [{"type": "web_search", "user_location": {"type": "approximate", "city": "P", "x": 1}}, {"type": "file_search"}]}),
                "tools",
                json!([{"type": "web_search", "search_context_size": null, "user_location": {"city": "P", "country": null, "region": null, "timezone": null}}]),
            ),
            (
                "tool choice object keeps type and name",
                json!({"tool_choice": {"type": "function", "name": "f", "extra": 1}}),
                "tool_choice",
                json!({"type": "function", "name": "f"}),
            ),
            (
                "absent tool choice is auto",
                json!({}),
                "tool_choice",
                json!("auto"),
            ),
            (
                "json schema format gets description and strict",
                json!({"text": {"format": {"type": "json_schema", "name": "s", "schema": {}}}}),
                "text",
                json!({"format": {"type": "json_schema", "name": "s", "schema": {}, "description": null, "strict": null}, "verbosity": null}),
            ),
            (
                "generate_summary stands for summary",
                json!({"reasoning": {"effort": "xhigh", "generate_summary": "auto"}}),
                "reasoning",
                json!({"effort": "xhigh", "summary": "auto"}),
            ),
        ];
        for (name, body, key, expected) in cases {
            assert_eq!(reported(body)[key], expected, "{name}");
        }
    }

    #[test]
    fn floats_round_trip_as_written() {
        let mut scalars = ResponsesEcho::default_reported();
        scalars.temperature = 0.3;
        scalars.top_p = 0.123_456_79;
        let settings = ReportedSettings::from_parts(&scalars, &Value::Null);
        let value = settings.to_value();
        assert_eq!(serde_json::to_string(&value["temperature"]).unwrap(), "0.3");
        assert_eq!(
            serde_json::to_string(&value["top_p"]).unwrap(),
            "0.12345679"
        );
        assert_eq!(ReportedSettings::from_value(&value), settings);
    }
}
