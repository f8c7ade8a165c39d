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
use crate::prefix_cache::NewEntry;

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
        let segments = Segments::cut(prompt, special_ranges)?;
        // A prompt that extends a recent one reuses its ids up to their last shared special.
        let reused = self.prefix_cache.longest(prompt, special_ranges);
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
                        format_args!("special token \"{spelling}\" is not in the added vocabulary"),
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
        let prefix_len = reused
            .as_ref()
            .map_or(0, |(entry, shared)| entry.ids_through_len(*shared));
        let total = prefix_len
            + special_ids.len()
            + gap_ids
                .iter()
                .map(|gap| gap.as_slice().len())
                .sum::<usize>();
        let mut ids = Vec::with_capacity(total);
        let mut special_ends = Vec::with_capacity(segments.specials.len());
        if let Some((entry, shared)) = &reused {
            entry.extend_ids_through(*shared, &mut ids);
            entry.extend_special_ends_through(*shared, &mut special_ends);
        }
        let mut gaps = gap_ids.iter();
        for &special in &special_ids {
            ids.extend_from_slice(gaps.next().map(GapIds::as_slice).unwrap_or_default());
            ids.push(special);
            special_ends.push(ids.len());
        }
        for gap in gaps {
            ids.extend_from_slice(gap.as_slice());
        }
        self.prefix_cache.insert(NewEntry {
            prompt,
            ranges: special_ranges,
            ids: &ids,
            special_ends: &special_ends,
            reused,
        });
        Ok(ids)
    }

    /// One gap's ids, from the gap cache when the gap's size is worth it (see `gap_cache.rs`).
    fn encode_gap(&self, gap: &str) -> Result<GapIds, TokenizeError> {
        let cached = (MIN_CACHED_GAP..=MAX_CACHED_GAP).contains(&gap.len());
        if !cached || self.gap_cache.budget() == 0 {
            return self.encode_plain(gap).map(GapIds::Owned);
        }
        if let Some(ids) = self.gap_cache.get(gap) {
            return Ok(GapIds::Shared(ids));
        }
        let ids: Arc<[u32]> = self.encode_plain(gap)?.into();
        self.gap_cache.insert(gap, Arc::clone(&ids));
        Ok(GapIds::Shared(ids))
    }
}

/// A gap's ids: freshly encoded, or shared with the gap cache.
enum GapIds {
    Owned(Vec<u32>),
    Shared(Arc<[u32]>),
}

impl GapIds {
    fn as_slice(&self) -> &[u32] {
        match self {
            GapIds::Owned(ids) => ids,
            GapIds::Shared(ids) => ids,
        }
    }
}
