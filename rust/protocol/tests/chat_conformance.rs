//! Chat Completions conformance: every vendored request case with protocol
//! `chat_completions` goes through intake → `ChatCompletionRequest::from_value` → `convert`
//! and is compared with what the reference recorded (construct error, convert error,
//! model, model version, stream, conversation, inference and parsing options,
//! resolve_max_tokens probes). Rendering and encoding are compared by other harnesses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::harness::{
    compare_fields, differential, parsed, record_convert, Tally, REQUEST_FIELDS,
};
use common::{body_value, build_options, conversion_error, is_python_value_error};
use deepseek_protocol::ChatCompletionRequest;
use serde_json::{json, Map, Value};

/// The fewest cases this harness must pass: the vendored corpus, less its skips, and a
/// little room (a run over a missing or filtered-out corpus fails).
const MINIMUM: usize = 300;

/// The probe's view of one case, limited to the fields this crate produces.
fn run_case(case: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let options = build_options(&case["options"]);
    let Some(request) = parsed(
        &mut out,
        body_value(case).and_then(ChatCompletionRequest::from_value),
    ) else {
        return out;
    };
    out.insert("model".into(), json!(request.model()));
    record_convert(
        &mut out,
        request.convert(&options).map_err(|e| conversion_error(&e)),
    );
    out
}

#[test]
fn chat_conformance() {
    let (cases, unreadable) = common::load_cases("chat_completions");
    let mut tally = Tally::at_least(MINIMUM);
    for id in &unreadable {
        tally.skip(id);
    }
    for case in &cases {
        if case
            .expected
            .get("construct")
            .is_some_and(|c| is_python_value_error(&c["error"]))
        {
            tally.skip(&case.id);
            continue;
        }
        tally.record(
            &case.id,
            compare_fields(&REQUEST_FIELDS, &case.expected, &run_case(&case.case)),
        );
    }
    tally.finish("chat");
}

/// Differential driver (not part of the suite): `CHAT_DIFF_INPUT` → `CHAT_DIFF_OUTPUT`, see
/// [`differential`].
#[test]
#[ignore]
fn chat_differential() {
    differential("CHAT", run_case);
}

/// A run that passes fewer cases than its minimum fails, a run that passes none included;
/// skips do not count.
#[test]
#[should_panic(expected = "empty: 0 cases passed, expected at least 1")]
fn a_tally_fails_on_nothing() {
    Tally::at_least(1).finish("empty");
}

#[test]
#[should_panic(expected = "short: 2 cases passed, expected at least 3")]
fn a_tally_fails_below_its_minimum() {
    let mut tally = Tally::at_least(3);
    tally.record("a", None);
    tally.record("b", None);
    tally.skip("c");
    tally.finish("short");
}

#[test]
fn a_tally_passes_at_its_minimum() {
    let mut tally = Tally::at_least(2);
    tally.record("a", None);
    tally.record("b", None);
    tally.finish("enough");
}
