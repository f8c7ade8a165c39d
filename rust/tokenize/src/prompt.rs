//! Encoding a rendered prompt: the renderer's special ranges become ids by exact lookup in
//! the added vocabulary, and every gap between them (the empty ones too) is encoded on its
//! own by the plain pipeline, so BPE never merges across a special range and no text from
//! a request is ever matched against the added vocabulary.
//!
//! Worked example: prompt `<｜User｜>hi<｜Assistant｜>` with ranges `[0..11, 13..29]` is
//! three gaps `""`, `"hi"`, `""` and two specials; the ids are
//! `plain("") ++ [id(<｜User｜>)] ++ plain("hi") ++ [id(<｜Assistant｜>)] ++ plain("")`.

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{TokenizeError, TokenizeErrorKind};
use crate::gap_cache::{MAX_CACHED_GAP, MIN_CACHED_GAP};
use crate::prefix_cache::{Encoded, Tail};

use crate::tokenizer::Tokenizer;

/// Prompts whose gaps to encode total fewer bytes are encoded on the calling thread.
const MIN_PARALLEL_BYTES: usize = 64 << 10;

/// Whether the gaps of one prompt are encoded on the rayon pool or one after another.
/// Both give identical ids; the sequential mode exists so tests can prove it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parallelism {
    Parallel,
    Sequential,
}

/// A prompt cut at its special ranges: `gaps.len() == specials.len() + 1`, and the prompt is
/// `gaps[0] + specials[0] + gaps[1] + … + gaps[n]`.
struct Segments<'p> {
    gaps: Vec<&'p str>,
    specials: Vec<&'p str>,
}

impl<'p> Segments<'p> {
    fn cut(prompt: &'p str, ranges: &[Range<usize>]) -> Result<Self, TokenizeError> {
        let mut gaps = Vec::with_capacity(ranges.len() + 1);
        let mut specials = Vec::with_capacity(ranges.len());
        let mut cursor = 0;
        for range in ranges {
            let (Some(gap), Some(special)) = (
                prompt
                    .get(cursor..range.start)
                    .filter(|_| range.start >= cursor),
                prompt.get(range.clone()),
            ) else {
                return Err(invalid_range(prompt, range));
            };
            gaps.push(gap);
            specials.push(special);
            cursor = range.end;
        }
        gaps.push(prompt.get(cursor..).unwrap_or_default());
        Ok(Self { gaps, specials })
    }
}

fn invalid_range(prompt: &str, range: &Range<usize>) -> TokenizeError {
    TokenizeError::conversation(
        TokenizeErrorKind::InvalidRange,
        format_args!(
            "special range {}..{} is not an ascending, in-bounds, character-aligned range of the {}-byte prompt",
            range.start,
            range.end,
            prompt.len()
        ),
    )
}

impl Tokenizer {
    /// Encode a rendered prompt: `special_ranges` (ascending byte ranges) by added-vocabulary
    /// lookup, the gaps between them as plain text with no added-token matching, in parallel.
    pub fn encode_prompt(
        &self,
        prompt: &str,
        special_ranges: &[Range<usize>],
    ) -> Result<Vec<u32>, TokenizeError> {
        self.encode_prompt_with(prompt, special_ranges, Parallelism::Parallel)
    }

    /// [`Tokenizer::encode_prompt`] with the gaps encoded one after another on this thread.
    pub fn encode_prompt_sequential(
        &self,
        prompt: &str,
        special_ranges: &[Range<usize>],
    ) -> Result<Vec<u32>, TokenizeError> {
        self.encode_prompt_with(prompt, special_ranges, Parallelism::Sequential)
    }

    /// [`Tokenizer::encode_prompt`] with the gap scheduling chosen by the caller.
    pub fn encode_prompt_with(
        &self,
        prompt: &str,
        special_ranges: &[Range<usize>],
        parallelism: Parallelism,
    ) -> Result<Vec<u32>, TokenizeError> {
        self.encode_prompt_ids_with(prompt, special_ranges, parallelism)
            .map(PromptIds::into_vec)
    }

