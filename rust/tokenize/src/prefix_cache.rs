//! Recently encoded prompts, so a prompt that extends one of them (an agent conversation
//! re-sent with one more turn) re-encodes only what follows their common part.
//!
//! Reuse is exact: when two prompts have the same bytes up to the end of their `k`-th
//! special range and the same first `k` special ranges, their first `k` gaps and specials
//! are the same texts, so their ids up to there are the same; each gap is encoded on its
//! own, so nothing after can change them. Example: `<｜User｜>hi<｜Assistant｜>` then
//! `<｜User｜>hi<｜Assistant｜>ok`: the ids of `""`, `<｜User｜>`, `"hi"`, `<｜Assistant｜>`
//! are reused and only `"ok"` is encoded.
//!
//! A prompt that reused an earlier one is kept as a link to it plus its own tail (the bytes,
//! ranges and ids after the shared specials), so keeping turn `N+1` of a conversation costs
//! its new turn, not another copy of the conversation. Chains are cut at [`MAX_DEPTH`] links
//! (that prompt is kept whole). Holds the last few prompts within a byte budget, counting
//! every kept link once.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Prompts kept at most.
const ENTRIES: usize = 4;

/// Links from a kept prompt to its first whole ancestor at most; a longer chain is not
/// extended (the prompt is kept whole), so walking one stays cheap.
const MAX_DEPTH: usize = 32;

/// Prompts shorter than this are not kept (encoding them is cheaper than the bookkeeping).
pub(crate) const MIN_PREFIX_PROMPT: usize = 4096;

/// Bytes a kept special range costs: the range and its entry in `special_ends`.
const RANGE_COST: usize = 24;

/// An encoded prompt: its first `base.specials` specials (with the gaps before them) are
/// those of `base.entry`, the rest is held here.
pub(crate) struct Encoded {
    base: Option<Base>,
    /// The special ranges after the base's, in prompt byte offsets.
    ranges: Box<[Range<usize>]>,
    /// `special_ends[k]`: the number of ids up to and including this entry's special
    /// range `k` (counted from the prompt's start).
    special_ends: Box<[usize]>,
    /// The prompt's bytes from `base.bytes` on.
    text: Box<[u8]>,
    /// The prompt's ids from `base.ids` on.
    ids: Box<[u32]>,
    /// Links to the first whole ancestor.
    depth: usize,
    /// This link's own ids written for an engine's request body, in each [`IdsFormat`], on
    /// first use (a body carries the whole prompt every turn).
    written: [OnceLock<WrittenIds>; 2],
}

/// How ids are written for an engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdsFormat {
    /// JSON numbers, each followed by `,` (the inside of a JSON array, with a trailing comma).
    Json,
    /// Protobuf varints (the payload of a packed `repeated uint32` field).
    Varints,
}

impl IdsFormat {
    fn slot(self) -> usize {
        match self {
            Self::Json => 0,
            Self::Varints => 1,
        }
    }

    /// Append `id` as written in this format.
    pub(crate) fn write(self, id: u32, digits: &mut itoa::Buffer, out: &mut Vec<u8>) {
        match self {
            Self::Json => {
                out.extend_from_slice(digits.format(id).as_bytes());
                out.push(b',');
            }
            Self::Varints => push_varint(u64::from(id), out),
        }
    }

    /// Whether `byte` ends an id's text in this format.
    fn ends_id(self, byte: u8) -> bool {
        match self {
            Self::Json => byte == b',',
            Self::Varints => byte < 0x80,
        }
    }

    /// Bytes per id to reserve when writing (about the mean for a large vocabulary).
    fn typical_len(self) -> usize {
        match self {
            Self::Json => 7,
            Self::Varints => 3,
        }
    }
}

/// Append `value` as a protobuf varint: seven bits a byte, low first, the high bit set on
/// every byte but the last.
pub fn push_varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Ids written in one [`IdsFormat`], with the byte offset of every [`WRITTEN_STEP`]th id so
/// a prefix of them is found without scanning them all.
struct WrittenIds {
    format: IdsFormat,
    text: Box<[u8]>,
    offsets: Box<[usize]>,
}

const WRITTEN_STEP: usize = 256;

/// The part of an earlier prompt this one shares.
struct Base {
    entry: Arc<Encoded>,
    /// Leading specials shared.
    specials: usize,
    /// Bytes up to the end of the last shared special.
    bytes: usize,
    /// Ids up to and including the last shared special.
    ids: usize,
}

