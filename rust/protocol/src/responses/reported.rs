//! What a Responses request reports back (`tests/responses_conformance.rs`, and the reply's
//! `request_echo_reports_settings_as_written` in `rust/reply/tests/responses_reply.rs`): the
//! reasoning, text, tool-choice and tool settings of the body as sent, reduced to the shapes
//! the reference reports, and whether `apply_patch` is the custom tool. The types they fill
//! ([`ReportedSettings`], [`RequestReply`]) are `deepseek-model`'s, so the reply reads them
//! without this crate.

use deepseek_model::{
    json_object, NamespaceTools, ReportedSettings, RequestReply, ResponsesEcho, StoredState,
};
use serde_json::{json, Value};

/// The scalar settings as conversion typed them, plus the structured settings read from the
/// request body as the client sent it.
pub fn reported_settings(scalars: &ResponsesEcho, body: &Value) -> ReportedSettings {
    ReportedSettings {
        scalars: scalars.clone(),
        reasoning: reasoning(body.get("reasoning")),
        text: text(body.get("text")),
        tool_choice: tool_choice(body.get("tool_choice")),
        tools: tools(body.get("tools")),
        state: StoredState::default(),
    }
}

/// What a request body as sent tells its reply: the structured settings (default scalars)
/// and whether `apply_patch` is the custom tool. Conversion completes it
/// ([`RequestReply::complete`]).
pub fn request_reply(body: &Value) -> RequestReply {
    RequestReply {
        settings: reported_settings(&ResponsesEcho::default_reported(), body),
        namespace_tools: NamespaceTools::new(),
        custom_apply_patch: declares_custom_apply_patch(body),
    }
}

/// `key` of `object`, or `null`.
fn field(object: &Value, key: &str) -> Value {
    object.get(key).cloned().unwrap_or(Value::Null)
}

fn type_of(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

fn reasoning(reasoning: Option<&Value>) -> Value {
    let reasoning = reasoning.unwrap_or(&Value::Null);
    let summary = match reasoning.get("summary") {
        Some(s) if !s.is_null() => s.clone(),
        _ => field(reasoning, "generate_summary"),
    };
    json_object([("effort", field(reasoning, "effort")), ("summary", summary)])
}

fn text(text: Option<&Value>) -> Value {
    let text = text.unwrap_or(&Value::Null);
    let format = match text.get("format") {
        Some(f) if type_of(f) == Some("json_schema") => json_object([
            ("type", "json_schema".into()),
            ("name", field(f, "name")),
            ("schema", field(f, "schema")),
            ("description", field(f, "description")),
            ("strict", field(f, "strict")),
        ]),
        Some(f) if type_of(f).is_some() => json!({"type": type_of(f)}),
        _ => json!({"type": "text"}),
    };
    json_object([("format", format), ("verbosity", field(text, "verbosity"))])
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
    json_object([
        ("type", "function".into()),
        ("name", field(tool, "name")),
        ("description", field(tool, "description")),
        ("parameters", field(tool, "parameters")),
        ("strict", field(tool, "strict")),
    ])
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
                    json_object([
                        ("type", "namespace".into()),
                        ("name", field(tool, "name")),
                        ("description", field(tool, "description")),
                        ("tools", Value::Array(members)),
                    ])
                }
                kind @ ("web_search" | "web_search_2025_08_26") => json_object([
                    ("type", kind.into()),
                    ("search_context_size", field(tool, "search_context_size")),
                    (
                        "user_location",
                        user_location(&field(tool, "user_location")),
                    ),
                ]),
                "tool_search" => json_object([
                    ("type", "tool_search".into()),
                    ("execution", field(tool, "execution")),
                    ("description", field(tool, "description")),
                    ("parameters", field(tool, "parameters")),
                ]),
                _ => return None,
            })
        })
        .collect()
}

/// Whether the request declared the custom `apply_patch` tool (its calls become
/// `custom_tool_call` items).
fn declares_custom_apply_patch(body: &Value) -> bool {
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
        reported_settings(&ResponsesEcho::default_reported(), &body).into_value()
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
    fn empty_body_reports_the_defaults() {
        for body in [Value::Null, json!({})] {
            assert_eq!(
                reported_settings(&ResponsesEcho::default_reported(), &body),
                ReportedSettings::default(),
                "{body}"
            );
        }
    }
}
