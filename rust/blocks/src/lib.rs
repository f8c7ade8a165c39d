//! KV-cache block hashes of exact token ids: what a prompt shares with another, in the
//! units an engine caches.
//!
//! Engines with prefix caching (vLLM, SGLang) keep a prompt's KV cache in blocks of a fixed
//! number of tokens and reuse a block only when every token before it matches too. This
//! crate names those blocks: the ids are cut into blocks of `block_size` (128 by default),
//! and each FULL block gets one 64-bit hash that covers the block and, through the previous
//! hash, everything before it. Two prompts share their first `k` block hashes exactly when
//! they share their first `k × block_size` ids (up to 64-bit collisions). A last, partial
//! block gets no hash (an engine does not share it either).
//!
//! # The definition (stable: it never changes between versions or platforms)
//!
//! ```text
//! h(-1) = 0
//! h(i)  = XXH3_64(le64(h(i-1)) ‖ le32(id[i·B]) ‖ le32(id[i·B+1]) ‖ … ‖ le32(id[i·B+B-1]))
//! ```
//!
//! XXH3_64 is the 64-bit XXH3 of xxHash (seed 0, no secret), `le64`/`le32` little-endian
//! bytes, `‖` concatenation, `B` the block size. So the input of each block is `8 + 4·B`
//! bytes. [`prefix_hash`] extends the same chain to a prefix of any length: its last block
//! may be partial (fewer than `B` ids), which makes it a routing key that no engine block
//! equals, but that equals the block hash when the length is a multiple of `B`.
//!
//! The crate refuses to know which engine or replica holds what, and what a conversation is:
//! it hashes ids. Routing decisions are made by its callers.

use std::num::NonZeroUsize;

use xxhash_rust::xxh3::xxh3_64;

/// The block size DeepSeek's deployments and vLLM's defaults for it use (tokens).
pub const DEFAULT_BLOCK_SIZE: NonZeroUsize = match NonZeroUsize::new(128) {
    Some(size) => size,
    None => NonZeroUsize::MIN,
};

/// Chained hashes of ids fed in any number of pieces: the hash of each full block as soon
/// as it is complete. Feeding `[a, b]` then `[c]` gives what feeding `[a, b, c]` gives.
#[derive(Debug, Clone)]
pub struct BlockHasher {
    block_size: usize,
    /// The previous block's hash (8 bytes) then the current block's ids so far.
    buffer: Vec<u8>,
    previous: u64,
    blocks: usize,
}

impl BlockHasher {
    pub fn new(block_size: NonZeroUsize) -> Self {
        let block_size = block_size.get();
        let mut buffer = Vec::with_capacity(8 + 4 * block_size);
        buffer.extend_from_slice(&0u64.to_le_bytes());
        Self {
            block_size,
            buffer,
            previous: 0,
            blocks: 0,
        }
    }

    /// Feed more ids; calls `full_block` with each block hash completed by them, in order.
    pub fn feed(&mut self, ids: &[u32], mut full_block: impl FnMut(u64)) {
        let mut rest = ids;
        while !rest.is_empty() {
            let have = (self.buffer.len() - 8) / 4;
            let take = (self.block_size - have).min(rest.len());
            let (now, later) = rest.split_at(take);
            // Sized first, then filled: a loop the compiler turns into a copy (on
            // little-endian machines the bytes are the ids' own), not a push per id.
            let start = self.buffer.len();
            self.buffer.resize(start + 4 * take, 0);
            for (bytes, id) in self.buffer[start..].chunks_exact_mut(4).zip(now) {
                bytes.copy_from_slice(&id.to_le_bytes());
            }
            rest = later;
            if have + take == self.block_size {
                full_block(self.close_block());
            }
        }
    }

    /// The hash of the current block, ending it: the chain goes on from it.
    fn close_block(&mut self) -> u64 {
        let hash = xxh3_64(&self.buffer);
        self.previous = hash;
        self.blocks += 1;
        self.buffer.clear();
        self.buffer.extend_from_slice(&hash.to_le_bytes());
        hash
    }

    /// Full blocks hashed so far.
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// Ids fed since the last full block.
    pub fn pending(&self) -> usize {
        (self.buffer.len() - 8) / 4
    }

    /// The chain's hash of everything fed: the last block hash when nothing is pending, else
    /// the pending partial block hashed like a full one; 0 when nothing was fed.
    pub fn finish(&self) -> u64 {
        if self.pending() == 0 {
            self.previous
        } else {
            xxh3_64(&self.buffer)
        }
    }
}

/// One hash per full block of `ids` (consecutive pieces of one sequence), in order.
pub fn block_hashes<'a>(
    pieces: impl IntoIterator<Item = &'a [u32]>,
    block_size: NonZeroUsize,
) -> Vec<u64> {
    let mut hasher = BlockHasher::new(block_size);
    let mut hashes = Vec::new();
    for piece in pieces {
        hashes.reserve((hasher.pending() + piece.len()) / block_size.get());
        hasher.feed(piece, |hash| hashes.push(hash));
    }
    hashes
}

/// The chained hash of the first `len` ids of `pieces` (all of them when there are fewer):
/// the last block may be partial. Equals `block_hashes(..)[len / B - 1]` when `len` is a
/// non-zero multiple of the block size `B`; 0 for an empty prefix.
pub fn prefix_hash<'a>(
    pieces: impl IntoIterator<Item = &'a [u32]>,
    len: usize,
    block_size: NonZeroUsize,
) -> u64 {
    let mut hasher = BlockHasher::new(block_size);
    let mut left = len;
    for piece in pieces {
        if left == 0 {
            break;
        }
        let take = piece.len().min(left);
        hasher.feed(&piece[..take], |_| {});
        left -= take;
    }
    hasher.finish()
}

#[cfg(test)]
mod tests;