impl WrittenIds {
    fn of(format: IdsFormat, ids: &[u32]) -> Self {
        let mut text = Vec::with_capacity(ids.len() * format.typical_len());
        let mut offsets = Vec::with_capacity(ids.len() / WRITTEN_STEP + 1);
        let mut digits = itoa::Buffer::new();
        for (index, &id) in ids.iter().enumerate() {
            if index % WRITTEN_STEP == 0 {
                offsets.push(text.len());
            }
            format.write(id, &mut digits, &mut text);
        }
        Self {
            format,
            text: text.into(),
            offsets: offsets.into(),
        }
    }

    /// The text of the first `count` ids (all of them when there are fewer).
    fn through(&self, count: usize) -> &[u8] {
        let Some(&start) = self.offsets.get(count / WRITTEN_STEP) else {
            return &self.text;
        };
        let after = self.text.get(start..).unwrap_or_default();
        let end = match count % WRITTEN_STEP {
            0 => Some(start),
            rest => match self.format {
                IdsFormat::Json => memchr::memchr_iter(b',', after).nth(rest - 1),
                IdsFormat::Varints => after
                    .iter()
                    .enumerate()
                    .filter(|(_, &byte)| self.format.ends_id(byte))
                    .nth(rest - 1)
                    .map(|(at, _)| at),
            }
            .map(|last| start + last + 1),
        };
        end.and_then(|end| self.text.get(..end))
            .unwrap_or(&self.text)
    }
}

impl Encoded {
    /// `(specials, bytes, ids)` taken from the base (zeros for a whole prompt).
    fn base_counts(&self) -> (usize, usize, usize) {
        self.base
            .as_ref()
            .map_or((0, 0, 0), |base| (base.specials, base.bytes, base.ids))
    }

    fn specials(&self) -> usize {
        self.base_counts().0 + self.ranges.len()
    }

    fn len(&self) -> usize {
        self.base_counts().1 + self.text.len()
    }

    /// What keeping this link costs (its base is counted on its own).
    fn own_cost(&self) -> usize {
        self.text.len() + self.ids.len() * 4 + self.ranges.len() * RANGE_COST
    }

    /// Special range `k` of the prompt.
    fn range(&self, k: usize) -> Option<&Range<usize>> {
        match &self.base {
            Some(base) if k < base.specials => base.entry.range(k),
            _ => self.ranges.get(k - self.base_counts().0),
        }
    }

    /// The number of ids through special `k` of the prompt.
    fn special_end(&self, k: usize) -> Option<usize> {
        match &self.base {
            Some(base) if k < base.specials => base.entry.special_end(k),
            _ => self.special_ends.get(k - self.base_counts().0).copied(),
        }
    }

    /// How many of the first `limit` special ranges equal `ranges`' first ones.
    fn same_ranges(&self, ranges: &[Range<usize>], limit: usize) -> usize {
        let limit = limit.min(self.specials()).min(ranges.len());
        let (base_specials, _, _) = self.base_counts();
        if let Some(base) = &self.base {
            let head = base.entry.same_ranges(ranges, limit.min(base_specials));
            if head < base_specials || limit <= base_specials {
                return head;
            }
        }
        let own = limit - base_specials;
        base_specials
            + self
                .ranges
                .iter()
                .take(own)
                .zip(ranges.get(base_specials..).unwrap_or_default())
                .take_while(|(mine, theirs)| mine == theirs)
                .count()
    }

    /// Length of the common prefix of the prompt's first `limit` bytes and `other`, given
    /// that their first `from` bytes are known to be equal (those are not compared).
    fn common_bytes(&self, other: &[u8], from: usize, limit: usize) -> usize {
        let limit = limit.min(self.len()).min(other.len());
        let from = from.min(limit);
        let (_, base_bytes, _) = self.base_counts();
        if let Some(base) = self.base.as_ref().filter(|_| from < base_bytes) {
            let head = base.entry.common_bytes(other, from, limit.min(base_bytes));
            if head < base_bytes || limit <= base_bytes {
                return head;
            }
        }
        let start = from.max(base_bytes);
        start
            + common_prefix(
                self.text
                    .get(start - base_bytes..limit - base_bytes)
                    .unwrap_or_default(),
                other.get(start..limit).unwrap_or_default(),
            )
    }

