//! Chat Completions conformance: every vendored request case with protocol
//! `chat_completions` goes through intake → `ChatCompletionRequest::from_value` → `convert`
//! and is compared with what the reference recorded (construct error, convert error,
//! model, model version, stream, conversation, inference and parsing options,
//! resolve_max_tokens probes). Rendering and encoding are compared by other harnesses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{
    body_value, build_options, conversion_error, first_diff, is_python_value_error, ser_request, value_error, Case,
};
use deepseek_protocol::ChatCompletionRequest;
use serde_json::{json, Map, Value};

/// The probe's view of one case, limited to the fields this crate produces.
fn run_case(case: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let options = build_options(&case["options"]);
    let request = match body_value(case).and_then(ChatCompletionRequest::from_value) {
        Ok(r) => r,
        Err(e) => {
            out.insert("construct".into(), value_error(&e.to_string()));
            return out;
        }
    };
    out.insert("model".into(), json!(request.model()));
    match request.convert(&options) {
        Ok(cr) => {
            out.insert("convert".into(), json!("ok"));
            out.extend(ser_request(&cr));
        }
        Err(e) => {
            out.insert("convert".into(), conversion_error(&e));
        }
    }
    out
}

const COMPARED: [&str; 9] = [
    "construct",
    "model",
    "convert",
    "model_version",
    "stream",
    "conversation",
    "inference_options",
    "parsing_options",
    "resolve_max_tokens",
];

/// `None` when the case passes, otherwise the first difference.
fn check(case: &Case) -> Option<String> {
    let actual = run_case(&case.case);
    for key in COMPARED {
        let expected = case.expected.get(key);
        let got = actual.get(key);
        match (expected, got) {
            (None, None) => {}
            (Some(e), Some(a)) => {
                if let Some(d) = first_diff(key, e, a) {
                    return Some(d);
                }
            }
            (Some(e), None) => {
                return Some(format!(
                    "{key}: expected {e}, got nothing (actual keys {:?})",
                    actual.keys().collect::<Vec<_>>()
                ))
            }
            (None, Some(a)) => return Some(format!("{key}: unexpected {a}")),
        }
    }
    None
}

#[test]
fn chat_conformance() {
    let (cases, unreadable) = common::load_cases("chat_completions");
    let mut skipped: Vec<String> = unreadable;
    let mut failures = Vec::new();
    let mut passed = 0;
    for case in &cases {
        if case.expected.get("construct").is_some_and(|c| is_python_value_error(&c["error"])) {
            skipped.push(case.id.clone());
            continue;
        }
        match check(case) {
            None => passed += 1,
            Some(diff) => failures.push((case.id.clone(), diff)),
        }
    }
    println!(
        "chat conformance: {passed} passed, {} failed, {} skipped (Python-value conversion errors: {})",
        failures.len(),
        skipped.len(),
        skipped.join(", ")
    );
    for (id, diff) in &failures {
        println!("FAIL {id}: {diff}");
    }
    assert!(failures.is_empty(), "{} chat cases failed", failures.len());
}

/// Differential driver (not part of the suite): reads JSON lines `{"id", "body", "options"}`
/// from `$CHAT_DIFF_INPUT` and writes `{"id", "result"}` lines to `$CHAT_DIFF_OUTPUT`, in
/// the probe's shape, for comparison with the reference on generated bodies.
#[test]
#[ignore]
fn chat_differential() {
    let input = std::env::var("CHAT_DIFF_INPUT").expect("CHAT_DIFF_INPUT");
    let output = std::env::var("CHAT_DIFF_OUTPUT").expect("CHAT_DIFF_OUTPUT");
    let mut lines = Vec::new();
    for line in std::fs::read_to_string(input).unwrap().lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let result = run_case(&case);
        lines.push(json!({"id": case["id"], "result": result}).to_string());
    }
    std::fs::write(output, lines.join("\n") + "\n").unwrap();
}
