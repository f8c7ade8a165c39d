//! PYJSON: the Python-style JSON spelling (`", "`, `": "`, raw non-ASCII, Python-like float
//! spelling) used in tool schema lines, format blocks, DSML parameter values and Messages
//! tool-call arguments. Pinned by the tables below and by the float cases of
//! `rust/render/tests/rules.rs` (`v4_float_spelling`, `v41_float_spelling`).
//!
//! Integers that fit `i64`/`u64` print as integers; every other number is an `f64` printed
//! with its shortest round-trip digits, decimal with a fractional part in a middle band and
//! scientific outside it. The band and the exponent spelling differ by model version
//! ([`FloatStyle`]): V4 prints `0.00001` and `1e-6`, V4.1 prints `1e-05` and `1e-06`
//! (Python's `repr`). Both print `1e+16` and `1000000000000000.0`.

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// How floats are spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FloatStyle {
    /// V4 (`pyjson_table` below): decimal for `1e-5 <= |x| < 1e16`; small exponents unpadded
    /// (`1e-6`, `9.99e-6`).
    #[default]
    Compact,
    /// V4.1, Python `repr`: decimal for `1e-4 <= |x| < 1e16`; exponents of at least two
    /// digits (`1e-05`, `9.99e-05`, `5e-324`).
    PythonRepr,
}

/// Serialize `value` as PYJSON with the V4 float spelling.
pub fn pyjson(value: &Value) -> String {
    pyjson_with(value, FloatStyle::Compact)
}

/// Serialize `value` as PYJSON with the given float spelling.
pub fn pyjson_with(value: &Value, style: FloatStyle) -> String {
    let mut out = String::new();
    write_value(&mut out, value, style);
    out
}

fn write_value(out: &mut String, value: &Value, style: FloatStyle) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n, style),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item, style);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, key);
                out.push_str(": ");
                write_value(out, item, style);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &Number, style: FloatStyle) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        out.push_str(&format_float(f, style));
    } else {
        // Unreachable without serde_json's `arbitrary_precision`; keep serde's own spelling.
        out.push_str(&n.to_string());
    }
}

/// The PYJSON spelling of a finite float.
pub fn format_float(f: f64, style: FloatStyle) -> String {
    let abs = f.abs();
    let smallest_decimal = match style {
        FloatStyle::Compact => 1e-5,
        FloatStyle::PythonRepr => 1e-4,
    };
    if abs >= 1e16 || (abs < smallest_decimal && f != 0.0) {
        // `{:e}` gives the shortest round-trip digits: `1.5e16`, `1e-6`.
        let s = format!("{f:e}");
        let Some((mantissa, exp)) = s.split_once('e') else {
            return s;
        };
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(digits) => ("-", digits),
            None => ("+", exp),
        };
        match style {
            FloatStyle::Compact if sign == "-" => s,
            FloatStyle::Compact => format!("{mantissa}e+{digits}"),
            FloatStyle::PythonRepr => format!("{mantissa}e{sign}{digits:0>2}"),
        }
    } else {
        let mut s = format!("{f}");
        if !s.contains('.') {
            s.push_str(".0");
        }
        s
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    escape_string_into(s, out);
    out.push('"');
}

