//! Byte-level BPE on token ids, for every piece of the plain pipeline: the same merges as
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
//! Shortcuts keep the common case cheap, all exact:
//! - a piece whose bytes spell one vocabulary token that the merges themselves rebuild from
//!   its bytes (checked for every token when the table is built) is that one id, found by a
//!   single hash lookup (`" the"`, `"model"`), after a look in a small per-thread table
//!   of recent ones;
//! - other pieces of up to 15 bytes are cached per thread with their ids;
//! - a run of kanji/kana merges from its characters' ids where `char_merge.rs` allows it;
//! - first merges come from a dense table of byte pairs, later ones through a per-thread
//!   memo of recent lookups in front of the merge table;
//! - a look-up of a pair with no merge (most pairs met while merging a new word) is
//!   mostly answered by a small bit table ([`PairFilter`]), not the megabytes of merges;
//! - up to [`MAX_PIECE_BYTES`], the merges run on an array of symbols that keeps each
//!   adjacent pair's merge, so a merge re-reads only the two pairs it changes; longer
//!   pieces merge through a queue of `(rank, position)` (`n log n`, as the model's own),
//!   so 100k spaces cost no more than they must.
//!
//! Applies only to BPE models without dropout, subword prefix or suffix, with
//! `ignore_merges` off and a vocabulary entry for each of the 256 byte characters.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;
use tokenizers::ModelWrapper;

use crate::byte_level;
use crate::char_merge::{CharMerge, MergeTable};

/// Pieces up to this many bytes merge by scanning an array; longer ones by a queue.
pub(crate) const MAX_PIECE_BYTES: usize = 32;

/// A symbol merged into the one before it.
const GONE: u32 = u32::MAX;

/// Entries of each thread's cache of merged pieces (cleared when full).
const PIECE_CACHE_ENTRIES: usize = 1 << 17;

/// Longer pieces are merged every time (rare, and their merging outweighs a lookup).
const MAX_CACHED_PIECE_BYTES: usize = 256;

thread_local! {
    /// Each thread's working state for pieces (see [`ThreadState`]).
    static STATE: std::cell::RefCell<ThreadState> = std::cell::RefCell::new(ThreadState::default());
}

/// Source of [`FastBpe::serial`]: which table a thread's piece cache was filled by.
static SERIALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// `log2` of the slots of a thread's table of recent whole-token pieces (8192 slots of 24
/// bytes: it stays in the core's cache).
const FRONT_BITS: u32 = 13;

impl Default for ThreadState {
    fn default() -> Self {
        Self {
            owner: 0,
            pieces: Fast::default(),
            long_pieces: Fast::default(),
            ids: Vec::new(),
            front: empty_front(),
            memo: MergeMemo::default(),
            symbols: Vec::new(),
            next: Vec::new(),
            previous: Vec::new(),
            queue: std::collections::BinaryHeap::new(),
        }
    }
}

/// A thread's table of recent whole-token pieces: `(key, id)` per slot.
type FrontTable = [(ShortKey, u32); 1 << FRONT_BITS];

/// An empty [`FrontTable`], made on the heap: `Box::new` of the array builds its 192 KiB on
/// the stack first, even in release builds, which is more than some threads have.
fn empty_front() -> Box<FrontTable> {
    vec![(ShortKey::default(), 0); 1 << FRONT_BITS]
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| empty_front_by_value())
}

/// Not reached (the slice above has the table's length); out of line, so that its stack
/// frame is only made if it were.
#[cold]
#[inline(never)]
fn empty_front_by_value() -> Box<FrontTable> {
    Box::new([(ShortKey::default(), 0); 1 << FRONT_BITS])
}

