//! Request bytes to a JSON value, and a JSON value to a typed request shape.
//!
//! One wrinkle: the reference was built with a serde_json that checked a string's UTF-8 only
//! once it reached the closing quote, so an invalid byte is reported *after* the string
//! (`invalid unicode code point at line 1 column 12` for `{"model":"\xff"}`), and a string
//! that never closes reports end of input instead. Today's serde_json stops at the byte
//! itself; [`parse_json`] moves the position back to where the reference puts it.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ProtocolError;

const INVALID_CODE_POINT: &str = "invalid unicode code point";

/// Parse JSON text (serde_json's own recursion limit of 128 applies).
pub fn parse_json(text: &[u8]) -> Result<Value, ProtocolError> {
    // Valid UTF-8 (checked at once, several times faster than serde_json checking each
    // string as it closes: a sixth of parsing a large body) parses as text, which serde_json
    // does not check again. Invalid UTF-8 goes the byte way, whose error we report.
    let parsed = match simdutf8::basic::from_utf8(text) {
        Ok(valid) => serde_json::from_str(valid),
        Err(_) => serde_json::from_slice(text),
    };
    parsed.map_err(|e| {
        let message = e.to_string();
        let message = if message.starts_with(INVALID_CODE_POINT) {
            late_utf8_error(text, message)
        } else {
            message
        };
        ProtocolError::InvalidJson(message)
    })
}

/// Deserialize a typed request shape from a JSON value (errors carry no position).
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ProtocolError> {
    serde_json::from_value(value).map_err(|e| ProtocolError::InvalidBody(e.to_string()))
}

/// The reference's error for a string holding invalid UTF-8: whatever scanning the rest of
/// the string finds first (a control character, a bad escape, end of input), otherwise
/// `invalid unicode code point` just after the closing quote.
fn late_utf8_error(text: &[u8], current: String) -> String {
    let Err(utf8) = std::str::from_utf8(text) else {
        return current;
    };
    let bad = utf8.valid_up_to();
    // The same text with every invalid byte made ASCII: serde_json then reports what the
    // scan past the invalid byte would have met.
    let sanitized = ascii_for_invalid_bytes(text);
    let rescan = serde_json::from_slice::<Value>(&sanitized).err();
    let Some(close) = closing_quote(text, bad) else {
        return rescan.map_or(current, |e| e.to_string());
    };
    let (line, column) = position_after(text, close);
    match rescan {
        Some(e) if (e.line(), e.column()) <= (line, column) => e.to_string(),
        _ => format!("{INVALID_CODE_POINT} at line {line} column {column}"),
    }
}

fn ascii_for_invalid_bytes(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                out.extend_from_slice(valid.as_bytes());
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                out.extend_from_slice(valid);
                let invalid = e.error_len().unwrap_or(after.len());
                out.extend(std::iter::repeat_n(b'x', invalid));
                rest = after.get(invalid..).unwrap_or_default();
            }
        }
    }
    out
}

/// The index of the quote closing the string that contains byte `from`.
pub(crate) fn closing_quote(text: &[u8], from: usize) -> Option<usize> {
    // From one quote to the next (`memchr`): a quote is escaped when an odd run of backslashes
    // (counted from `from`) stands before it. A request body is mostly string contents, often
    // with many escapes (`\n` in code), which this crosses without stopping at each.
    let mut i = from;
    loop {
        let quote = i + memchr::memchr(b'"', text.get(i..)?)?;
        let before = text.get(from..quote).unwrap_or_default();
        let backslashes = before.iter().rev().take_while(|&&b| b == b'\\').count();
        if backslashes % 2 == 0 {
            return Some(quote);
        }
        i = quote + 1;
    }
}

/// serde_json's (line, column) once byte `index` has been consumed.
fn position_after(text: &[u8], index: usize) -> (usize, usize) {
    let consumed = text.get(..=index).unwrap_or(text);
    let line = 1 + consumed.iter().filter(|&&b| b == b'\n').count();
    let line_start = consumed
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    (line, consumed.len() - line_start)
}

