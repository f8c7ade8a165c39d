//! Reading the vendored output vectors: recorded parsing options, input pieces, and the
//! parser-level deltas of the reference's Chat Completions chunks.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use deepseek_model::{ParsingOptions, SpecialToken, ThinkingInitialStage};
use deepseek_stream::{ParseEvent, Segment};
use serde_json::Value;

/// One visible delta of a Chat Completions stream, in a form both sides map to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    Reasoning(String),
    Content(String),
    ToolStart(u64, String),
    Arguments(u64, String),
}

pub fn outputs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/outputs")
}

pub fn parsing_options(recorded: &Value) -> ParsingOptions {
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
    options
}

/// `output_text` split at code-point offsets, as `probe.chunk_inputs` does.
pub fn pieces(text: &str, points: &[Value]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut bounds = vec![0usize];
    bounds.extend(
        points
            .iter()
            .map(|p| p.as_u64().unwrap() as usize)
            .filter(|&p| p > 0 && p < chars.len()),
    );
    bounds.push(chars.len());
    bounds
        .windows(2)
        .map(|w| chars[w[0]..w[1]].iter().collect())
        .collect()
}

pub fn our_deltas(events: &[ParseEvent]) -> Vec<Delta> {
    events
        .iter()
        .filter_map(|event| match event {
            ParseEvent::Text {
                segment: Segment::Reasoning,
                text,
                ..
            } => Some(Delta::Reasoning(text.clone())),
            ParseEvent::Text {
                segment: Segment::Content,
                text,
                ..
            } => Some(Delta::Content(text.clone())),
            ParseEvent::ToolCallStart { index, name } => {
                Some(Delta::ToolStart(*index as u64, name.clone()))
            }
            ParseEvent::ToolCallArguments { index, fragment } => {
                Some(Delta::Arguments(*index as u64, fragment.clone()))
            }
            ParseEvent::ToolCallEnd { .. } | ParseEvent::StopSequence { .. } => None,
        })
        .collect()
}

/// The parser-level deltas in one recorded step's Chat chunks (role and final chunks carry
/// only empty text and map to nothing).
pub fn reference_deltas(step: &Value) -> Vec<Delta> {
    let mut deltas = Vec::new();
    for event in step["events"].as_array().unwrap() {
        for choice in event["json"]["data"]["choices"].as_array().unwrap() {
            let delta = &choice["delta"];
            if let Some(text) = delta["reasoning_content"]
                .as_str()
                .filter(|t| !t.is_empty())
            {
                deltas.push(Delta::Reasoning(text.to_owned()));
            }
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                deltas.push(Delta::Content(text.to_owned()));
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().unwrap();
                if let Some(name) = call["function"]["name"].as_str() {
                    deltas.push(Delta::ToolStart(index, name.to_owned()));
                } else if let Some(arguments) = call["function"]["arguments"].as_str() {
                    deltas.push(Delta::Arguments(index, arguments.to_owned()));
                }
            }
        }
    }
    deltas
}

/// Every vendored output case, sorted by file name: (file name, case, expected).
pub fn load_cases() -> Vec<(String, Value)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(outputs_dir())
        .expect("vendored outputs directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let file: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (p.file_name().unwrap().to_string_lossy().into_owned(), file)
        })
        .collect()
}

/// The parser-level deltas in one recorded step of a Messages or Responses stream, without
/// indices (block and output indices are the emitter's). `None`: the step holds an output
/// this mapping does not cover (a Responses `apply_patch` custom tool call).
pub fn reference_deltas_any(protocol: &str, step: &Value) -> Option<Vec<Delta>> {
    if protocol == "chat_completions" {
        return Some(
            reference_deltas(step)
                .into_iter()
                .map(without_index)
                .collect(),
        );
    }
    let mut deltas = Vec::new();
    let text = |v: &Value| v.as_str().filter(|t| !t.is_empty()).map(str::to_owned);
    for event in step["events"].as_array().unwrap() {
        let data = &event["json"]["data"];
        match data["type"].as_str().unwrap_or("") {
            "content_block_start" if data["content_block"]["type"] == "tool_use" => {
                deltas.push(Delta::ToolStart(
                    0,
                    data["content_block"]["name"].as_str().unwrap().to_owned(),
                ));
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                match delta["type"].as_str().unwrap_or("") {
                    "thinking_delta" => {
                        deltas.extend(text(&delta["thinking"]).map(Delta::Reasoning))
                    }
                    "text_delta" => deltas.extend(text(&delta["text"]).map(Delta::Content)),
                    "input_json_delta" => {
                        deltas.extend(text(&delta["partial_json"]).map(|t| Delta::Arguments(0, t)))
                    }
                    _ => {}
                }
            }
            "response.output_item.added" => match data["item"]["type"].as_str().unwrap_or("") {
                "function_call" => {
                    let name = data["item"]["name"].as_str().unwrap();
                    let full = match data["item"]["namespace"].as_str() {
                        Some(namespace) => format!("{namespace}__{name}"),
                        None => name.to_owned(),
                    };
                    deltas.push(Delta::ToolStart(0, full));
                }
                "custom_tool_call" => return None,
                _ => {}
            },
            "response.reasoning_text.delta" => {
                deltas.extend(text(&data["delta"]).map(Delta::Reasoning))
            }
            "response.output_text.delta" => deltas.extend(text(&data["delta"]).map(Delta::Content)),
            "response.function_call_arguments.delta" => {
                deltas.extend(text(&data["delta"]).map(|t| Delta::Arguments(0, t)))
            }
            _ => {}
        }
    }
    Some(deltas)
}

/// A delta with its call index dropped.
pub fn without_index(delta: Delta) -> Delta {
    match delta {
        Delta::ToolStart(_, name) => Delta::ToolStart(0, name),
        Delta::Arguments(_, text) => Delta::Arguments(0, text),
        other => other,
    }
}