/// A thread's cache of merged pieces and its merge buffers, borrowed once per text.
struct ThreadState {
    /// The [`FastBpe::serial`] the cache belongs to (0: none yet). Every thread serves one
    /// tokenizer file in practice; another file clears the cache.
    owner: u64,
    /// Pieces of up to 15 bytes that are not one token ([`short_key`]): words repeat, and
    /// merging them is dearer than a lookup.
    pieces: Fast<ShortKey, Stored>,
    /// Longer pieces (up to [`MAX_CACHED_PIECE_BYTES`]) that are not one token, by bytes.
    long_pieces: Fast<Box<[u8]>, Stored>,
    /// The ids of cached pieces of more than [`INLINE_IDS`] ids.
    ids: Vec<u32>,
    /// Recently seen pieces that are one whole token, one per slot by key hash (key 0,
    /// the empty piece, which is never looked up, marks a free slot). An array, not a
    /// slice: a slot index made of [`FRONT_BITS`] bits then needs no bounds check.
    front: Box<FrontTable>,
    /// Recently read merges, by pair (see [`MergeMemo`]).
    memo: MergeMemo,
    /// Buffers of [`PieceEncoder::run_queue`], kept between pieces.
    symbols: Vec<u32>,
    next: Vec<usize>,
    previous: Vec<usize>,
    queue: std::collections::BinaryHeap<std::cmp::Reverse<u128>>,
}

/// Ids a cached piece keeps in its own entry; more go to the thread's arena.
const INLINE_IDS: usize = 3;

/// A cached piece's ids, as filed under the piece: up to [`INLINE_IDS`] in place, so a
/// hit reads no second place in memory (bench (e), a pass over seen text: 79% of hits
/// are two or three ids, 16% four); more as `[start, _, _]` in [`ThreadState::ids`]. With
/// a [`ShortKey`] the entry is 32 bytes, not 24; packing up to three ids into 8 bytes did
/// not pay (cost model -0.3%, wall even).
#[derive(Clone, Copy)]
struct Stored {
    len: u32,
    ids: [u32; INLINE_IDS],
}

impl ThreadState {
    /// Store a merged piece's ids (emptying the piece caches first when they are full):
    /// what to file under the piece.
    fn cache_ids(&mut self, merged: &[u32]) -> Option<Stored> {
        if self.pieces.len() + self.long_pieces.len() >= PIECE_CACHE_ENTRIES {
            self.clear_pieces();
        }
        let len = u32::try_from(merged.len()).ok()?;
        let mut ids = [0; INLINE_IDS];
        match ids.get_mut(..merged.len()) {
            Some(inline) => inline.copy_from_slice(merged),
            None => {
                ids[0] = u32::try_from(self.ids.len()).ok()?;
                self.ids.extend_from_slice(merged);
            }
        }
        Some(Stored { len, ids })
    }

    /// Append the ids `stored` by [`ThreadState::cache_ids`] to `ids`.
    #[inline(always)]
    fn extend_cached(&self, stored: &Stored, ids: &mut Vec<u32>) {
        let len = stored.len as usize;
        if len <= INLINE_IDS {
            // All three, then cut: a fixed-size copy, where the exact length is a call.
            let end = ids.len() + len;
            ids.extend_from_slice(&stored.ids);
            ids.truncate(end);
        } else {
            let start = stored.ids[0] as usize;
            ids.extend_from_slice(self.ids.get(start..start + len).unwrap_or_default());
        }
    }

    fn clear_pieces(&mut self) {
        self.pieces.clear();
        self.long_pieces.clear();
        self.ids.clear();
        self.memo = MergeMemo::default();
        self.front.fill((ShortKey::default(), 0));
    }
}

/// `log2` of the slots of a thread's [`MergeMemo`] (16 bytes each: 512 KiB, the bench
/// machine's L2 per core; 8192 slots measured ~3% slower on e_text, 65536 no better).
const MEMO_BITS: u32 = 15;
const MEMO_SLOTS: usize = 1 << MEMO_BITS;

/// A direct-mapped memo of merge lookups, one slot per pair hash, in front of the merge
/// table. Words are made of recurring syllables, so the same pairs are read again and
/// again; the table itself is megabytes, and each read of it waits on memory.
struct MergeMemo {
    /// `(pair, merge)`; the pair `u64::MAX` (two impossible ids) marks an empty slot.
    slots: Box<[(u64, u64)]>,
}

impl Default for MergeMemo {
    fn default() -> Self {
        Self {
            slots: vec![(u64::MAX, NO_MERGE); MEMO_SLOTS].into_boxed_slice(),
        }
    }
}

