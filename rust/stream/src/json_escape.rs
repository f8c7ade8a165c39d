//! JSON-string escaping of `string="true"` parameter values (behavior.md §10.2): `"` and `\`
//! are backslash-escaped, newline, tab, carriage return, backspace and form feed get their
//! short escapes, other control characters become `\u00XX`; everything else (DEL and all
//! non-ASCII) stays literal.

/// Append `text`, escaped for the inside of a JSON string, to `out`.
pub(crate) fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let v = c as usize;
                out.push_str("\\u00");
                out.push(char::from(HEX[(v >> 4) & 0xf]));
                out.push(char::from(HEX[v & 0xf]));
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::escape_into;

    #[test]
    fn escapes_like_the_reference() {
        let table: &[(&str, &str, &str)] = &[
            ("quote and backslash", "x\"y\\z", "x\\\"y\\\\z"),
            ("short escapes", "\n\t\r\u{8}\u{c}", "\\n\\t\\r\\b\\f"),
            ("other controls", "\u{1}\u{1f}", "\\u0001\\u001f"),
            ("DEL and non-ASCII literal", "\u{7f}é\u{2028}🦀", "\u{7f}é\u{2028}🦀"),
        ];
        for (name, input, expected) in table {
            let mut out = String::new();
            escape_into(input, &mut out);
            assert_eq!(out, *expected, "{name}");
        }
    }
}
