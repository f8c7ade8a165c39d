//! The one JSON writer of the way back: compact JSON (no spaces), strings escaped as
//! serde_json escapes them, and each float in one of the three spellings the reference uses
//! ([`FloatSpelling`]). Chat writes its chunks key by key with the `push_*` functions (its
//! keys come and go with the stream's state); Messages and Responses serialize their event
//! types with [`to_json`]. Byte for byte, the output is pinned by the replay tests
//! (`tests/*_reply.rs`) and `tests/test_stream_differential.py`.

use std::fmt::Write as _;
use std::io;

use deepseek_model::pyjson::{escape_string_into, format_float, FloatStyle};
use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

/// How a float is spelled. A value that is not finite is `null` in every spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatSpelling {
    /// Single precision, shortest round-trip digits: `-0.30000001192092896` → `-0.3`,
    /// `-1` → `-1.0`, `1e-7`. Logprobs (Chat and Responses), and Responses' `temperature` and
    /// `top_p` (`logprob_spelling_table` in `tests/chat_reply.rs` and
    /// `tests/responses_reply.rs`).
    Single,
    /// Double precision, shortest round-trip digits, as serde_json prints them: `0.0`,
    /// `0.00001`, `1e-7`, `1e+16`. The numbers a Responses object echoes from the request
    /// (tool parameters) and its fixed penalties. With serde_json 1.0.154 this agrees with
    /// `PyCompact` on every value `float_spelling_table` tries; the two stay apart because
    /// Responses is pinned to serde_json's spelling and Messages to PYJSON's.
    Double,
    /// PYJSON's compact style (`0.00001`, `1e-6`, `1e+16`): Messages tool-call input, spelled
    /// as the DSML arguments it was parsed from.
    PyCompact,
}

impl FloatSpelling {
    fn write<W: ?Sized + io::Write>(self, writer: &mut W, value: f64) -> io::Result<()> {
        match self {
            FloatSpelling::Single => {
                let single = value as f32;
                if single.is_finite() {
                    CompactFormatter.write_f32(writer, single)
                } else {
                    writer.write_all(b"null")
                }
            }
            _ if !value.is_finite() => writer.write_all(b"null"),
            FloatSpelling::Double => CompactFormatter.write_f64(writer, value),
            FloatSpelling::PyCompact => {
                writer.write_all(format_float(value, FloatStyle::Compact).as_bytes())
            }
        }
    }
}

/// serde_json's compact output with `f32` values spelled [`FloatSpelling::Single`] and `f64`
/// values spelled `doubles`.
struct Spelled {
    doubles: FloatSpelling,
}

impl Formatter for Spelled {
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        FloatSpelling::Single.write(writer, f64::from(value))
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        self.doubles.write(writer, value)
    }
}

/// `value` as compact JSON, its `f64` values spelled `doubles` (its `f32` values are always
/// [`FloatSpelling::Single`]).
pub fn to_json<T: Serialize>(value: &T, doubles: FloatSpelling) -> String {
    let mut bytes = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, Spelled { doubles });
    // The reply's types serialize into memory without failing (every map key is a string);
    // an empty string is the harmless fallback.
    if value.serialize(&mut serializer).is_err() {
        return String::new();
    }
    String::from_utf8(bytes).unwrap_or_default()
}

/// A JSON string literal.
pub fn push_str(out: &mut String, text: &str) {
    out.push('"');
    escape_string_into(text, out);
    out.push('"');
}

/// A string literal, or `null`.
pub fn push_opt_str(out: &mut String, text: Option<&str>) {
    match text {
        Some(text) => push_str(out, text),
        None => out.push_str("null"),
    }
}

/// A float in the given spelling.
pub fn push_float(out: &mut String, value: f64, spelling: FloatSpelling) {
    let mut bytes = Vec::with_capacity(32);
    // Writing into memory cannot fail, and every spelling is ASCII.
    if spelling.write(&mut bytes, value).is_ok() {
        out.push_str(std::str::from_utf8(&bytes).unwrap_or("null"));
    } else {
        out.push_str("null");
    }
}

/// A list of bytes as a JSON array of integers.
pub fn push_byte_list(out: &mut String, bytes: &[u8]) {
    out.push('[');
    for (n, byte) in bytes.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        let _ = write!(out, "{byte}");
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    /// Strings are escaped exactly as serde_json escapes them: every ASCII character, and
    /// non-ASCII text left as it is.
    #[test]
    fn strings_escape_as_serde_json_does() {
        let mut texts: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        texts.extend(["", "é\u{2028}😀", "a\"b\\c\nd"].map(str::to_owned));
        for text in texts {
            let mut out = String::new();
            push_str(&mut out, &text);
            assert_eq!(out, serde_json::to_string(&text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn float_spelling_table() {
        use FloatSpelling::{Double, PyCompact, Single};
        let table: [(f64, FloatSpelling, &str); 16] = [
            (-0.300_000_011_920_928_96, Single, "-0.3"),
            (-1.0, Single, "-1.0"),
            (1e-7, Single, "1e-7"),
            (1e300, Single, "null"),
            (f64::NAN, Single, "null"),
            (0.0, Double, "0.0"),
            (0.3, Double, "0.3"),
            (1e16, Double, "1e+16"),
            (0.00001, Double, "0.00001"),
            (1e-7, Double, "1e-7"),
            (f64::INFINITY, Double, "null"),
            (0.00001, PyCompact, "0.00001"),
            (1e-6, PyCompact, "1e-6"),
            (1e16, PyCompact, "1e+16"),
            (2.5, PyCompact, "2.5"),
            (f64::NAN, PyCompact, "null"),
        ];
        for (value, spelling, expected) in table {
            let mut out = String::new();
            push_float(&mut out, value, spelling);
            assert_eq!(out, expected, "{value} {spelling:?}");
        }
    }

    /// Serialized values spell `f32` as `Single` and `f64` as asked; everything else is
    /// serde_json's compact output.
    #[test]
    fn to_json_spells_floats_by_width() {
        #[derive(Serialize)]
        struct Sample {
            single: f32,
            double: f64,
            text: &'static str,
            list: Vec<u64>,
        }
        let sample = Sample {
            single: 0.3,
            double: 1e16,
            text: "a\"b",
            list: vec![1, 2],
        };
        assert_eq!(
            to_json(&sample, FloatSpelling::Double),
            serde_json::to_string(&sample).unwrap()
        );
        assert_eq!(
            to_json(&sample, FloatSpelling::PyCompact),
            r#"{"single":0.3,"double":1e+16,"text":"a\"b","list":[1,2]}"#
        );
    }
}
