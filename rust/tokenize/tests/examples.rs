//! The team's spec examples (`fixtures/encoding_v4_examples.json`, copied from the
//! reference behaviour notes): prompt + special ranges → ids, and the full-vocabulary
//! encode of the same prompt, which differs exactly where a user typed a special spelling.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use serde_json::Value;

fn examples() -> Vec<Value> {
    let text = include_str!("fixtures/encoding_v4_examples.json");
    let file: Value = serde_json::from_str(text).unwrap();
    file["examples"].as_array().unwrap().clone()
}

#[test]
fn segments_spell_the_prompt_and_ranges_mark_the_special_ones() {
    for example in examples() {
        let name = example["case"].as_str().unwrap();
        let prompt = example["prompt"].as_str().unwrap();
        let ranges = common::byte_ranges(prompt, &common::pairs(&example["special_ranges"]));
        let segments = example["segments"].as_array().unwrap();
        let joined: String = segments
            .iter()
            .map(|s| s["text"].as_str().unwrap())
            .collect();
        assert_eq!(joined, prompt, "{name}");
        let specials: Vec<&str> = segments
            .iter()
            .filter(|s| s["special"].as_bool().unwrap())
            .map(|s| s["text"].as_str().unwrap())
            .collect();
        let ranged: Vec<&str> = ranges.iter().map(|r| &prompt[r.clone()]).collect();
        assert_eq!(ranged, specials, "{name}");
    }
}

#[test]
fn prompts_encode_to_the_reference_ids() {
    let tokenizer = common::tokenizer();
    let examples = examples();
    for example in &examples {
        let name = example["case"].as_str().unwrap();
        let prompt = example["prompt"].as_str().unwrap();
        let ranges = common::byte_ranges(prompt, &common::pairs(&example["special_ranges"]));
        let want = common::ids(&example["ids"]);
        assert_eq!(
            tokenizer.encode_prompt(prompt, &ranges).unwrap(),
            want,
            "{name}"
        );
        assert_eq!(
            tokenizer.encode_prompt_sequential(prompt, &ranges).unwrap(),
            want,
            "{name} (sequential)"
        );
    }
    println!("examples: {} prompts encoded", examples.len());
}

#[test]
fn full_vocabulary_encode_matches_the_reference() {
    let tokenizer = common::tokenizer();
    for example in examples() {
        let name = example["case"].as_str().unwrap();
        let prompt = example["prompt"].as_str().unwrap();
        let want = common::ids(&example["full_vocab_encode_of_prompt"]);
        assert_eq!(tokenizer.encode(prompt).unwrap(), want, "{name}");
    }
}

/// The single-string rows of the reference's examples (`fixtures/encoding_v4_examples.json`).
#[test]
fn full_vocabulary_encode_of_typed_spellings() {
    let tokenizer = common::tokenizer();
    let cases: [(&str, &str, &[u32]); 3] = [
        ("user token alone", "<｜User｜>", &[128803]),
        (
            "dsml tool calls",
            "<｜DSML｜tool_calls>",
            &[30, 128825, 72461, 4941, 12548, 32],
        ),
        (
            "think inside text",
            "hello <think> world",
            &[33310, 223, 128821, 2058],
        ),
    ];
    for (name, text, want) in cases {
        assert_eq!(tokenizer.encode(text).unwrap(), want, "{name}");
    }
}
