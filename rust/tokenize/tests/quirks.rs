//! Reference behaviours that follow from encoding each gap with Hugging Face's `encode`:
//! truncation and padding configured in `tokenizer.json` apply to every gap, the empty ones
//! included. Arguably a reference bug (a prompt should never be truncated or padded piece by
//! piece), kept for exactness; the DeepSeek file configures neither. Expected ids were
//! observed from `deepseek-recipe` 0.2.0 for the conversation `[user "hi there"]` (V4).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use deepseek_tokenize::Tokenizer;

const PREAMBLE: &str = "Reasoning Effort: Absolute maximum with no shortcuts permitted.\nYou MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial scenarios.\nExplicitly write out your entire deliberation process, documenting every intermediate step, considered alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";

fn prompt() -> (String, Vec<std::ops::Range<usize>>) {
    let prompt =
        format!("<｜begin▁of▁sentence｜>{PREAMBLE}<｜User｜>hi there<｜Assistant｜><think>");
    let ranges = common::byte_ranges(&prompt, &[(0, 21), (497, 505), (513, 526), (526, 533)]);
    (prompt, ranges)
}

fn with(key: &str, value: serde_json::Value) -> Tokenizer {
    let mut json: serde_json::Value = serde_json::from_str(common::tokenizer_json()).unwrap();
    json[key] = value;
    Tokenizer::from_str(&json.to_string()).unwrap()
}

#[test]
fn truncation_applies_to_each_gap() {
    let tokenizer = with(
        "truncation",
        serde_json::json!({"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0}),
    );
    let (prompt, ranges) = prompt();
    let ids = tokenizer.encode_prompt(&prompt, &ranges).unwrap();
    assert_eq!(ids, [0, 77666, 288, 128803, 6366, 1031, 128804, 128821]);
}

#[test]
fn padding_applies_to_each_gap_even_empty_ones() {
    let tokenizer = with(
        "padding",
        serde_json::json!({"strategy": {"Fixed": 3}, "direction": "Right", "pad_to_multiple_of": null,
            "pad_id": 2, "pad_type_id": 0, "pad_token": "<｜▁pad▁｜>"}),
    );
    let (prompt, ranges) = prompt();
    let ids = tokenizer.encode_prompt(&prompt, &ranges).unwrap();
    let plain = common::tokenizer().encode_prompt(&prompt, &ranges).unwrap();
    // plain: [0, preamble…, 128803, 6366, 1031, 128804, 128821]
    let preamble = &plain[1..plain.len() - 5];
    let mut want = vec![2, 2, 2, 0];
    want.extend_from_slice(preamble);
    want.extend([128803, 6366, 1031, 2, 128804, 2, 2, 2, 128821, 2, 2, 2]);
    assert_eq!(ids, want);
}
