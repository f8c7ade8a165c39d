//! The Messages emitter and accumulator, driven directly: the reference
//! examples `stream_msg_*.json` are replayed through the real output parser and the emitter
//! (with a minimal stand-in for the stream processor: text chunks, one token each), and each
//! event's SSE name and JSON text, and the accumulated message, are compared with the file.
//! Named table tests cover the rules the examples do not reach.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use deepseek_model::ConversionOptions;
use deepseek_protocol::MessagesRequest;
use deepseek_reply::messages::{MessagesEmitter, MessagesResponse, MessagesStreamEvent};
use deepseek_stream::emit::{Completion, Emitter, FinishReason, PromptUsage, Usage};
use deepseek_stream::{ParseEvent, Parser, Segment};
use serde_json::Value;

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/messages_reply")
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap()
}

/// Feed parse events to the emitter the way the stream processor does.
fn emit_parsed(
    emitter: &mut MessagesEmitter,
    events: Vec<ParseEvent>,
    ids: &[String],
    tool_calls: &mut bool,
    stopped: &mut Option<String>,
    out: &mut Vec<MessagesStreamEvent>,
) {
    for event in events {
        match event {
            ParseEvent::Text { segment, text, .. } => emitter.text(segment, &text, None, out),
            ParseEvent::ToolCallStart { index, name } => {
                *tool_calls = true;
                emitter.tool_call_start(index, &ids[index], &name, out);
            }
            ParseEvent::ToolCallArguments { index, fragment } => {
                emitter.tool_call_arguments(index, &fragment, out)
            }
            ParseEvent::ToolCallEnd { index } => emitter.tool_call_end(index, out),
            ParseEvent::StopSequence { sequence } => *stopped = Some(sequence),
        }
    }
}

