//! The way back from the model. This crate owns the output parser: one pass over the bytes
//! the model writes, a state machine with precomputed matchers that carries partial markers
//! across chunk boundaries, turning reasoning, content, DSML tool-call markup, JSON-mode
//! output and stop sequences into [`ParseEvent`]s, plus the incremental UTF-8-safe
//! detokenizer for token-id input. It refuses to know any protocol's wire format (the
//! protocol emitters in `deepseek-protocol` turn these events into chunks and SSE events) and
//! any vocabulary (the caller maps a token id to its bytes).
//!
//! The design, with a worked example, is in `DESIGN.md` next to this crate's `Cargo.toml`.

mod detokenize;
pub mod emit;
mod json_escape;
mod matcher;
mod parser;

pub use detokenize::Detokenizer;
pub use parser::{ParseEvent, Parser, Segment};
