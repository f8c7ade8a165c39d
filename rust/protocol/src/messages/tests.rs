//! Named regression cases for behaviours the vendored corpus does not pin down, each
//! observed on the reference: the order of checks, and conversion details.

use deepseek_model::{ConversionOptions, Role, WebSearchBehavior};
use serde_json::{json, Value};

use super::MessagesRequest;

fn convert(
    body: Value,
    options: &ConversionOptions,
) -> Result<deepseek_model::ConversationRequest, String> {
    let request = MessagesRequest::from_value(body).map_err(|e| e.to_string())?;
    request.convert(options).map_err(|e| e.message)
}

fn body(extra: Value) -> Value {
    let mut body =
        json!({"model": "DeepSeek-V4.1-Flash", "messages": [{"role": "user", "content": "q"}]});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    body
}

#[test]
fn check_order() {
    let bad_schema = json!({"name": "f", "input_schema": {"type": "array"}});
    let orphan =
        json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "z"}]}]);
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "tool names before empty messages",
            body(json!({"messages": [], "tools": [{"name": ""}]})),
            "Invalid 'tools[0].name': empty string.",
        ),
        (
            "empty messages before temperature",
            body(json!({"messages": [], "temperature": 5})),
            "messages: at least one message is required",
        ),
        (
            "messages before tool schemas",
            body(json!({"messages": orphan, "tools": [bad_schema]})),
            "unexpected `messages.0.content.0: tool_use_id`",
        ),
        (
            "schemas skipped under tool_choice none",
            body(json!({"tools": [bad_schema], "tool_choice": {"type": "none"}, "temperature": 5})),
            "Invalid temperature value",
        ),
        (
            "schemas before a missing named tool",
            body(json!({"tools": [bad_schema], "tool_choice": {"type": "tool", "name": "zz"}})),
            "Invalid schema for function 'f'",
        ),
        (
            "stop before temperature",
            body(json!({"stop_sequences": [""], "temperature": 5})),
            "Invalid 'stop[0]': empty string.",
        ),
        (
            "temperature before max_tokens",
            body(json!({"max_tokens": 0, "temperature": 5})),
            "Invalid temperature value",
        ),
        (
            "a missing schema fails as null",
            body(json!({"tools": [{"name": "f"}]})),
            "Invalid schema for function 'f': null is not of types",
        ),
        (
            "role check before pairing",
            body(json!({"messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "thinking", "thinking": "t"}, {"type": "tool_result", "tool_use_id": "a"}]}
            ]})),
            "messages.2.content: thinking blocks may only be in `assistant` messages",
        ),
        (
            "pairing before image conversion",
            body(json!({"messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "bad"}}, {"type": "tool_result", "tool_use_id": "a"}]}
            ]})),
            "messages.2: `tool_use` ids were found",
        ),
        (
            "assistant image source checked before refusing it",
            body(
                json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "image", "source": {"type": "file", "file_id": "x"}}]}]}),
            ),
            "messages.1.content[0]: file_id is not supported.",
        ),
    ];
    let options = ConversionOptions::default();
    for (name, body, want) in cases {
        match convert(body, &options) {
            Err(message) => assert!(message.starts_with(want), "{name}: {message}"),
            Ok(_) => unreachable!("{name}: converted"),
        }
    }
}

#[test]
fn conversion_details() {
    let options = ConversionOptions::default();
    let text = |t: &str| json!({"type": "text", "text": t});

    let assistant = body(json!({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [text(""), text("b"), text(""), text("c"), {"type": "thinking", "thinking": ""}, {"type": "thinking", "thinking": "r"}]}
    ]}));
    let request = convert(assistant, &options).unwrap_or_else(|e| unreachable!("{e}"));
    let message = &request.conversation.messages[1];
    assert_eq!(
        message.content, "b\n\n\n\nc",
        "content separators only once content exists"
    );
    assert_eq!(
        message.reasoning_content.as_deref(),
        Some("\n\nr"),
        "reasoning parts plainly joined"
    );

    let jpg = body(
        json!({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/jpg", "data": ""}}]}]}),
    );
    let request = convert(jpg, &options).unwrap_or_else(|e| unreachable!("{e}"));
    let message = &request.conversation.messages[0];
    assert_eq!(message.image_placeholders, vec![0..message.content.len()]);
    assert!(
        matches!(&message.image_sources[0].kind, deepseek_model::ImageSourceKind::DataUrl(u) if u == "data:image/jpeg;base64,")
    );

    let references = body(json!({
        "tools": [{"name": "f", "input_schema": {"type": "object"}}, {"name": "g", "input_schema": {"type": "object"}, "defer_loading": true}],
        "tool_choice": {"type": "tool", "name": "f"},
        "thinking": {"type": "disabled"},
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "tool_reference", "tool_name": "g"}]}]},
            {"role": "system", "content": [text("s"), {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "g"}}]}
        ]
    }));
    let request = convert(references, &options).unwrap_or_else(|e| unreachable!("{e}"));
    let roles: Vec<Role> = request
        .conversation
        .messages
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::System],
        "synthetic system message dropped"
    );
    assert_eq!(
        request.conversation.messages[3].tools,
        Some(Vec::new()),
        "filtered announced tools"
    );

    let drop = ConversionOptions {
        messages_web_search: WebSearchBehavior::Drop,
        ..ConversionOptions::default()
    };
    let unnamed_search = body(json!({
        "tools": [{"name": "f", "input_schema": {"type": "object"}}, {"type": "web_search_20250305"}],
        "tool_choice": {"type": "tool", "name": "web_search"},
    }));
    let request = convert(unnamed_search, &drop).unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(
        request.conversation.tool_choice,
        deepseek_model::ToolChoice::Auto
    );
}