/// Whether JSON text nests arrays and objects more than `limit` deep (a gateway's limit
/// below the parser's own 128). One pass over the bytes, stopping at the first container too
/// deep; brackets inside strings do not count. Malformed text is left to the parser.
///
/// Strings are crossed by [`closing_quote`]: several times faster than byte by byte on an agent
/// conversation.
pub fn nesting_exceeds(text: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&byte) = text.get(at) {
        at += 1;
        match byte {
            b'"' => at = closing_quote(text, at).map_or(text.len(), |quote| quote + 1),
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_reported_where_the_reference_reports_it() {
        let cases: [(&[u8], &str); 9] = [
            (b"{\"model\":\"\xff\"}", "invalid unicode code point at line 1 column 12"),
            (b"{\"model\":\"\xff", "EOF while parsing a string at line 1 column 11"),
            (b"{\"mo\xffdel\":\"x\"}", "invalid unicode code point at line 1 column 9"),
            (b"{\"model\":\"a\\n\xffb\\tc\"}", "invalid unicode code point at line 1 column 19"),
            (b"{\n\"model\":\n\"ab\xffc\"\n}", "invalid unicode code point at line 3 column 6"),
            (b"{\"model\":\"\xff\\\"x\"}", "invalid unicode code point at line 1 column 15"),
            (b"{\"model\":\"\xff\\", "EOF while parsing a string at line 1 column 12"),
            (
                b"{\"model\":\"\xff\x01\"}",
                "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 12",
            ),
            (b"\xff{}", "expected value at line 1 column 1"),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_json(text),
                Err(ProtocolError::InvalidJson(want.to_owned())),
                "{text:?}"
            );
        }
    }

    /// The byte-by-byte scan [`nesting_exceeds`] must agree with: the deepest nesting
    /// reached outside strings, compared with the limit at the end.
    fn nesting_exceeds_bytewise(text: &[u8], limit: usize) -> bool {
        let (mut depth, mut deepest) = (0usize, 0usize);
        let (mut in_string, mut escaped) = (false, false);
        for &byte in text {
            if escaped {
                escaped = false;
            } else if in_string {
                escaped = byte == b'\\';
                in_string = byte != b'"';
            } else if byte == b'"' {
                in_string = true;
            } else if byte == b'[' || byte == b'{' {
                depth += 1;
                deepest = deepest.max(depth);
            } else if byte == b']' || byte == b'}' {
                depth = depth.saturating_sub(1);
            }
        }
        deepest > limit
    }

    #[test]
    fn nesting_depth_agrees_with_a_byte_by_byte_scan() {
        // Texts drawn from the bytes that matter (quotes, backslashes, brackets) and a filler,
        // ending anywhere: inside a string, right after a backslash, mid-container.
        const ALPHABET: &[u8] = b"\"\\[]{}a ,:";
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let len = usize::try_from(next() % 40).unwrap_or(0);
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    let pick = usize::try_from(next()).unwrap_or(0) % ALPHABET.len();
                    ALPHABET.get(pick).copied().unwrap_or(b'a')
                })
                .collect();
            for limit in 0..4 {
                assert_eq!(
                    nesting_exceeds(&text, limit),
                    nesting_exceeds_bytewise(&text, limit),
                    "{:?} within {limit}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }

    #[test]
    fn nesting_depth_counts_containers_outside_strings() {
        let cases: [(&[u8], usize, bool); 8] = [
            (b"{}", 1, false),
            (b"{\"a\": [1]}", 1, true),
            (b"{\"a\": [1]}", 2, false),
            (b"[[[]]]", 2, true),
            (b"{\"a\": \"[[[[{{{{\"}", 1, false),
            (b"{\"a\": \"\\\"[[[\"}", 1, false),
            (b"[[], [], []]", 2, false),
            (b"not json [[", 1, true),
        ];
        for (text, limit, want) in cases {
            assert_eq!(
                nesting_exceeds(text, limit),
                want,
                "{:?} within {limit}",
                std::str::from_utf8(text)
            );
        }
    }
}
