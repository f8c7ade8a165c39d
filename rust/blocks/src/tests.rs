#![allow(clippy::unwrap_used)]

use std::num::NonZeroUsize;

use xxhash_rust::xxh3::xxh3_64;

use super::*;

fn size(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap()
}

/// `0, 1, 2, …, len-1`.
fn counting(len: u32) -> Vec<u32> {
    (0..len).collect()
}

/// The definition written out the plainest way: a fresh byte string per block.
fn by_definition(ids: &[u32], block_size: usize) -> Vec<u64> {
    let mut previous = 0u64;
    ids.chunks_exact(block_size)
        .map(|block| {
            let mut bytes = previous.to_le_bytes().to_vec();
            for id in block {
                bytes.extend_from_slice(&id.to_le_bytes());
            }
            previous = xxh3_64(&bytes);
            previous
        })
        .collect()
}

#[test]
fn xxh3_is_the_reference_algorithm() {
    // xxHash's own test values for XXH3_64bits (seed 0).
    assert_eq!(xxh3_64(b""), 0x2D06_8005_38D3_94C2);
    assert_eq!(xxh3_64(b"a"), 0xE6C6_32B6_1E96_4E1F);
}

/// Pinned values, computed independently (Python's `xxhash` package over the bytes of the
/// definition): these must never change (routers and stored hashes rely on them).
#[test]
fn pinned_vectors() {
    let cases: &[(&[u32], usize, &[u64])] = &[
        (&[], 128, &[]),
        (&[1, 2, 3], 4, &[]),
        (&[1, 2, 3, 4], 4, &[PIN_1234]),
        (&[1, 2, 3, 4, 5, 6, 7, 8, 9], 4, &[PIN_1234, PIN_5678]),
        (&[0], 1, &[PIN_ZERO]),
    ];
    for (ids, block_size, expected) in cases {
        assert_eq!(
            block_hashes([*ids], size(*block_size)),
            *expected,
            "{ids:?} / {block_size}"
        );
    }
    let ids = counting(300);
    let hashes = block_hashes([ids.as_slice()], DEFAULT_BLOCK_SIZE);
    assert_eq!(hashes, [PIN_COUNT_0, PIN_COUNT_1]);
    assert_eq!(
        prefix_hash([ids.as_slice()], 300, DEFAULT_BLOCK_SIZE),
        PIN_COUNT_300
    );
}

const PIN_1234: u64 = 0x3418_39ab_be30_be0b;
const PIN_5678: u64 = 0x37b6_de06_23bd_b5ca;
const PIN_ZERO: u64 = 0xc499_8f91_69c2_a4f0;
const PIN_COUNT_0: u64 = 0x2be4_082d_c62e_bdd4;
const PIN_COUNT_1: u64 = 0xe1e4_3904_8a99_98c4;
const PIN_COUNT_300: u64 = 0x7e4a_0092_966e_631a;

#[test]
fn equals_the_definition() {
    let ids: Vec<u32> = (0..5_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % 129_280)
        .collect();
    for block_size in [1, 2, 3, 16, 64, 128, 256, 5_000, 6_000] {
        assert_eq!(
            block_hashes([ids.as_slice()], size(block_size)),
            by_definition(&ids, block_size),
            "block size {block_size}"
        );
    }
}

#[test]
fn pieces_do_not_matter() {
    let ids = counting(1_000);
    let whole = block_hashes([ids.as_slice()], size(16));
    for cut in [0, 1, 15, 16, 17, 500, 999, 1_000] {
        let (a, b) = ids.split_at(cut);
        assert_eq!(block_hashes([a, b], size(16)), whole, "cut at {cut}");
    }
    let singles: Vec<&[u32]> = ids.chunks(1).collect();
    assert_eq!(block_hashes(singles, size(16)), whole);
    let odd: Vec<&[u32]> = ids.chunks(7).collect();
    assert_eq!(block_hashes(odd, size(16)), whole);
}

#[test]
fn equal_prefixes_share_hashes_and_a_difference_changes_every_later_one() {
    let a = counting(1_024);
    for changed in [0usize, 1, 127, 128, 300, 1_023] {
        let mut b = a.clone();
        b[changed] += 1;
        let ha = block_hashes([a.as_slice()], DEFAULT_BLOCK_SIZE);
        let hb = block_hashes([b.as_slice()], DEFAULT_BLOCK_SIZE);
        let first_different = changed / 128;
        assert_eq!(
            ha[..first_different],
            hb[..first_different],
            "change at {changed}"
        );
        for k in first_different..ha.len() {
            assert_ne!(ha[k], hb[k], "change at {changed}, block {k}");
        }
    }
}

#[test]
fn a_prompt_that_extends_another_keeps_its_hashes() {
    let long = counting(2_000);
    let short = &long[..1_000];
    let hs = block_hashes([short], DEFAULT_BLOCK_SIZE);
    let hl = block_hashes([long.as_slice()], DEFAULT_BLOCK_SIZE);
    assert_eq!(hs.len(), 7);
    assert_eq!(hl[..7], hs[..]);
}

#[test]
fn the_chain_covers_what_came_before() {
    // The same block after different prefixes hashes differently.
    let block: Vec<u32> = vec![7; 4];
    let a = [vec![1u32; 4], block.clone()].concat();
    let b = [vec![2u32; 4], block].concat();
    let ha = block_hashes([a.as_slice()], size(4));
    let hb = block_hashes([b.as_slice()], size(4));
    assert_ne!(ha[1], hb[1]);
}

#[test]
fn prefix_hash_continues_the_chain() {
    let ids = counting(1_000);
    let hashes = block_hashes([ids.as_slice()], size(100));
    for k in 1..=10 {
        assert_eq!(
            prefix_hash([ids.as_slice()], k * 100, size(100)),
            hashes[k - 1]
        );
    }
    assert_eq!(prefix_hash([ids.as_slice()], 0, size(100)), 0);
    // A partial last block is hashed with the chain before it, and only its own ids.
    let partial = prefix_hash([ids.as_slice()], 250, size(100));
    let mut bytes = hashes[1].to_le_bytes().to_vec();
    for id in &ids[200..250] {
        bytes.extend_from_slice(&id.to_le_bytes());
    }
    assert_eq!(partial, xxh3_64(&bytes));
    // Longer than the ids: all of them; in pieces: the same.
    assert_eq!(
        prefix_hash([&ids[..10]], 99, size(100)),
        prefix_hash([&ids[..3], &ids[3..10]], 10, size(100))
    );
    assert_ne!(prefix_hash([ids.as_slice()], 251, size(100)), partial);
}

#[test]
fn the_hasher_counts() {
    let mut hasher = BlockHasher::new(size(4));
    let mut seen = Vec::new();
    hasher.feed(&[1, 2, 3], |h| seen.push(h));
    assert_eq!((hasher.blocks(), hasher.pending(), seen.len()), (0, 3, 0));
    hasher.feed(&[4, 5], |h| seen.push(h));
    assert_eq!((hasher.blocks(), hasher.pending(), seen.len()), (1, 1, 1));
    assert_eq!(seen, block_hashes([[1u32, 2, 3, 4].as_slice()], size(4)));
}

#[test]
fn the_same_on_every_thread() {
    let ids = counting(100_000);
    let here = block_hashes([ids.as_slice()], DEFAULT_BLOCK_SIZE);
    let there: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| block_hashes([ids.as_slice()], DEFAULT_BLOCK_SIZE)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for hashes in there {
        assert_eq!(hashes, here);
    }
}
