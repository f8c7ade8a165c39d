//! The loop every protocol conformance harness runs: record the probe's fields up to
//! conversion (`construct`, `model`, `convert` and the converted request), compare the
//! fields a harness owns with `expected`, tally and report the cases, and the opt-in
//! differential driver that writes the same probe view for generated bodies.

use deepseek_model::ConversationRequest;
use deepseek_protocol::ProtocolError;
use serde_json::{json, Map, Value};

use super::{first_diff, ser_request, value_error};

/// The probe fields every request harness compares: the parse, the model, the conversion
/// and the converted request.
pub const REQUEST_FIELDS: [&str; 9] = [
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

/// The parsed request, or `None` after recording its `construct` error in `out`.
pub fn parsed<R>(out: &mut Map<String, Value>, result: Result<R, ProtocolError>) -> Option<R> {
    match result {
        Ok(request) => Some(request),
        Err(e) => {
            out.insert("construct".into(), value_error(&e.to_string()));
            None
        }
    }
}

/// Record a conversion: `"ok"` and the converted request's fields, or the error (already in
/// the probe's shape).
pub fn record_convert(out: &mut Map<String, Value>, result: Result<ConversationRequest, Value>) {
    match result {
        Ok(cr) => {
            out.insert("convert".into(), json!("ok"));
            out.extend(ser_request(&cr));
        }
        Err(error) => {
            out.insert("convert".into(), error);
        }
    }
}

/// `None` when every key in `keys` agrees (present on both sides and equal, or absent on
/// both), otherwise the first difference.
pub fn compare_fields(
    keys: &[&str],
    expected: &Value,
    actual: &Map<String, Value>,
) -> Option<String> {
    keys.iter()
        .find_map(|&key| match (expected.get(key), actual.get(key)) {
            (None, None) => None,
            (Some(e), Some(a)) => first_diff(key, e, a),
            (Some(e), None) => Some(format!(
                "{key}: expected {e}, got nothing (actual keys {:?})",
                actual.keys().collect::<Vec<_>>()
            )),
            (None, Some(a)) => Some(format!("{key}: unexpected {a}")),
        })
}

/// Pass, fail and skip counts of one harness run, and the fewest passes it must reach: a
/// corpus that went missing or a filter that skips everything fails the run instead of
/// passing on nothing.
pub struct Tally {
    minimum: usize,
    passed: usize,
    failures: Vec<(String, String)>,
    skipped: Vec<String>,
}

impl Tally {
    /// A run that must pass at least `minimum` cases.
    pub fn at_least(minimum: usize) -> Self {
        Tally {
            minimum,
            passed: 0,
            failures: Vec::new(),
            skipped: Vec::new(),
        }
    }

    pub fn skip(&mut self, id: &str) {
        self.skipped.push(id.to_owned());
    }

    /// Record a case's first difference (`None`: it passed).
    pub fn record(&mut self, id: &str, diff: Option<String>) {
        match diff {
            None => self.passed += 1,
            Some(diff) => self.failures.push((id.to_owned(), diff)),
        }
    }

    /// Print the counts and every failure, then fail the test if any case failed or fewer
    /// than the minimum passed.
    pub fn finish(self, harness: &str) {
        println!(
            "{harness} conformance: {} passed, {} failed, {} skipped ({})",
            self.passed,
            self.failures.len(),
            self.skipped.len(),
            self.skipped.join(", ")
        );
        for (id, diff) in &self.failures {
            println!("FAIL {id}: {diff}");
        }
        assert!(
            self.failures.is_empty(),
            "{} {harness} cases failed",
            self.failures.len()
        );
        assert!(
            self.passed >= self.minimum,
            "{harness}: {} cases passed, expected at least {} (is the corpus there?)",
            self.passed,
            self.minimum
        );
    }
}

/// Differential driver: reads JSON lines `{"id", "body", "options"}` from the file named by
/// `$<prefix>_DIFF_INPUT` and writes `{"id", "result"}` lines in the probe's shape to
/// `$<prefix>_DIFF_OUTPUT`, for comparison with the reference on generated bodies.
pub fn differential(prefix: &str, run_case: impl Fn(&Value) -> Map<String, Value>) {
    let input_var = format!("{prefix}_DIFF_INPUT");
    let output_var = format!("{prefix}_DIFF_OUTPUT");
    let input = std::env::var(&input_var).unwrap_or_else(|_| panic!("{input_var}"));
    let output = std::env::var(&output_var).unwrap_or_else(|_| panic!("{output_var}"));
    let mut lines = Vec::new();
    for line in std::fs::read_to_string(input)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let case: Value = serde_json::from_str(line).unwrap();
        let result = run_case(&case);
        lines.push(json!({"id": case["id"], "result": result}).to_string());
    }
    std::fs::write(output, lines.join("\n") + "\n").unwrap();
}