impl MergeMemo {
    #[inline]
    fn merge_of(&mut self, bpe: &FastBpe, left: u32, right: u32) -> u64 {
        let pair = pair_key(left, right);
        let at = (pair.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - MEMO_BITS)) as usize;
        match self.slots.get_mut(at) {
            Some(slot) if slot.0 == pair => slot.1,
            Some(slot) => {
                let merge = bpe.merge_of(left, right);
                *slot = (pair, merge);
                merge
            }
            None => bpe.merge_of(left, right),
        }
    }

    /// [`Self::merge_of`] behind the filter, for [`PieceEncoder::run_queue`]'s pairs: most
    /// are characters of kanji/kana runs, which mostly have no merge and rarely recur, so
    /// their slots would only evict others.
    #[inline]
    fn merge_of_rare(&mut self, bpe: &FastBpe, left: u32, right: u32) -> u64 {
        if bpe.may_merge.contains(pair_key(left, right)) {
            self.merge_of(bpe, left, right)
        } else {
            NO_MERGE
        }
    }
}

/// Up to 15 bytes packed with their length into two words: equal keys are equal byte
/// strings. Two `u64`s, not a `u128`: aligned to 8 bytes, a key and an id take 24 bytes,
/// not 32, in the front table and the vocabulary's table.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct ShortKey {
    low: u64,
    high: u64,
}

impl std::hash::Hash for ShortKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u128(u128::from(self.high) << 64 | u128::from(self.low));
    }
}

/// The [`ShortKey`] of a piece of up to 15 bytes; `None` for longer pieces. Overlapping
/// word reads, so no copy loop.
#[inline]
fn short_key(bytes: &[u8]) -> Option<ShortKey> {
    let len = bytes.len();
    // Up to 7 bytes fit in 64 bits (shifts of 128-bit numbers cost several instructions).
    let packed = match len {
        0 => 0,
        1..=3 => {
            let byte = |at: usize| bytes.get(at).map_or(0, |&byte| u64::from(byte) << (8 * at));
            u128::from(byte(0) | byte(len / 2) | byte(len - 1))
        }
        4..=7 => {
            let low = u32::from_le_bytes(*bytes.first_chunk::<4>()?);
            let high = u32::from_le_bytes(*bytes.last_chunk::<4>()?);
            u128::from(u64::from(low) | u64::from(high) << (8 * (len - 4)))
        }
        8..=15 => {
            let low = u64::from_le_bytes(*bytes.first_chunk::<8>()?);
            let high = u64::from_le_bytes(*bytes.last_chunk::<8>()?);
            u128::from(low) | u128::from(high) << (8 * (len - 8))
        }
        _ => return None,
    };
    let packed = packed | (len as u128) << 120;
    Some(ShortKey {
        low: packed as u64,
        high: (packed >> 64) as u64,
    })
}

type Fast<K, V> = HashMap<K, V, BuildHasherDefault<PairHasher>>;

/// A merge packed as `(rank << 32) | merged`; [`NO_MERGE`] when the pair has none.
const NO_MERGE: u64 = u64::MAX;

