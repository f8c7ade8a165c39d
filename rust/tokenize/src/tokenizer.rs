//! Loading a Hugging Face `tokenizer.json` and the two encoders built from it: the full
//! pipeline (added tokens matched, as `Tokenizer.encode` in the reference) and the plain
//! pipeline (the same normalizer, pre-tokenizer and model with an EMPTY added vocabulary,
//! used for every piece of prompt text so that no typed spelling becomes a control token).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use tokenizers::{AddedVocabulary, DecoderWrapper, Model, Tokenizer as HfTokenizer};

use crate::added_split::{AddedSplit, TokenTrie};
use crate::byte_level;
use crate::error::{TokenizeError, TokenizeErrorKind};
use crate::fast_bpe::FastBpe;
use crate::gap_cache::GapCache;
use crate::plain_pipeline::PlainPipeline;
use crate::prefix_cache::PrefixCache;

/// A Hugging Face `tokenizer.json` loaded for prompt encoding.
///
/// Immutable after loading and `Sync`: one instance serves every thread.
pub struct Tokenizer {
    /// The pipeline exactly as the file describes it, added vocabulary included.
    full: HfTokenizer,
    /// The same pipeline with no added vocabulary: what prompt text is encoded with.
    plain: Arc<HfTokenizer>,
    /// The plain model's merges on ids (`fast_bpe.rs`), built at load; `None` when the
    /// model is not a plain byte-level BPE (or the direct pipeline does not apply).
    fast_bpe: Option<FastBpe>,
    /// The plain pipeline run directly, when the file's shape allows it (same ids, faster).
    direct: Option<PlainPipeline>,
    /// Added-vocabulary spelling to id, for special ranges.
    added: HashMap<String, u32>,
    /// Added-token matching done by hand for [`Tokenizer::encode`] (`added_split.rs`), when
    /// the plain text goes through the direct pipeline and no token strips or needs words.
    added_split: Option<AddedSplit>,
    /// Ids of recently encoded prompt gaps, by their text.
    pub(crate) gap_cache: GapCache,
    /// Recently encoded prompts, for prompts that extend them (`prefix_cache.rs`).
    pub(crate) prefix_cache: PrefixCache,
    /// Raw bytes of every id, built on first use (the stream decoder's table).
    bytes: OnceLock<HashMap<u32, Box<[u8]>>>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("added_tokens", &self.added.len())
            .finish_non_exhaustive()
    }
}

impl Tokenizer {
    /// Default budget of the prompt-gap cache: text plus ids, in bytes.
    pub const DEFAULT_GAP_CACHE_BYTES: usize = 64 << 20;

    /// Replace the prompt-gap cache and the recent-prompt cache with empty ones of `bytes`
    /// budget each; 0 disables them.
    #[doc(hidden)] // a hook for tests and benches, not part of the API
    #[must_use]
    pub fn with_gap_cache_bytes(mut self, bytes: usize) -> Self {
        self.gap_cache = GapCache::new(bytes);
        self.prefix_cache = PrefixCache::new(bytes);
        self
    }

    /// Number of prompt gaps currently cached.
    #[doc(hidden)] // a hook for tests and benches, not part of the API
    pub fn gap_cache_len(&self) -> usize {
        self.gap_cache.len()
    }

    /// Bytes held by the recent-prompt cache (text, ids and ranges of every kept prompt and
    /// of the earlier prompts they link to); at most half the budget.
    #[doc(hidden)] // a hook for tests and benches, not part of the API
    pub fn prefix_cache_bytes(&self) -> usize {
        self.prefix_cache.kept_bytes()
    }

    /// Parse `tokenizer.json` text. Errors carry the parser's message as is, for example
    /// `expected ident at line 1 column 2` or `Model missing. at line 1 column 2`.
    #[allow(clippy::should_implement_trait)] // the reference API's name; it returns our error type
    pub fn from_str(json: &str) -> Result<Self, TokenizeError> {
        let full: HfTokenizer = json
            .parse()
            .map_err(|e: tokenizers::Error| load_error(&*e))?;
        Ok(Self::from_hf(full))
    }

    /// Read and parse a `tokenizer.json` file. A missing file gives
    /// `No such file or directory (os error 2)`.
    pub fn from_file(path: &Path) -> Result<Self, TokenizeError> {
        let full = HfTokenizer::from_file(path).map_err(|e| load_error(&*e))?;
        Ok(Self::from_hf(full))
    }

    /// Wrap an already built Hugging Face tokenizer.
    pub fn from_hf(full: HfTokenizer) -> Self {
        let mut plain = full.clone();
        plain.with_added_vocabulary(AddedVocabulary::new());
        let added = full
            .get_added_vocabulary()
            .get_vocab()
            .iter()
            .map(|(spelling, id)| (spelling.clone(), *id))
            .collect();
        let direct = PlainPipeline::recognise(&plain);
        let added_split = direct.as_ref().and_then(|_| added_split(&full));
        // The fast tables are built now, the splitter's classes beside the merge tables,
        // so no request ever waits for them or takes the slow path meanwhile.
        let fast_bpe = direct.as_ref().and_then(|direct| {
            std::thread::scope(|scope| {
                scope.spawn(|| direct.warm_up());
                FastBpe::build(plain.get_model())
            })
        });
        let plain = Arc::new(plain);
        Self {
            full,
            plain,
            fast_bpe,
            direct,
            added,
            added_split,
            gap_cache: GapCache::new(Self::DEFAULT_GAP_CACHE_BYTES),
            prefix_cache: PrefixCache::new(Self::DEFAULT_GAP_CACHE_BYTES),
            bytes: OnceLock::new(),
        }
    }

