//! OpenAI Responses conformance: every vendored request case with protocol `responses`
//! (resp-*, random-resp-*, mutation-resp-*) goes through intake →
//! `ResponsesRequest::from_value` → `echo` / `namespace_tool_map` → `convert` and is
//! compared with what the reference recorded (construct error, model, echo, namespace tool
//! map, convert error, model version, stream, conversation, inference and parsing options,
//! resolve_max_tokens probes). Rendering and encoding are compared by other harnesses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{body_value, build_options, conversion_error, first_diff, ser_request, value_error, Case};
use deepseek_protocol::responses::ResponsesEcho;
use deepseek_protocol::ResponsesRequest;
use serde_json::{json, Map, Value};

/// Cases whose expected outcome is an error raised while Python turns a value tree into
/// JSON text; they never reach the Rust request parser (the bindings own that conversion).
const PYTHON_VALUE_CASES: &[(&str, &str)] = &[
    ("resp-bodyform-030", "UnicodeEncodeError: a lone surrogate in a str body (Python encoding)"),
    ("resp-bodyform-035", "OverflowError: an int outside 64 bits in a dict body (Python value conversion)"),
];

fn ser_echo(echo: &ResponsesEcho) -> Value {
    json!({
        "instructions": echo.instructions,
        "max_output_tokens": echo.max_output_tokens,
        "temperature": f64::from(echo.temperature),
        "top_p": f64::from(echo.top_p),
        "top_logprobs": echo.top_logprobs,
        "user": echo.user,
    })
}

/// The probe's view of one case, limited to the fields this crate produces.
fn run_case(case: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let options = build_options(&case["options"]);
    let request = match body_value(case).and_then(ResponsesRequest::from_value) {
        Ok(r) => r,
        Err(e) => {
            out.insert("construct".into(), value_error(&e.to_string()));
            return out;
        }
    };
    out.insert("model".into(), json!(request.model()));
    out.insert("echo".into(), ser_echo(&request.echo()));
    let map = match request.namespace_tool_map(&options) {
        Ok(map) => map.into_iter().map(|(k, (ns, name))| (k, json!([ns, name]))).collect(),
        Err(e) => conversion_error(&e),
    };
    out.insert("namespace_tool_map".into(), map);
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

const COMPARED: [&str; 11] = [
    "construct",
    "model",
    "echo",
    "namespace_tool_map",
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
        match (case.expected.get(key), actual.get(key)) {
            (None, None) => {}
            (Some(e), Some(a)) => {
                if let Some(d) = first_diff(key, e, a) {
                    return Some(d);
                }
            }
            (Some(e), None) => return Some(format!("{key}: expected {e}, got nothing")),
            (None, Some(a)) => return Some(format!("{key}: unexpected {a}")),
        }
    }
    None
}

#[test]
fn responses_conformance() {
    let (cases, unreadable) = common::load_cases("responses");
    for id in &unreadable {
        assert!(PYTHON_VALUE_CASES.iter().any(|(listed, _)| listed == id), "unreadable case file {id}");
    }
    let mut skipped = unreadable;
    let mut failures = Vec::new();
    let mut passed = 0;
    for case in &cases {
        if let Some((_, why)) = PYTHON_VALUE_CASES.iter().find(|(id, _)| *id == case.id) {
            let construct = &case.expected["construct"]["error"];
            assert!(common::is_python_value_error(construct), "{} is listed as a Python-value case: {why}", case.id);
            skipped.push(case.id.clone());
            continue;
        }
        match check(case) {
            None => passed += 1,
            Some(diff) => failures.push((case.id.clone(), diff)),
        }
    }
    println!(
        "responses conformance: {passed} passed, {} failed, {} skipped ({})",
        failures.len(),
        skipped.len(),
        skipped.join(", ")
    );
    for (id, diff) in &failures {
        println!("FAIL {id}: {diff}");
    }
    assert!(failures.is_empty(), "{} responses cases failed", failures.len());
}

/// Differential driver (not part of the suite): reads JSON lines `{"id", "body", "options"}`
/// from `$RESPONSES_DIFF_INPUT` and writes `{"id", "result"}` lines in the probe's shape to
/// `$RESPONSES_DIFF_OUTPUT`, for comparison with the reference on generated bodies.
#[test]
#[ignore]
fn responses_differential() {
    let input = std::env::var("RESPONSES_DIFF_INPUT").expect("RESPONSES_DIFF_INPUT");
    let output = std::env::var("RESPONSES_DIFF_OUTPUT").expect("RESPONSES_DIFF_OUTPUT");
    let mut lines = Vec::new();
    for line in std::fs::read_to_string(input).unwrap().lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let result = run_case(&case);
        lines.push(json!({"id": case["id"], "result": result}).to_string());
    }
    std::fs::write(output, lines.join("\n") + "\n").unwrap();
}
