//! Prompt text to token ids. Special ranges become ids by exact lookup in the added
//! vocabulary; every plain segment is encoded by the tokenizer pipeline with NO
//! added-token matching, so text from a request can never produce a control token.
//! It refuses to know templates: what is special is decided by the renderer's ranges.
//!
//! Any Hugging Face `tokenizer.json` loads; the pipeline is the `tokenizers` crate's, run
//! once with the file's added vocabulary ([`Tokenizer::encode`]) and once with an empty one
//! ([`Tokenizer::encode_plain`], used for every prompt gap).

mod byte_level;
mod error;
mod prompt;
mod tokenizer;

pub use error::{TokenizeError, TokenizeErrorKind};
pub use prompt::Parallelism;
pub use tokenizer::Tokenizer;
