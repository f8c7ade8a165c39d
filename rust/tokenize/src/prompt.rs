//! Encoding a rendered prompt: the renderer's special ranges become ids by exact lookup in
//! the added vocabulary, and every gap between them (the empty ones too) is encoded on its
//! own by the plain pipeline, so BPE never merges across a special range and no text from
//! a request is ever matched against the added vocabulary.
//!
//! Worked example: prompt `<｜User｜>hi<｜Assistant｜>` with ranges `[0..11, 13..29]` is
//! three gaps `""`, `"hi"`, `""` and two specials; the ids are
//! `plain("") ++ [id(<｜User｜>)] ++ plain("hi") ++ [id(<｜Assistant｜>)] ++ plain("")`.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{TokenizeError, TokenizeErrorKind};
use crate::gap_cache::{MAX_CACHED_GAP, MIN_CACHED_GAP};
use crate::prefix_cache::IdsFormat;
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
        // A prompt that extends a recent one reuses its ids up to their last shared special.
        let reused = self.prefix_cache.longest(prompt, special_ranges);
        self.encode_reusing(prompt, special_ranges, reused, parallelism, Keep::IfCached)
    }

    /// Encode a prompt that extends `base` (the previous turn of a stored conversation):
    /// `base`'s ids are reused up to the last special both share, only the rest is encoded.
    /// The result keeps its text, so the next turn can extend it in turn. Without a base the
    /// recent-prompt cache serves as usual (a client re-sending a whole conversation). The ids
    /// are exactly [`Tokenizer::encode_prompt`]'s.
    pub fn encode_prompt_ids_after(
        &self,
        prompt: &str,
        special_ranges: &[Range<usize>],
        base: Option<&PromptIds>,
    ) -> Result<PromptIds, TokenizeError> {
        self.encode_prompt_ids_extending(prompt, special_ranges, base, 0)
    }

    /// [`Tokenizer::encode_prompt_ids_after`] for a caller that knows `prompt`'s first
    /// `same_bytes` bytes to be `base`'s (it copied them from the text `base` was encoded
    /// from): those bytes are not compared again, a pass over cold memory saved on a long
    /// conversation. The ids are the same whatever `same_bytes` a truthful caller passes.
    pub fn encode_prompt_ids_extending(
        &self,
        prompt: &str,
        special_ranges: &[Range<usize>],
        base: Option<&PromptIds>,
        same_bytes: usize,
    ) -> Result<PromptIds, TokenizeError> {
        let (reused, keep) = match base {
            Some(base) => {
                let reused = base
                    .entry()
                    .map(|entry| {
                        let shared = entry.shared_with(prompt, special_ranges, same_bytes);
                        (Arc::clone(entry), shared)
                    })
                    .filter(|(_, shared)| *shared > 0);
                (reused, Keep::Always)
            }
            None => (
                self.prefix_cache.longest(prompt, special_ranges),
                Keep::AlwaysAndCached,
            ),
        };
        self.encode_reusing(prompt, special_ranges, reused, Parallelism::Parallel, keep)
    }

    /// A prompt's ids read back from storage, made extendable again: each added-vocabulary id
    /// is a special range, every other id plain text, and the text is the ids decoded (exact
    /// for byte-level vocabularies, the only ones this accepts). `None` for other
    /// vocabularies, an unknown id, or ids that do not decode to UTF-8.
    pub fn prompt_ids_from_ids(&self, ids: Vec<u32>) -> Option<PromptIds> {
        if !self.is_byte_level() {
            return None;
        }
        let mut text: Vec<u8> = Vec::with_capacity(ids.len() * 4);
        let mut ranges = Vec::new();
        let mut special_ends = Vec::new();
        for (index, &id) in ids.iter().enumerate() {
            let bytes = self.token_bytes(id)?;
            let start = text.len();
            text.extend_from_slice(bytes);
            if self.is_added_id(id) {
                ranges.push(start..text.len());
                special_ends.push(index + 1);
            }
        }
        let text = String::from_utf8(text).ok()?;
        let entry = Encoded::whole_kept(&text, &ranges, ids, special_ends);
        Some(PromptIds(Held::Linked(Arc::new(entry))))
    }

    fn encode_reusing(
        &self,
        prompt: &str,
        special_ranges: &[Range<usize>],
        reused: Option<(Arc<Encoded>, usize)>,
        parallelism: Parallelism,
        keep: Keep,
    ) -> Result<PromptIds, TokenizeError> {
        let segments = Segments::cut(prompt, special_ranges)?;
        if let Some((entry, shared)) = &reused {
            if entry.is(prompt, special_ranges, *shared) {
                if keep != Keep::Always {
                    self.prefix_cache.keep(entry);
                }
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
        let cached = keep != Keep::Always
            && self
                .prefix_cache
                .keeps(prompt, special_ranges, reused_ids + ids.len());
        let kept = cached || keep != Keep::IfCached;
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
        if cached {
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

/// Whether an encoded prompt keeps its text (so a later prompt can extend it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// When the recent-prompt cache keeps it.
    IfCached,
    /// Always (a stored conversation's turn), without the cache.
    Always,
    /// Always, and in the cache when it keeps it (a stored conversation's first turn).
    AlwaysAndCached,
}

/// A prompt's ids: one vector, or an encoded prompt shared with the recent-prompt cache
/// (its ids in several slices, some shared with the prompts it extends).
#[derive(Clone)]
pub struct PromptIds(Held);

#[derive(Clone)]
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

    /// The encoded prompt these ids were made from, when it is kept.
    fn entry(&self) -> Option<&Arc<Encoded>> {
        match &self.0 {
            Held::Whole(_) => None,
            Held::Linked(entry) => Some(entry),
        }
    }

    /// The ids as a JSON array (`[1,2,3]`), for an engine's request body. An encoded
    /// prompt's ids are written once per link and reused by every later prompt extending it,
    /// so the body of a turn that extends the last one costs a copy, not a conversion.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.json_len());
        self.write_json(&mut out);
        out
    }

    /// The length of [`PromptIds::to_json`]'s output.
    pub fn json_len(&self) -> usize {
        match &self.0 {
            Held::Whole(ids) => {
                let mut digits = itoa::Buffer::new();
                ids.iter()
                    .map(|&id| digits.format(id).len() + 1)
                    .sum::<usize>()
                    .max(1)
                    + 1
            }
            Held::Linked(entry) => entry.written_len(IdsFormat::Json).max(1) + 1,
        }
    }

    /// Append [`PromptIds::to_json`]'s output to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match &self.0 {
            Held::Whole(ids) => {
                out.push(b'[');
                let start = out.len();
                write_ids(IdsFormat::Json, ids, out);
                let written = out.len() > start;
                // Every id is followed by a comma: the last one's becomes the closing bracket.
                match out.last_mut() {
                    Some(last) if written => *last = b']',
                    _ => out.push(b']'),
                }
            }
            Held::Linked(_) => {
                for piece in self.json_pieces().unwrap_or_default() {
                    out.extend_from_slice(piece);
                }
            }
        }
    }

    /// How many ids [`PromptIds::to_json`] would write as JSON for the first time (the rest
    /// is copied from JSON kept for an encoded prompt).
    pub fn unwritten_json(&self) -> usize {
        self.unwritten(IdsFormat::Json)
    }

    /// How many ids would be written in `format` for the first time (the rest is copied from
    /// what is kept for an encoded prompt).
    pub fn unwritten(&self, format: IdsFormat) -> usize {
        match &self.0 {
            Held::Whole(ids) => ids.len(),
            Held::Linked(entry) => entry.unwritten(format),
        }
    }

    /// [`PromptIds::to_json`]'s output in pieces to concatenate, borrowed from the JSON kept
    /// for an encoded prompt (`None` for ids that are not kept: [`PromptIds::write_json`]
    /// writes those). Writing a kept prompt's JSON is then one copy, into wherever the
    /// caller wants it.
    pub fn json_pieces(&self) -> Option<Vec<&[u8]>> {
        let Held::Linked(entry) = &self.0 else {
            return None;
        };
        let mut pieces: Vec<&[u8]> = vec![b"["];
        entry.push_written(IdsFormat::Json, &mut pieces);
        // Every id is followed by a comma: the last one's becomes the closing bracket.
        match pieces.iter().rposition(|piece| !piece.is_empty()) {
            Some(last) if last > 0 => {
                if let Some(piece) = pieces.get_mut(last) {
                    *piece = piece.get(..piece.len() - 1).unwrap_or_default();
                }
            }
            _ => {}
        }
        pieces.push(b"]");
        Some(pieces)
    }

    /// The ids as protobuf varints, the payload of a packed `repeated uint32` field (an
    /// engine's gRPC request), in pieces to concatenate: borrowed from the varints kept for
    /// an encoded prompt, written once per link like its JSON; for ids that are not kept,
    /// one piece written now.
    pub fn varint_pieces(&self) -> Vec<Cow<'_, [u8]>> {
        match &self.0 {
            Held::Whole(ids) => {
                let mut out = Vec::with_capacity(ids.len() * 3);
                write_ids(IdsFormat::Varints, ids, &mut out);
                vec![Cow::Owned(out)]
            }
            Held::Linked(entry) => {
                let mut pieces = Vec::new();
                entry.push_written(IdsFormat::Varints, &mut pieces);
                pieces.into_iter().map(Cow::Borrowed).collect()
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

/// Append `ids` written in `format`.
fn write_ids(format: IdsFormat, ids: &[u32], out: &mut Vec<u8>) {
    let mut digits = itoa::Buffer::new();
    for &id in ids {
        format.write(id, &mut digits, out);
    }
}
