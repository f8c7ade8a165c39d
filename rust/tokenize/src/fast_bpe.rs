//! Byte-level BPE on token ids, for the plain pipeline's short pieces: the same merges as
//! the tokenizer's own BPE model, without its per-token string allocations.
//!
//! A piece starts as one id per byte (the byte's character in the byte-level alphabet);
//! then, repeatedly, the adjacent pair with the lowest merge rank is merged, the leftmost
//! one on a tie, until no adjacent pair has a merge. This is what Hugging Face's BPE does
//! with its priority queue of (rank, position): its staleness check compares the merged id
//! only, which identifies the pair because the text a position covers only grows.
//!
//! Example with merges `[("a","b"), ("ab","c"), ("b","c")]`: `a b c` → `ab c` (rank 0)
//! → `abc` (rank 1); the `b c` pair (rank 2) was never the lowest.
//!
//! Two shortcuts keep the common case cheap, both exact:
//! - a piece whose bytes spell one vocabulary token that the merges themselves rebuild from
//!   its bytes (checked for every token when the table is built) is that one id, found by a
//!   single hash lookup (`" the"`, `"model"`);
//! - otherwise the merges run on a linked list of symbols that keeps each adjacent pair's
//!   rank, so a merge re-reads only the two pairs it changes.
//!
//! Pieces longer than [`MAX_PIECE_BYTES`] merge through a queue of `(rank, position)`
//! instead (`n log n`, as the model's own), so 100k spaces cost no more than they must.
//!
//! Applies only to BPE models without dropout, subword prefix or suffix, with
//! `ignore_merges` off and a vocabulary entry for each of the 256 byte characters.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;
use tokenizers::ModelWrapper;

use crate::byte_level;

/// Pieces up to this many bytes merge by scanning a linked list; longer ones by a queue.
pub(crate) const MAX_PIECE_BYTES: usize = 32;

/// No merge for this pair.
const NONE: u32 = u32::MAX;

/// Entries of each thread's cache of merged pieces (cleared when full).
const PIECE_CACHE_ENTRIES: usize = 1 << 18;

thread_local! {
    /// Pieces of up to 15 bytes that are not one token, with their ids: words repeat, merging them is dearer
    /// than a lookup. Keyed by the exact bytes, valid for one vocabulary: every thread
    /// serves one tokenizer file in practice, and a second file clears it (see `PieceCache::owner`).
    static PIECES: std::cell::RefCell<PieceCache> = std::cell::RefCell::new(PieceCache::default());
}

/// Source of [`FastBpe::serial`]: which table a thread's piece cache was filled by.
static SERIALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

#[derive(Default)]
struct PieceCache {
    /// The [`FastBpe::serial`] the entries belong to (0: none yet).
    owner: u64,
    entries: Fast<u128, Box<[u32]>>,
}

/// Up to 15 bytes packed with their length into one number: equal numbers are equal byte
/// strings. `None` for longer pieces.
fn short_key(bytes: &[u8]) -> Option<u128> {
    let len = bytes.len();
    let mut word = [0u8; 16];
    word.get_mut(..len)?.copy_from_slice(bytes);
    *word.get_mut(15)? = u8::try_from(len).ok().filter(|&len| len < 16)?;
    Some(u128::from_le_bytes(word))
}

type Fast<K, V> = HashMap<K, V, BuildHasherDefault<PairHasher>>;

pub(crate) struct FastBpe {
    byte_ids: [u32; 256],
    /// `(left << 32) | right` → `(rank << 32) | merged`.
    merges: Fast<u64, u64>,
    /// Raw bytes of every token that BPE on those bytes gives back as itself: up to 15
    /// bytes by [`short_key`], longer ones by their bytes.
    whole_short: Fast<u128, u32>,
    whole: Fast<Box<[u8]>, u32>,
    /// Unique per table, so a thread's piece cache never serves another vocabulary.
    serial: u64,
}

