//! Fields that hold a string or a list (message content, `stop`, tool output) give the
//! reference's errors however serde reaches them: read from a JSON value (an Anthropic
//! message with `role` before `content`) or from serde's buffer (a Chat message, tagged by
//! `role`; an Anthropic message with `content` first; a `tool_result` block). The expected
//! texts were recorded from deepseek-recipe 0.2.0.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deepseek_protocol::{ChatCompletionRequest, MessagesRequest, ProtocolError, ResponsesRequest};
use serde_json::{json, Value};

fn refused<T>(parsed: Result<T, ProtocolError>) -> String {
    match parsed {
        Ok(_) => panic!("the request was accepted"),
        Err(e) => e.to_string(),
    }
}

fn chat_error(body: Value) -> String {
    refused(ChatCompletionRequest::from_value(body))
}

fn messages_error(body: Value) -> String {
    refused(MessagesRequest::from_value(body))
}

fn responses_error(body: Value) -> String {
    refused(ResponsesRequest::from_value(body))
}

const INTEGER_TAG: &str =
    "invalid request body: invalid type: integer `5`, expected variant identifier";

#[test]
fn an_integer_tag_is_refused_whichever_way_serde_reads_the_list() {
    let tagged_five = json!([{"type": "text", "text": "ok"}, {"type": 5}]);
    let chat = [
        json!({"model": "m", "messages": [{"role": "user", "content": tagged_five}]}),
        json!({"model": "m", "messages": [{"content": tagged_five, "role": "user"}]}),
        json!({"model": "m", "messages": [{"role": "tool", "content": tagged_five, "tool_call_id": "a"}]}),
    ];
    for body in chat {
        assert_eq!(chat_error(body), INTEGER_TAG);
    }
    let tool_result = json!([{"type": "tool_result", "tool_use_id": "a", "content": tagged_five}]);
    let messages = [
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": tagged_five}]}),
        json!({"model": "m", "max_tokens": 5, "messages": [{"content": tagged_five, "role": "user"}]}),
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": tool_result}]}),
    ];
    for body in messages {
        assert_eq!(messages_error(body), INTEGER_TAG);
    }
    let five = json!([{"type": 5}]);
    let responses = [
        json!({"model": "m", "input": [{"type": "message", "role": "user", "content": five}]}),
        json!({"model": "m", "input": [{"type": "function_call_output", "call_id": "a", "output": five}]}),
    ];
    for body in responses {
        assert_eq!(responses_error(body), INTEGER_TAG);
    }
}

#[test]
fn an_array_item_starting_with_an_integer_is_refused_the_same_way() {
    let expected = "invalid request body: invalid type: integer `1`, expected variant identifier";
    let item = json!([[1]]);
    assert_eq!(
        chat_error(json!({"model": "m", "messages": [{"role": "user", "content": item}]})),
        expected
    );
    assert_eq!(
        messages_error(
            json!({"model": "m", "max_tokens": 5, "messages": [{"content": item, "role": "user"}]})
        ),
        expected
    );
    assert_eq!(
        responses_error(
            json!({"model": "m", "input": [{"type": "message", "role": "user", "content": item}]})
        ),
        expected
    );
}

#[test]
fn neither_a_string_nor_a_list_gets_the_fields_own_message() {
    let user = |content: Value| json!([{"role": "user", "content": content}]);
    for content in [json!(5), json!(1.5), json!(true), json!({})] {
        assert_eq!(
            chat_error(json!({"model": "m", "messages": user(content.clone())})),
            "invalid request body: content should be a string or a list"
        );
        assert_eq!(
            chat_error(
                json!({"model": "m", "messages": user(json!("x")), "stop": content.clone()})
            ),
            "invalid request body: expected a string or a list"
        );
        assert_eq!(
            messages_error(
                json!({"model": "m", "max_tokens": 5, "messages": user(content.clone())})
            ),
            "invalid request body: expected a string or a list"
        );
        assert_eq!(
            messages_error(
                json!({"model": "m", "max_tokens": 5, "system": content.clone(), "messages": user(json!("x"))})
            ),
            "invalid request body: expected a string or a list"
        );
        assert_eq!(
            responses_error(
                json!({"model": "m", "input": [{"type": "message", "role": "user", "content": content.clone()}]})
            ),
            "invalid request body: content should be a string or a list of content blocks"
        );
        assert_eq!(
            responses_error(
                json!({"model": "m", "input": [{"type": "function_call_output", "call_id": "a", "output": content}]})
            ),
            "invalid request body: output should be a string or a list of output content parts"
        );
    }
}

#[test]
fn items_keep_their_own_errors() {
    assert_eq!(
        chat_error(
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "stop": [{"type": 5}]})
        ),
        "invalid request body: invalid type: map, expected a string"
    );
    assert_eq!(
        messages_error(
            json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text"}]}]})
        ),
        "invalid request body: missing field `text`"
    );
}
