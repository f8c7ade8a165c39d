//! A stored Responses conversation continued with the rest of its items converts exactly as the
//! whole item list does (`ResponsesHistory`, `ResponsesRequest::convert_continuing`): every
//! vendored Responses case whose `input` is a list, split at every place, with the history
//! built in one piece, in two pieces, or grown by a continuation and then by `extend_json`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{body_value, build_options};
use deepseek_model::{ConversationRequest, ConversionError, ConversionOptions};
use deepseek_protocol::responses::ResponsesHistory;
use deepseek_protocol::ResponsesRequest;
use serde_json::{json, Value};

/// The converted request, or the error's message, with every `input[N]` (in errors and image
/// source paths) written `input[#]`: a continuation names its own items by their place in
/// its own input.
type Outcome = Result<ConversationRequest, String>;

fn outcome(result: Result<ConversationRequest, ConversionError>) -> Outcome {
    let mut request = result.map_err(|e| without_indices(&e.message))?;
    let conversation = std::sync::Arc::make_mut(&mut request.conversation);
    for message in &mut conversation.messages {
        for source in &mut std::sync::Arc::make_mut(message).image_sources {
            source.path = without_indices(&source.path);
        }
    }
    Ok(request)
}

fn without_indices(message: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(at) = rest.find("input[") {
        out.push_str(&rest[..at + 6]);
        rest = &rest[at + 6..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        out.push('#');
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

fn whole(body: &Value, options: &ConversionOptions) -> Option<Outcome> {
    let request = ResponsesRequest::from_value(body.clone()).ok()?;
    Some(outcome(request.convert(options)))
}

fn items_json(items: &[Value]) -> Vec<u8> {
    serde_json::to_vec(&Value::Array(items.to_vec())).unwrap()
}

fn with_input(body: &Value, input: &[Value]) -> Value {
    let mut body = body.clone();
    body["input"] = Value::Array(input.to_vec());
    body
}

fn continued(body: &Value, history: &ResponsesHistory, options: &ConversionOptions) -> Outcome {
    let request = ResponsesRequest::from_value(body.clone()).unwrap();
    outcome(
        request
            .convert_continuing(options, history)
            .map(|(request, _)| request),
    )
}

/// Split points: all of them for short lists, a spread for long ones.
fn splits(len: usize) -> Vec<usize> {
    if len <= 24 {
        return (0..=len).collect();
    }
    let mut points: Vec<usize> = (0..=len).step_by(len / 12).collect();
    points.extend([1, 2, len - 2, len - 1, len]);
    points.sort_unstable();
    points.dedup();
    points
}

fn check(id: &str, body: &Value, options: &ConversionOptions, items: &[Value]) -> usize {
    let Some(expected) = whole(body, options) else {
        return 0;
    };
    let mut checked = 0;
    for k in splits(items.len()) {
        let (stored, new) = items.split_at(k);
        let Ok(history) = ResponsesHistory::from_json(&items_json(stored)) else {
            continue; // an item of the wrong shape: the whole body fails to parse as well
        };
        let rest = with_input(body, new);
        assert_eq!(
            continued(&rest, &history, options),
            expected,
            "{id}: stored items 0..{k}"
        );
        // The stored items in two pieces: a continuation's state grown by `extend_json`.
        let half = k / 2;
        let first = ResponsesHistory::from_json(&items_json(&stored[..half])).unwrap();
        let request = ResponsesRequest::from_value(with_input(body, &[])).unwrap();
        if let Ok((_, grown)) = request.convert_continuing(options, &first) {
            let grown = grown.extend_json(&items_json(&stored[half..])).unwrap();
            assert_eq!(
                continued(&rest, &grown, options),
                expected,
                "{id}: stored items 0..{half} then {half}..{k}"
            );
        }
        checked += 1;
    }
    checked
}

#[test]
fn continuing_equals_the_whole_item_list() {
    let (cases, _) = common::load_cases("responses");
    let mut checked = 0;
    for case in &cases {
        let Ok(body) = body_value(&case.case) else {
            continue;
        };
        let Some(items) = body.get("input").and_then(Value::as_array).cloned() else {
            continue;
        };
        let options = build_options(&case.case["options"]);
        checked += check(&case.id, &body, &options, &items);
    }
    assert!(checked > 1000, "only {checked} splits were checked");
}

/// An agent loop: each turn's request holds only its new items; the history grows by the
/// request's input (from the continuation) and the response's output (`extend_json`).
#[test]
fn an_agent_loop_continued_turn_by_turn() {
    let options = ConversionOptions::default();
    let tools = json!([{"type": "function", "name": "read", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]);
    let mut all: Vec<Value> = Vec::new();
    let mut history = ResponsesHistory::new();
    for turn in 0..12 {
        let input: Vec<Value> = if turn == 0 {
            vec![json!({"role": "user", "content": "Fix the bug"})]
        } else if turn % 5 == 0 {
            vec![json!({"role": "user", "content": format!("Now step {turn}")})]
        } else {
            vec![
                json!({"type": "function_call_output", "call_id": format!("call_{turn}_b"), "output": format!("file b {turn}")}),
                json!({"type": "function_call_output", "call_id": format!("call_{turn}_a"), "output": format!("file a {turn}")}),
            ]
        };
        let body = json!({"model": "DeepSeek-V4-Pro", "instructions": format!("Be brief ({turn})"), "tools": tools, "input": input});
        all.extend(input);
        let whole_body = json!({"model": "DeepSeek-V4-Pro", "instructions": format!("Be brief ({turn})"), "tools": tools, "input": all});
        let expected = whole(&whole_body, &options).unwrap();
        assert!(expected.is_ok(), "turn {turn}: {expected:?}");
        let request = ResponsesRequest::from_value(body).unwrap();
        let (converted, after) = request.convert_continuing(&options, &history).unwrap();
        assert_eq!(Ok(converted), expected, "turn {turn}");
        let next = turn + 1;
        let output = vec![
            json!({"type": "reasoning", "id": format!("rs_{turn}"), "summary": [], "content": [{"type": "reasoning_text", "text": format!("thinking {turn}")}]}),
            json!({"type": "message", "id": format!("msg_{turn}"), "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": format!("say {turn}"), "annotations": []}]}),
            json!({"type": "function_call", "id": format!("fc_{turn}"), "call_id": format!("call_{next}_a"), "name": "read", "arguments": "{\"path\":\"a\"}", "status": "completed"}),
            json!({"type": "function_call", "id": format!("fc_{turn}b"), "call_id": format!("call_{next}_b"), "name": "read", "arguments": "{\"path\":\"b\"}", "status": "completed"}),
        ];
        let output = if next % 5 == 0 {
            output[..2].to_vec()
        } else {
            output
        };
        history = after.extend_json(&items_json(&output)).unwrap();
        all.extend(output);
    }
    assert_eq!(history.len(), all.len());
}

#[test]
fn an_empty_history_converts_the_request_alone() {
    let options = ConversionOptions::default();
    let cases = [
        json!({"model": "DeepSeek-V4-Pro", "input": "hi"}),
        json!({"model": "DeepSeek-V4-Pro", "instructions": "only"}),
        json!({"model": "DeepSeek-V4-Pro"}),
        json!({"model": "DeepSeek-V4-Pro", "input": []}),
        json!({"model": "DeepSeek-V4-Pro", "input": [], "instructions": "x"}),
    ];
    for body in cases {
        let expected = whole(&body, &options).unwrap();
        assert_eq!(
            continued(&body, &ResponsesHistory::new(), &options),
            expected,
            "{body}"
        );
    }
    // With items stored, an empty or missing input continues them.
    let history =
        ResponsesHistory::from_json(br#"[{"role": "user", "content": "stored"}]"#).unwrap();
    for input in [json!([]), Value::Null] {
        let mut body = json!({"model": "DeepSeek-V4-Pro"});
        if !input.is_null() {
            body["input"] = input;
        }
        let converted = continued(&body, &history, &options).unwrap();
        assert_eq!(converted.conversation.messages.len(), 1);
    }
}

#[test]
fn stored_items_of_the_wrong_shape_are_refused() {
    for json in [
        &b"{}"[..],
        b"\"text\"",
        b"[{\"nothing\": 1}]",
        b"[1]",
        b"not json",
    ] {
        assert!(ResponsesHistory::from_json(json).is_err(), "{json:?}");
    }
}