    /// [`Tokenizer::encode_prompt`] without gathering the ids into one vector: a prompt
    /// that extends a recent one shares its ids with it (read them with
    /// [`PromptIds::slices`]).
    pub fn encode_prompt_ids(
        &self,
        prompt: &str,
        special_ranges: &[Range<usize>],
    ) -> Result<PromptIds, TokenizeError> {
        self.encode_prompt_ids_with(prompt, special_ranges, Parallelism::Parallel)
    }

    /// [`Tokenizer::encode_prompt_ids`] with the gap scheduling chosen by the caller.
    pub fn encode_prompt_ids_with(
        &self,
        prompt: &str,
        special_ranges: &[Range<usize>],
        parallelism: Parallelism,
    ) -> Result<PromptIds, TokenizeError> {
        let segments = Segments::cut(prompt, special_ranges)?;
        // A prompt that extends a recent one reuses its ids up to their last shared special.
        let reused = self.prefix_cache.longest(prompt, special_ranges);
        if let Some((entry, shared)) = &reused {
            if entry.is(prompt, special_ranges, *shared) {
                self.prefix_cache.keep(entry);
                return Ok(PromptIds(Held::Linked(Arc::clone(entry))));
            }
        }
        let skip = reused.as_ref().map_or(0, |(_, shared)| *shared);
        let fresh_gaps = segments.gaps.get(skip..).unwrap_or_default();
        // The reused specials were looked up when their prompt was encoded.
        let special_ids = segments
            .specials
            .get(skip..)
            .unwrap_or_default()
            .iter()
            .map(|spelling| {
                self.added_token_id(spelling).ok_or_else(|| {
                    TokenizeError::conversation(
                        TokenizeErrorKind::MissingSpecialToken,
                        // Quoted and escaped as Rust's `Debug` does, as in the reference.
                        format_args!("special token {spelling:?} is not in the added vocabulary"),
                    )
                })
            })
            .collect::<Result<Vec<u32>, _>>()?;
        // Small prompts are not worth handing to the pool.
        let fresh_bytes: usize = fresh_gaps.iter().map(|gap| gap.len()).sum();
        let parallelism = if fresh_bytes < MIN_PARALLEL_BYTES {
            Parallelism::Sequential
        } else {
            parallelism
        };
        let reused_ids = reused
            .as_ref()
            .map_or(0, |(entry, shared)| entry.ids_through_len(*shared));
        let gap_ids: Vec<GapIds> = match parallelism {
            Parallelism::Parallel => fresh_gaps
                .par_iter()
                .map(|gap| self.encode_gap(gap))
                .collect::<Result<_, _>>()?,
            Parallelism::Sequential => fresh_gaps
                .iter()
                .map(|gap| self.encode_gap(gap))
                .collect::<Result<_, _>>()?,
        };
        let (ids, special_ends) = gather(&gap_ids, &special_ids, reused_ids);
        let kept = self
            .prefix_cache
            .keeps(prompt, special_ranges, reused_ids + ids.len());
        if reused.is_none() && !kept {
            return Ok(PromptIds(Held::Whole(ids)));
        }
        let tail = Tail {
            prompt,
            ranges: special_ranges,
            reused,
            ids,
            special_ends,
        };
        let entry = Arc::new(Encoded::from_tail(tail, kept));
        if kept {
            self.prefix_cache.keep(&entry);
        }
        Ok(PromptIds(Held::Linked(entry)))
    }

