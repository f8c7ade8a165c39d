//! The Responses emitter and accumulator, driven directly. The reference
//! examples `stream_resp_{a,b,c}_*.json` (vendored under `fixtures/responses_reply/`) are
//! replayed through the real output parser and the emitter, with a minimal stand-in for the
//! stream processor (text chunks of one token each, the example's call ids); every event's
//! JSON text and the accumulated response are compared with the file. The echo/namespace/
//! apply_patch example is replayed from synthetic calls. Named table tests cover the rest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use deepseek_model::{ConversionOptions, ReportedSettings};
use deepseek_protocol::ResponsesRequest;
use deepseek_reply::responses::{
    ResponsesEmitter, ResponsesGenerator, ResponsesResponse, ResponsesStreamEvent,
};
use deepseek_stream::emit::{
    Completion, Emitter, FinishReason, PromptUsage, TokenLogprob, TopLogprob, Usage,
};
use deepseek_stream::{ParseEvent, Parser, Segment};
use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses_reply")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Timestamps are the only values that depend on the clock.
fn normalize(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if (key == "created_at" || key == "completed_at") && v.is_number() {
                    *v = json!(0);
                } else {
                    normalize(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

fn text_of(value: &Value) -> String {
    let mut value = value.clone();
    normalize(&mut value);
    serde_json::to_string(&value).unwrap()
}

fn event_text(event: &ResponsesStreamEvent) -> String {
    text_of(&serde_json::from_str(&event.to_json()).unwrap())
}

fn call_ids(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "response.output_item.added")
        .filter_map(|e| e["item"]["call_id"].as_str().map(str::to_owned))
        .collect()
}

/// The generator for a request body, as conversion wires it (the reply settings travel in
/// `ConversationRequest.reply.echo`).
fn generator_for(
    body: &Value,
    id: &str,
    model: &str,
) -> (ResponsesGenerator, deepseek_model::ParsingOptions) {
    let converted = ResponsesRequest::from_value(body.clone())
        .unwrap()
        .convert(&ConversionOptions::default())
        .unwrap();
    let generator = ResponsesGenerator::from_request(&converted, id.to_owned(), model.to_owned());
    (generator, converted.parsing_options)
}

/// Replay one example through the parser and the emitter.
fn replay(example: &Value) -> Vec<ResponsesStreamEvent> {
    let expected: Vec<Value> = example["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"].clone())
        .collect();
    let ids = call_ids(&expected);
    let (generator, parsing) =
        generator_for(&example["request"], "resp-123", "DeepSeek-V4.1-Flash");
    let mut emitter = generator.into_emitter();
    let mut parser = Parser::new(&parsing);
    let mut out = Vec::new();
    let ready = &example["ready"];
    let prompt = PromptUsage {
        prompt_tokens: ready["prompt_tokens"].as_u64().unwrap(),
        prompt_cache_hit_tokens: ready["prompt_cache_hit_tokens"].as_u64().unwrap(),
    };
    emitter.start(prompt, ready["system_fingerprint"].as_str(), &mut out);
    let mut tool_calls = false;
    let mut completion_tokens = 0;
    let mut dispatch = |emitter: &mut ResponsesEmitter,
                        events: Vec<ParseEvent>,
                        out: &mut Vec<ResponsesStreamEvent>| {
        for event in events {
            match event {
                ParseEvent::Text { segment, text, .. } => emitter.text(segment, &text, None, out),
                ParseEvent::ToolCallStart { index, name } => {
                    tool_calls = true;
                    emitter.tool_call_start(index, &ids[index], &name, out);
                }
                ParseEvent::ToolCallArguments { index, fragment } => {
                    emitter.tool_call_arguments(index, &fragment, out)
                }
                ParseEvent::ToolCallEnd { index } => emitter.tool_call_end(index, out),
                ParseEvent::StopSequence { .. } => unreachable!("Responses has no stop sequences"),
            }
        }
    };
    for piece in example["inference_text_pieces"].as_array().unwrap() {
        let mut events = Vec::new();
        parser.push(piece.as_str().unwrap(), &mut events);
        completion_tokens += 1;
        dispatch(&mut emitter, events, &mut out);
    }
    let mut events = Vec::new();
    parser.finish(&mut events);
    dispatch(&mut emitter, events, &mut out);
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
    out
}

fn assert_events(name: &str, actual: &[ResponsesStreamEvent], expected: &[Value]) {
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert_eq!(event_text(a), text_of(e), "{name}: event {i}");
    }
    assert_eq!(actual.len(), expected.len(), "{name}: event count");
}