    /// How many leading specials (with the gaps before them) `prompt` shares with this
    /// one, if more than `at_least` (the bytes are compared only then).
    fn shared_specials(
        &self,
        prompt: &str,
        ranges: &[Range<usize>],
        at_least: usize,
        same_bytes: usize,
    ) -> usize {
        let same_ranges = self.same_ranges(ranges, usize::MAX);
        if same_ranges <= at_least {
            return 0;
        }
        let end = same_ranges
            .checked_sub(1)
            .and_then(|last| self.range(last))
            .map_or(0, |range| range.end);
        let common = self.common_bytes(prompt.as_bytes(), same_bytes.min(end), end);
        // The ranges are ascending: those ending within the common bytes come first.
        ranges
            .get(..same_ranges)
            .unwrap_or_default()
            .partition_point(|range| range.end <= common)
    }

    /// Whether this entry is exactly `prompt` with `ranges`, given that they share
    /// `shared` leading specials (so only the bytes after them are compared).
    pub(crate) fn is(&self, prompt: &str, ranges: &[Range<usize>], shared: usize) -> bool {
        let compared = ranges.last().map_or(0, |last| last.end);
        shared == ranges.len()
            && self.specials() == ranges.len()
            && self.len() == prompt.len()
            && self.common_bytes(prompt.as_bytes(), compared, usize::MAX) == prompt.len()
    }

    /// The number of ids of the first `specials` gaps and specials.
    pub(crate) fn ids_through_len(&self, specials: usize) -> usize {
        specials
            .checked_sub(1)
            .and_then(|last| self.special_end(last))
            .unwrap_or(0)
    }

    /// Append the ids of the first `specials` gaps and specials.
    pub(crate) fn extend_ids_through(&self, specials: usize, out: &mut Vec<u32>) {
        let (base_specials, _, base_ids) = self.base_counts();
        if let Some(base) = &self.base {
            base.entry
                .extend_ids_through(specials.min(base_specials), out);
        }
        if specials > base_specials {
            let end = self.ids_through_len(specials) - base_ids;
            out.extend_from_slice(self.ids.get(..end).unwrap_or_default());
        }
    }

    /// Append the first `specials` entries of the prompt's `special_ends`.
    pub(crate) fn extend_special_ends_through(&self, specials: usize, out: &mut Vec<usize>) {
        let (base_specials, _, _) = self.base_counts();
        if let Some(base) = &self.base {
            base.entry
                .extend_special_ends_through(specials.min(base_specials), out);
        }
        if specials > base_specials {
            out.extend(self.special_ends.iter().take(specials - base_specials));
        }
    }
}

/// Length of the common prefix of `a` and `b`, compared a block at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= len && a.get(at..at + BLOCK) == b.get(at..at + BLOCK) {
        at += BLOCK;
    }
    at + a
        .get(at..len)
        .unwrap_or_default()
        .iter()
        .zip(b.get(at..len).unwrap_or_default())
        .take_while(|(x, y)| x == y)
        .count()
}

/// What encoding a prompt produced beyond the kept prompt it reused.
pub(crate) struct Tail<'a> {
    pub(crate) prompt: &'a str,
    pub(crate) ranges: &'a [Range<usize>],
    /// The kept prompt reused and the number of leading specials shared (`None`: nothing).
    pub(crate) reused: Option<(Arc<Encoded>, usize)>,
    /// The ids after the reused ones.
    pub(crate) ids: Vec<u32>,
    /// The ends of the specials after the reused ones, counted from the prompt's start.
    pub(crate) special_ends: Vec<usize>,
}

impl Encoded {
    /// The encoded prompt, linked to the prompt it reused (or to the ancestor of it that
    /// holds all that was shared), whole when nothing was reused or the chain is long
    /// enough. Its text is copied only when it is to be `kept`: a prompt that is not kept
    /// is never compared.
    pub(crate) fn from_tail(tail: Tail<'_>, kept: bool) -> Self {
        let Tail {
            prompt,
            ranges,
            reused,
            ids,
            special_ends,
        } = tail;
        let Some((reused, specials)) = reused.filter(|(_, specials)| *specials > 0) else {
            return Self::whole(prompt, ranges, ids, special_ends, kept);
        };
        let mut ancestor = Arc::clone(&reused);
        while let Some(base) = ancestor
            .base
            .as_ref()
            .filter(|base| specials <= base.specials)
        {
            ancestor = Arc::clone(&base.entry);
        }
        let last = specials - 1;
        let linked = ranges
            .get(last)
            .map(|range| range.end)
            .zip(ancestor.special_end(last))
            .filter(|_| ancestor.depth < MAX_DEPTH);
        let Some((bytes, base_ids)) = linked else {
            // Kept whole: the shared ids and special ends are copied in front of the tail.
            let mut all = Vec::with_capacity(reused.ids_through_len(specials) + ids.len());
            reused.extend_ids_through(specials, &mut all);
            all.extend_from_slice(&ids);
            let mut ends = Vec::with_capacity(ranges.len());
            reused.extend_special_ends_through(specials, &mut ends);
            ends.extend_from_slice(&special_ends);
            return Self::whole(prompt, ranges, all, ends, kept);
        };
        let text = if kept {
            prompt.as_bytes().get(bytes..).unwrap_or_default().into()
        } else {
            Box::default()
        };
        Self {
            depth: ancestor.depth + 1,
            ranges: ranges.get(specials..).unwrap_or_default().into(),
            special_ends: special_ends.into(),
            text,
            ids: ids.into(),
            written: Default::default(),
            base: Some(Base {
                entry: ancestor,
                specials,
                bytes,
                ids: base_ids,
            }),
        }
    }