pub(crate) struct FastBpe {
    byte_ids: [u32; 256],
    /// Merges of two one-byte tokens, indexed by `(left byte << 8) | right byte`: every
    /// first step of a piece is one of these.
    byte_pairs: Box<[u64]>,
    /// `(left << 32) | right` → `(rank << 32) | merged`.
    merges: Fast<u64, u64>,
    /// Which pairs may have a merge (see [`PairFilter`]).
    may_merge: PairFilter,
    /// Raw bytes of every token that BPE on those bytes gives back as itself: up to 15
    /// bytes by [`short_key`], longer ones by their bytes.
    whole_short: Fast<ShortKey, u32>,
    whole: Fast<Box<[u8]>, u32>,
    /// Runs of kanji/kana merged from their characters, when the merges allow it.
    chars: Option<CharMerge>,
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
        let mut rules = Vec::with_capacity(merges.len());
        for (rank, merge) in merges.iter().enumerate() {
            let (left, right) = match merge {
                Value::Array(pair) => (pair.first()?.as_str()?, pair.get(1)?.as_str()?),
                Value::String(line) => line.split_once(' ')?,
                _ => return None,
            };
            let merged = id(&format!("{left}{right}"))?;
            let rank = u32::try_from(rank).ok().filter(|&rank| rank < MAX_RANK)?;
            // The first occurrence of a pair wins, as in the model's own merge map.
            let (left, right) = (id(left)?, id(right)?);
            rules.push((left, right, rank));
            map.entry(pair_key(left, right))
                .or_insert((u64::from(rank) << 32) | u64::from(merged));
        }
        let byte_pairs = (0..=u16::MAX)
            .map(|pair| {
                let [left, right] = pair.to_be_bytes();
                let key = pair_key(byte_ids[usize::from(left)], byte_ids[usize::from(right)]);
                map.get(&key).copied().unwrap_or(NO_MERGE)
            })
            .collect();
        let mut bpe = Self {
            byte_ids,
            byte_pairs,
            may_merge: PairFilter::new(map.keys().copied()),
            merges: map,
            whole_short: Fast::default(),
            whole: Fast::default(),
            chars: None,
            serial: SERIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        let mut whole = Fast::default();
        let mut whole_short =
            Fast::with_capacity_and_hasher(vocab.len(), BuildHasherDefault::default());
        let mut state = ThreadState::default();
        let mut ids = Vec::new();
        for (token, id) in vocab {
            let Some(id) = id.as_u64().and_then(|id| u32::try_from(id).ok()) else {
                continue;
            };
            let Some(bytes) = byte_level::alphabet_bytes(token) else {
                continue;
            };
            ids.clear();
            PieceEncoder {
                bpe: &bpe,
                state: &mut state,
            }
            .merge(&bytes, &mut ids);
            if ids == [id] {
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
        let token_bytes: HashMap<u32, Vec<u8>> = vocab
            .iter()
            .filter_map(|(token, id)| {
                let id = u32::try_from(id.as_u64()?).ok()?;
                Some((id, byte_level::alphabet_bytes(token)?))
            })
            .collect();
        bpe.chars = CharMerge::build(&bpe, rules.into_iter(), &token_bytes);
        Some(bpe)
    }

    /// Whether runs of kanji/kana merge from their characters (`char_merge.rs`).
    pub(crate) fn merges_characters(&self) -> usize {
        self.chars.as_ref().map_or(0, CharMerge::characters)
    }

    /// Run `encode` with this thread's piece encoder (its cache and buffers), borrowed once
    /// for all the pieces of a text.
    pub(crate) fn with_encoder<R>(&self, encode: impl FnOnce(&mut PieceEncoder<'_>) -> R) -> R {
        STATE.with(|state| match state.try_borrow_mut() {
            Ok(mut state) => {
                if state.owner != self.serial {
                    state.clear_pieces();
                    state.owner = self.serial;
                }
                encode(&mut PieceEncoder {
                    bpe: self,
                    state: &mut state,
                })
            }
            // Only if encoding re-entered itself on this thread: a fresh state then.
            Err(_) => encode(&mut PieceEncoder {
                bpe: self,
                state: &mut ThreadState {
                    owner: self.serial,
                    ..ThreadState::default()
                },
            }),
        })
    }

    /// The merge of the pair `(left, right)`, packed as `(rank << 32) | merged`.
    #[inline]
    fn merge_of(&self, left: u32, right: u32) -> u64 {
        let pair = pair_key(left, right);
        if !self.may_merge.contains(pair) {
            return NO_MERGE;
        }
        self.merges.get(&pair).copied().unwrap_or(NO_MERGE)
    }

    /// The merge of two one-byte tokens, by their bytes.
    #[inline]
    fn byte_merge(&self, left: u8, right: u8) -> u64 {
        self.byte_pairs
            .get(usize::from(left) << 8 | usize::from(right))
            .copied()
            .unwrap_or(NO_MERGE)
    }
}

impl MergeTable for FastBpe {
    fn merge(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        let merge = self.merge_of(left, right);
        (merge != NO_MERGE).then_some(((merge >> 32) as u32, merge as u32))
    }

    fn byte_id(&self, byte: u8) -> u32 {
        self.byte_ids[usize::from(byte)]
    }
}

/// A queue entry `(rank << 64) | position`: ordered by rank, then position.
fn queue_entry(merge: u64, at: usize) -> std::cmp::Reverse<u128> {
    std::cmp::Reverse(u128::from(merge >> 32) << 64 | at as u128)
}

/// [`FastBpe`] with one thread's piece cache and merge buffers.
pub(crate) struct PieceEncoder<'a> {
    bpe: &'a FastBpe,
    state: &'a mut ThreadState,
}

impl PieceEncoder<'_> {
    /// Append the ids of one piece (raw bytes) to `ids`.
    #[inline(always)]
    pub(crate) fn encode(&mut self, bytes: &[u8], ids: &mut Vec<u32>) {
        let Some(key) = short_key(bytes) else {
            return self.encode_long(bytes, ids);
        };
        // Frequent words are found in a small direct-mapped table first (it stays in the
        // core's cache); the vocabulary's table is megabytes. This much is inlined into
        // the splitter's loop; the rest is a call.
        let front = ((key.low ^ key.high).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - FRONT_BITS))
            as usize;
        match self.state.front.get(front) {
            Some(&(seen, id)) if seen == key => ids.push(id),
            _ => self.encode_short(bytes, key, front, ids),
        }
    }

