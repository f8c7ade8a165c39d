//! Regression group for Chat conversion: behaviours observed on the reference that the
//! vendored corpus does not pin down (check order, ET ids, file parts, V4 top_p with tools).
//! This group only grows.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deepseek_model::{ConversionOptions, ReasoningContentBehavior};
use serde_json::{json, Value};

use super::ChatCompletionRequest;

fn convert(
    body: Value,
    options: &ConversionOptions,
) -> Result<deepseek_model::ConversationRequest, String> {
    let request = ChatCompletionRequest::from_value(body).map_err(|e| e.to_string())?;
    request.convert(options).map_err(|e| e.message)
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn call(id: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
}

fn result(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "r"})
}

/// An external image URL of 8,209 bytes, past the V4.1 link limit.
fn long_link() -> String {
    format!("http://a/{}", "x".repeat(8200))
}

fn tool(name: &str, parameters: Value) -> Value {
    json!({"type": "function", "function": {"name": name, "parameters": parameters}})
}

/// `(name, body, options, Ok(()) or Err(message))`.
type Case = (
    &'static str,
    Value,
    ConversionOptions,
    Result<(), &'static str>,
);

fn cases() -> Vec<Case> {
    let default = ConversionOptions::default();
    let reject = ConversionOptions {
        reasoning_content_behavior: ReasoningContentBehavior::Reject,
        ..ConversionOptions::default()
    };
    let v4 = "DeepSeek-V4-Pro";
    let v41 = "DeepSeek-V4.1-Flash";
    vec![
        (
            "tool names are checked before empty messages",
            json!({"model": v4, "messages": [], "tools": [tool("a b", json!({"type": "object"}))]}),
            default.clone(),
            Err("Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."),
        ),
        (
            "tool schemas are not checked with tool_choice none",
            json!({"model": v4, "messages": [user("hi")], "tools": [tool("f", json!({"type": "array"}))], "tool_choice": "none"}),
            default.clone(),
            Ok(()),
        ),
        (
            "json word is checked before tool schemas",
            json!({"model": v4, "messages": [user("hi")], "tools": [tool("f", json!({"type": "array"}))], "response_format": {"type": "json_object"}}),
            default.clone(),
            Err("Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'."),
        ),
        (
            "prefix with tool calls in history",
            json!({"model": v4, "messages": [user("hi"), call("c1"), result("c1"), {"role": "assistant", "content": "x", "prefix": true}]}),
            default.clone(),
            Err("Function call should not be used with prefix"),
        ),
        (
            "an ET call id excuses missing reasoning under Reject",
            json!({"model": v4, "messages": [user("hi"), call("call_00_ET_abc"), result("call_00_ET_abc")]}),
            reject.clone(),
            Ok(()),
        ),
        (
            "declared tools make every later assistant message need reasoning",
            json!({"model": v4, "messages": [user("hi"), {"role": "assistant", "content": "x"}], "tools": [tool("f", json!({"type": "object"}))]}),
            reject.clone(),
            Err("The `reasoning_content` in the thinking mode must be passed back to the API."),
        ),
        (
            "unknown result id is reported before a short run of results",
            json!({"model": v4, "messages": [user("hi"),
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                result("zz"), user("x")]}),
            default.clone(),
            Err("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id', The following tool_call_ids did not have response messages: zz"),
        ),
        (
            "a single empty stop string",
            json!({"model": v4, "messages": [user("hi")], "stop": ""}),
            default.clone(),
            Err("Invalid 'stop': empty string. Expected a string with minimum length 1, but got an empty string instead."),
        ),
        (
            "file_id is not supported on V4.1",
            json!({"model": v41, "messages": [{"role": "user", "content": [{"type": "file", "file_id": "x"}]}]}),
            default.clone(),
            Err(".messages[0]: file_id is not supported. Pass the image as a base64 data url instead."),
        ),
        (
            "file_data images are checked before the assistant rule",
            json!({"model": v41, "messages": [user("hi"), {"role": "assistant", "content": [{"type": "file", "file_data": "data:text/plain;base64,AA"}]}]}),
            default.clone(),
            Err(".messages[1]: You have uploaded an unsupported file. Please make sure your file is valid and has one of the following formats: webp, png, jpeg, and gif."),
        ),
        (
            "strict json_schema is normalized after stream_options",
            json!({"model": v4, "messages": [user("hi")], "stream_options": {},
                "response_format": {"type": "json_schema", "json_schema": {"strict": true, "schema": {"type": "object", "properties": {"x": {"type": "string"}}, "required": []}}}}),
            default.clone(),
            Err("stream_options should be set along with stream = true"),
        ),
        (
            "strict and non-strict tools cannot be mixed",
            json!({"model": v4, "messages": [user("hi")], "tools": [
                {"type": "function", "function": {"name": "s", "strict": true, "parameters": {"type": "object", "properties": {}}}},
                {"type": "function", "function": {"name": "n", "strict": false}}]}),
            default.clone(),
            Err("Cannot use strict tool with non-strict tool in the same request"),
        ),
        (
            "array body names the 20-field struct",
            json!([]),
            default.clone(),
            Err("invalid request body: invalid length 0, expected struct ChatCompletionRequest with 20 elements"),
        ),
        (
            "a long link is refused at its part, before an earlier bad URL is classified",
            json!({"model": v41, "messages": [user("x"), {"role": "user", "content": [
                {"type": "text", "text": "t"},
                {"type": "image_url", "image_url": {"url": "ftp://x"}},
                {"type": "image_url", "image_url": {"url": long_link()}}]}]}),
            default.clone(),
            Err(".messages[1].image_url.url[2]: image_url.url external link length 8209 too long, max link length 8192. Consider passing file data directly with base64 data url instead."),
        ),
        (
            "a long link is refused before an assistant's image is",
            json!({"model": v41, "messages": [user("x"), {"role": "assistant", "content": [
                {"type": "image_url", "image_url": {"url": long_link()}}]}]}),
            default.clone(),
            Err(".messages[1].image_url.url[0]: image_url.url external link length 8209 too long, max link length 8192. Consider passing file data directly with base64 data url instead."),
        ),
        (
            "an earlier bad file part is reported before a long link",
            json!({"model": v41, "messages": [{"role": "user", "content": [
                {"type": "file", "file_data": "nope"},
                {"type": "image_url", "image_url": {"url": long_link()}}]}]}),
            default.clone(),
            Err(".messages[0]: file_data is not a valid base64 data url"),
        ),
        (
            "V4 renders a long link as a placeholder",
            json!({"model": v4, "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": long_link()}}]}]}),
            default,
            Ok(()),
        ),
    ]
}

