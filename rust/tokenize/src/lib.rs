//! Prompt text to token ids. Special ranges become ids by exact lookup in the added
//! vocabulary; every plain segment is encoded by the tokenizer pipeline with NO
//! added-token matching, so text from a request can never produce a control token.
//! It refuses to know templates: what is special is decided by the renderer's ranges.
//!
//! Any Hugging Face `tokenizer.json` loads; the pipeline is the `tokenizers` crate's, run
//! once with the file's added vocabulary ([`Tokenizer::encode`]) and once with an empty one
//! ([`Tokenizer::encode_plain`], used for every prompt gap). For byte-level files of the
//! usual shape the plain pipeline runs directly on the same regex engine and model,
//! skipping `tokenizers`' alignment bookkeeping (`plain_pipeline.rs`); with exactly the
//! DeepSeek V4 pre-tokenizer, its regexes are replaced by a hand-written splitter whose
//! character classes are read from the regex engine (`v4_pieces.rs`). Both are tested
//! against `tokenizers` itself, as is the BPE on ids that merges the pieces
//! (`fast_bpe.rs`: per-thread caches of pieces and of merge lookups; runs of kanji/kana
//! merge from whole characters where the merge table provably allows it, `char_merge.rs`).
//! Loading builds these tables (under a second on two cores), so every encode is at full
//! speed. Long prompt gaps are memoized (`gap_cache.rs`), and a prompt that extends a
//! recently encoded one reuses its ids up to their last shared special
//! (`prefix_cache.rs`); [`Tokenizer::encode_prompt_ids`] returns such a prompt's ids in
//! the slices they are kept in ([`PromptIds`]), shared with the prompt it extends.
//! `Tokenizer::encode` finds added tokens by hand (`added_split.rs`).
//!
//! `Tokenizer` is `Send + Sync` (its caches lock or are per thread); gaps, and long gaps
//! cut at safe newlines, are encoded in parallel on rayon.

mod added_split;
mod byte_level;
mod char_merge;
mod error;
mod fast_bpe;
mod gap_cache;
mod plain_pipeline;
mod prefix_cache;
mod prompt;
mod tokenizer;
mod v4_pieces;

pub use error::{TokenizeError, TokenizeErrorKind};
pub use prefix_cache::{push_varint, IdsFormat};
pub use prompt::{Parallelism, PromptIds};
pub use tokenizer::Tokenizer;