    /// A piece of up to 15 bytes (key `key`) not in the front table (at slot `front`).
    #[inline(never)]
    fn encode_short(&mut self, bytes: &[u8], key: ShortKey, front: usize, ids: &mut Vec<u32>) {
        // Words of several tokens first: whole tokens mostly hit the front table, so most
        // pieces that get here are cached words (bench (e): 12% of pieces, against 2.5%
        // whole tokens), and each table look-up waits on memory.
        if let Some(stored) = self.state.pieces.get(&key) {
            self.state.extend_cached(stored, ids);
            return;
        }
        if let Some(&id) = self.bpe.whole_short.get(&key) {
            if let Some(slot) = self.state.front.get_mut(front) {
                *slot = (key, id);
            }
            ids.push(id);
            return;
        }
        if let Some(at) = self.merge_to_cache(bytes, ids) {
            self.state.pieces.insert(key, at);
        }
    }

    /// A piece of more than 15 bytes: a whole token, or merged once and then cached by its
    /// bytes (kanji/kana runs, whitespace and punctuation runs, emoji sequences recur).
    fn encode_long(&mut self, bytes: &[u8], ids: &mut Vec<u32>) {
        if let Some(&id) = self.bpe.whole.get(bytes) {
            ids.push(id);
            return;
        }
        if bytes.len() > MAX_CACHED_PIECE_BYTES {
            return self.merge(bytes, ids);
        }
        if let Some(stored) = self.state.long_pieces.get(bytes) {
            self.state.extend_cached(stored, ids);
            return;
        }
        if let Some(at) = self.merge_to_cache(bytes, ids) {
            self.state.long_pieces.insert(bytes.into(), at);
        }
    }

    /// Merge a piece (appending its ids) and keep its ids: what to file under the piece.
    fn merge_to_cache(&mut self, bytes: &[u8], ids: &mut Vec<u32>) -> Option<Stored> {
        let from = ids.len();
        self.merge(bytes, ids);
        self.state.cache_ids(ids.get(from..).unwrap_or_default())
    }

    /// BPE proper: lowest rank first, leftmost on a tie.
    fn merge(&mut self, bytes: &[u8], ids: &mut Vec<u32>) {
        let bpe = self.bpe;
        // A run of kanji/kana merges from its characters' ids (`char_merge.rs`).
        if let (Some(chars), Some(0xE3..=0xE9)) = (&bpe.chars, bytes.first()) {
            let state = &mut *self.state;
            if bytes.len() >= 6 && chars.char_ids(bytes, &mut state.symbols) {
                state.queue.clear();
                for (at, pair) in state.symbols.windows(2).enumerate() {
                    let merge = bpe.merge_of(pair[0], pair[1]);
                    if merge != NO_MERGE {
                        state.queue.push(queue_entry(merge, at));
                    }
                }
                return self.run_queue(ids);
            }
        }
        if bytes.len() > MAX_PIECE_BYTES {
            let state = &mut *self.state;
            state.symbols.clear();
            state
                .symbols
                .extend(bytes.iter().map(|&byte| bpe.byte_ids[usize::from(byte)]));
            state.queue.clear();
            for (at, pair) in bytes.windows(2).enumerate() {
                let merge = bpe.byte_merge(pair[0], pair[1]);
                if merge != NO_MERGE {
                    state.queue.push(queue_entry(merge, at));
                }
            }
            self.run_queue(ids);
        } else {
            bpe.merge_short(bytes, ids, &mut self.state.memo);
        }
    }