fn accumulate(events: &[ResponsesStreamEvent]) -> ResponsesResponse {
    let mut response = ResponsesResponse::new("ignored".into(), "ignored".into(), 1);
    for event in events {
        response.accumulate(event.clone());
    }
    response
}

#[test]
fn examples_replay_exactly() {
    for name in [
        "stream_resp_a_plain.json",
        "stream_resp_b_reasoning.json",
        "stream_resp_c_tools.json",
    ] {
        let example = fixture(name);
        let events = replay(&example);
        let expected: Vec<Value> = example["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["data"].clone())
            .collect();
        assert_events(name, &events, &expected);
        for (event, e) in events.iter().zip(example["events"].as_array().unwrap()) {
            assert_eq!(event.event_type(), e["sse_event"], "{name}: sse name");
        }
        let accumulated: Value = serde_json::from_str(&accumulate(&events).to_json()).unwrap();
        assert_eq!(
            text_of(&accumulated),
            text_of(&example["accumulated_response"]),
            "{name}: accumulated"
        );
    }
}

#[test]
fn item_events_alone_rebuild_the_output() {
    for name in [
        "stream_resp_a_plain.json",
        "stream_resp_b_reasoning.json",
        "stream_resp_c_tools.json",
    ] {
        let events = replay(&fixture(name));
        let (last, items) = events.split_last().unwrap();
        let partial: Value = serde_json::from_str(&accumulate(items).to_json()).unwrap();
        let complete: Value =
            serde_json::from_str(&accumulate(std::slice::from_ref(last)).to_json()).unwrap();
        assert_eq!(partial["output"], complete["output"], "{name}");
    }
}

#[test]
fn echo_namespace_and_apply_patch_example() {
    let example = fixture("stream_resp_echo_namespace_apply_patch.json");
    let expected = example["events"].as_array().unwrap();
    let ids = call_ids(expected);
    let (generator, _) = generator_for(&example["request"], "rid", "DeepSeek-V4.1-Flash");
    let mut emitter = generator.into_emitter();
    let mut out = Vec::new();
    let prompt = PromptUsage {
        prompt_tokens: 5,
        prompt_cache_hit_tokens: 0,
    };
    emitter.start(prompt, None, &mut out);
    emitter.text(Segment::Reasoning, "r", None, &mut out);
    emitter.tool_call_start(0, &ids[0], "ns::g", &mut out);
    emitter.tool_call_arguments(0, "{}", &mut out);
    emitter.tool_call_end(0, &mut out);
    emitter.tool_call_start(1, &ids[1], "apply_patch", &mut out);
    for fragment in [
        "{\"",
        "input",
        "\": ",
        "\"",
        "*** Begin Patch\\n*** End Patch",
        "\"",
        "}",
    ] {
        emitter.tool_call_arguments(1, fragment, &mut out);
    }
    emitter.tool_call_end(1, &mut out);
    emitter.tool_call_start(2, &ids[2], "f", &mut out);
    emitter.tool_call_arguments(2, "{}", &mut out);
    emitter.tool_call_end(2, &mut out);
    let usage = Usage {
        prompt,
        completion_tokens: 3,
        reasoning_tokens: None,
    };
    emitter.finish(
        &Completion::Finished(FinishReason::Stop),
        true,
        &usage,
        &mut out,
    );
    assert_events("echo example", &out, expected);
}

/// A small stream driven by hand: (segment or call, text) steps, then a completion.
enum Step<'a> {
    Reasoning(&'a str),
    Content(&'a str),
    Call(&'a str),
    Args(&'a str),
}

fn run(body: Value, steps: &[Step<'_>], completion: Completion) -> Vec<Value> {
    let (generator, _) = generator_for(&body, "r", "m");
    let mut emitter = generator.into_emitter();
    let mut out = Vec::new();
    emitter.start(PromptUsage::default(), None, &mut out);
    let mut calls = 0;
    for step in steps {
        match step {
            Step::Reasoning(t) => emitter.text(Segment::Reasoning, t, None, &mut out),
            Step::Content(t) => emitter.text(Segment::Content, t, None, &mut out),
            Step::Call(name) => {
                emitter.tool_call_start(calls, &format!("call_{calls:02}"), name, &mut out);
                calls += 1;
            }
            Step::Args(f) => emitter.tool_call_arguments(calls - 1, f, &mut out),
        }
    }
    let usage = Usage {
        prompt: PromptUsage::default(),
        completion_tokens: 2,
        reasoning_tokens: Some(1),
    };
    emitter.finish(&completion, calls > 0, &usage, &mut out);
    out.iter()
        .map(|e| serde_json::from_str(&e.to_json()).unwrap())
        .collect()
}

fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            e["type"]
                .as_str()
                .unwrap()
                .trim_start_matches("response.")
                .to_owned()
        })
        .collect()
}

#[test]
fn rules_beyond_the_examples() {
    let body = json!({"model": "DeepSeek-V4.1-Flash", "input": "hi", "tools": [
        {"type": "function", "name": "f"}, {"type": "custom", "name": "apply_patch"}]});

    // Length: the open item and the response are incomplete; earlier items stay completed.
    let events = run(
        body.clone(),
        &[Step::Reasoning("a"), Step::Content("b")],
        Completion::Finished(FinishReason::Length),
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(
        last["response"]["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(last["response"]["output"][0]["status"], "completed");
    assert_eq!(last["response"]["output"][1]["status"], "incomplete");
    assert_eq!(
        last["response"]["usage"]["output_tokens_details"]["reasoning_tokens"],
        1
    );

    // A message followed by a call closes as commentary.
    let events = run(
        body.clone(),
        &[Step::Content("b"), Step::Call("f"), Step::Args("{}")],
        Completion::Ended,
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(done["item"]["phase"], "commentary");
    assert_eq!(events.last().unwrap()["response"]["status"], "completed");

    // Empty output: created, in_progress, completed.
    let events = run(
        body.clone(),
        &[],
        Completion::Finished(FinishReason::ContentFilter),
    );
    assert_eq!(types(&events), ["created", "in_progress", "incomplete"]);
    assert_eq!(
        events[2]["response"]["incomplete_details"]["reason"],
        "content_filter"
    );

    // apply_patch with another first parameter streams the argument JSON; a held opening
    // is flushed when the item closes.
    let events = run(
        body.clone(),
        &[
            Step::Call("apply_patch"),
            Step::Args("{\""),
            Step::Args("inp"),
        ],
        Completion::Ended,
    );
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "response.custom_tool_call_input.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["{\"inp"]);

    // apply_patch declared as a function is an ordinary function call.
    let plain = json!({"model": "DeepSeek-V4.1-Flash", "input": "hi", "tools": [{"type": "function", "name": "apply_patch"}]});
    let events = run(
        plain,
        &[Step::Call("apply_patch"), Step::Args("{}")],
        Completion::Ended,
    );
    assert_eq!(events[2]["item"]["type"], "function_call");

    // Sequence numbers count from 0 without gaps.
    let events = run(
        body,
        &[
            Step::Reasoning("a"),
            Step::Content("b"),
            Step::Call("f"),
            Step::Args("{}"),
        ],
        Completion::Ended,
    );
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"], i, "{e}");
    }
}

#[test]
fn logprobs_ride_on_output_text() {
    let (generator, _) = generator_for(
        &json!({"model": "DeepSeek-V4-Pro", "input": "hi"}),
        "r",
        "m",
    );
    let mut emitter = generator.into_emitter();
    let mut out = Vec::new();
    let lp = TokenLogprob {
        token: "b".into(),
        logprob: -0.0,
        bytes: vec![98],
        top_logprobs: Vec::new(),
    };
    emitter.text(
        Segment::Content,
        "b",
        Some(std::slice::from_ref(&lp)),
        &mut out,
    );
    emitter.finish(&Completion::Ended, false, &Usage::default(), &mut out);
    let delta = out
        .iter()
        .find(|e| e.event_type() == "response.output_text.delta")
        .unwrap()
        .to_json();
    assert!(
        delta.contains(
            r#""logprobs":[{"token":"b","logprob":-0.0,"bytes":[98],"top_logprobs":[]}]"#
        ),
        "{delta}"
    );
    let done = out
        .iter()
        .find(|e| e.event_type() == "response.output_text.done")
        .unwrap()
        .to_json();
    assert!(done.contains(r#""logprobs":[{"token":"b""#), "{done}");
    // With no ready chunk, the opening events come first.
    assert_eq!(out[0].event_type(), "response.created");
}

/// Logprobs print as single-precision floats, as the wheel prints them in Responses too
/// (recorded: `-0.1234567890123` → `-0.12345679`, `-1e-300` → `-0.0`, `-3.4e39` → `null`).
#[test]
fn logprob_spelling_table() {
    let table: [(f64, &str); 6] = [
        (-0.123_456_789_012_3, "-0.12345679"),
        (-1e-300, "-0.0"),
        (-3.4e39, "null"),
        (f64::NAN, "null"),
        (1e-7, "1e-7"),
        (-100.0, "-100.0"),
    ];
    for (value, expected) in table {
        let (generator, _) = generator_for(
            &json!({"model": "DeepSeek-V4-Pro", "input": "hi"}),
            "r",
            "m",
        );
        let mut emitter = generator.into_emitter();
        let mut out = Vec::new();
        let lp = TokenLogprob {
            token: "b".into(),
            logprob: value,
            bytes: vec![98],
            top_logprobs: vec![TopLogprob {
                token: "c".into(),
                logprob: value,
                bytes: vec![99],
            }],
        };
        emitter.text(
            Segment::Content,
            "b",
            Some(std::slice::from_ref(&lp)),
            &mut out,
        );
        let delta = out
            .iter()
            .find(|e| e.event_type() == "response.output_text.delta")
            .unwrap()
            .to_json();
        let spelled = format!(
            r#""logprobs":[{{"token":"b","logprob":{expected},"bytes":[98],"top_logprobs":[{{"token":"c","logprob":{expected},"bytes":[99]}}]}}]"#
        );
        assert!(delta.contains(&spelled), "{value}: {delta}");
    }
}

#[test]
fn accumulator_before_any_event() {
    let response = ResponsesResponse::new("id".into(), "m".into(), 123);
    assert_eq!(
        response.to_json(),
        r#"{"id":"id","object":"response","created_at":123,"status":"in_progress","background":false,"completed_at":null,"content_filters":null,"error":null,"frequency_penalty":0.0,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"m","moderation":null,"output":[],"parallel_tool_calls":true,"presence_penalty":0.0,"previous_response_id":null,"prompt_cache_key":null,"prompt_cache_retention":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"default","store":false,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":null},"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}"#
    );
}

#[test]
fn request_echo_reports_settings_as_written() {
    let body = json!({"model": "DeepSeek-V4.1-Flash", "input": "hi", "temperature": 0.3, "top_logprobs": 3,
        "reasoning": {"effort": "low", "summary": "auto"}, "tools": [{"type": "web_search"}]});
    let settings = ResponsesRequest::from_value(body)
        .unwrap()
        .reported_settings();
    assert_eq!(settings.scalars.temperature, 0.3f32);
    assert_eq!(settings.scalars.top_logprobs, 3);
    assert_eq!(
        settings.reasoning,
        json!({"effort": "low", "summary": "auto"})
    );
    assert_eq!(
        settings.tools,
        vec![json!({"type": "web_search", "search_context_size": null, "user_location": null})]
    );
    assert_eq!(ReportedSettings::default().scalars.temperature, 1.0);
}

/// A stateful server's storage state is reported in every response object; by default the
/// reference's (nothing stored) stays.
#[test]
fn stored_state_is_reported() {
    let body = json!({"model": "DeepSeek-V4-Pro", "input": "hi"});
    let (generator, _) = generator_for(&body, "resp-1", "DeepSeek-V4-Pro");
    let state = deepseek_model::StoredState {
        store: true,
        previous_response_id: Some("resp_0".into()),
        conversation: Some("conv_1".into()),
        metadata: [("k".to_owned(), json!("v"))].into_iter().collect(),
        background: true,
    };
    for (generator, expected) in [
        (generator.clone(), json!([false, null, null, {}, false])),
        (
            generator.with_state(state),
            json!([true, "resp_0", {"id": "conv_1"}, {"k": "v"}, true]),
        ),
    ] {
        let mut emitter = generator.into_emitter();
        let mut out = Vec::new();
        let prompt = PromptUsage {
            prompt_tokens: 1,
            prompt_cache_hit_tokens: 0,
        };
        emitter.start(prompt, None, &mut out);
        let created: Value = serde_json::from_str(&event_text(&out[0])).unwrap();
        let response = &created["response"];
        let got = json!([
            response["store"],
            response["previous_response_id"],
            response["conversation"],
            response["metadata"],
            response["background"]
        ]);
        assert_eq!(got, expected);
        assert_eq!(
            response.get("conversation").is_some(),
            !expected[2].is_null()
        );
    }
}

/// `cache_write_tokens` is reported only when asked for (a gateway whose clients validate
/// against today's API types), after `cached_tokens`; the reference's usage has no such key.
/// The accumulated response takes its usage from the terminal event, so it follows.
#[test]
fn cache_write_tokens_only_when_asked() {
    let body = json!({"model": "DeepSeek-V4-Pro", "input": "hi"});
    let (generator, _) = generator_for(&body, "resp-1", "DeepSeek-V4-Pro");
    for (generator, finish, expected) in [
        (
            generator.clone(),
            FinishReason::Stop,
            r#"{"cached_tokens":3}"#,
        ),
        (
            generator.clone().with_cache_write_tokens(),
            FinishReason::Stop,
            r#"{"cached_tokens":3,"cache_write_tokens":0}"#,
        ),
        (
            generator.with_cache_write_tokens(),
            FinishReason::Length,
            r#"{"cached_tokens":3,"cache_write_tokens":0}"#,
        ),
    ] {
        let mut emitter = generator.into_emitter();
        let mut out = Vec::new();
        let prompt = PromptUsage {
            prompt_tokens: 7,
            prompt_cache_hit_tokens: 3,
        };
        emitter.start(prompt, None, &mut out);
        emitter.text(Segment::Content, "ok", None, &mut out);
        let usage = Usage {
            prompt,
            completion_tokens: 1,
            reasoning_tokens: None,
        };
        emitter.finish(&Completion::Finished(finish), false, &usage, &mut out);
        let terminal: Value = serde_json::from_str(&out.last().unwrap().to_json()).unwrap();
        let details = &terminal["response"]["usage"]["input_tokens_details"];
        assert_eq!(serde_json::to_string(details).unwrap(), expected);
        let mut response = ResponsesResponse::new("resp-1".into(), "m".into(), 0);
        for event in out {
            response.accumulate(event);
        }
        let whole: Value = serde_json::from_str(&response.to_json()).unwrap();
        assert_eq!(
            serde_json::to_string(&whole["usage"]["input_tokens_details"]).unwrap(),
            expected
        );
    }
}
