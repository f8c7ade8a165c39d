//! The JSON-schema rules for schemas carried by requests: function-tool `parameters` and
//! `json_schema` response formats (`tests/reference_cases.rs` over `tests/fixtures/*.jsonl`,
//! outcomes recorded from the reference). A non-strict schema is checked against the
//! JSON-Schema meta-schema ([`meta`], with the `pattern` regex verdicts of [`regex`]) and then
//! kept verbatim; a strict one is read into a restricted model, checked and re-written
//! ([`strict`]). Errors are [`ConversionError`]s with the reference's exact texts.
//!
//! This crate refuses to know about tools, protocols or wire shapes beyond the wording of the
//! errors: `deepseek-protocol` decides which schema is checked how, and what a missing one
//! means.

mod meta;
mod regex;
mod strict;
mod uri;

use deepseek_model::ConversionError;
use serde_json::Value;

pub use strict::SchemaUse;

/// §7.6 non-strict tool parameters: the meta-schema check, then the top level must say
/// `"type": "object"` (a schema without `type`, or `true`/`false`, reports `type: null`).
pub fn check_tool_parameters(function: &str, schema: &Value) -> Result<(), ConversionError> {
    let invalid = |detail: String| {
        ConversionError::new(format!(
            "Invalid schema for function '{function}': {detail}"
        ))
    };
    meta::validate(schema).map_err(|detail| stopped_or(invalid(detail)))?;
    let declared = schema.get("type").unwrap_or(&Value::Null);
    if declared.as_str() != Some("object") {
        return Err(invalid(format!(
            "schema must be a JSON Schema of 'type: \"object\"', got 'type: {declared}'."
        )));
    }
    Ok(())
}

/// A non-strict `json_schema` response format: the meta-schema check only.
pub fn check_response_schema(schema: &Value) -> Result<(), ConversionError> {
    meta::validate(schema).map_err(|detail| {
        stopped_or(ConversionError::new(format!(
            "Invalid json schema: {detail}"
        )))
    })
}

/// `error`, unless the check failed because its caller cancelled it (the regex checks stop at
/// once then, see [`deepseek_model::cancel`]).
fn stopped_or(error: ConversionError) -> ConversionError {
    if deepseek_model::cancel::cancelled() {
        ConversionError::cancelled()
    } else {
        error
    }
}

/// §7.6 strict normalization of a tool's parameters or a response format's schema.
pub fn normalize_strict(schema: &Value, usage: SchemaUse) -> Result<Value, ConversionError> {
    strict::normalize(schema, usage).map_err(ConversionError::new)
}

/// The parameters stored for a strict tool declared without any (`{"type":"object",
/// "properties":{},"additionalProperties":false,"required":[]}`).
pub fn strict_empty_parameters() -> Value {
    strict::empty_object()
}

/// How serde_json names an unexpected value in its errors: ``integer `1` ``,
/// ``floating point `1.5` ``, `string "x"`, `sequence`, `map`, ``boolean `true` ``, `null`.
fn unexpected(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) if n.is_f64() => format!("floating point `{n}`"),
        Value::Number(n) => format!("integer `{n}`"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "sequence".to_owned(),
        Value::Object(_) => "map".to_owned(),
    }
}