    /// BPE for a long piece, from the symbols and the queue of their first merges: a
    /// queue of `(rank, position)`, lowest first (so leftmost on a tie), over a linked
    /// list of symbols. An entry is stale when its symbol was merged away or its pair
    /// changed; the rank names the pair, so comparing it detects that.
    fn run_queue(&mut self, ids: &mut Vec<u32>) {
        use std::cmp::Reverse;
        let bpe = self.bpe;
        let ThreadState {
            symbols,
            next,
            previous,
            queue,
            memo,
            ..
        } = &mut *self.state;
        let len = symbols.len();
        next.clear();
        next.extend(1..=len);
        previous.clear();
        previous.extend((0..len).map(|at| at.wrapping_sub(1)));
        let entry = queue_entry;
        let symbol = |symbols: &[u32], at: usize| symbols.get(at).copied().unwrap_or(GONE);
        while let Some(Reverse(top)) = queue.pop() {
            let (rank, at) = ((top >> 64) as u64, top as u64 as usize);
            let right = next.get(at).copied().unwrap_or(len);
            let left_symbol = symbol(symbols, at);
            if left_symbol == GONE || right >= len {
                continue;
            }
            let merge = memo.merge_of_rare(bpe, left_symbol, symbol(symbols, right));
            if merge == NO_MERGE || merge >> 32 != rank {
                continue;
            }
            let merged = merge as u32;
            if let Some(slot) = symbols.get_mut(at) {
                *slot = merged;
            }
            if let Some(slot) = symbols.get_mut(right) {
                *slot = GONE;
            }
            let after = next.get(right).copied().unwrap_or(len);
            if let Some(slot) = next.get_mut(at) {
                *slot = after;
            }
            if after < len {
                if let Some(slot) = previous.get_mut(after) {
                    *slot = at;
                }
                let merge = memo.merge_of_rare(bpe, merged, symbol(symbols, after));
                if merge != NO_MERGE {
                    queue.push(entry(merge, at));
                }
            }
            let before = previous.get(at).copied().unwrap_or(usize::MAX);
            if before < len {
                let merge = memo.merge_of_rare(bpe, symbol(symbols, before), merged);
                if merge != NO_MERGE {
                    queue.push(entry(merge, before));
                }
            }
        }
        let mut at = 0;
        while at < len {
            ids.push(symbol(symbols, at));
            at = next.get(at).copied().unwrap_or(len);
        }
    }
}

impl FastBpe {
    /// BPE on a piece of at most [`MAX_PIECE_BYTES`]. Each symbol keeps the merge with
    /// the next one, so a merge re-reads only the two pairs it changes. The lowest rank,
    /// leftmost on a tie, is the least of the keys `(rank << 5) | position` (a symbol
    /// with no merge, or merged away, has [`NO_KEY`]): one branch-free pass over a fixed
    /// array, which the compiler vectorises (a scan that branched on each rank
    /// mispredicted about once a merge).
    fn merge_short(&self, bytes: &[u8], ids: &mut Vec<u32>, memo: &mut MergeMemo) {
        let len = bytes.len();
        if len == 0 || len > MAX_PIECE_BYTES {
            return;
        }
        let mut symbols = [0u32; MAX_PIECE_BYTES];
        // `keys[i]`, `merged[i]`: the merge of symbol `i` with the one after it.
        let mut keys = [NO_KEY; MAX_PIECE_BYTES];
        let mut merged = [0u32; MAX_PIECE_BYTES];
        // `next[i]`, `previous[i]`: the symbols around `i` (`len` past either end).
        let mut next = [0u8; MAX_PIECE_BYTES];
        let mut previous = [0u8; MAX_PIECE_BYTES];
        let end = len as u8;
        for (at, &byte) in bytes.iter().enumerate() {
            symbols[at] = self.byte_ids[usize::from(byte)];
            next[at] = (at + 1) as u8;
            previous[at] = at.checked_sub(1).map_or(end, |before| before as u8);
        }
        for (at, pair) in bytes.windows(2).enumerate() {
            let merge = self.byte_merge(pair[0], pair[1]);
            (keys[at], merged[at]) = (merge_key(merge, at), merge as u32);
        }
        loop {
            let best = keys.iter().copied().min().unwrap_or(NO_KEY);
            if best == NO_KEY {
                break;
            }
            let at = (best & 31) as usize;
            let gone = usize::from(next[at]);
            symbols[at] = merged[at];
            keys[gone] = NO_KEY;
            let after = next[gone];
            next[at] = after;
            let merge = if after < end {
                previous[usize::from(after)] = at as u8;
                memo.merge_of(self, symbols[at], symbols[usize::from(after)])
            } else {
                NO_MERGE
            };
            (keys[at], merged[at]) = (merge_key(merge, at), merge as u32);
            let before = usize::from(previous[at]);
            if before < len {
                let merge = memo.merge_of(self, symbols[before], symbols[at]);
                (keys[before], merged[before]) = (merge_key(merge, before), merge as u32);
            }
        }
        let mut at = 0usize;
        while at < len {
            ids.push(symbols[at]);
            at = usize::from(next[at]);
        }
    }
}

