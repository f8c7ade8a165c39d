//! `Tokenizer::encode_prompt_ids_early`: a large prompt's ids reach the caller in order
//! while the pool encodes the rest, and they are exactly the ids of a sequential encode.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::ops::Range;

use common::{Lcg, PromptBuilder};
use deepseek_tokenize::Tokenizer;

const WORDS: &[&str] = &[
    "the ",
    "quick ",
    "fox ",
    "12345 ",
    "中文",
    "かな",
    " 😀",
    "\n\n",
    "    ",
    "{\"k\": 1}\n",
    "naïve ",
    "<｜User｜>",
    "tab\t",
    "x",
];

/// A prompt of `gaps` gaps of about `gap_bytes` each, with one gap of `long_bytes` (more
/// than the gap cache takes, so it is cut in pieces) halfway, specials between them.
fn prompt(
    seed: u64,
    gaps: usize,
    gap_bytes: usize,
    long_bytes: usize,
) -> (String, Vec<Range<usize>>) {
    let mut rng = Lcg(seed);
    let mut builder = PromptBuilder::new();
    for gap in 0..=gaps {
        builder.turn(gap);
        let end = builder.prompt.len()
            + if gap == gaps / 2 {
                long_bytes
            } else {
                gap_bytes
            };
        while builder.prompt.len() < end {
            builder.prompt.push_str(rng.pick(WORDS));
        }
    }
    builder.build()
}

/// A tokenizer with the default caches, and one without a gap cache (the reference).
fn tokenizers() -> (Tokenizer, Tokenizer) {
    two_threads();
    let path = common::tokenizer_path();
    let tokenizer = Tokenizer::from_file(&path).unwrap();
    (
        tokenizer,
        Tokenizer::from_file(&path).unwrap().with_gap_cache_bytes(0),
    )
}

/// The ids given early (concatenated), whether they were given, and the returned ids.
fn early(
    tokenizer: &Tokenizer,
    prompt: &str,
    ranges: &[Range<usize>],
) -> (Vec<u32>, bool, Vec<u32>) {
    let mut given = Vec::new();
    let (ids, delivered) = tokenizer
        .encode_prompt_ids_early(prompt, ranges, &mut |ids: &[u32]| {
            given.extend_from_slice(ids)
        })
        .unwrap();
    (given, delivered, ids.into_vec())
}

fn two_threads() {
    // Each test binary runs its tests in one process under `cargo test`: the pool may
    // already be built, with as many threads as CPUs.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build_global();
}

#[test]
fn ids_given_early_are_the_prompts_ids_in_order() {
    let (tokenizer, reference) = tokenizers();
    // Many gaps (runs of whole gaps), one long gap (cut in pieces), and both.
    for (seed, gaps, gap_bytes, long_bytes) in [
        (1, 200, 1500, 10),
        (2, 1, 10, 1_500_000),
        (3, 60, 4000, 1_200_000),
    ] {
        let (prompt, ranges) = prompt(seed, gaps, gap_bytes, long_bytes);
        let want = reference
            .encode_prompt_sequential(&prompt, &ranges)
            .unwrap();
        let (given, delivered, ids) = early(&tokenizer, &prompt, &ranges);
        assert_eq!(delivered, rayon::current_num_threads() > 1, "seed {seed}");
        assert_eq!(ids, want, "seed {seed}: returned ids");
        if delivered {
            assert_eq!(given, want, "seed {seed}: ids given early");
        } else {
            assert!(given.is_empty());
        }
        // The same prompt again is the kept prompt itself: nothing to give early.
        let (given, delivered, ids) = early(&tokenizer, &prompt, &ranges);
        assert!(!delivered && given.is_empty());
        assert_eq!(ids, want, "seed {seed}: again");
    }
}

#[test]
fn a_prompt_sharing_a_little_with_a_kept_one_gives_the_shared_ids_first() {
    let (tokenizer, reference) = tokenizers();
    let (first, first_ranges) = prompt(4, 40, 3000, 10);
    tokenizer.encode_prompt_ids(&first, &first_ranges).unwrap();
    // The same first two gaps and specials, then other text.
    let shared = first_ranges[2].start;
    let (other, other_ranges) = prompt(5, 40, 3000, 10);
    let cut = other_ranges[2].start;
    let prompt = format!("{}{}", &first[..shared], &other[cut..]);
    let ranges: Vec<Range<usize>> = first_ranges[..2]
        .iter()
        .cloned()
        .chain(
            other_ranges[2..]
                .iter()
                .map(|r| r.start - cut + shared..r.end - cut + shared),
        )
        .collect();
    let want = reference
        .encode_prompt_sequential(&prompt, &ranges)
        .unwrap();
    let (given, delivered, ids) = early(&tokenizer, &prompt, &ranges);
    assert_eq!(delivered, rayon::current_num_threads() > 1);
    assert_eq!(ids, want);
    if delivered {
        assert_eq!(given, want);
    }
}

#[test]
fn a_pool_thread_is_never_made_to_wait_on_the_pool() {
    let (prompt, ranges) = prompt(6, 100, 2000, 10);
    let tokenizer = common::tokenizer();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let (given, delivered, ids) = pool.install(|| early(tokenizer, &prompt, &ranges));
    assert!(!delivered && given.is_empty());
    assert_eq!(
        ids,
        tokenizer
            .encode_prompt_sequential(&prompt, &ranges)
            .unwrap()
    );
}