impl FastBpe {
    /// Build from the model's own serialisation; `None` for any other kind of model.
    pub(crate) fn build(model: &ModelWrapper) -> Option<Self> {
        let json = serde_json::to_value(model).ok()?;
        let plain_bpe = json["type"] == "BPE"
            && json["dropout"].is_null()
            && json["continuing_subword_prefix"].is_null()
            && json["end_of_word_suffix"].is_null()
            && json["ignore_merges"] == Value::Bool(false);
        if !plain_bpe {
            return None;
        }
        let vocab = json["vocab"].as_object()?;
        let id = |token: &str| {
            vocab
                .get(token)?
                .as_u64()
                .and_then(|id| u32::try_from(id).ok())
        };
        let mut byte_ids = [0u32; 256];
        for (byte, slot) in (0..=u8::MAX).zip(byte_ids.iter_mut()) {
            *slot = id(&byte_level::byte_char(byte).to_string())?;
        }
        let merges = json["merges"].as_array()?;
        let mut map = Fast::with_capacity_and_hasher(merges.len(), BuildHasherDefault::default());
        for (rank, merge) in merges.iter().enumerate() {
            let (left, right) = match merge {
                Value::Array(pair) => (pair.first()?.as_str()?, pair.get(1)?.as_str()?),
                Value::String(line) => line.split_once(' ')?,
                _ => return None,
            };
            let merged = id(&format!("{left}{right}"))?;
            let rank = u32::try_from(rank).ok().filter(|&rank| rank != NONE)?;
            // The first occurrence of a pair wins, as in the model's own merge map.
            map.entry(pair_key(id(left)?, id(right)?))
                .or_insert((u64::from(rank) << 32) | u64::from(merged));
        }
        let mut bpe = Self {
            byte_ids,
            merges: map,
            whole_short: Fast::default(),
            whole: Fast::default(),
            serial: SERIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        let mut whole = Fast::default();
        let mut whole_short =
            Fast::with_capacity_and_hasher(vocab.len(), BuildHasherDefault::default());
        let mut ids = Vec::new();
        for (token, id) in vocab {
            let Some(id) = id.as_u64().and_then(|id| u32::try_from(id).ok()) else {
                continue;
            };
            let Some(bytes) = byte_level::alphabet_bytes(token) else {
                continue;
            };
            ids.clear();
            if bpe.merge_piece(&bytes, &mut ids) && ids == [id] {
                match short_key(&bytes) {
                    Some(key) => {
                        whole_short.insert(key, id);
                    }
                    None => {
                        whole.insert(bytes.into_boxed_slice(), id);
                    }
                }
            }
        }
        bpe.whole = whole;
        bpe.whole_short = whole_short;
        Some(bpe)
    }

    /// Append the ids of one piece (raw bytes) to `ids`; always `true` (every length is
    /// merged here).
    pub(crate) fn encode_piece(&self, bytes: &[u8], ids: &mut Vec<u32>) -> bool {
        let Some(key) = short_key(bytes) else {
            match self.whole.get(bytes) {
                Some(&id) => ids.push(id),
                None => {
                    self.merge_piece(bytes, ids);
                }
            }
            return true;
        };
        if let Some(&id) = self.whole_short.get(&key) {
            ids.push(id);
            return true;
        }
        PIECES.with(|cache| {
            let Ok(mut cache) = cache.try_borrow_mut() else {
                self.merge_piece(bytes, ids);
                return;
            };
            if cache.owner != self.serial {
                cache.entries.clear();
                cache.owner = self.serial;
            }
            let cache = &mut cache.entries;
            if let Some(found) = cache.get(&key) {
                ids.extend_from_slice(found);
                return;
            }
            let from = ids.len();
            self.merge_piece(bytes, ids);
            if cache.len() >= PIECE_CACHE_ENTRIES {
                cache.clear();
            }
            let merged = ids.get(from..).unwrap_or_default();
            cache.insert(key, merged.into());
        });
        true
    }

    /// The rank and merged id of the pair `(left, right)`, `(NONE, _)` when it has none.
    fn merge_of(&self, left: u32, right: u32) -> (u32, u32) {
        self.merges
            .get(&pair_key(left, right))
            .map_or((NONE, 0), |&merge| ((merge >> 32) as u32, merge as u32))
    }

    /// BPE for a long piece: a queue of `(rank, position)`, lowest first (so leftmost on
    /// a tie), over a linked list of symbols. An entry is stale when its symbol was merged
    /// away or its pair changed; the rank names the pair, so comparing it detects that.
    fn merge_long(&self, bytes: &[u8], ids: &mut Vec<u32>) {
        use std::cmp::Reverse;
        let len = bytes.len();
        let mut symbols: Vec<u32> = bytes
            .iter()
            .map(|&byte| self.byte_ids[usize::from(byte)])
            .collect();
        let mut alive = vec![true; len];
        let mut next: Vec<usize> = (1..=len).collect();
        let mut previous: Vec<usize> = (0..len).map(|at| at.wrapping_sub(1)).collect();
        let mut queue = std::collections::BinaryHeap::with_capacity(len);
        for at in 0..len.saturating_sub(1) {
            let (rank, _) = self.merge_of(symbols[at], symbols[at + 1]);
            if rank != NONE {
                queue.push(Reverse((rank, at)));
            }
        }
        while let Some(Reverse((rank, at))) = queue.pop() {
            let Some(&right) = next.get(at) else { continue };
            if !alive.get(at).copied().unwrap_or(false) || right >= len {
                continue;
            }
            let (current, merged) = self.merge_of(symbols[at], symbols[right]);
            if current != rank {
                continue;
            }
            symbols[at] = merged;
            alive[right] = false;
            let after = next[right];
            next[at] = after;
            if after < len {
                previous[after] = at;
                let (rank, _) = self.merge_of(merged, symbols[after]);
                if rank != NONE {
                    queue.push(Reverse((rank, at)));
                }
            }
            let before = previous[at];
            if before < len {
                let (rank, _) = self.merge_of(symbols[before], merged);
                if rank != NONE {
                    queue.push(Reverse((rank, before)));
                }
            }
        }
        let mut at = 0;
        while at < len {
            ids.push(symbols[at]);
            at = next[at];
        }
    }

    /// BPE proper: lowest rank first, leftmost on a tie, on a linked list of symbols.
    fn merge_piece(&self, bytes: &[u8], ids: &mut Vec<u32>) -> bool {
        let len = bytes.len();
        if len > MAX_PIECE_BYTES {
            self.merge_long(bytes, ids);
            return true;
        }
        if len == 0 {
            return true;
        }
        let mut symbols = [0u32; MAX_PIECE_BYTES];
        // `ranks[i]`/`merged[i]`: the merge of symbol `i` with the one after it.
        let mut ranks = [NONE; MAX_PIECE_BYTES];
        let mut merged = [0u32; MAX_PIECE_BYTES];
        // `next[i]`: index of the symbol after `i` (`len` at the end).
        let mut next = [0u8; MAX_PIECE_BYTES];
        for (at, &byte) in bytes.iter().enumerate() {
            symbols[at] = self.byte_ids[usize::from(byte)];
            next[at] = (at + 1) as u8;
        }
        for at in 0..len - 1 {
            (ranks[at], merged[at]) = self.merge_of(symbols[at], symbols[at + 1]);
        }
        loop {
            // The lowest rank, leftmost on a tie, and the symbol before it.
            let (mut best, mut best_at, mut before) = (NONE, len, len);
            let (mut previous, mut at) = (len, 0usize);
            while at < len {
                if ranks[at] < best {
                    (best, best_at, before) = (ranks[at], at, previous);
                }
                previous = at;
                at = usize::from(next[at]);
            }
            if best == NONE {
                break;
            }
            let gone = usize::from(next[best_at]);
            symbols[best_at] = merged[best_at];
            next[best_at] = next.get(gone).copied().unwrap_or(len as u8);
            let after = usize::from(next[best_at]);
            (ranks[best_at], merged[best_at]) = if after < len {
                self.merge_of(symbols[best_at], symbols[after])
            } else {
                (NONE, 0)
            };
            if before < len {
                (ranks[before], merged[before]) = self.merge_of(symbols[before], symbols[best_at]);
            }
        }
        let mut at = 0usize;
        while at < len {
            ids.push(symbols[at]);
            at = usize::from(next[at]);
        }
        true
    }
}

fn pair_key(left: u32, right: u32) -> u64 {
    (u64::from(left) << 32) | u64::from(right)
}

/// A multiplicative hasher for the `u64` pair keys (the map is only read with our keys).
#[derive(Default)]
pub(crate) struct PairHasher(u64);

impl PairHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        // Fold the well-mixed high half into the low bits that pick a bucket.
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(word));
        }
    }

    fn write_u128(&mut self, value: u128) {
        self.mix(value as u64);
        self.mix((value >> 64) as u64);
    }

    fn write_usize(&mut self, value: usize) {
        self.mix(value as u64);
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (value ^ (value >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (value >> 32);
    }
}