    fn whole(
        prompt: &str,
        ranges: &[Range<usize>],
        ids: Vec<u32>,
        special_ends: Vec<usize>,
        kept: bool,
    ) -> Self {
        Self {
            base: None,
            ranges: ranges.into(),
            special_ends: special_ends.into(),
            text: if kept {
                prompt.as_bytes().into()
            } else {
                Box::default()
            },
            ids: ids.into(),
            depth: 0,
            written: Default::default(),
        }
    }

    /// A whole prompt whose ids, ranges and text are given (kept, so later prompts can
    /// extend it).
    pub(crate) fn whole_kept(
        prompt: &str,
        ranges: &[Range<usize>],
        ids: Vec<u32>,
        special_ends: Vec<usize>,
    ) -> Self {
        Self::whole(prompt, ranges, ids, special_ends, true)
    }

    /// How many leading specials (with the gaps before them) `prompt` shares with this one,
    /// its first `same_bytes` bytes known to be this entry's (not compared again).
    pub(crate) fn shared_with(
        &self,
        prompt: &str,
        ranges: &[Range<usize>],
        same_bytes: usize,
    ) -> usize {
        debug_assert_eq!(
            self.common_bytes(prompt.as_bytes(), 0, same_bytes),
            same_bytes.min(self.len()).min(prompt.len()),
            "the caller's known-same bytes differ"
        );
        self.shared_specials(prompt, ranges, 0, same_bytes)
    }

    /// The ids written in `format` (see [`IdsFormat`]), in pieces to concatenate (written
    /// once per link, then borrowed).
    pub(crate) fn push_written<'a>(&'a self, format: IdsFormat, out: &mut Vec<&'a [u8]>) {
        self.push_written_through(format, self.ids_len(), out);
    }

    /// How many of the ids are not written in `format` yet ([`Encoded::push_written`]
    /// writes them).
    pub(crate) fn unwritten(&self, format: IdsFormat) -> usize {
        self.unwritten_through(format, self.ids_len())
    }

    fn unwritten_through(&self, format: IdsFormat, count: usize) -> usize {
        let (_, _, base_ids) = self.base_counts();
        let base = self.base.as_ref().map_or(0, |base| {
            base.entry.unwritten_through(format, count.min(base_ids))
        });
        let own = if self.slot(format).get().is_none() {
            count.saturating_sub(base_ids)
        } else {
            0
        };
        base + own
    }

    /// The length of [`Encoded::push_written`]'s output.
    pub(crate) fn written_len(&self, format: IdsFormat) -> usize {
        self.written_len_through(format, self.ids_len())
    }

    fn slot(&self, format: IdsFormat) -> &OnceLock<WrittenIds> {
        // Two formats, two slots: the index is always in range.
        &self.written[format.slot() % self.written.len()]
    }

    fn own_written(&self, format: IdsFormat) -> &WrittenIds {
        self.slot(format)
            .get_or_init(|| WrittenIds::of(format, &self.ids))
    }

    fn push_written_through<'a>(
        &'a self,
        format: IdsFormat,
        count: usize,
        out: &mut Vec<&'a [u8]>,
    ) {
        let (_, _, base_ids) = self.base_counts();
        if let Some(base) = &self.base {
            base.entry
                .push_written_through(format, count.min(base_ids), out);
        }
        if count > base_ids {
            out.push(self.own_written(format).through(count - base_ids));
        }
    }

    fn written_len_through(&self, format: IdsFormat, count: usize) -> usize {
        let (_, _, base_ids) = self.base_counts();
        let base = self.base.as_ref().map_or(0, |base| {
            base.entry.written_len_through(format, count.min(base_ids))
        });
        let own = if count > base_ids {
            self.own_written(format).through(count - base_ids).len()
        } else {
            0
        };
        base + own
    }

    /// The number of ids of the whole prompt.
    pub(crate) fn ids_len(&self) -> usize {
        self.base_counts().2 + self.ids.len()
    }

    /// Append the prompt's ids as slices, in order (nothing is copied).
    pub(crate) fn push_slices<'a>(&'a self, out: &mut Vec<&'a [u32]>) {
        self.push_slices_through(self.ids_len(), out);
    }

    /// [`Encoded::push_slices`] for the first `count` ids.
    fn push_slices_through<'a>(&'a self, count: usize, out: &mut Vec<&'a [u32]>) {
        let (_, _, base_ids) = self.base_counts();
        if let Some(base) = &self.base {
            base.entry.push_slices_through(count.min(base_ids), out);
        }
        if count > base_ids {
            out.push(self.ids.get(..count - base_ids).unwrap_or_default());
        }
    }
}

