//! The prompt-gap cache changes cost, never ids: re-encoding, growing conversations and a
//! tiny budget that forces eviction all give the ids of an uncached tokenizer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::ops::Range;

use deepseek_tokenize::Tokenizer;

/// A conversation of `turns` turns; every turn's text is long enough to be cached.
fn conversation(turns: usize) -> (String, Vec<Range<usize>>) {
    let mut prompt = String::new();
    let mut ranges = Vec::new();
    let mut special = |prompt: &mut String, spelling: &str| {
        let start = prompt.len();
        prompt.push_str(spelling);
        ranges.push(start..prompt.len());
    };
    special(&mut prompt, "<｜begin▁of▁sentence｜>");
    for turn in 0..turns {
        special(
            &mut prompt,
            if turn % 2 == 0 {
                "<｜User｜>"
            } else {
                "<｜Assistant｜>"
            },
        );
        for line in 0..12 {
            prompt.push_str(&format!(
                "Turn {turn}, line {line}: the quick brown fox <｜User｜> jumps 中文.\n"
            ));
        }
    }
    (prompt, ranges)
}

#[test]
fn cached_encodes_equal_uncached_ones_as_the_conversation_grows() {
    let path = common::tokenizer_path();
    let cached = Tokenizer::from_file(&path).unwrap();
    let tiny = Tokenizer::from_file(&path)
        .unwrap()
        .with_gap_cache_bytes(8 << 10);
    let uncached = Tokenizer::from_file(&path).unwrap().with_gap_cache_bytes(0);
    for turns in [1, 2, 5, 10, 30, 30, 60] {
        let (prompt, ranges) = conversation(turns);
        let want = uncached.encode_prompt_sequential(&prompt, &ranges).unwrap();
        assert_eq!(
            cached.encode_prompt(&prompt, &ranges).unwrap(),
            want,
            "{turns} turns, cached"
        );
        assert_eq!(
            tiny.encode_prompt(&prompt, &ranges).unwrap(),
            want,
            "{turns} turns, tiny cache"
        );
        assert_eq!(
            cached.encode_prompt_sequential(&prompt, &ranges).unwrap(),
            want,
            "{turns} turns, sequential"
        );
    }
    assert!(
        cached.gap_cache_len() >= 60,
        "every long turn is cached: {}",
        cached.gap_cache_len()
    );
    assert!(
        tiny.gap_cache_len() < 60,
        "a tiny budget evicts: {}",
        tiny.gap_cache_len()
    );
    assert_eq!(uncached.gap_cache_len(), 0);
}