fn replay_example(name: &str) {
    let path = examples_dir().join(name);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let request = MessagesRequest::from_value(file["request"].clone()).unwrap();
    let converted = request.convert(&ConversionOptions::default()).unwrap();
    let expected_events = file["events"].as_array().unwrap();
    let ids: Vec<String> = expected_events
        .iter()
        .filter(|e| e["data"]["content_block"]["type"] == "tool_use")
        .map(|e| {
            e["data"]["content_block"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();

    let mut emitter = MessagesEmitter::for_request(&converted, "resp-123", "DeepSeek-V4.1-Flash");
    let mut parser = Parser::new(&converted.parsing_options);
    let prompt = PromptUsage {
        prompt_tokens: file["ready"]["prompt_tokens"].as_u64().unwrap(),
        prompt_cache_hit_tokens: file["ready"]["prompt_cache_hit_tokens"].as_u64().unwrap(),
    };
    let mut out = Vec::new();
    emitter.start(prompt, Some("fp_test"), &mut out);
    let (mut tool_calls, mut stopped, mut completion_tokens) = (false, None, 0);
    for piece in file["inference_text_pieces"].as_array().unwrap() {
        let mut parsed = Vec::new();
        parser.push(piece.as_str().unwrap(), &mut parsed);
        completion_tokens += 1;
        emit_parsed(
            &mut emitter,
            parsed,
            &ids,
            &mut tool_calls,
            &mut stopped,
            &mut out,
        );
    }
    let mut parsed = Vec::new();
    parser.finish(&mut parsed);
    emit_parsed(
        &mut emitter,
        parsed,
        &ids,
        &mut tool_calls,
        &mut stopped,
        &mut out,
    );
    assert_eq!(stopped, None);
    let usage = Usage {
        prompt,
        completion_tokens,
        reasoning_tokens: None,
    };
    emitter.finish(
        &Completion::Finished(FinishReason::Stop),
        tool_calls,
        &usage,
        &mut out,
    );

    let got: Vec<(String, String)> = out
        .iter()
        .map(|e| (e.event_name().to_owned(), e.to_json()))
        .collect();
    let want: Vec<(String, String)> = expected_events
        .iter()
        .map(|e| {
            (
                e["sse_event"].as_str().unwrap().to_owned(),
                compact(&e["data"]),
            )
        })
        .collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{name}: event {i}");
    }
    assert_eq!(got.len(), want.len(), "{name}: event count");

    let mut response = MessagesResponse::new("ignored", "ignored", PromptUsage::default());
    for event in out {
        response.accumulate(event);
    }
    assert_eq!(
        response.to_json(),
        compact(&file["accumulated_response"]),
        "{name}: accumulated"
    );
}

#[test]
fn example_a_plain() {
    replay_example("stream_msg_a_plain.json");
}

#[test]
fn example_b_reasoning() {
    replay_example("stream_msg_b_reasoning.json");
}

#[test]
fn example_c_tools() {
    replay_example("stream_msg_c_tools.json");
}

/// One synthetic emitter call.
#[derive(Clone, Copy)]
enum Call {
    Reasoning(&'static str),
    Content(&'static str),
    ToolStart(usize, &'static str),
    Args(usize, &'static str),
    ToolEnd(usize),
}

struct Scenario {
    name: &'static str,
    thinking: bool,
    signature: Option<&'static str>,
    calls: &'static [Call],
    completion: Completion,
    /// Compact JSON of every event, in order.
    events: &'static [&'static str],
    /// The accumulated message's `content` and stop fields.
    content: &'static str,
    stop: &'static str,
}

const START: &str = r#"{"type":"message_start","message":{"id":"r","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":0,"service_tier":"standard"}}}"#;
const THINK_START: &str = r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#;
const PING: &str = r#"{"type":"ping"}"#;
const STOP: &str = r#"{"type":"message_stop"}"#;

fn scenarios() -> Vec<Scenario> {
    use Call::*;
    vec![
        Scenario {
            name: "empty output in thinking mode still yields a signed empty thinking block",
            thinking: true,
            signature: None,
            calls: &[],
            completion: Completion::Finished(FinishReason::Stop),
            events: &[
                START,
                THINK_START,
                PING,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"r"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":7,"service_tier":"standard"}}"#,
                STOP,
            ],
            content: r#"[{"type":"thinking","thinking":"","signature":"r"}]"#,
            stop: r#""end_turn",null"#,
        },
        Scenario {
            name: "empty output without thinking has no block and no ping",
            thinking: false,
            signature: None,
            calls: &[],
            completion: Completion::Ended,
            events: &[
                START,
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":7,"service_tier":"standard"}}"#,
                STOP,
            ],
            content: "[]",
            stop: r#""end_turn",null"#,
        },
        Scenario {
            name: "reasoning without thinking mode opens a thinking block; custom signature",
            thinking: false,
            signature: Some("sig"),
            calls: &[Reasoning("r"), Content("a")],
            completion: Completion::Finished(FinishReason::Length),
            events: &[
                START,
                THINK_START,
                PING,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"r"}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a"}}"#,
                r#"{"type":"content_block_stop","index":1}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":7,"service_tier":"standard"}}"#,
                STOP,
            ],
            content: r#"[{"type":"thinking","thinking":"r","signature":"sig"},{"type":"text","text":"a"}]"#,
            stop: r#""max_tokens",null"#,
        },
        Scenario {
            name: "stop sequence reports the matched sequence",
            thinking: false,
            signature: None,
            calls: &[Content("keep "), Content("")],
            completion: Completion::StopSequence(String::from("HALT")),
            events: &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                PING,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"keep "}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"HALT"},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":7,"service_tier":"standard"}}"#,
                STOP,
            ],
            content: r#"[{"type":"text","text":"keep "}]"#,
            stop: r#""stop_sequence","HALT""#,
        },
        Scenario {
            name: "truncated arguments accumulate to an empty input; content filter is a refusal",
            thinking: false,
            signature: None,
            calls: &[ToolStart(0, "f"), Args(0, "{\"a\": \"par"), ToolEnd(0)],
            completion: Completion::Finished(FinishReason::ContentFilter),
            events: &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"call_0","name":"f","input":{}}}"#,
                PING,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\": \"par"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":7,"service_tier":"standard"}}"#,
                STOP,
            ],
            content: r#"[{"type":"tool_use","id":"call_0","name":"f","input":{}}]"#,
            stop: r#""refusal",null"#,
        },
        Scenario {
            name: "two tool calls: blocks close lazily, floats keep the PYJSON spelling",
            thinking: false,
            signature: None,
            calls: &[
                Content("x"),
                ToolStart(0, "f"),
                Args(
                    0,
                    "{\"b\": 2, \"a\": 1e-6, \"c\": 1e16, \"d\": 0.00001, \"e\": -0}",
                ),
                ToolEnd(0),
                ToolStart(1, "g"),
                Args(1, "{}"),
                ToolEnd(1),
            ],
            completion: Completion::Finished(FinishReason::Stop),
            events: &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                PING,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_0","name":"f","input":{}}}"#,
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"b\": 2, \"a\": 1e-6, \"c\": 1e16, \"d\": 0.00001, \"e\": -0}"}}"#,
                r#"{"type":"content_block_stop","index":1}"#,
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_1","name":"g","input":{}}}"#,
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
                r#"{"type":"content_block_stop","index":2}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":7,"service_tier":"standard"}}"#,
                STOP,
            ],
            content: r#"[{"type":"text","text":"x"},{"type":"tool_use","id":"call_0","name":"f","input":{"b":2,"a":1e-6,"c":1e+16,"d":0.00001,"e":-0.0}},{"type":"tool_use","id":"call_1","name":"g","input":{}}]"#,
            stop: r#""tool_use",null"#,
        },
    ]
}