/// A merge's key in [`FastBpe::merge_short`]: `(rank << 5) | position`, or [`NO_KEY`]
/// for no merge (ranks stay below [`MAX_RANK`]: checked when the table is built).
#[inline]
fn merge_key(merge: u64, at: usize) -> i32 {
    if merge == NO_MERGE {
        NO_KEY
    } else {
        ((merge >> 32) as i32) << 5 | at as i32
    }
}

/// No merge, in [`FastBpe::merge_short`]'s keys.
const NO_KEY: i32 = i32::MAX;

/// Ranks stay below this, for [`merge_key`]: the largest key, `(MAX_RANK - 1) << 5 | 31`,
/// is then below [`NO_KEY`] (vocabularies have ~2^17 merges).
const MAX_RANK: u32 = (1 << 26) - 1;

/// `log2` of the bits of a [`PairFilter`] (128 KiB: it stays in the core's cache).
const FILTER_BITS: u32 = 20;

/// One bit per hash of a pair, set for every pair the merges have: a clear bit answers
/// "no merge" without reading the merge table. Most pairs looked up while merging a new
/// word have no merge (four in five on the bench's text), and the table is megabytes.
struct PairFilter {
    bits: Box<[u64]>,
}

impl PairFilter {
    fn new(pairs: impl Iterator<Item = u64>) -> Self {
        let mut bits = vec![0u64; 1 << (FILTER_BITS - 6)].into_boxed_slice();
        for pair in pairs {
            let bit = Self::bit(pair);
            if let Some(word) = bits.get_mut(bit >> 6) {
                *word |= 1 << (bit & 63);
            }
        }
        Self { bits }
    }

    #[inline]
    fn bit(pair: u64) -> usize {
        (pair.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - FILTER_BITS)) as usize
    }

    /// `false` only for a pair with no merge.
    #[inline]
    fn contains(&self, pair: u64) -> bool {
        let bit = Self::bit(pair);
        self.bits
            .get(bit >> 6)
            .is_none_or(|word| word & (1 << (bit & 63)) != 0)
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

#[cfg(test)]
mod tests {
    use super::{merge_key, ThreadState, FRONT_BITS, MAX_PIECE_BYTES, MAX_RANK, NO_KEY, NO_MERGE};

    /// A thread with a small stack (musl's default is 128 KiB) can hold a piece encoder's
    /// state: its tables are made on the heap, not built on the stack and moved there.
    #[test]
    fn thread_state_fits_a_small_stack() {
        let slots = std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(|| ThreadState::default().front.len())
            .ok()
            .and_then(|thread| thread.join().ok());
        assert_eq!(slots, Some(1 << FRONT_BITS));
    }

    #[test]
    fn merge_keys_order_by_rank_then_position_and_stay_below_no_merge() {
        let merge = |rank: u32| u64::from(rank) << 32 | 7;
        let last = MAX_PIECE_BYTES - 1;
        assert!(merge_key(merge(MAX_RANK - 1), last) < NO_KEY);
        assert_eq!(merge_key(NO_MERGE, 0), NO_KEY);
        assert!(merge_key(merge(3), last) < merge_key(merge(4), 0));
        assert!(merge_key(merge(3), 1) < merge_key(merge(3), 2));
    }
}
