//! Schema outcomes recorded from the reference package (deepseek-recipe 0.2.0), one case per
//! line of `tests/fixtures/*.jsonl`, each run through this crate's public functions.
//!
//! - `rules.jsonl`: the rules one at a time (types, the meta-schema's messages, strict
//!   reading and checks, each response-format flavour);
//! - `probes.jsonl`: shapes those leave open: realistic tool schemas (pydantic, zod, MCP),
//!   URI references and `$ref` resolution, `pattern` regex syntax, draft-07 schemas
//!   (`$schema`), strict schemas in valid shapes with extra keywords (key order and dropped
//!   keywords), and a sample of randomly generated schemas (one per distinct error wording,
//!   shortest input).
//!
//! A case is `{"use": …, "schema": …, "ok": text}` or `{…, "err": message}`. `use` says how
//! the schema was declared in a Chat Completions request:
//!
//! - `tool`: the parameters of a non-strict function tool named `f`;
//! - `tool_strict`: the parameters of a `strict: true` tool (`null`: declared without any);
//! - `format_strict` / `format` / `format_unset`: a `json_schema` response format with
//!   `strict` true / false / absent.
//!
//! `ok` is the stored parameters (tools) or the constraint schema (formats) as JSON text;
//! `err` is the exact error message.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use deepseek_schema::{
    check_response_schema, check_tool_parameters, normalize_strict, strict_empty_parameters,
    SchemaUse,
};
use serde_json::Value;

/// What the reference stores (`Ok`, compact JSON) or reports (`Err`) for one case.
fn outcome(usage: &str, schema: &Value) -> Result<String, String> {
    let stored = match usage {
        "tool" => check_tool_parameters("f", schema).map(|()| schema.clone()),
        "tool_strict" if schema.is_null() => Ok(strict_empty_parameters()),
        "tool_strict" => normalize_strict(schema, SchemaUse::ToolParameters),
        "format_strict" => normalize_strict(schema, SchemaUse::ResponseFormat),
        "format" | "format_unset" => check_response_schema(schema).map(|()| schema.clone()),
        other => panic!("unknown use {other:?}"),
    };
    stored.map(|v| v.to_string()).map_err(|e| e.message)
}

/// Run every case of one fixture file. The files only grow: fewer cases than `recorded` (as
/// many as were first converted) means some went missing.
fn run_fixture(name: &str, recorded: usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        let case: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{name}:{}: not JSON: {e}", i + 1));
        let usage = case["use"].as_str().unwrap();
        let schema = &case["schema"];
        let got = outcome(usage, schema);
        let matches = match (&got, &case["ok"], &case["err"]) {
            // Stored tool schemas were recorded through Python objects: compare after one
            // serde_json round trip (key order kept, numbers respelled). A format's
            // constraint text is compared as is: key order and number spelling matter.
            (Ok(stored), Value::String(want), Value::Null) if usage.starts_with("tool") => {
                *stored == respelled(want)
            }
            (Ok(stored), Value::String(want), Value::Null) => stored == want,
            (Err(message), Value::Null, Value::String(want)) => message == want,
            (_, Value::String(_), Value::Null) | (_, Value::Null, Value::String(_)) => false,
            _ => panic!(
                "{name}:{}: a case has exactly one of \"ok\" and \"err\"",
                i + 1
            ),
        };
        if !matches {
            let want = match case["ok"].as_str() {
                Some(stored) => format!("ok {stored}"),
                None => format!("err {}", case["err"]),
            };
            failures.push(format!(
                "{name}:{} {usage} {schema}\n    got  {got:?}\n    want {want}",
                i + 1
            ));
        }
        count += 1;
    }
    assert!(
        failures.is_empty(),
        "{} of {count} cases in {name} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        count >= recorded,
        "{name} has {count} cases, fewer than {recorded}"
    );
}

/// JSON text after one serde_json round trip (key order kept, numbers respelled).
fn respelled(json: &str) -> String {
    serde_json::from_str::<Value>(json).unwrap().to_string()
}

#[test]
fn rules_match_the_reference() {
    run_fixture("rules.jsonl", 302);
}

#[test]
fn probes_match_the_reference() {
    run_fixture("probes.jsonl", 898);
}
