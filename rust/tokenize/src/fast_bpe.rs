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
//! Applies only to BPE models without dropout, subword prefix or suffix, with
//! `ignore_merges` off and a vocabulary entry for each of the 256 byte characters; long
//! pieces go to the model itself (this loop is quadratic in the piece length).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;
use tokenizers::ModelWrapper;

use crate::byte_level;

/// Pieces longer than this many bytes are left to the model (its queue is `n log n`).
pub(crate) const MAX_PIECE_BYTES: usize = 64;

pub(crate) struct FastBpe {
    byte_ids: [u32; 256],
    /// `(left << 32) | right` → `(rank << 32) | merged`.
    merges: HashMap<u64, u64, BuildHasherDefault<PairHasher>>,
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
        let mut map =
            HashMap::with_capacity_and_hasher(merges.len(), BuildHasherDefault::default());
        for (rank, merge) in merges.iter().enumerate() {
            let (left, right) = match merge {
                Value::Array(pair) => (pair.first()?.as_str()?, pair.get(1)?.as_str()?),
                Value::String(line) => line.split_once(' ')?,
                _ => return None,
            };
            let merged = id(&format!("{left}{right}"))?;
            let rank = u64::try_from(rank).ok()?;
            map.insert(
                pair_key(id(left)?, id(right)?),
                (rank << 32) | u64::from(merged),
            );
        }
        Some(Self {
            byte_ids,
            merges: map,
        })
    }

    /// Append the ids of one piece (raw bytes) to `ids`; `false`, with nothing appended,
    /// when the piece is longer than [`MAX_PIECE_BYTES`].
    pub(crate) fn encode_piece(&self, bytes: &[u8], ids: &mut Vec<u32>) -> bool {
        if bytes.len() > MAX_PIECE_BYTES {
            return false;
        }
        let mut symbols = [0u32; MAX_PIECE_BYTES];
        let mut len = 0;
        for (slot, &byte) in symbols.iter_mut().zip(bytes) {
            *slot = self.byte_ids[usize::from(byte)];
            len += 1;
        }
        loop {
            let mut best: Option<(u64, usize)> = None;
            for (at, pair) in symbols[..len].windows(2).enumerate() {
                if let Some(&merge) = self.merges.get(&pair_key(pair[0], pair[1])) {
                    if best.is_none_or(|(lowest, _)| merge >> 32 < lowest >> 32) {
                        best = Some((merge, at));
                    }
                }
            }
            let Some((merge, at)) = best else { break };
            symbols[at] = (merge & u64::from(u32::MAX)) as u32;
            symbols.copy_within(at + 2..len, at + 1);
            len -= 1;
        }
        ids.extend_from_slice(&symbols[..len]);
        true
    }
}

fn pair_key(left: u32, right: u32) -> u64 {
    (u64::from(left) << 32) | u64::from(right)
}

/// A multiplicative hasher for the `u64` pair keys (the map is only read with our keys).
#[derive(Default)]
pub(crate) struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 =
                (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (value ^ (value >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (value >> 32);
    }
}
