//! OpenAI Responses conformance: every vendored request case with protocol `responses`
//! (resp-*, random-resp-*, mutation-resp-*) goes through intake →
//! `ResponsesRequest::from_value` → `echo` / `namespace_tool_map` → `convert` and is
//! compared with what the reference recorded (construct error, model, echo, namespace tool
//! map, convert error, model version, stream, conversation, inference and parsing options,
//! resolve_max_tokens probes). Rendering and encoding are compared by other harnesses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::harness::{
    compare_fields, differential, parsed, record_convert, Tally, REQUEST_FIELDS,
};
use common::{body_value, build_options, conversion_error};
use deepseek_protocol::responses::ResponsesEcho;
use deepseek_protocol::ResponsesRequest;
use serde_json::{json, Map, Value};

/// Cases whose expected outcome is an error raised while Python turns a value tree into
/// JSON text; they never reach the Rust request parser (the bindings own that conversion).
const PYTHON_VALUE_CASES: &[(&str, &str)] = &[
    (
        "resp-bodyform-030",
        "UnicodeEncodeError: a lone surrogate in a str body (Python encoding)",
    ),
    (
        "resp-bodyform-035",
        "OverflowError: an int outside 64 bits in a dict body (Python value conversion)",
    ),
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
    let Some(request) = parsed(
        &mut out,
        body_value(case).and_then(ResponsesRequest::from_value),
    ) else {
        return out;
    };
    out.insert("model".into(), json!(request.model()));
    out.insert("echo".into(), ser_echo(&request.echo()));
    let map = match request.namespace_tool_map(&options) {
        Ok(map) => map
            .into_iter()
            .map(|(k, (ns, name))| (k, json!([ns, name])))
            .collect(),
        Err(e) => conversion_error(&e),
    };
    out.insert("namespace_tool_map".into(), map);
    record_convert(
        &mut out,
        request.convert(&options).map_err(|e| conversion_error(&e)),
    );
    out
}

/// The fewest cases this harness must pass: the vendored corpus, less its skips, and a
/// little room (a run over a missing or filtered-out corpus fails).
const MINIMUM: usize = 285;

/// Compared besides the request fields every harness compares.
const ECHO_FIELDS: [&str; 2] = ["echo", "namespace_tool_map"];

#[test]
fn responses_conformance() {
    let (cases, unreadable) = common::load_cases("responses");
    let compared: Vec<&str> = REQUEST_FIELDS.iter().chain(&ECHO_FIELDS).copied().collect();
    let mut tally = Tally::at_least(MINIMUM);
    for id in &unreadable {
        assert!(
            PYTHON_VALUE_CASES.iter().any(|(listed, _)| listed == id),
            "unreadable case file {id}"
        );
        tally.skip(id);
    }
    for case in &cases {
        if let Some((_, why)) = PYTHON_VALUE_CASES.iter().find(|(id, _)| *id == case.id) {
            let construct = &case.expected["construct"]["error"];
            assert!(
                common::is_python_value_error(construct),
                "{} is listed as a Python-value case: {why}",
                case.id
            );
            tally.skip(&case.id);
            continue;
        }
        tally.record(
            &case.id,
            compare_fields(&compared, &case.expected, &run_case(&case.case)),
        );
    }
    tally.finish("responses");
}

/// Differential driver (not part of the suite): `RESPONSES_DIFF_INPUT` →
/// `RESPONSES_DIFF_OUTPUT`, see [`differential`].
#[test]
#[ignore]
fn responses_differential() {
    differential("RESPONSES", run_case);
}
