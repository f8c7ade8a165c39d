//! Chat Completions on the way back, against the vendored output vectors
//! (`tests/conformance/outputs/*.json`, protocol `chat_completions`, text mode): each case is
//! replayed through the real `StreamProcessor` with the Chat emitter exactly as `probe.py`
//! drives the Python API (ready, text chunks split at code-point offsets, finish chunk, a
//! late text chunk, then `finish()`), and every chunk's JSON text, every lifecycle error, and
//! the accumulated `chat.completion` are compared with the recording. Key order is compared
//! (the JSON is re-serialised with order preserved); `created` of chunks is the wall clock
//! and tool-call ids are random, so both are normalised as the probe does.
//!
//! Cases that need the tokenizer file (token mode, an attached tokenizer) are covered by the
//! Python harness.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use deepseek_model::{ConversionOptions, ParsingOptions, SpecialToken, ThinkingInitialStage};
use deepseek_protocol::ChatCompletionRequest;
use deepseek_reply::chat::{
    ChatCompletionChunk, ChatCompletionChunkGenerator, ChatCompletionResponse,
};
use deepseek_reply::json::{push_float, FloatSpelling};
use deepseek_stream::emit::{FinishReason, PromptUsage};
use deepseek_stream::processor::{InferenceChunk, StreamProcessor, Vocabulary};
use serde_json::{json, Value};

const RESPONSE_CREATED: u64 = 1_700_000_000;

/// Text mode needs no vocabulary.
struct NoVocabulary;

impl Vocabulary for NoVocabulary {
    fn token_bytes(&self, _id: u32) -> Option<&[u8]> {
        None
    }
    fn is_added(&self, _id: u32) -> bool {
        false
    }
    fn count_tokens(&self, _text: &str) -> u64 {
        0
    }
}

fn outputs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/outputs")
}

