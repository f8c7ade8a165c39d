//! The way back from the model. This crate owns the output parser: one pass over the bytes
//! the model writes, a state machine with precomputed matchers that carries partial markers
//! across chunk boundaries, turning reasoning, content, DSML tool-call markup, JSON-mode
//! output and stop sequences into [`ParseEvent`]s, plus the incremental UTF-8-safe
//! detokenizer for token-id input. It refuses to know any protocol's wire format (the
//! protocol emitters in `deepseek-reply` turn these events into chunks and SSE events) and any
//! vocabulary (the caller maps a token id to its bytes).
//!
//! Text chunks go to [`Parser::push`]. Token chunks go through [`Detokenizer::push_chunk`]
//! and then [`Parser::push_tokens`], because a special token is a symbol to the parser, not
//! the characters of its spelling. Events carry the reference's delta granularity: one
//! protocol delta per event.
//!
//! The design, with a worked example, is in `DESIGN.md` next to this crate's `Cargo.toml`.

mod detokenize;
pub mod emit;
mod matcher;
mod parser;
pub mod processor;

pub use detokenize::{DecodedPiece, Detokenizer, Token};
pub use parser::{Decoded, ParseEvent, Parser, Segment};
