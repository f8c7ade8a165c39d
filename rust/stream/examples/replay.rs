//! Development aid: replay output pieces through the parser and print, per push, the deltas
//! a Chat Completions stream would carry. Reads JSON lines `{"pieces": [...], "opts": {...}}`
//! on stdin (opts: parse_tool_calls, starts_in_tool_calls, parse_json_output, stage,
//! stop_sequences, special_tokens by keyword) and writes one JSON array per line.
//!
//! `cargo run -p deepseek-stream --example replay < cases.jsonl`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, Write};

use deepseek_model::{ParsingOptions, SpecialToken, ThinkingInitialStage};
use deepseek_stream::{ParseEvent, Parser, Segment};
use serde_json::{json, Value};

fn options(o: &Value) -> ParsingOptions {
    let mut po = ParsingOptions::default();
    if let Some(v) = o.get("parse_tool_calls").and_then(Value::as_bool) {
        po.parse_tool_calls = v;
    }
    if let Some(v) = o.get("starts_in_tool_calls").and_then(Value::as_bool) {
        po.starts_in_tool_calls = v;
    }
    if let Some(v) = o.get("parse_json_output").and_then(Value::as_bool) {
        po.parse_json_output = v;
    }
    po.thinking_initial_stage = match o.get("stage").and_then(Value::as_str) {
        Some("ReasoningStart") => Some(ThinkingInitialStage::ReasoningStart),
        Some("ReasoningContinuation") => Some(ThinkingInitialStage::ReasoningContinuation),
        Some("ContentContinuation") => Some(ThinkingInitialStage::ContentContinuation),
        _ => None,
    };
    if let Some(stops) = o.get("stop_sequences").and_then(Value::as_array) {
        po.stop_sequences = stops
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect();
    }
    if let Some(st) = o.get("special_tokens").and_then(Value::as_object) {
        for token in SpecialToken::ALL {
            if let Some(v) = st.get(token.keyword()).and_then(Value::as_str) {
                po.special_tokens.set(token, v.to_owned());
            }
        }
    }
    po
}

fn deltas(events: &[ParseEvent], stopped: &mut bool) -> Vec<Value> {
    let mut out = Vec::new();
    for e in events {
        match e {
            ParseEvent::Text {
                segment: Segment::Reasoning,
                text,
                ..
            } => out.push(json!({"r": text})),
            ParseEvent::Text {
                segment: Segment::Content,
                text,
                ..
            } => out.push(json!({"c": text})),
            ParseEvent::ToolCallStart { index, name } => {
                out.push(json!({"t": [[index, name, ""]]}))
            }
            ParseEvent::ToolCallArguments { index, fragment } => {
                out.push(json!({"t": [[index, null, fragment]]}))
            }
            ParseEvent::ToolCallEnd { .. } => {}
            ParseEvent::StopSequence { .. } => {
                *stopped = true;
                out.push(json!({"f": "stop"}));
            }
        }
    }
    out
}

fn main() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        if line.trim().is_empty() {
            continue;
        }
        let case: Value = serde_json::from_str(&line).unwrap();
        let opts = options(case.get("opts").unwrap_or(&Value::Null));
        let mut parser = Parser::new(&opts);
        let mut stopped = false;
        let mut pushes = Vec::new();
        for piece in case["pieces"].as_array().unwrap() {
            if stopped {
                pushes.push(json!("FINISHED"));
                break;
            }
            let mut events = Vec::new();
            parser.push(piece.as_str().unwrap(), &mut events);
            pushes.push(Value::Array(deltas(&events, &mut stopped)));
        }
        if !stopped {
            let mut events = Vec::new();
            parser.finish(&mut events);
            let mut d = deltas(&events, &mut stopped);
            d.push(json!({"f": "stop"}));
            pushes.push(Value::Array(d));
        }
        writeln!(stdout, "{}", serde_json::to_string(&pushes).unwrap()).unwrap();
    }
}