fn parsing_options(recorded: &Value, spec: &Value) -> ParsingOptions {
    let mut options = ParsingOptions {
        parse_tool_calls: recorded["parse_tool_calls"].as_bool().unwrap(),
        starts_in_tool_calls: recorded["starts_in_tool_calls"].as_bool().unwrap(),
        parse_json_output: recorded["parse_json_output"].as_bool().unwrap(),
        thinking_initial_stage: match recorded["thinking_initial_stage"].as_str() {
            None => None,
            Some("ReasoningStart") => Some(ThinkingInitialStage::ReasoningStart),
            Some("ReasoningContinuation") => Some(ThinkingInitialStage::ReasoningContinuation),
            Some("ContentContinuation") => Some(ThinkingInitialStage::ContentContinuation),
            Some(other) => panic!("unknown thinking stage {other}"),
        },
        stop_sequences: recorded["stop_sequences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect(),
        ..ParsingOptions::default()
    };
    for token in SpecialToken::ALL {
        let spelling = recorded["special_tokens"][token.name()].as_str().unwrap();
        options.special_tokens.set(token, spelling.to_owned());
    }
    // The recording is of the options after the case's edits; nothing else to apply.
    let _ = spec;
    options
}

/// The probe's chunk sequence: (label, chunk).
fn chunks(case: &Value) -> Vec<(&'static str, InferenceChunk)> {
    let mut items = Vec::new();
    if let Some(ready) = case.get("ready").filter(|r| !r.is_null()) {
        items.push((
            "ready",
            InferenceChunk::Ready {
                prompt_usage: PromptUsage {
                    prompt_tokens: ready["prompt_tokens"].as_u64().unwrap_or(0),
                    prompt_cache_hit_tokens: ready["prompt_cache_hit_tokens"].as_u64().unwrap_or(0),
                },
                system_fingerprint: ready["system_fingerprint"].as_str().map(str::to_owned),
            },
        ));
    }
    let text: Vec<char> = case["output_text"].as_str().unwrap().chars().collect();
    let mut bounds = vec![0usize];
    for point in case["chunks"].as_array().into_iter().flatten() {
        let p = point.as_u64().unwrap() as usize;
        if p > 0 && p < text.len() {
            bounds.push(p);
        }
    }
    bounds.push(text.len());
    let counts = case["token_counts"].as_array();
    for (i, window) in bounds.windows(2).enumerate() {
        let piece: String = text[window[0]..window[1]].iter().collect();
        let token_count = counts
            .and_then(|c| c.get(i))
            .and_then(Value::as_u64)
            .unwrap_or(1);
        items.push((
            "text",
            InferenceChunk::Text {
                content: piece,
                token_count,
            },
        ));
    }
    if let Some(reason) = case["finish_reason"].as_str() {
        let reason = match reason {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            other => panic!("unknown finish reason {other}"),
        };
        items.push(("finish_chunk", InferenceChunk::Finish(reason)));
    }
    if let Some(late) = case["after_finish_text"].as_str() {
        items.push((
            "text",
            InferenceChunk::Text {
                content: late.to_owned(),
                token_count: 1,
            },
        ));
    }
    items
}

/// Tool-call ids' random tails become `<R1>`, `<R2>`, … in order of appearance.
#[derive(Default)]
struct Normalizer {
    tails: HashMap<String, String>,
}

impl Normalizer {
    fn id(&mut self, id: &str) -> String {
        let (head, tail) = if id.get(8..11) == Some("ET_") {
            id.split_at(11)
        } else {
            id.split_at(8.min(id.len()))
        };
        let next = format!("<R{}>", self.tails.len() + 1);
        let name = self.tails.entry(tail.to_owned()).or_insert(next).clone();
        format!("{head}{name}")
    }

    fn calls(&mut self, calls: Option<&mut Value>) {
        for call in calls.and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(id) = call.get("id").and_then(Value::as_str).map(str::to_owned) {
                call["id"] = Value::String(self.id(&id));
            }
        }
    }

    fn chunk(&mut self, chunk: &ChatCompletionChunk) -> String {
        let mut value: Value = serde_json::from_str(&chunk.to_json()).unwrap();
        value["created"] = json!("<now>");
        self.calls(value["choices"][0]["delta"].get_mut("tool_calls"));
        serde_json::to_string(&value).unwrap()
    }

    fn response(&mut self, response: &ChatCompletionResponse) -> String {
        let mut value: Value = serde_json::from_str(&response.to_json()).unwrap();
        if let Some(message) = value["choices"].get_mut(0).map(|c| &mut c["message"]) {
            self.calls(message.get_mut("tool_calls"));
        }
        serde_json::to_string(&value).unwrap()
    }
}

