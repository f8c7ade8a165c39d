//! One wall-clock measurement of encoding a ~300k-token prompt (not a benchmark: no
//! warm-up, no statistics; `bench/` holds the real ones).
//!
//! `DEEPSEEK_TOKENIZER_JSON=/path/tokenizer.json cargo run -p deepseek-tokenize --example encode_timing`

use std::ops::Range;
use std::time::Instant;

use deepseek_tokenize::{Parallelism, Tokenizer};

const WORDS: &[&str] = &[
    "the",
    "model",
    "returns",
    "a",
    "tool",
    "call",
    "with",
    "arguments",
    "and",
    "reasoning",
    "function",
    "request",
    "stream",
    "token",
    "parser",
    "value",
    "error",
    "state",
    "encode",
    "prompt",
    "渲染",
    "分词器",
    "テスト",
    "données",
    "naïve",
    "2024",
    "3.14",
    "fn",
    "main()",
    "{",
    "}",
    "=>",
    "\"key\":",
    "[1, 2, 3]",
];

fn lcg(state: &mut u64) -> usize {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    usize::try_from(*state >> 33).unwrap_or(0)
}

/// An agent-like conversation: `turns` turns of random text, each closed by special ranges.
fn conversation(turns: usize, words_per_turn: usize) -> (String, Vec<Range<usize>>) {
    let mut state = 7;
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
        for word in 0..words_per_turn {
            let pick = WORDS
                .get(lcg(&mut state) % WORDS.len())
                .copied()
                .unwrap_or("x");
            prompt.push_str(pick);
            prompt.push(if word % 17 == 16 { '\n' } else { ' ' });
        }
    }
    (prompt, ranges)
}

fn millis(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::var("DEEPSEEK_TOKENIZER_JSON").or_else(|_| {
        std::env::args()
            .nth(1)
            .ok_or("set DEEPSEEK_TOKENIZER_JSON or pass the path")
    })?;
    let started = Instant::now();
    let tokenizer = Tokenizer::from_file(path.as_ref())?.with_gap_cache_bytes(0);
    println!("load: {:.0} ms", millis(started));

    for (label, turns, words) in [("200 turns", 200, 1200), ("1 turn", 1, 240_000)] {
        let (prompt, ranges) = conversation(turns, words);
        for parallelism in [Parallelism::Parallel, Parallelism::Sequential] {
            let started = Instant::now();
            let ids = tokenizer.encode_prompt_with(&prompt, &ranges, parallelism)?;
            let elapsed = millis(started);
            println!(
                "{label}, {parallelism:?}: {} bytes -> {} ids in {elapsed:.0} ms ({:.2} M tokens/s)",
                prompt.len(),
                ids.len(),
                ids.len() as f64 / elapsed / 1e3
            );
        }
        let started = Instant::now();
        let ids = tokenizer.encode_plain_by_tokenizers(&prompt)?;
        println!(
            "{label}, whole prompt through tokenizers' own pipeline: {} ids in {:.0} ms",
            ids.len(),
            millis(started)
        );
    }

    // Optionally, a real text as one gap (e.g. concatenated source files).
    if let Ok(file) = std::env::var("DEEPSEEK_TIMING_TEXT") {
        let text = std::fs::read_to_string(file)?;
        let started = Instant::now();
        let ids = tokenizer.encode_plain(&text)?;
        let ours = millis(started);
        let started = Instant::now();
        let reference = tokenizer.encode_plain_by_tokenizers(&text)?;
        let theirs = millis(started);
        println!(
            "text file: {} bytes -> {} ids in {ours:.0} ms; tokenizers' pipeline {theirs:.0} ms; equal: {}",
            text.len(),
            ids.len(),
            ids == reference
        );
    }

    // An agent loop: the same conversation re-encoded with one more turn, gap cache on.
    let cached = Tokenizer::from_file(path.as_ref())?;
    let (prompt, ranges) = conversation(200, 1200);
    let started = Instant::now();
    cached.encode_prompt(&prompt, &ranges)?;
    println!("200 turns, cold gap cache: {:.0} ms", millis(started));
    let (prompt, ranges) = conversation(201, 1200);
    let started = Instant::now();
    let ids = cached.encode_prompt(&prompt, &ranges)?;
    println!(
        "201 turns, warm gap cache: {} ids in {:.1} ms",
        ids.len(),
        millis(started)
    );
    // The same turn again and again (200 and 201 turns in alternation): what a new turn
    // costs once the conversation is known.
    let (shorter, shorter_ranges) = conversation(200, 1200);
    let rounds = std::env::var("DEEPSEEK_TIMING_ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(100u32);
    let started = Instant::now();
    for _ in 0..rounds {
        cached.encode_prompt(&shorter, &shorter_ranges)?;
        cached.encode_prompt(&prompt, &ranges)?;
    }
    println!(
        "200 and 201 turns in alternation: {:.2} ms per encode",
        millis(started) / f64::from(2 * rounds)
    );
    Ok(())
}
