//! Incremental detokenization: token chunks to decoded pieces, holding back text whose
//! decoding is not final yet (behavior.md §10.7).
//!
//! The rule is the reference's (the Hugging Face decode-stream rule), applied per pushed
//! chunk: everything held plus the new chunk is decoded, ordinary tokens' bytes lossily (each
//! maximal invalid subsequence becomes U+FFFD) and special tokens as themselves; if the result
//! ends with U+FFFD, which is what an incomplete multi-byte character looks like, everything
//! stays held; otherwise everything is released. So 🦀 split over three tokens comes out
//! whole with the third, text earlier in the same chunk waits with it, and a stray invalid
//! byte comes out as U+FFFD together with the next character that decodes. Bytes still held
//! when the stream ends are dropped by the reference: a caller gets that by not asking.
//!
//! Each byte is decoded once: held text whose decoding can no longer change is kept decoded,
//! and only the incomplete tail (at most three bytes) is looked at again.

use deepseek_model::SpecialToken;

use crate::parser::Decoded;

/// One token of a chunk, as the caller's vocabulary maps its id. An id outside the
/// vocabulary is simply left out (it produces no text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token<'a> {
    /// An ordinary token: the bytes it decodes to.
    Bytes(&'a [u8]),
    /// One of the model's special tokens.
    Special(SpecialToken),
    /// Any other added token, by its text.
    Added(&'a str),
}

/// A released piece of decoded output; [`DecodedPiece::as_decoded`] feeds it to the parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodedPiece {
    Text(String),
    Special(SpecialToken),
    Added(String),
}

impl DecodedPiece {
    pub fn as_decoded(&self) -> Decoded<'_> {
        match self {
            DecodedPiece::Text(text) => Decoded::Text(text),
            DecodedPiece::Special(token) => Decoded::Special(*token),
            DecodedPiece::Added(text) => Decoded::Added(text),
        }
    }
}

/// Turns token chunks into decoded pieces as they arrive.
#[derive(Debug, Clone, Default)]
pub struct Detokenizer {
    /// Held pieces whose decoding is final (the last one may be text that grows).
    held: Vec<DecodedPiece>,
    /// Held bytes of an incomplete UTF-8 sequence at the very end (at most 3 bytes).
    tail: Vec<u8>,
    /// Bytes behind the held text.
    held_bytes: usize,
    /// Tokens pushed since output was last released.
    tokens: usize,
}

impl Detokenizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode one chunk of tokens; returns the pieces that became final, in order (text
    /// pieces are never empty).
    pub fn push_chunk(&mut self, tokens: &[Token<'_>]) -> Vec<DecodedPiece> {
        for token in tokens {
            self.tokens += 1;
            match *token {
                Token::Bytes(bytes) => self.decode(bytes),
                Token::Special(special) => {
                    self.flush_tail();
                    self.held.push(DecodedPiece::Special(special));
                }
                Token::Added(text) => {
                    self.flush_tail();
                    self.held.push(DecodedPiece::Added(text.to_owned()));
                }
            }
        }
        let unfinished = !self.tail.is_empty()
            || matches!(self.held.last(), Some(DecodedPiece::Text(t)) if t.ends_with(char::REPLACEMENT_CHARACTER));
        if unfinished {
            return Vec::new();
        }
        self.held_bytes = 0;
        self.tokens = 0;
        std::mem::take(&mut self.held)
    }

    /// Decode the bytes of one more ordinary token, as a chunk of its own; returns the text
    /// that became final.
    pub fn push(&mut self, token_bytes: &[u8]) -> String {
        self.push_chunk(&[Token::Bytes(token_bytes)])
            .into_iter()
            .map(|piece| match piece {
                DecodedPiece::Text(text) | DecodedPiece::Added(text) => text,
                DecodedPiece::Special(_) => String::new(),
            })
            .collect()
    }

    /// Bytes held back in text (special tokens held after them are not counted).
    pub fn pending(&self) -> usize {
        self.held_bytes + self.tail.len()
    }

    /// Tokens whose output is held back.
    pub fn pending_tokens(&self) -> usize {
        self.tokens
    }

    /// Append to the held text, starting a text piece after a special one.
    fn append_text(&mut self, more: &str) {
        if more.is_empty() {
            return;
        }
        if let Some(DecodedPiece::Text(text)) = self.held.last_mut() {
            text.push_str(more);
        } else {
            self.held.push(DecodedPiece::Text(more.to_owned()));
        }
    }

    fn decode(&mut self, bytes: &[u8]) {
        let mut tail = std::mem::take(&mut self.tail);
        tail.extend_from_slice(bytes);
        let mut rest: &[u8] = &tail;
        let mut decoded = String::new();
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    decoded.push_str(text);
                    rest = &[];
                    break;
                }
                Err(error) => {
                    let (good, bad) = rest.split_at(error.valid_up_to());
                    decoded.push_str(std::str::from_utf8(good).unwrap_or_default());
                    match error.error_len() {
                        Some(len) => {
                            decoded.push(char::REPLACEMENT_CHARACTER);
                            rest = bad.get(len..).unwrap_or_default();
                        }
                        None => {
                            rest = bad; // an incomplete sequence at the end: wait for more
                            break;
                        }
                    }
                }
            }
        }
        self.held_bytes += tail.len() - rest.len();
        self.tail = rest.to_vec();
        self.append_text(&decoded);
    }

    /// A special token follows: an incomplete tail is final now (one U+FFFD).
    fn flush_tail(&mut self) {
        if !self.tail.is_empty() {
            let tail = std::mem::take(&mut self.tail);
            self.held_bytes += tail.len();
            self.append_text(&String::from_utf8_lossy(&tail));
        }
    }
}