#[test]
fn regressions() {
    for (name, body, options, want) in cases() {
        let got = convert(body, &options);
        assert_eq!(
            got.as_ref().map(|_| ()).map_err(String::as_str),
            want,
            "{name}"
        );
    }
}

#[test]
fn v4_top_p_with_active_tools_in_thinking_mode() {
    let body = json!({"model": "DeepSeek-V4-Pro", "messages": [user("hi")], "top_p": 0.5,
        "tools": [tool("f", json!({"type": "object"}))]});
    let cr = convert(body, &ConversionOptions::default()).unwrap();
    assert_eq!(cr.inference_options.top_p, Some(0.95));
}

#[test]
fn image_placeholders_are_recorded_where_inserted() {
    let body = json!({"model": "DeepSeek-V4.1-Flash", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "literal <｜image｜>"},
        {"type": "image_url", "image_url": {"url": "http://x/a.png", "detail": "low"}}]}]});
    let cr = convert(body, &ConversionOptions::default()).unwrap();
    let message = &cr.conversation.messages[0];
    let token = "<｜image｜>";
    let start = "literal <｜image｜>\n\n".len();
    assert_eq!(message.image_placeholders, vec![start..start + token.len()]);
    assert_eq!(&message.content[start..], token);
    assert_eq!(message.image_sources[0].path, ".messages[0]");
}
