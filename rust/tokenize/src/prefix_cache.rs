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
//! Holds the last few prompts within a byte budget (text plus ids).

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

/// Prompts kept at most.
const ENTRIES: usize = 4;

/// Prompts shorter than this are not kept (encoding them is cheaper than the bookkeeping).
pub(crate) const MIN_PREFIX_PROMPT: usize = 4096;

pub(crate) struct Encoded {
    prompt: Box<str>,
    ranges: Box<[Range<usize>]>,
    ids: Box<[u32]>,
    /// `special_ends[k]`: the number of ids up to and including special range `k`.
    special_ends: Box<[usize]>,
}

impl Encoded {
    pub(crate) fn new(
        prompt: &str,
        ranges: &[Range<usize>],
        ids: &[u32],
        special_ends: Vec<usize>,
    ) -> Self {
        Self {
            prompt: prompt.into(),
            ranges: ranges.into(),
            ids: ids.into(),
            special_ends: special_ends.into(),
        }
    }

    fn cost(&self) -> usize {
        self.prompt.len() + self.ids.len() * 4 + self.ranges.len() * 24
    }

    /// How many leading specials (with the gaps before them) `prompt` shares with this
    /// one, if more than `at_least` (the bytes are compared only then).
    fn shared_specials(&self, prompt: &str, ranges: &[Range<usize>], at_least: usize) -> usize {
        let same_ranges = self
            .ranges
            .iter()
            .zip(ranges)
            .take_while(|(mine, theirs)| mine == theirs)
            .count();
        if same_ranges <= at_least {
            return 0;
        }
        let end = same_ranges
            .checked_sub(1)
            .and_then(|last| self.ranges.get(last))
            .map_or(0, |range| range.end);
        let (mine, theirs) = (self.prompt.as_bytes(), prompt.as_bytes());
        let common = common_prefix(
            mine.get(..end).unwrap_or(mine),
            theirs.get(..end).unwrap_or(theirs),
        );
        self.ranges
            .iter()
            .take(same_ranges)
            .take_while(|range| range.end <= common)
            .count()
    }

    /// Whether this entry is exactly `prompt` with `ranges` (lengths compared first).
    fn is(&self, prompt: &str, ranges: &[Range<usize>]) -> bool {
        self.prompt.len() == prompt.len() && *self.ranges == *ranges && *self.prompt == *prompt
    }

    /// The first `specials` entries of [`Encoded::special_ends`].
    pub(crate) fn special_ends_through(&self, specials: usize) -> &[usize] {
        self.special_ends.get(..specials).unwrap_or_default()
    }

    /// The ids of the first `specials` gaps and specials.
    pub(crate) fn ids_through(&self, specials: usize) -> &[u32] {
        let end = specials
            .checked_sub(1)
            .and_then(|last| self.special_ends.get(last))
            .copied()
            .unwrap_or(0);
        self.ids.get(..end).unwrap_or_default()
    }
}

/// Length of the common prefix of `a` and `b`, compared a block at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
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
            let shared = entry.shared_specials(prompt, ranges, at_least);
            if shared > at_least {
                best = Some((entry, shared));
            }
        }
        best
    }

    /// Keep this encoded prompt as the most recent one, dropping the oldest beyond the
    /// bounds; a prompt kept already only moves to the front (nothing is copied).
    pub(crate) fn insert(
        &self,
        prompt: &str,
        ranges: &[Range<usize>],
        ids: &[u32],
        special_ends: Vec<usize>,
    ) {
        let cost = prompt.len() + ids.len() * 4 + ranges.len() * 24;
        if self.budget == 0 || cost > self.budget / 2 || prompt.len() < MIN_PREFIX_PROMPT {
            return;
        }
        let mut entries = self.lock();
        if let Some(same) = entries.iter().position(|kept| kept.is(prompt, ranges)) {
            let kept = entries.remove(same);
            entries.push(kept);
            return;
        }
        entries.push(Arc::new(Encoded::new(prompt, ranges, ids, special_ends)));
        while entries.len() > ENTRIES
            || entries.iter().map(|entry| entry.cost()).sum::<usize>() > self.budget / 2
        {
            entries.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::common_prefix;

    #[test]
    fn common_prefix_across_blocks() {
        let a = vec![7u8; 1000];
        let mut b = a.clone();
        b[700] = 0;
        let cases: [(&[u8], &[u8], usize); 4] = [
            (&a, &a, 1000),
            (&a, &b, 700),
            (&a[..300], &a, 300),
            (b"", &a, 0),
        ];
        for (x, y, want) in cases {
            assert_eq!(common_prefix(x, y), want);
        }
    }
}