    /// One gap's ids, from the gap cache when the gap's size is worth it (see `gap_cache.rs`).
    fn encode_gap(&self, gap: &str) -> Result<GapIds, TokenizeError> {
        let cached = (MIN_CACHED_GAP..=MAX_CACHED_GAP).contains(&gap.len());
        if !cached || self.gap_cache.budget() == 0 {
            return self.encode_plain_parts(gap).map(GapIds::Owned);
        }
        let hash = self.gap_cache.hash(gap);
        if let Some(ids) = self.gap_cache.get(hash, gap) {
            return Ok(GapIds::Shared(ids));
        }
        // Sized for ~2 bytes a token (typical text needs 3-4): the ids rarely move while
        // they grow, and are copied once, into the shared slice.
        let mut ids = Vec::with_capacity(gap.len() / 2);
        self.encode_plain_into(gap, &mut ids)?;
        let ids: Arc<[u32]> = ids.into();
        self.gap_cache.insert(hash, gap, Arc::clone(&ids));
        Ok(GapIds::Shared(ids))
    }
}

/// The gaps' ids with the specials between them (`gaps.len() == specials.len() + 1`), and
/// the count of ids through each special (after `reused_ids` ids reused before them).
fn gather(gaps: &[GapIds], specials: &[u32], reused_ids: usize) -> (Vec<u32>, Vec<usize>) {
    let len = specials.len() + gaps.iter().map(GapIds::len).sum::<usize>();
    let mut ids = Vec::with_capacity(len);
    let mut special_ends = Vec::with_capacity(specials.len());
    let mut gaps = gaps.iter();
    for &special in specials {
        if let Some(gap) = gaps.next() {
            gap.append_to(&mut ids);
        }
        ids.push(special);
        special_ends.push(reused_ids + ids.len());
    }
    for gap in gaps {
        gap.append_to(&mut ids);
    }
    (ids, special_ends)
}

/// A prompt's ids: one vector, or an encoded prompt shared with the recent-prompt cache
/// (its ids in several slices, some shared with the prompts it extends).
pub struct PromptIds(Held);

enum Held {
    /// Ids of a prompt the cache does not keep and that reused nothing.
    Whole(Vec<u32>),
    /// An encoded prompt: kept by the cache, or linked to the kept prompt it extends.
    Linked(Arc<Encoded>),
}

impl PromptIds {
    /// The number of ids.
    pub fn len(&self) -> usize {
        match &self.0 {
            Held::Whole(ids) => ids.len(),
            Held::Linked(entry) => entry.ids_len(),
        }
    }

    /// Whether there are no ids (an empty prompt).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids as consecutive slices (their concatenation is the prompt's ids).
    pub fn slices(&self) -> Vec<&[u32]> {
        match &self.0 {
            Held::Whole(ids) => vec![ids.as_slice()],
            Held::Linked(entry) => {
                let mut slices = Vec::new();
                entry.push_slices(&mut slices);
                slices
            }
        }
    }

    /// The ids in one vector (copied only when they are shared).
    pub fn into_vec(self) -> Vec<u32> {
        match self.0 {
            Held::Whole(ids) => ids,
            Held::Linked(entry) => {
                let mut ids = Vec::with_capacity(entry.ids_len());
                let mut slices = Vec::new();
                entry.push_slices(&mut slices);
                for slice in slices {
                    ids.extend_from_slice(slice);
                }
                ids
            }
        }
    }
}

impl From<Vec<u32>> for PromptIds {
    /// Ids made elsewhere (a list a caller holds, ids read back from storage).
    fn from(ids: Vec<u32>) -> Self {
        Self(Held::Whole(ids))
    }
}

impl std::fmt::Debug for PromptIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptIds")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// A gap's ids: freshly encoded (in the parts a long gap is encoded in, so that gathering
/// the prompt copies them once), or shared with the gap cache.
enum GapIds {
    Owned(Vec<Vec<u32>>),
    Shared(Arc<[u32]>),
}

impl GapIds {
    fn len(&self) -> usize {
        match self {
            GapIds::Owned(parts) => parts.iter().map(Vec::len).sum(),
            GapIds::Shared(ids) => ids.len(),
        }
    }

    fn append_to(&self, out: &mut Vec<u32>) {
        match self {
            GapIds::Owned(parts) => parts.iter().for_each(|part| out.extend_from_slice(part)),
            GapIds::Shared(ids) => out.extend_from_slice(ids),
        }
    }
}