/// Append `text`, escaped for the inside of a JSON string, to `out`: `"` and `\` are
/// backslash-escaped, newline, tab, carriage return, backspace and form feed get their short
/// escapes, other control characters become `\u00xx`; everything else (DEL and all
/// non-ASCII) stays literal. The stream parser escapes `string="true"` parameter values
/// with these same rules (`string_escape_table` below; `rust/stream/tests/parser_cases.rs`,
/// `tool_call_markup`).
pub fn escape_string_into(text: &str, out: &mut String) {
    out.reserve(text.len());
    // Every character that needs an escape is one ASCII byte, so the text between two of
    // them is copied whole (tool results run to megabytes, mostly without any).
    let mut rest = text;
    while let Some(at) = rest
        .bytes()
        .position(|byte| byte == b'"' || byte == b'\\' || byte < 0x20)
    {
        out.push_str(rest.get(..at).unwrap_or_default());
        match rest.as_bytes().get(at).copied().unwrap_or_default() {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            control => {
                let _ = write!(out, "\\u{control:04x}");
            }
        }
        rest = rest.get(at + 1..).unwrap_or_default();
    }
    out.push_str(rest);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// (name, JSON input as parsed by serde_json, expected PYJSON with the V4 spelling)
    const CASES: &[(&str, &str, &str)] = &[
        (
            "separators",
            r#"{"a":1,"b":[1,2]}"#,
            r#"{"a": 1, "b": [1, 2]}"#,
        ),
        ("key order kept", r#"{"z":1,"a":2}"#, r#"{"z": 1, "a": 2}"#),
        (
            "empty containers",
            r#"{"o":{},"a":[]}"#,
            r#"{"o": {}, "a": []}"#,
        ),
        ("literals", "[true,false,null]", "[true, false, null]"),
        ("non-ascii raw", r#""é中😀""#, "\"é中😀\""),
        (
            "del and u2028 raw",
            "\"\u{7f}\u{2028}\"",
            "\"\u{7f}\u{2028}\"",
        ),
        (
            "named escapes",
            r#""\"\\\n\t\r\b\f""#,
            r#""\"\\\n\t\r\b\f""#,
        ),
        (
            "control escapes lowercase",
            r#""\u0001\u001F""#,
            r#""\u0001\u001f""#,
        ),
        ("slash not escaped", r#""a/b""#, r#""a/b""#),
        ("i64 min", "-9223372036854775808", "-9223372036854775808"),
        ("u64 max", "18446744073709551615", "18446744073709551615"),
        (
            "past u64 becomes float",
            "18446744073709551616",
            "1.8446744073709552e+19",
        ),
        (
            "31-digit integer",
            "1000000000000000000000000000000",
            "1e+30",
        ),
        ("1e16", "1e16", "1e+16"),
        ("1.5e16", "1.5e16", "1.5e+16"),
        (
            "1.2345678901234568e17",
            "123456789012345678.0",
            "1.2345678901234568e+17",
        ),
        ("1e308", "1e308", "1e+308"),
        ("1.0", "1.0", "1.0"),
        ("2500.0", "2.5e3", "2500.0"),
        ("1e15", "1e15", "1000000000000000.0"),
        ("0.0001", "0.0001", "0.0001"),
        ("1e-5", "1e-5", "0.00001"),
        ("1.5e-5", "0.000015", "0.000015"),
        (
            "0.30000000000000004",
            "0.30000000000000004",
            "0.30000000000000004",
        ),
        ("pi-ish", "3.14159265358979", "3.14159265358979"),
        ("zero", "0.0", "0.0"),
        ("negative zero", "-0.0", "-0.0"),
        ("12.5", "12.5", "12.5"),
        ("1e-6", "1e-6", "1e-6"),
        ("9.99e-6", "0.00000999", "9.99e-6"),
        ("1.5e-7", "1.5e-7", "1.5e-7"),
        ("min subnormal", "5e-324", "5e-324"),
        ("negative large", "-1e20", "-1e+20"),
        ("negative small", "-2e-7", "-2e-7"),
    ];

    /// (name, JSON input, expected PYJSON with the V4.1 / Python-repr spelling)
    const PYTHON_REPR_CASES: &[(&str, &str, &str)] = &[
        ("1e-5 is scientific", "1e-5", "1e-05"),
        ("1e-6 padded", "1e-6", "1e-06"),
        ("9.99e-5", "0.0000999", "9.99e-05"),
        ("0.0001 decimal", "0.0001", "0.0001"),
        ("0.00015 decimal", "0.00015", "0.00015"),
        ("1e-100", "1e-100", "1e-100"),
        ("min subnormal", "5e-324", "5e-324"),
        ("negative small", "-1e-5", "-1e-05"),
        ("1e16", "1e16", "1e+16"),
        ("1e15 decimal", "1e15", "1000000000000000.0"),
        ("past u64", "18446744073709551616", "1.8446744073709552e+19"),
        ("negative zero", "-0.0", "-0.0"),
        (
            "nested",
            r#"{"x":[1,2.5,1e-7]}"#,
            r#"{"x": [1, 2.5, 1e-07]}"#,
        ),
    ];

    #[test]
    fn pyjson_python_repr_table() {
        let mut failures = Vec::new();
        for (name, input, expected) in PYTHON_REPR_CASES {
            let value: Value =
                serde_json::from_str(input).unwrap_or_else(|e| panic!("{name}: {e}"));
            let got = pyjson_with(&value, FloatStyle::PythonRepr);
            if got != *expected {
                failures.push(format!("{name}: got {got:?}, expected {expected:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn pyjson_table() {
        let mut failures = Vec::new();
        for (name, input, expected) in CASES {
            let value: Value =
                serde_json::from_str(input).unwrap_or_else(|e| panic!("{name}: {e}"));
            let got = pyjson(&value);
            if got != *expected {
                failures.push(format!("{name}: got {got:?}, expected {expected:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn string_escape_table() {
        let table: &[(&str, &str, &str)] = &[
            ("quote and backslash", "x\"y\\z", "x\\\"y\\\\z"),
            ("short escapes", "\n\t\r\u{8}\u{c}", "\\n\\t\\r\\b\\f"),
            ("other controls", "\u{1}\u{1f}", "\\u0001\\u001f"),
            (
                "DEL and non-ASCII literal",
                "\u{7f}é\u{2028}🦀",
                "\u{7f}é\u{2028}🦀",
            ),
            (
                "escapes between multi-byte characters, first and last",
                "\"é\"中\n😀\\x\u{1}",
                "\\\"é\\\"中\\n😀\\\\x\\u0001",
            ),
            ("nothing to escape", "plain text, 中文", "plain text, 中文"),
            ("empty", "", ""),
        ];
        for (name, input, expected) in table {
            let mut out = String::new();
            escape_string_into(input, &mut out);
            assert_eq!(out, *expected, "{name}");
        }
    }
}