pub(crate) struct PrefixCache {
    budget: usize,
    entries: Mutex<Vec<Arc<Encoded>>>,
}

impl PrefixCache {
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            budget,
            entries: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Encoded>>> {
        // Each operation is one push or remove: a poisoned lock still holds a valid list.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The kept prompt sharing the most leading specials with `prompt`, and that count
    /// (0 when none shares any).
    pub(crate) fn longest(
        &self,
        prompt: &str,
        ranges: &[Range<usize>],
    ) -> Option<(Arc<Encoded>, usize)> {
        if self.budget == 0 || prompt.len() < MIN_PREFIX_PROMPT {
            return None;
        }
        let entries: Vec<Arc<Encoded>> = self.lock().clone();
        // Most recent first: in an agent loop it is the one the prompt extends, and the
        // others then need no byte comparison.
        let mut best: Option<(Arc<Encoded>, usize)> = None;
        for entry in entries.into_iter().rev() {
            let at_least = best.as_ref().map_or(0, |(_, shared)| *shared);
            let shared = entry.shared_specials(prompt, ranges, at_least, 0);
            if shared > at_least {
                best = Some((entry, shared));
            }
        }
        best
    }

    /// Whether a prompt of this size is kept (it is not worth it below
    /// [`MIN_PREFIX_PROMPT`] bytes, nor above half the budget).
    pub(crate) fn keeps(&self, prompt: &str, ranges: &[Range<usize>], ids: usize) -> bool {
        let cost = prompt.len() + ids * 4 + ranges.len() * RANGE_COST;
        self.budget > 0 && cost <= self.budget / 2 && prompt.len() >= MIN_PREFIX_PROMPT
    }

    /// Keep this encoded prompt as the most recent one (moved to the front when kept
    /// already), dropping the oldest beyond the bounds.
    pub(crate) fn keep(&self, entry: &Arc<Encoded>) {
        let mut entries = self.lock();
        if let Some(at) = entries.iter().position(|kept| Arc::ptr_eq(kept, entry)) {
            entries.remove(at);
        }
        entries.push(Arc::clone(entry));
        while entries.len() > ENTRIES || kept_bytes(&entries) > self.budget / 2 {
            entries.remove(0);
        }
    }

    /// Bytes held by the kept prompts, every link counted once.
    pub(crate) fn kept_bytes(&self) -> usize {
        kept_bytes(&self.lock())
    }
}

/// Bytes held by `entries` and the links they reach, each counted once.
fn kept_bytes(entries: &[Arc<Encoded>]) -> usize {
    let mut seen: Vec<*const Encoded> = Vec::new();
    let mut total = 0;
    for entry in entries {
        let mut link = Some(entry);
        while let Some(encoded) = link {
            let at = Arc::as_ptr(encoded);
            if seen.contains(&at) {
                break;
            }
            seen.push(at);
            total += encoded.own_cost();
            link = encoded.base.as_ref().map(|base| &base.entry);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::common_prefix;

    #[test]
    fn common_prefix_across_blocks() {
        let a = vec![7u8; 10_000];
        let mut b = a.clone();
        b[7000] = 0;
        let cases: [(&[u8], &[u8], usize); 5] = [
            (&a, &a, 10_000),
            (&a, &b, 7000),
            (&a[..300], &a, 300),
            (&a[..5000], &b, 5000),
            (b"", &a, 0),
        ];
        for (x, y, want) in cases {
            assert_eq!(common_prefix(x, y), want);
        }
    }
}
