//! The byte-level alphabet of GPT-2 style vocabularies: every byte is spelled as one
//! printable character (`' '` as `Ġ`, `'\n'` as `Ċ`). Used to turn a token back into the
//! raw bytes it stands for.
//!
//! Printable bytes `!`..=`~`, `¡`..=`¬` and `®`..=`ÿ` spell themselves; the other 68 bytes,
//! in ascending order, take the characters U+0100, U+0101, … in turn.

use std::sync::OnceLock;

fn spells_itself(byte: u8) -> bool {
    matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// Byte to character: how byte-level pre-tokenizers spell each byte.
fn byte_to_char() -> &'static [char; 256] {
    static TABLE: OnceLock<[char; 256]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = ['\0'; 256];
        for (&c, &byte) in char_to_byte() {
            table[usize::from(byte)] = c;
        }
        table
    })
}

/// The character that spells `byte`.
pub fn byte_char(byte: u8) -> char {
    byte_to_char()[usize::from(byte)]
}

/// Character to byte, for the 256 characters of the alphabet.
fn char_to_byte() -> &'static std::collections::HashMap<char, u8> {
    static TABLE: OnceLock<std::collections::HashMap<char, u8>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut next_shifted = 0x100u32;
        (0..=u8::MAX)
            .filter_map(|byte| {
                let code = if spells_itself(byte) {
                    u32::from(byte)
                } else {
                    next_shifted += 1;
                    next_shifted - 1
                };
                char::from_u32(code).map(|c| (c, byte))
            })
            .collect()
    })
}

/// The bytes a token spelled wholly in the byte-level alphabet stands for; `None` when a
/// character is outside it.
pub fn alphabet_bytes(token: &str) -> Option<Vec<u8>> {
    let table = char_to_byte();
    token.chars().map(|c| table.get(&c).copied()).collect()
}

/// The bytes a byte-level token stands for. A token with a character outside the
/// alphabet (an added token such as `<｜User｜>`) stands for its own UTF-8 text, which is
/// what Hugging Face's `ByteLevel` decoder does too.
pub fn token_bytes(token: &str) -> Vec<u8> {
    let table = char_to_byte();
    token
        .chars()
        .map(|c| table.get(&c).copied())
        .collect::<Option<Vec<u8>>>()
        .unwrap_or_else(|| token.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::{byte_char, token_bytes};

    #[test]
    fn every_byte_round_trips() {
        for byte in 0..=u8::MAX {
            assert_eq!(token_bytes(&byte_char(byte).to_string()), [byte], "{byte}");
        }
        assert_eq!(byte_char(b' '), '\u{120}');
        assert_eq!(byte_char(b'\n'), '\u{10A}');
    }

    #[test]
    fn spells_bytes_like_gpt2() {
        let cases: [(&str, &[u8]); 5] = [
            ("hello", b"hello"),
            ("\u{120}world", b" world"),
            ("\u{10A}", b"\n"),
            ("\u{E4}\u{B8}\u{143}", "中".as_bytes()),
            ("<\u{FF5C}User\u{FF5C}>", "<｜User｜>".as_bytes()),
        ];
        for (token, bytes) in cases {
            assert_eq!(token_bytes(token), bytes, "{token:?}");
        }
    }
}