    /// Full-vocabulary encode (added tokens matched), no BOS and no post-processor specials.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizeError> {
        if let Some(split) = &self.added_split {
            let mut ids = Vec::with_capacity(text.len() / 3);
            let mut cursor = 0;
            for (range, id) in split.matches(text) {
                let gap = text.get(cursor..range.start).unwrap_or_default();
                if !gap.is_empty() {
                    self.encode_plain_into(gap, &mut ids)
                        .map_err(as_encode_error)?;
                }
                ids.push(id);
                cursor = range.end;
            }
            let rest = text.get(cursor..).unwrap_or_default();
            if !rest.is_empty() {
                self.encode_plain_into(rest, &mut ids)
                    .map_err(as_encode_error)?;
            }
            return Ok(ids);
        }
        self.encode_by_tokenizers(text)
    }

    /// [`Tokenizer::encode`] always through `tokenizers`' own pipeline (the definition the
    /// hand-written added-token matching is tested against).
    #[doc(hidden)] // a hook for tests and benches, not part of the API
    pub fn encode_by_tokenizers(&self, text: &str) -> Result<Vec<u32>, TokenizeError> {
        self.full
            .encode_fast(text, false)
            .map(|encoding| encoding.get_ids().to_vec())
            .map_err(|e| TokenizeError::new(TokenizeErrorKind::Encode, e.to_string()))
    }

    /// Encode text with NO added-token matching: normalizer, pre-tokenizer and model only.
    /// Equal to Hugging Face `tokenizers` with the `added_tokens` list removed from the file.
    ///
    /// Like the reference, truncation and padding configured in `tokenizer.json` apply to
    /// each call (so to each prompt gap); the DeepSeek file configures neither.
    pub fn encode_plain(&self, text: &str) -> Result<Vec<u32>, TokenizeError> {
        let mut ids = Vec::new();
        self.encode_plain_into(text, &mut ids)?;
        Ok(ids)
    }

    /// [`Tokenizer::encode_plain`], appending to `ids`.
    pub fn encode_plain_into(&self, text: &str, ids: &mut Vec<u32>) -> Result<(), TokenizeError> {
        if let Some(direct) = &self.direct {
            let bpe = self.fast_bpe.as_ref();
            return direct
                .encode(self.plain.get_model(), bpe, text, ids)
                .map_err(|e| TokenizeError::conversation(TokenizeErrorKind::Encode, e));
        }
        ids.extend(self.encode_plain_by_tokenizers(text)?);
        Ok(())
    }

    /// [`Tokenizer::encode_plain`] in consecutive parts (one per piece of a long text
    /// encoded in parallel), for a caller that gathers them itself.
    pub(crate) fn encode_plain_parts(&self, text: &str) -> Result<Vec<Vec<u32>>, TokenizeError> {
        if let Some(direct) = &self.direct {
            let bpe = self.fast_bpe.as_ref();
            return direct
                .encode_parts(self.plain.get_model(), bpe, text)
                .map_err(|e| TokenizeError::conversation(TokenizeErrorKind::Encode, e));
        }
        Ok(vec![self.encode_plain_by_tokenizers(text)?])
    }

    /// [`Tokenizer::encode_plain`] always through `tokenizers`' own pipeline (the definition
    /// the direct pipeline is tested against).
    #[doc(hidden)] // a hook for tests and benches, not part of the API
    pub fn encode_plain_by_tokenizers(&self, text: &str) -> Result<Vec<u32>, TokenizeError> {
        if text.is_empty() && self.plain.get_padding().is_none() {
            return Ok(Vec::new());
        }
        self.plain
            .encode_fast(text, false)
            .map(|encoding| encoding.get_ids().to_vec())
            .map_err(|e| TokenizeError::conversation(TokenizeErrorKind::Encode, e))
    }

    /// Whether plain text is encoded by the direct pipeline (see `plain_pipeline.rs`) rather
    /// than through `tokenizers`' generic one. The ids are the same either way.
    #[doc(hidden)] // a hook for tests and benches, not part of the API
    pub fn uses_direct_pipeline(&self) -> bool {
        self.direct.is_some()
    }

    /// Whether the file has exactly the DeepSeek V4 pre-tokenizer, which is then split by
    /// hand (`v4_pieces.rs`) and long texts are cut at safe newlines and encoded in parallel.
    #[doc(hidden)] // a hook for tests and benches, not part of the API
    pub fn uses_deepseek_v4_splitter(&self) -> bool {
        self.direct
            .as_ref()
            .is_some_and(PlainPipeline::is_deepseek_v4)
    }

    /// Whether pieces are merged on ids directly (`fast_bpe.rs`).
    #[doc(hidden)] // a hook for tests and benches, not part of the API
    pub fn uses_fast_bpe(&self) -> bool {
        self.fast_bpe.is_some()
    }

    /// How many kanji and kana characters merge from their own ids in runs of them, which
    /// the merge table was checked to allow (`char_merge.rs`); 0 without the fast BPE.
    #[doc(hidden)] // a hook for tests and benches, not part of the API
    pub fn char_merge_characters(&self) -> usize {
        self.fast_bpe.as_ref().map_or(0, FastBpe::merges_characters)
    }

    /// The id of `spelling` in the added vocabulary, if it is there (special or not).
    pub fn added_token_id(&self, spelling: &str) -> Option<u32> {
        self.added.get(spelling).copied()
    }

    /// Every added-vocabulary spelling with its id, in no particular order.
    pub fn added_tokens(&self) -> impl Iterator<Item = (&str, u32)> {
        self.added
            .iter()
            .map(|(spelling, id)| (spelling.as_str(), *id))
    }

    /// The id of a token string: added vocabulary first, then the model vocabulary.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.full.token_to_id(token)
    }

    /// The token string of an id (for byte-level vocabularies, the mapped form, e.g. `Ġ`).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.full.id_to_token(id)
    }

    /// Whether `id` belongs to the added vocabulary (special or not).
    pub fn is_added_id(&self, id: u32) -> bool {
        self.full
            .get_added_vocabulary()
            .get_added_tokens_decoder()
            .contains_key(&id)
    }

    /// Whether `id` is an added token flagged `special` in `tokenizer.json`.
    pub fn is_special_id(&self, id: u32) -> bool {
        self.full
            .get_added_vocabulary()
            .get_added_tokens_decoder()
            .get(&id)
            .is_some_and(|token| token.special)
    }

    /// Number of ids, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.full.get_vocab_size(true)
    }

    /// Whether the vocabulary is byte-level (its tokens map back to bytes exactly).
    pub fn is_byte_level(&self) -> bool {
        matches!(self.full.get_decoder(), Some(DecoderWrapper::ByteLevel(_)))
    }

    /// The raw bytes an id stands for, so a decoder can join tokens before checking UTF-8.
    /// Byte-level vocabularies map each character back to its byte; added tokens and other
    /// decoders give the token's own text (for other decoders, as the decoder renders it).
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.bytes
            .get_or_init(|| self.build_byte_table())
            .get(&id)
            .map(|bytes| &bytes[..])
    }

    /// Decode ids to text with the file's decoder (lossy at incomplete UTF-8).
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String, TokenizeError> {
        self.full
            .decode(ids, skip_special_tokens)
            .map_err(|e| TokenizeError::new(TokenizeErrorKind::Encode, e.to_string()))
    }

    fn build_byte_table(&self) -> HashMap<u32, Box<[u8]>> {
        let byte_level = matches!(self.full.get_decoder(), Some(DecoderWrapper::ByteLevel(_)));
        let added = self.full.get_added_vocabulary().get_added_tokens_decoder();
        let model_tokens = self
            .full
            .get_model()
            .get_vocab()
            .into_iter()
            .map(|(token, id)| (id, token));
        let added_tokens = added.iter().map(|(id, token)| (*id, token.content.clone()));
        // Added tokens come last so they win, as in Hugging Face's own id lookup.
        let tokens: HashMap<u32, String> = model_tokens.chain(added_tokens).collect();
        tokens
            .into_iter()
            .filter_map(|(id, token)| {
                let bytes = if byte_level {
                    byte_level::token_bytes(&token)
                } else {
                    self.full.decode(&[id], false).ok()?.into_bytes()
                };
                Some((id, bytes.into_boxed_slice()))
            })
            .collect()
    }
}

/// Errors of [`Tokenizer::encode`] keep its kind, whichever path produced them.
fn as_encode_error(error: TokenizeError) -> TokenizeError {
    TokenizeError::new(TokenizeErrorKind::Encode, error.to_string())
}

/// The hand-written added-token matcher for `full`, when its tokens allow it.
fn added_split(full: &HfTokenizer) -> Option<AddedSplit> {
    let vocabulary = full.get_added_vocabulary();
    if vocabulary.get_encode_special_tokens() {
        return None;
    }
    let tokens = vocabulary.get_added_tokens_decoder();
    if tokens
        .values()
        .any(|token| token.lstrip || token.rstrip || token.single_word)
    {
        return None;
    }
    let of = |normalized: bool| {
        TokenTrie::new(
            tokens
                .iter()
                .filter(move |(_, token)| token.normalized == normalized)
                .map(|(id, token)| (token.content.as_str(), *id)),
        )
    };
    Some(AddedSplit {
        raw: of(false),
        normalized: of(true),
    })
}

fn load_error(error: &(dyn std::error::Error + Send + Sync)) -> TokenizeError {
    TokenizeError::new(TokenizeErrorKind::Load, error.to_string())
}
