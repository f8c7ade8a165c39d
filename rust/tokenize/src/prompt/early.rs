//! A large prompt encoded from scratch on the pool while the calling thread takes its ids
//! in prompt order, each stretch as soon as it and everything before it is done.
//!
//! The caller (the Python bindings) turns ids into a Python list one by one, which only
//! the thread holding the interpreter can do: ~10 ms for a 1M-token prompt. Done after
//! the encoding, that is serial time on top of it; done while the pool encodes the rest,
//! it is hidden behind it.
//!
//! The work is the same as [`Tokenizer::encode_prompt_ids_with`]'s, in other units: runs
//! of whole gaps of about [`UNIT_BYTES`] (each gap through the gap cache as usual), and the
//! pieces a gap too long for the cache is cut into ([`Tokenizer::plain_chunks`], which
//! [`Tokenizer::encode_plain_parts`] would encode). So the ids are identical.

use std::sync::mpsc;

use super::{EarlyIds, GapIds};
use crate::error::{TokenizeError, TokenizeErrorKind};
use crate::gap_cache::MAX_CACHED_GAP;
use crate::tokenizer::Tokenizer;

/// Whole gaps are handed to the pool in runs of about this many bytes.
const UNIT_BYTES: usize = 64 << 10;

/// One job for the pool.
enum Unit<'p> {
    /// Gaps `first..first + texts.len()`, encoded one after another.
    Gaps { first: usize, texts: &'p [&'p str] },
    /// A piece of gap `gap`; `last` when it ends the gap.
    Chunk {
        gap: usize,
        text: &'p str,
        last: bool,
    },
}

/// A finished job's ids.
enum Done {
    Gaps(Vec<GapIds>),
    Chunk(Vec<u32>),
}

/// A prompt's ids gathered in order, and the count through each special.
struct Gathered<'s> {
    ids: Vec<u32>,
    special_ends: Vec<usize>,
    specials: &'s [u32],
    /// Ids before these (reused from a recent prompt).
    before: usize,
}

impl Gathered<'_> {
    /// Gap `gap` is complete: its special follows (the last gap has none).
    fn end_gap(&mut self, gap: usize) {
        if let Some(&special) = self.specials.get(gap) {
            self.ids.push(special);
            self.special_ends.push(self.before + self.ids.len());
        }
    }

    fn add(&mut self, unit: &Unit<'_>, done: Done) -> Result<(), TokenizeError> {
        match (unit, done) {
            (Unit::Gaps { first, .. }, Done::Gaps(gaps)) => {
                for (offset, gap) in gaps.iter().enumerate() {
                    gap.append_to(&mut self.ids);
                    self.end_gap(first + offset);
                }
            }
            (Unit::Chunk { gap, last, .. }, Done::Chunk(part)) => {
                self.ids.extend_from_slice(&part);
                if *last {
                    self.end_gap(*gap);
                }
            }
            _ => return Err(stopped()),
        }
        Ok(())
    }
}

fn stopped() -> TokenizeError {
    TokenizeError::new(
        TokenizeErrorKind::Encode,
        "a worker thread stopped before encoding its part of the prompt",
    )
}

impl Tokenizer {
    /// The ids of `gaps` with `specials` between them (`gaps.len() == specials.len() + 1`)
    /// and the count of ids through each special (after `before` ids), encoded on the
    /// pool; `early` gets the ids on this thread, in order, while they are encoded.
    pub(super) fn encode_gaps_early(
        &self,
        gaps: &[&str],
        specials: &[u32],
        before: usize,
        early: EarlyIds<'_>,
    ) -> Result<(Vec<u32>, Vec<usize>), TokenizeError> {
        let units = self.early_units(gaps);
        let bytes: usize = gaps.iter().map(|gap| gap.len()).sum();
        let mut gathered = Gathered {
            // ~2 bytes a token (text needs 3-4): the ids rarely move while they grow.
            ids: Vec::with_capacity(bytes / 2 + specials.len()),
            special_ends: Vec::with_capacity(specials.len()),
            specials,
            before,
        };
        let (sender, receiver) = mpsc::channel();
        rayon::in_place_scope(|scope| {
            for (at, unit) in units.iter().enumerate() {
                let sender = sender.clone();
                scope.spawn(move |_| {
                    // The receiver is gone only after an error: nothing waits for this.
                    let _ = sender.send((at, self.encode_unit(unit)));
                });
            }
            // Only the jobs hold senders now: should one of them stop without sending,
            // `recv` fails instead of waiting forever.
            drop(sender);
            let mut finished: Vec<Option<Done>> = units.iter().map(|_| None).collect();
            let mut next = 0;
            while next < units.len() {
                let (at, done) = receiver.recv().map_err(|_| stopped())?;
                if let Some(slot) = finished.get_mut(at) {
                    *slot = Some(done?);
                }
                let from = gathered.ids.len();
                while let Some(done) = finished.get_mut(next).and_then(Option::take) {
                    let unit = units.get(next).ok_or_else(stopped)?;
                    gathered.add(unit, done)?;
                    next += 1;
                }
                if let Some(new) = gathered.ids.get(from..).filter(|new| !new.is_empty()) {
                    early(new);
                }
            }
            Ok::<(), TokenizeError>(())
        })?;
        Ok((gathered.ids, gathered.special_ends))
    }

    /// `gaps` as jobs: runs of whole gaps, and the pieces of gaps too long for the cache.
    fn early_units<'p>(&self, gaps: &'p [&'p str]) -> Vec<Unit<'p>> {
        let mut units = Vec::new();
        let (mut first, mut bytes) = (0, 0);
        for (at, gap) in gaps.iter().enumerate() {
            let chunks = (gap.len() > MAX_CACHED_GAP)
                .then(|| self.plain_chunks(gap))
                .flatten();
            if let Some(chunks) = chunks {
                if first < at {
                    units.push(Unit::Gaps {
                        first,
                        texts: gaps.get(first..at).unwrap_or_default(),
                    });
                }
                let count = chunks.len();
                units.extend(chunks.into_iter().enumerate().map(|(k, text)| Unit::Chunk {
                    gap: at,
                    text,
                    last: k + 1 == count,
                }));
                (first, bytes) = (at + 1, 0);
                continue;
            }
            bytes += gap.len();
            if bytes >= UNIT_BYTES {
                units.push(Unit::Gaps {
                    first,
                    texts: gaps.get(first..=at).unwrap_or_default(),
                });
                (first, bytes) = (at + 1, 0);
            }
        }
        if first < gaps.len() {
            units.push(Unit::Gaps {
                first,
                texts: gaps.get(first..).unwrap_or_default(),
            });
        }
        units
    }

    fn encode_unit(&self, unit: &Unit<'_>) -> Result<Done, TokenizeError> {
        match unit {
            Unit::Gaps { texts, .. } => texts
                .iter()
                .map(|gap| self.encode_gap(gap))
                .collect::<Result<_, _>>()
                .map(Done::Gaps),
            Unit::Chunk { text, .. } => self.encode_plain_chunk(text).map(Done::Chunk),
        }
    }
}