#[test]
fn scenarios_emit_and_accumulate() {
    // Prompt 3 with 5 cache hits: input tokens saturate at 0.
    let prompt = PromptUsage {
        prompt_tokens: 3,
        prompt_cache_hit_tokens: 5,
    };
    for s in scenarios() {
        let mut emitter = MessagesEmitter::new("r", "m", s.thinking);
        if let Some(sig) = s.signature {
            emitter = emitter.with_signature(sig);
        }
        let mut out = Vec::new();
        emitter.start(prompt, None, &mut out);
        let mut tool_calls = false;
        let ids = ["call_0", "call_1"];
        for call in s.calls {
            match *call {
                Call::Reasoning(t) => emitter.text(Segment::Reasoning, t, None, &mut out),
                Call::Content(t) => emitter.text(Segment::Content, t, None, &mut out),
                Call::ToolStart(i, name) => {
                    tool_calls = true;
                    emitter.tool_call_start(i, ids[i], name, &mut out);
                }
                Call::Args(i, fragment) => emitter.tool_call_arguments(i, fragment, &mut out),
                Call::ToolEnd(i) => emitter.tool_call_end(i, &mut out),
            }
        }
        let usage = Usage {
            prompt,
            completion_tokens: 7,
            reasoning_tokens: None,
        };
        emitter.finish(&s.completion, tool_calls, &usage, &mut out);
        let got: Vec<String> = out.iter().map(MessagesStreamEvent::to_json).collect();
        assert_eq!(got, s.events, "{}", s.name);
        for event in &out {
            let value: Value = serde_json::from_str(&event.to_json()).unwrap();
            assert_eq!(value["type"], event.event_name(), "{}", s.name);
        }

        let mut response = MessagesResponse::new("r", "m", PromptUsage::default());
        for event in out {
            response.accumulate(event);
        }
        let want = format!(
            r#"{{"id":"r","type":"message","role":"assistant","model":"m","content":{},"stop_reason":{},"usage":{{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":7,"service_tier":"standard"}}}}"#,
            s.content,
            s.stop.replacen(',', r#","stop_sequence":"#, 1)
        );
        assert_eq!(response.to_json(), want, "{}", s.name);
    }
}

#[test]
fn response_before_any_event_uses_the_constructor() {
    let response = MessagesResponse::new(
        "id1",
        "m",
        PromptUsage {
            prompt_tokens: 10,
            prompt_cache_hit_tokens: 3,
        },
    );
    assert_eq!(
        response.to_json(),
        r#"{"id":"id1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":3,"output_tokens":0,"service_tier":"standard"}}"#
    );
}

#[test]
fn deltas_for_blocks_that_never_started_are_ignored() {
    let mut emitter = MessagesEmitter::new("r", "m", true);
    let mut out = Vec::new();
    emitter.start(PromptUsage::default(), None, &mut out);
    emitter.text(Segment::Reasoning, "hm", None, &mut out);
    emitter.text(Segment::Content, "ok", None, &mut out);
    let usage = Usage::default();
    emitter.finish(
        &Completion::Finished(FinishReason::Stop),
        false,
        &usage,
        &mut out,
    );
    let mut response = MessagesResponse::new("zz", "mm", PromptUsage::default());
    // Skip message_start and both block starts.
    for event in out.into_iter().filter(|e| {
        !matches!(
            e,
            MessagesStreamEvent::MessageStart { .. }
                | MessagesStreamEvent::ContentBlockStart { .. }
        )
    }) {
        response.accumulate(event);
    }
    assert_eq!(
        response.to_json(),
        r#"{"id":"zz","type":"message","role":"assistant","model":"mm","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0,"service_tier":"standard"}}"#
    );
}

#[test]
fn tool_input_is_parsed_only_when_the_block_stops() {
    let mut emitter = MessagesEmitter::new("r", "m", false);
    let mut out = Vec::new();
    emitter.start(PromptUsage::default(), None, &mut out);
    emitter.tool_call_start(0, "call_0", "f", &mut out);
    emitter.tool_call_arguments(0, "{\"a\": 1}", &mut out);
    emitter.tool_call_end(0, &mut out);
    let mut response = MessagesResponse::new("r", "m", PromptUsage::default());
    for event in out {
        response.accumulate(event);
    }
    assert!(response.to_json().contains(r#""input":{}"#));
    let mut out = Vec::new();
    emitter.finish(
        &Completion::Finished(FinishReason::Stop),
        true,
        &Usage::default(),
        &mut out,
    );
    for event in out {
        response.accumulate(event);
    }
    assert!(response.to_json().contains(r#""input":{"a":1}"#));
}
