//! The prompt-gap cache changes cost, never ids: re-encoding, growing conversations and a
//! tiny budget that forces eviction all give the ids of an uncached tokenizer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::ops::Range;

use common::{Lcg, PromptBuilder};
use deepseek_tokenize::Tokenizer;

/// A conversation of `turns` turns; every turn's text is long enough to be cached.
fn conversation(turns: usize) -> (String, Vec<Range<usize>>) {
    conversation_about(0, turns)
}

/// [`conversation`] on its own `topic` (another text from the first turn on).
fn conversation_about(topic: usize, turns: usize) -> (String, Vec<Range<usize>>) {
    let mut builder = PromptBuilder::new();
    for turn in 0..turns {
        builder.turn(turn);
        for line in 0..12 {
            builder.prompt.push_str(&format!(
                "Turn {turn}, line {line}: the quick brown fox {topic} <｜User｜> jumps 中文.\n"
            ));
        }
    }
    builder.build()
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

/// Interleaved conversations that share a start, grow, and diverge in the middle: the
/// recent-prompt cache reuses only what is identical, so every encode equals a cold one.
#[test]
fn interleaved_and_edited_conversations_equal_cold_encodes() {
    let path = common::tokenizer_path();
    let cached = Tokenizer::from_file(&path).unwrap();
    let uncached = Tokenizer::from_file(&path).unwrap().with_gap_cache_bytes(0);
    let edited = |turns: usize, at: usize| {
        let (mut prompt, ranges) = conversation(turns);
        // Change one byte inside turn `at`'s text (same length, so the ranges stay valid).
        let start = ranges[at.min(ranges.len() - 1)].end;
        prompt.replace_range(start + 5..start + 6, "#");
        (prompt, ranges)
    };
    let prompts = [
        conversation(10),
        conversation(12),
        edited(12, 3),
        conversation(13),
        edited(13, 12),
        conversation(11),
        edited(14, 1),
        conversation(14),
        conversation(3),
        conversation(20),
    ];
    for (i, (prompt, ranges)) in prompts.iter().enumerate() {
        let want = uncached.encode_prompt_sequential(prompt, ranges).unwrap();
        assert_eq!(
            cached.encode_prompt(prompt, ranges).unwrap(),
            want,
            "prompt {i}"
        );
        // The same prompt again, and a cut-off copy without its last turn's text.
        assert_eq!(
            cached.encode_prompt(prompt, ranges).unwrap(),
            want,
            "prompt {i} again"
        );
        let last = ranges.last().unwrap().end;
        let cut = &prompt[..last];
        assert_eq!(
            cached.encode_prompt(cut, ranges).unwrap(),
            uncached.encode_prompt_sequential(cut, ranges).unwrap(),
            "prompt {i} cut"
        );
    }
}

/// What keeping one whole prompt costs the recent-prompt cache (text, ids, ranges).
fn whole_prompt_bytes(prompt: &str, ranges: &[Range<usize>], ids: &[u32]) -> usize {
    prompt.len() + ids.len() * 4 + ranges.len() * 24
}

/// One turn at a time past the chain limit (32 links): every encode equals a cold one, and
/// the cache holds about one copy of the conversation, not one per kept prompt.
#[test]
fn a_conversation_growing_turn_by_turn_is_kept_once() {
    let path = common::tokenizer_path();
    let cached = Tokenizer::from_file(&path).unwrap();
    let uncached = Tokenizer::from_file(&path).unwrap().with_gap_cache_bytes(0);
    let mut last = 0;
    for turns in 1..=80 {
        let (prompt, ranges) = conversation(turns);
        let want = uncached.encode_prompt_sequential(&prompt, &ranges).unwrap();
        let ids = cached.encode_prompt_ids(&prompt, &ranges).unwrap();
        assert_eq!(ids.slices().concat(), want, "{turns} turns");
        assert_eq!(ids.into_vec(), want, "{turns} turns, one vector");
        last = whole_prompt_bytes(&prompt, &ranges, &want);
    }
    let kept = cached.prefix_cache_bytes();
    assert!(
        kept >= last && kept <= last * 3 / 2,
        "four kept prompts of one conversation hold {kept} bytes; the last alone costs {last}"
    );
}

/// Random interleavings of conversations that grow, shrink, get edited and are re-sent,
/// with the default budget and with one small enough to evict: every encode equals a cold
/// one and the small cache stays within half its budget.
#[test]
fn random_interleavings_equal_cold_encodes_within_the_budget() {
    const SMALL: usize = 256 << 10;
    let path = common::tokenizer_path();
    let cached = Tokenizer::from_file(&path).unwrap();
    let small = Tokenizer::from_file(&path)
        .unwrap()
        .with_gap_cache_bytes(SMALL);
    let uncached = Tokenizer::from_file(&path).unwrap().with_gap_cache_bytes(0);
    let mut random = Lcg(2026);
    let mut turns = [8usize; 3];
    for step in 0..150 {
        let topic = random.next() % turns.len();
        match random.next() % 4 {
            0 | 1 => turns[topic] += 1,
            2 => turns[topic] = (turns[topic] + 5 - random.next() % 4).max(6),
            _ => {}
        }
        let (mut prompt, ranges) = conversation_about(topic, turns[topic]);
        if random.next().is_multiple_of(3) {
            // One byte of one turn's text changed (same length: the ranges stay valid).
            let at = ranges[random.next() % ranges.len()].end + 3;
            prompt.replace_range(at..at + 1, "#");
        }
        let want = uncached.encode_prompt_sequential(&prompt, &ranges).unwrap();
        for (name, tokenizer) in [("default", &cached), ("small", &small)] {
            // Every other step reads the ids as the slices they are kept in.
            let ids = if step % 2 == 0 {
                tokenizer.encode_prompt(&prompt, &ranges).unwrap()
            } else {
                let ids = tokenizer.encode_prompt_ids(&prompt, &ranges).unwrap();
                assert_eq!(ids.len(), want.len(), "step {step}, {name} budget: len");
                ids.slices().concat()
            };
            assert_eq!(
                ids, want,
                "step {step}, {name} budget, topic {topic}, {} turns",
                turns[topic]
            );
        }
        assert!(
            small.prefix_cache_bytes() <= SMALL / 2,
            "step {step}: {} bytes kept",
            small.prefix_cache_bytes()
        );
    }
    assert!(cached.prefix_cache_bytes() > 0);
    assert_eq!(uncached.prefix_cache_bytes(), 0);
}
