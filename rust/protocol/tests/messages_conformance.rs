//! Conformance harness for Anthropic Messages requests: every vendored case under
//! `tests/conformance/requests/` with `case.protocol == "messages"` is run through
//! `MessagesRequest::from_value` → `convert`, and the result is serialized into the shape
//! `tests/conformance/probe.py` records (construct/convert errors, model, model version,
//! stream, conversation, inference and parsing options, `resolve_max_tokens` probes) and
//! compared field by field with the case's `expected`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::harness::{compare_fields, parsed, record_convert, Tally, REQUEST_FIELDS};
use common::{body_value, build_options, conversion_error};
use deepseek_protocol::{intake, MessagesRequest, ProtocolError};
use serde_json::{json, Map, Value};

/// Cases whose expected outcome is an error raised while Python turns a value tree into
/// JSON (NaN, infinities, out-of-range integers, lone surrogates). They never reach the Rust
/// request parser: the bindings own that conversion.
const PYTHON_VALUE_CASES: &[(&str, &str)] = &[
    (
        "msg-bodyform-030",
        "UnicodeEncodeError: a lone surrogate in a str body (Python encoding)",
    ),
    (
        "msg-bodyform-033",
        "NaN float in a dict body (Python value conversion)",
    ),
    (
        "msg-bodyform-034",
        "infinite float in a dict body (Python value conversion)",
    ),
    (
        "msg-bodyform-035",
        "int outside 64 bits in a dict body (Python value conversion)",
    ),
    (
        "msg-toolargs-005",
        "int outside 64 bits in a dict body (Python value conversion)",
    ),
];

/// The vendored corpus, or another directory of cases in the same format named by
/// `MESSAGES_CONFORMANCE_DIR` (e.g. freshly generated differential cases).
fn cases_dir() -> PathBuf {
    match std::env::var_os("MESSAGES_CONFORMANCE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/requests"),
    }
}

// ---------------------------------------------------------------------------------------
// building inputs

/// `body_arg` of probe.py, then the bindings' intake. A dict body sent as text or bytes
/// (`body_as`) is spelled the way `json.dumps` spells it, since error positions depend on it.
fn request_body(case: &Value) -> Result<Value, ProtocolError> {
    match (&case["body"], case.get("body_as").and_then(Value::as_str)) {
        (body @ (Value::Object(_) | Value::Array(_)), Some("str" | "bytes")) => {
            intake::parse_json(&python_dumps_bytes(body))
        }
        _ => body_value(case),
    }
}

/// A lone UTF-16 surrogate in a case file (Python's json accepts it, serde_json does not)
/// stands for itself through this private sentinel, U+10FFFF.
const LONE_SURROGATE_SENTINEL: char = '\u{10FFFF}';

/// `json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")`: PYJSON spelling,
/// with the sentinel encoded the way `surrogatepass` encodes U+D800.
fn python_dumps_bytes(body: &Value) -> Vec<u8> {
    let text = deepseek_model::pyjson::pyjson(body);
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        if c == LONE_SURROGATE_SENTINEL {
            out.extend_from_slice(&[0xED, 0xA0, 0x80]);
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    out
}

/// Replace `\udXXX` escapes that are not part of a surrogate pair with the sentinel.
fn repair_lone_surrogates(text: &str) -> String {
    let escape_at = |i: usize| -> Option<u16> {
        let s = text.get(i..i + 6)?;
        s.strip_prefix("\\u")
            .and_then(|hex| u16::from_str_radix(hex, 16).ok())
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with("\\\\") {
            out.push_str("\\\\");
            i += 2;
            continue;
        }
        if let Some(unit) = escape_at(i) {
            let high = (0xD800..0xDC00).contains(&unit);
            let low = (0xDC00..0xE000).contains(&unit);
            if high && escape_at(i + 6).is_some_and(|next| (0xDC00..0xE000).contains(&next)) {
                out.push_str(&text[i..i + 12]);
                i += 12;
                continue;
            }
            if high || low {
                out.push_str("\\udbff\\udfff");
                i += 6;
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

// ---------------------------------------------------------------------------------------
// comparison

/// `normalize_one_of` of probe.py: ids named in random order become one tag.
fn normalize_one_of(text: &str, ids: &[String]) -> String {
    if ids.is_empty() {
        return text.to_owned();
    }
    let tag = format!("<one-of:{}>", ids.join("|"));
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::new();
    let mut rest = text;
    'outer: while !rest.is_empty() {
        for id in ids {
            if rest.starts_with(id.as_str())
                && !out.chars().last().is_some_and(is_word)
                && !rest[id.len()..].chars().next().is_some_and(is_word)
            {
                out.push_str(&tag);
                rest = &rest[id.len()..];
                continue 'outer;
            }
        }
        let c = rest.chars().next().unwrap();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The probe's view of one case, limited to the fields this crate produces.
fn run_case(case: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let options = build_options(&case["options"]);
    let Some(request) = parsed(
        &mut out,
        request_body(case).and_then(MessagesRequest::from_value),
    ) else {
        return out;
    };
    out.insert("model".into(), json!(request.model()));
    let converted = request.convert(&options).map_err(|e| {
        let mut error = conversion_error(&e);
        let one_of: Vec<String> = case
            .pointer("/nondeterministic/one_of_ids")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        for key in ["message", "body"] {
            let text = error["error"][key].as_str().unwrap_or_default().to_owned();
            error["error"][key] = json!(normalize_one_of(&text, &one_of));
        }
        error
    });
    record_convert(&mut out, converted);
    out
}

/// The fewest cases this harness must pass: the vendored corpus, less its skips, and a
/// little room (a run over a missing or filtered-out corpus fails).
const MINIMUM: usize = 280;

#[test]
fn messages_conformance() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("cases directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut tally = Tally::at_least(MINIMUM);
    for path in paths {
        let id = path.file_stem().unwrap().to_string_lossy().into_owned();
        if let Some((_, why)) = PYTHON_VALUE_CASES.iter().find(|(skip, _)| *skip == id) {
            println!("skip {id}: {why}");
            tally.skip(&id);
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let file: Value = match serde_json::from_str(&text)
            .or_else(|_| serde_json::from_str(&repair_lone_surrogates(&text)))
        {
            Ok(v) => v,
            Err(e) => {
                if text.contains("\"protocol\": \"messages\"") {
                    tally.record(&id, Some(format!("case file does not parse as JSON: {e}")));
                }
                continue;
            }
        };
        let case = &file["case"];
        if case["protocol"] != "messages" {
            continue;
        }
        tally.record(
            &id,
            compare_fields(&REQUEST_FIELDS, &file["expected"], &run_case(case)),
        );
    }
    tally.finish("messages");
}
