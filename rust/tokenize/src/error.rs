//! The crate's one error type: a kind to branch on and the exact message users see.

/// What went wrong, for callers that map errors to exceptions or status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenizeErrorKind {
    /// `tokenizer.json` could not be read or parsed.
    Load,
    /// A special range spells a token that the added vocabulary does not hold.
    MissingSpecialToken,
    /// The special ranges are not ascending, overlap, leave the prompt or split a character.
    InvalidRange,
    /// The tokenizer pipeline itself failed on a text segment.
    Encode,
}

/// Why loading or encoding failed; the message is shown to users as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizeError {
    pub kind: TokenizeErrorKind,
    pub message: String,
}

impl TokenizeError {
    pub(crate) fn new(kind: TokenizeErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The reference's wording for every failure while encoding a rendered conversation.
    pub(crate) fn conversation(kind: TokenizeErrorKind, detail: impl std::fmt::Display) -> Self {
        Self::new(kind, format!("failed to encode conversation: {detail}"))
    }
}

impl std::fmt::Display for TokenizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TokenizeError {}
