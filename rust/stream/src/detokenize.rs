//! Incremental detokenization: token chunks to decoded pieces, holding back text whose
//! decoding is not final yet (`tests/detokenize.rs`, `tests/processor.rs`).
//!
//! The rule is the reference's (the Hugging Face decode-stream rule), applied per pushed
//! chunk: everything held plus the new chunk is decoded, ordinary tokens' bytes lossily (each
//! maximal invalid subsequence becomes U+FFFD) and added tokens as themselves. An added token
//! settles everything before it: an incomplete character before it becomes one U+FFFD, and
//! the text before it and the token itself are released at once. After the chunk's last
//! added token, the rest is released only if its decoding is not empty and does not end with
//! U+FFFD, which is what an incomplete multi-byte character looks like; otherwise it stays
//! held (ids that decode to nothing wait for the next text, and are not counted if none
//! comes). So 🦀 split
//! over three tokens comes out whole with the third, text earlier in the same ordinary run
//! waits with it, `r</think>` followed by the first byte of a character comes out up to the
//! `</think>` in that push, and a stray invalid byte comes out as U+FFFD together with the
//! next character that decodes. Bytes still held when the stream ends are dropped by the
//! reference: a caller gets that by not asking.
//!
//! Each released piece says how many tokens made it (its ordinary run, ids that decode to
//! nothing included, or the added token plus a run before it that decoded to nothing), so a
//! caller can hand each piece the logprobs of exactly those tokens.
//!
//! Each byte is decoded once: held text whose decoding can no longer change is kept decoded,
//! and only the incomplete tail (at most three bytes) is looked at again.

use deepseek_model::SpecialToken;

use crate::parser::Decoded;

/// One token of a chunk, as the caller's vocabulary maps its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token<'a> {
    /// An ordinary token: the bytes it decodes to.
    Bytes(&'a [u8]),
    /// One of the model's special tokens.
    Special(SpecialToken),
    /// Any other added token, by its text.
    Added(&'a str),
    /// An id outside the vocabulary: it decodes to nothing, but it is a token of the run.
    Unknown,
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
    /// Held pieces whose decoding is final (the last one may be text that grows), each with
    /// the number of tokens that made it (the growing text's count is set when it closes).
    held: Vec<(DecodedPiece, usize)>,
    /// Held bytes of an incomplete UTF-8 sequence at the very end (at most 3 bytes).
    tail: Vec<u8>,
    /// Bytes behind the held text.
    held_bytes: usize,
    /// Tokens pushed since output was last released.
    tokens: usize,
    /// Tokens of the current ordinary run not yet counted in a piece.
    run_tokens: usize,
    /// The last held piece is the current run's text (it may still grow).
    run_open: bool,
}

impl Detokenizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode one chunk of tokens; returns the pieces that became final, in order (text
    /// pieces are never empty).
    pub fn push_chunk(&mut self, tokens: &[Token<'_>]) -> Vec<DecodedPiece> {
        self.push_chunk_counted(tokens)
            .into_iter()
            .map(|(piece, _)| piece)
            .collect()
    }

    /// Like [`Detokenizer::push_chunk`], each piece with the number of tokens that made it
    /// (a token is counted once: in the piece its run made, or in the next piece when its
    /// run decoded to nothing).
    pub fn push_chunk_counted(&mut self, tokens: &[Token<'_>]) -> Vec<(DecodedPiece, usize)> {
        let mut out = Vec::new();
        for token in tokens {
            self.tokens += 1;
            let settled = match *token {
                Token::Bytes(bytes) => {
                    self.run_tokens += 1;
                    self.decode(bytes);
                    None
                }
                Token::Unknown => {
                    self.run_tokens += 1;
                    None
                }
                Token::Special(special) => Some(DecodedPiece::Special(special)),
                Token::Added(text) => Some(DecodedPiece::Added(text.to_owned())),
            };
            if let Some(piece) = settled {
                // An added token settles everything before it.
                self.flush_tail();
                self.close_run();
                let count = 1 + std::mem::take(&mut self.run_tokens);
                self.held.push((piece, count));
                self.release(&mut out);
            }
        }
        // Tokens that decoded to nothing yet (an incomplete character, unknown ids) wait too.
        let unfinished = match self.held.last() {
            None => true,
            Some((DecodedPiece::Text(text), _)) => text.ends_with(char::REPLACEMENT_CHARACTER),
            Some(_) => false,
        } || !self.tail.is_empty();
        if !unfinished {
            self.close_run();
            self.release(&mut out);
        }
        out
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

    /// Bytes held back in text.
    pub fn pending(&self) -> usize {
        self.held_bytes + self.tail.len()
    }

    /// Tokens whose output is held back (they count as generated once it is released).
    pub fn pending_tokens(&self) -> usize {
        self.tokens
    }

    /// The current ordinary run ends: its text piece (if it made one) takes its tokens.
    fn close_run(&mut self) {
        if self.run_open {
            if let Some((DecodedPiece::Text(_), count)) = self.held.last_mut() {
                *count = std::mem::take(&mut self.run_tokens);
            }
            self.run_open = false;
        }
    }

    fn release(&mut self, out: &mut Vec<(DecodedPiece, usize)>) {
        out.append(&mut self.held);
        self.held_bytes = 0;
        self.tokens = 0;
    }

    /// Append to the held text, starting a text piece after an added one.
    fn append_text(&mut self, more: &str) {
        if more.is_empty() {
            return;
        }
        if self.run_open {
            if let Some((DecodedPiece::Text(text), _)) = self.held.last_mut() {
                text.push_str(more);
                return;
            }
        }
        self.held.push((DecodedPiece::Text(more.to_owned()), 0));
        self.run_open = true;
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