/// (our steps, the recorded steps, our response, the recorded response)
fn replay(case: &Value, expected: &Value) -> (Vec<String>, Vec<String>, String, String) {
    // Every Chat output case converts with the default options; one that sets its own would
    // need the request harness's `build_options` (`rust/protocol/tests/common`).
    assert!(
        case["options"].is_null(),
        "conversion options are not built here"
    );
    let request = ChatCompletionRequest::from_value(case["request_body"].clone()).unwrap();
    let converted = request.convert(&ConversionOptions::default()).unwrap();
    let options = parsing_options(&expected["parsing_options"], &case["parsing"]);
    let id = case["response_id"].as_str().unwrap_or("resp-conformance-1");
    let model = case["response_model"]
        .as_str()
        .or_else(|| case["request_body"]["model"].as_str())
        .unwrap_or("m");
    let generator = ChatCompletionChunkGenerator::new(&converted, id, model);
    let thinking = generator.thinking;
    let mut processor: StreamProcessor<_, NoVocabulary> =
        StreamProcessor::new(generator.emitter(), &options, thinking, None);

    let mut normalizer = Normalizer::default();
    let mut ours = Vec::new();
    let mut all = Vec::new();
    for (label, chunk) in chunks(case) {
        let mut out = Vec::new();
        match processor.push(chunk, &mut out) {
            Ok(()) => {
                let texts: Vec<String> = out.iter().map(|c| normalizer.chunk(c)).collect();
                ours.push(format!("{label} {}", texts.join(" | ")));
                all.extend(out);
            }
            Err(error) => {
                ours.push(format!("{label} error {error}"));
                break;
            }
        }
    }
    let mut out = Vec::new();
    match processor.finish(&mut out) {
        Ok(()) => {
            let texts: Vec<String> = out.iter().map(|c| normalizer.chunk(c)).collect();
            ours.push(format!("finish() {}", texts.join(" | ")));
            all.extend(out);
        }
        Err(error) => ours.push(format!("finish() error {error}")),
    }

    let mut recorded = Vec::new();
    for step in expected["steps"].as_array().unwrap() {
        let label = step["in"].as_str().unwrap();
        if let Some(error) = step.get("error") {
            recorded.push(format!(
                "{label} error {}",
                error["message"].as_str().unwrap()
            ));
            continue;
        }
        let texts: Vec<String> = step["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| serde_json::to_string(&e["json"]["data"]).unwrap())
            .collect();
        recorded.push(format!("{label} {}", texts.join(" | ")));
    }

    let ready = &case["ready"];
    let mut response = ChatCompletionResponse::new(
        id,
        model,
        RESPONSE_CREATED,
        ready["prompt_tokens"].as_u64().unwrap_or(0),
        ready["prompt_cache_hit_tokens"].as_u64().unwrap_or(0),
    );
    for chunk in all {
        response.accumulate(chunk);
    }
    let ours_response = normalizer.response(&response);
    let recorded_response = serde_json::to_string(&expected["response"]["data"]).unwrap();
    (ours, recorded, ours_response, recorded_response)
}

#[test]
fn chat_output_vectors_in_text_mode() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(outputs_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let (mut run, mut failed) = (0, Vec::new());
    for path in files {
        let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let (case, expected) = (&file["case"], &file["expected"]);
        let needs_tokenizer = case["mode"] == "tokens" || case["attach_tokenizer"] == true;
        if case["protocol"] != "chat_completions"
            || needs_tokenizer
            || expected.get("steps").is_none()
        {
            continue;
        }
        run += 1;
        let (ours, recorded, ours_response, recorded_response) = replay(case, expected);
        if ours != recorded || ours_response != recorded_response {
            let id = case["id"].as_str().unwrap().to_owned();
            let step = ours.iter().zip(&recorded).find(|(a, b)| a != b);
            let detail = match step {
                Some((a, b)) => format!("step\n  ours     {a}\n  recorded {b}"),
                None if ours.len() != recorded.len() => {
                    format!("steps {} vs {}", ours.len(), recorded.len())
                }
                None => {
                    format!("response\n  ours     {ours_response}\n  recorded {recorded_response}")
                }
            };
            failed.push(format!("{id}: {detail}"));
        }
    }
    assert!(run > 200, "only {run} Chat text-mode cases found");
    assert!(
        failed.is_empty(),
        "{} of {run} cases differ:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Logprobs print as single-precision floats, as the reference does (observed:
/// `-0.30000001192092896` → `-0.3`, `1e-7` → `1e-7`, `-1` → `-1.0`, NaN → `null`).
#[test]
fn logprob_spelling_table() {
    let table: [(f64, &str); 6] = [
        (-0.300_000_011_920_928_96, "-0.3"),
        (1e-7, "1e-7"),
        (-1.0, "-1.0"),
        (-0.0, "-0.0"),
        (-0.125, "-0.125"),
        (f64::NAN, "null"),
    ];
    for (value, expected) in table {
        let mut out = String::new();
        push_float(&mut out, value, FloatSpelling::Single);
        assert_eq!(out, expected, "{value}");
    }
}

/// The usage key of non-final chunks: omitted when streaming without `include_usage`, `null`
/// otherwise; the final chunk always carries usage, with saturating cache-miss tokens.
#[test]
fn usage_key_table() {
    let table = [
        (json!({"stream": true}), false),
        (
            json!({"stream": true, "stream_options": {"include_usage": true}}),
            true,
        ),
        (json!({"stream": false}), true),
        (json!({}), true),
    ];
    for (extra, null_usage) in table {
        let mut body =
            json!({"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "hi"}]});
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        let converted = ChatCompletionRequest::from_value(body)
            .unwrap()
            .convert(&ConversionOptions::default())
            .unwrap();
        let generator = ChatCompletionChunkGenerator::new(&converted, "id", "m");
        let options = converted.parsing_options.clone();
        let mut processor: StreamProcessor<_, NoVocabulary> =
            StreamProcessor::new(generator.emitter(), &options, true, None);
        let mut out = Vec::new();
        let ready = InferenceChunk::Ready {
            prompt_usage: PromptUsage {
                prompt_tokens: 3,
                prompt_cache_hit_tokens: 5,
            },
            system_fingerprint: None,
        };
        processor.push(ready, &mut out).unwrap();
        processor.finish(&mut out).unwrap();
        let first: Value = serde_json::from_str(&out[0].to_json()).unwrap();
        assert_eq!(first.get("usage").is_some(), null_usage, "{extra}");
        let last: Value = serde_json::from_str(&out[1].to_json()).unwrap();
        assert_eq!(last["usage"]["prompt_cache_miss_tokens"], 0, "{extra}");
        assert_eq!(last["usage"]["total_tokens"], 3, "{extra}");
    }
}

/// The first chunk announces the segment the stream opens with (recorded from the wheel):
/// in thinking mode, reasoning (`content: null, reasoning_content: ""`) unless an assistant
/// prefix is continued as content, which opens with `content: "", reasoning_content: null`;
/// with thinking off, `content: ""` alone. Both model versions behave the same.
#[test]
fn first_chunk_table() {
    let reasoning = r#"{"role":"assistant","content":null,"reasoning_content":""}"#;
    let content_in_thinking = r#"{"role":"assistant","content":"","reasoning_content":null}"#;
    let plain = r#"{"role":"assistant","content":""}"#;
    let content = json!({"role": "assistant", "content": "Hel", "prefix": true});
    let thought =
        json!({"role": "assistant", "content": "", "reasoning_content": "hm", "prefix": true});
    let both =
        json!({"role": "assistant", "content": "Hel", "reasoning_content": "hm", "prefix": true});
    let empty = json!({"role": "assistant", "content": "", "prefix": true});
    let table = [
        ("no prefix, default thinking", None, None, reasoning),
        ("content prefix", Some(&content), None, content_in_thinking),
        (
            "content prefix, thinking on",
            Some(&content),
            Some("enabled"),
            content_in_thinking,
        ),
        (
            "content prefix, thinking off",
            Some(&content),
            Some("disabled"),
            plain,
        ),
        ("reasoning prefix", Some(&thought), None, reasoning),
        (
            "reasoning prefix, thinking off",
            Some(&thought),
            Some("disabled"),
            plain,
        ),
        ("both", Some(&both), Some("enabled"), content_in_thinking),
        ("empty prefix", Some(&empty), None, reasoning),
        (
            "empty prefix, thinking off",
            Some(&empty),
            Some("disabled"),
            plain,
        ),
    ];
    for model in ["DeepSeek-V4-Pro", "DeepSeek-V4.1-Flash"] {
        for (name, prefix, thinking, expected) in table {
            let mut messages = vec![json!({"role": "user", "content": "hi"})];
            messages.extend(prefix.cloned());
            let mut body = json!({"model": model, "messages": messages});
            if let Some(thinking) = thinking {
                body["thinking"] = json!({"type": thinking});
            }
            let converted = ChatCompletionRequest::from_value(body)
                .unwrap()
                .convert(&ConversionOptions::default())
                .unwrap();
            let generator = ChatCompletionChunkGenerator::new(&converted, "id", "m");
            let mut processor: StreamProcessor<_, NoVocabulary> =
                StreamProcessor::new(generator.emitter(), &converted.parsing_options, true, None);
            let mut out = Vec::new();
            processor.finish(&mut out).unwrap();
            let first: Value = serde_json::from_str(&out[0].to_json()).unwrap();
            assert_eq!(
                first["choices"][0]["delta"].to_string(),
                expected,
                "{model}: {name}"
            );
        }
    }
}

/// Several choices (a request's `n`): each stream names its choice, holds its usage back,
/// and the accumulated response lists the choices in order with the usage of them all.
#[test]
fn several_choices_accumulate_with_their_usage_added() {
    let body = json!({"model": "DeepSeek-V4-Pro", "n": 2, "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hi"}]});
    let options = ConversionOptions {
        max_choices: 4,
        ..ConversionOptions::default()
    };
    let converted = ChatCompletionRequest::from_value(body)
        .unwrap()
        .convert(&options)
        .unwrap();
    assert_eq!(converted.inference_options.n, Some(2));
    let mut response = ChatCompletionResponse::new("id", "m", RESPONSE_CREATED, 0, 0);
    // Choice 1 first: the response still lists choice 0 first.
    for (choice, text) in [(1usize, "later</think>second"), (0, "r</think>first")] {
        let generator =
            ChatCompletionChunkGenerator::new(&converted, "id", "m").with_choice(choice);
        let mut processor: StreamProcessor<_, NoVocabulary> =
            StreamProcessor::new(generator.emitter(), &converted.parsing_options, true, None);
        let mut out = Vec::new();
        let prompt_usage = PromptUsage {
            prompt_tokens: 7,
            prompt_cache_hit_tokens: 2,
        };
        processor
            .push(
                InferenceChunk::Ready {
                    prompt_usage,
                    system_fingerprint: None,
                },
                &mut out,
            )
            .unwrap();
        let content = text.to_owned();
        processor
            .push(
                InferenceChunk::Text {
                    content,
                    token_count: 3,
                },
                &mut out,
            )
            .unwrap();
        processor
            .push(InferenceChunk::Finish(FinishReason::Stop), &mut out)
            .unwrap();
        processor.finish(&mut out).unwrap();
        for chunk in out {
            let value: Value = serde_json::from_str(&chunk.to_json()).unwrap();
            assert_eq!(value["choices"][0]["index"], choice);
            assert_eq!(
                value["usage"],
                Value::Null,
                "usage waits for the last chunk"
            );
            response.accumulate(chunk);
        }
    }
    let whole: Value = serde_json::from_str(&response.to_json()).unwrap();
    assert_eq!(whole["choices"][0]["index"], 0);
    assert_eq!(whole["choices"][0]["message"]["content"], "first");
    assert_eq!(whole["choices"][1]["index"], 1);
    assert_eq!(whole["choices"][1]["message"]["content"], "second");
    assert_eq!(whole["usage"]["prompt_tokens"], 7);
    assert_eq!(whole["usage"]["completion_tokens"], 6);
    assert_eq!(whole["usage"]["total_tokens"], 13);
    let last: Value = serde_json::from_str(&response.usage_chunk_json().unwrap()).unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"], whole["usage"]);
    assert_eq!(last["object"], "chat.completion.chunk");
}

/// `n` beyond the allowed choices: the reference's error when one is allowed, a bound otherwise.
#[test]
fn too_many_choices_are_refused() {
    let body = |n: u8| json!({"model": "DeepSeek-V4-Pro", "n": n, "messages": [{"role": "user", "content": "hi"}]});
    let convert = |n: u8, max_choices: u8| {
        let options = ConversionOptions {
            max_choices,
            ..ConversionOptions::default()
        };
        ChatCompletionRequest::from_value(body(n))
            .unwrap()
            .convert(&options)
            .map(|r| r.inference_options.n)
    };
    assert_eq!(
        convert(2, 1).unwrap_err().message,
        "Invalid n value (currently only n = 1 is supported)"
    );
    assert_eq!(convert(1, 1).unwrap(), Some(1));
    assert_eq!(convert(4, 4).unwrap(), Some(4));
    assert_eq!(
        convert(5, 4).unwrap_err().message,
        "Invalid n value (n must be between 1 and 4)"
    );
    assert_eq!(
        convert(0, 4).unwrap_err().message,
        "Invalid n value (n must be between 1 and 4)"
    );
}
