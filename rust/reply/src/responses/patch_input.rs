//! The input of an `apply_patch` custom tool call, taken from the call's streamed argument JSON
//! (`tests/responses_reply.rs`, `echo_namespace_and_apply_patch_example`): when the arguments open
//! with `{"input": "`, the unescaped string value is the input and the rest is ignored; otherwise
//! the argument JSON itself is. Text that may still be that opening is held until it is decided.

const OPENING: &str = "{\"input\": \"";

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Still a prefix of the opening.
    Opening(String),
    /// The arguments are not an `input` string: copied as they are.
    Raw,
    /// Inside the `input` string; `escape` holds an incomplete escape sequence.
    Value { escape: String },
    /// The string closed: everything else is ignored.
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchInput {
    state: State,
}

impl Default for PatchInput {
    fn default() -> Self {
        PatchInput {
            state: State::Opening(String::new()),
        }
    }
}

impl PatchInput {
    /// Feed one argument fragment; append the input text it decides to `out`.
    pub fn push(&mut self, fragment: &str, out: &mut String) {
        match &mut self.state {
            State::Opening(held) => {
                held.push_str(fragment);
                if let Some(rest) = held.strip_prefix(OPENING) {
                    let rest = rest.to_owned();
                    self.state = State::Value {
                        escape: String::new(),
                    };
                    self.unescape(&rest, out);
                } else if !OPENING.starts_with(held.as_str()) {
                    out.push_str(held);
                    self.state = State::Raw;
                }
            }
            State::Raw => out.push_str(fragment),
            State::Value { .. } => self.unescape(fragment, out),
            State::Closed => {}
        }
    }

    /// The end of the call: text still held as a possible opening is the input after all.
    pub fn finish(&mut self, out: &mut String) {
        if let State::Opening(held) = &mut self.state {
            out.push_str(held);
            self.state = State::Raw;
        }
    }

    fn unescape(&mut self, text: &str, out: &mut String) {
        let State::Value { escape } = &mut self.state else {
            return;
        };
        let mut pending = std::mem::take(escape);
        for c in text.chars() {
            if pending.is_empty() {
                match c {
                    '"' => {
                        self.state = State::Closed;
                        return;
                    }
                    '\\' => pending.push(c),
                    c => out.push(c),
                }
                continue;
            }
            pending.push(c);
            if let Some(decoded) = decode_escape(&pending) {
                out.push_str(&decoded);
                pending.clear();
            }
        }
        *escape = pending;
    }
}

/// Decode one complete escape sequence (`\n`, `\uXXXX`, a surrogate pair); `None` while it is
/// incomplete. Malformed sequences are kept as they are.
fn decode_escape(seq: &str) -> Option<String> {
    let body = seq.strip_prefix('\\')?;
    let simple = match body {
        "\"" => Some('"'),
        "\\" => Some('\\'),
        "/" => Some('/'),
        "b" => Some('\u{8}'),
        "f" => Some('\u{c}'),
        "n" => Some('\n'),
        "r" => Some('\r'),
        "t" => Some('\t'),
        _ => None,
    };
    if let Some(c) = simple {
        return Some(c.to_string());
    }
    let Some(hex) = body.strip_prefix('u') else {
        return Some(seq.to_owned());
    };
    if hex.len() < 4 {
        return if hex.chars().all(|c| c.is_ascii_hexdigit()) {
            None
        } else {
            Some(seq.to_owned())
        };
    }
    let unit = |s: &str| s.get(..4).and_then(|h| u32::from_str_radix(h, 16).ok());
    let Some(high) = unit(hex) else {
        return Some(seq.to_owned());
    };
    if !(0xD800..0xDC00).contains(&high) {
        return Some(
            char::from_u32(high).map_or_else(|| '\u{fffd}'.to_string(), |c| c.to_string()),
        );
    }
    // A high surrogate: wait for its `\uDCxx`.
    let rest = hex.get(4..).unwrap_or_default();
    if rest.len() < 6 {
        let may_continue = rest.chars().enumerate().all(|(i, c)| match i {
            0 => c == '\\',
            1 => c == 'u',
            _ => c.is_ascii_hexdigit(),
        });
        return if may_continue {
            None
        } else {
            Some(seq.to_owned())
        };
    }
    let expected = "\\u";
    let low = rest.strip_prefix(expected).and_then(unit);
    match low {
        Some(low @ 0xDC00..=0xDFFF) => {
            let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            Some(char::from_u32(code).map_or_else(|| '\u{fffd}'.to_string(), |c| c.to_string()))
        }
        _ => Some(seq.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fragments: &[&str]) -> Vec<String> {
        let mut input = PatchInput::default();
        let mut deltas = Vec::new();
        for f in fragments {
            let mut out = String::new();
            input.push(f, &mut out);
            deltas.push(out);
        }
        let mut out = String::new();
        input.finish(&mut out);
        deltas.push(out);
        deltas
    }

    #[test]
    fn input_string_or_argument_json() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "input string unescaped",
                &[
                    "{",
                    "\"input",
                    "\": ",
                    "\"",
                    "a\\\"b",
                    "\\\\c\\n",
                    "\"",
                    ", \"x\": 1}",
                ],
                &["", "", "", "", "a\"b", "\\c\n", "", "", ""],
            ),
            (
                "other parameter streams the json",
                &["{", "\"o", "ther\"", ": "],
                &["", "{\"o", "ther\"", ": ", ""],
            ),
            (
                "input object diverges at its brace",
                &["{\"input\": ", "{\"k\": 1}", "}"],
                &["", "{\"input\": {\"k\": 1}", "}", ""],
            ),
            ("no parameters", &["{}"], &["{}", ""]),
            (
                "held prefix flushed at the end",
                &["{\"inp"],
                &["", "{\"inp"],
            ),
            (
                "escape split across fragments",
                &["{\"input\": \"", "x\\", "u00", "41y"],
                &["", "x", "", "Ay", ""],
            ),
            (
                "surrogate pair",
                &["{\"input\": \"\\ud83e\\udd80\""],
                &["\u{1f980}", ""],
            ),
        ];
        for (name, fragments, expected) in cases {
            assert_eq!(
                run(fragments),
                expected.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "{name}"
            );
        }
    }
}
