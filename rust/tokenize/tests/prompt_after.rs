//! Encoding a prompt after an earlier one (a stored conversation's next turn), ids read back
//! from storage, and ids as JSON: each gives exactly the ids of a fresh encode.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::ops::Range;

use common::{Lcg, PromptBuilder};
use deepseek_tokenize::{IdsFormat, PromptIds, Tokenizer};

const WORDS: &[&str] = &[
    "the",
    " quick",
    " fox",
    " 中文",
    " <｜User｜>",
    "\n\n",
    " émoji 🦊",
    " {\"a\": 1}",
    "  ",
    "x",
];

/// A prompt of `turns` turns, each a few specials and texts of the generator's choosing; the
/// same `seed` gives the same turns, so a shorter prompt is a prefix of a longer one.
fn prompt(seed: u64, turns: usize, last_text: &str) -> (String, Vec<Range<usize>>) {
    let mut rng = Lcg(seed);
    let mut builder = PromptBuilder::new();
    for turn in 0..turns {
        builder.turn(turn);
        let words = 1 + rng.next() % 40;
        for _ in 0..words * (1 + turn % 7) {
            builder.prompt.push_str(rng.pick(WORDS));
        }
        if rng.next().is_multiple_of(4) {
            builder.special("<think>");
            builder.prompt.push_str("reasoning ");
            builder.special("</think>");
        }
    }
    builder.prompt.push_str(last_text);
    builder.special("<｜Assistant｜>");
    builder.build()
}

fn json_of(ids: &[u32]) -> Vec<u8> {
    serde_json::to_vec(ids).unwrap()
}

/// Protobuf's packed encoding of `ids`, written here from its definition: seven bits a byte,
/// low bits first, the high bit set on all but an id's last byte.
fn varints_of(ids: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    for &id in ids {
        let mut bytes: Vec<u8> = (0..5).map(|k| ((id >> (7 * k)) & 0x7f) as u8).collect();
        while bytes.len() > 1 && bytes.last() == Some(&0) {
            bytes.pop();
        }
        let last = bytes.len() - 1;
        out.extend(
            bytes
                .iter()
                .enumerate()
                .map(|(k, &b)| if k < last { b | 0x80 } else { b }),
        );
    }
    out
}

fn varints(ids: &PromptIds) -> Vec<u8> {
    ids.varint_pieces().concat()
}

fn check(
    tokenizer: &Tokenizer,
    ids: &PromptIds,
    prompt: &str,
    ranges: &[Range<usize>],
    what: &str,
) {
    let fresh = tokenizer.encode_prompt_sequential(prompt, ranges).unwrap();
    let got = ids.clone().into_vec();
    assert_eq!(got, fresh, "{what}: ids");
    let unwritten = ids.unwritten_json();
    assert!(unwritten <= fresh.len(), "{what}: unwritten JSON");
    assert_eq!(ids.to_json(), json_of(&fresh), "{what}: JSON");
    assert_eq!(ids.unwritten_json(), 0, "{what}: JSON written once");
    assert_eq!(ids.json_len(), ids.to_json().len(), "{what}: JSON length");
    let pieces = ids.json_pieces().expect("an encoded prompt's JSON is kept");
    assert_eq!(pieces.concat(), json_of(&fresh), "{what}: JSON pieces");
    assert!(
        ids.unwritten(IdsFormat::Varints) <= fresh.len(),
        "{what}: unwritten varints"
    );
    assert_eq!(varints(ids), varints_of(&fresh), "{what}: varints");
    assert_eq!(
        ids.unwritten(IdsFormat::Varints),
        0,
        "{what}: varints written once"
    );
}

#[test]
fn turns_encoded_after_the_last_one_equal_fresh_encodes() {
    let tokenizer = Tokenizer::from_file(&common::tokenizer_path()).unwrap();
    for seed in 0..6u64 {
        let mut base: Option<PromptIds> = None;
        // More turns than a chain of links is allowed to grow (it is cut and kept whole).
        for turns in 1..45usize {
            // Every third turn ends in other text: the base is then shared only in part.
            let last = if turns.is_multiple_of(3) {
                " other ending"
            } else {
                ""
            };
            let (text, ranges) = prompt(seed, turns, last);
            let ids = tokenizer
                .encode_prompt_ids_after(&text, &ranges, base.as_ref())
                .unwrap();
            check(
                &tokenizer,
                &ids,
                &text,
                &ranges,
                &format!("seed {seed}, turn {turns}"),
            );
            // The same prompt again is the same ids.
            let again = tokenizer
                .encode_prompt_ids_after(&text, &ranges, Some(&ids))
                .unwrap();
            check(
                &tokenizer,
                &again,
                &text,
                &ranges,
                &format!("seed {seed}, turn {turns} again"),
            );
            base = Some(ids);
        }
    }
}

/// `text` encoded after `base`, its first `same_bytes` bytes claimed to be `base`'s, checked
/// against a fresh encode.
fn extended(
    tokenizer: &Tokenizer,
    (text, ranges): (&str, &[Range<usize>]),
    base: Option<&PromptIds>,
    same_bytes: usize,
    what: &str,
) -> PromptIds {
    let ids = tokenizer
        .encode_prompt_ids_extending(text, ranges, base, same_bytes)
        .unwrap();
    check(
        tokenizer,
        &ids,
        text,
        ranges,
        &format!("{what}, {same_bytes} bytes known"),
    );
    ids
}

#[test]
fn a_caller_that_knows_the_shared_bytes_gets_the_same_ids() {
    let tokenizer = Tokenizer::from_file(&common::tokenizer_path()).unwrap();
    for seed in 20..24u64 {
        let mut previous: Option<(String, PromptIds)> = None;
        for turns in 1..20usize {
            let last = if turns.is_multiple_of(3) {
                " other ending"
            } else {
                ""
            };
            let (text, ranges) = prompt(seed, turns, last);
            let what = format!("seed {seed}, turn {turns}");
            // What a render that copied the earlier prompt knows: any length up to the bytes
            // both share (none, some, and all of them: that one is the next base).
            let (before, base) = previous
                .as_ref()
                .map_or(("", None), |(t, ids)| (t.as_str(), Some(ids)));
            let shared = before
                .bytes()
                .zip(text.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            for same_bytes in [0, shared / 2] {
                extended(&tokenizer, (&text, &ranges), base, same_bytes, &what);
            }
            let ids = extended(&tokenizer, (&text, &ranges), base, shared, &what);
            // The same prompt with one letter changed in its middle, before specials that stay
            // where they were: only the bytes before the change are known to be shared.
            let middle = text.len() / 2;
            if let Some(at) = text
                .match_indices("quick")
                .map(|(i, _)| i)
                .find(|&i| i >= middle)
            {
                let edited = format!("{}quack{}", &text[..at], &text[at + 5..]);
                for same_bytes in [at / 2, at] {
                    let what = format!("{what}, edited at {at}");
                    extended(
                        &tokenizer,
                        (&edited, &ranges),
                        Some(&ids),
                        same_bytes,
                        &what,
                    );
                }
            }
            previous = Some((text, ids));
        }
    }
}

#[test]
fn ids_read_back_from_storage_extend_like_the_originals() {
    let tokenizer = Tokenizer::from_file(&common::tokenizer_path()).unwrap();
    for seed in 10..14u64 {
        let (text, ranges) = prompt(seed, 9, "");
        let stored = tokenizer.encode_prompt(&text, &ranges).unwrap();
        let base = tokenizer.prompt_ids_from_ids(stored.clone()).unwrap();
        assert_eq!(base.clone().into_vec(), stored);
        for turns in [9, 10, 14] {
            let (longer, longer_ranges) = prompt(seed, turns, " and more");
            let ids = tokenizer
                .encode_prompt_ids_after(&longer, &longer_ranges, Some(&base))
                .unwrap();
            check(
                &tokenizer,
                &ids,
                &longer,
                &longer_ranges,
                &format!("seed {seed}, {turns} turns after stored"),
            );
        }
    }
    // Ids that are not the vocabulary's are refused.
    assert!(tokenizer.prompt_ids_from_ids(vec![u32::MAX]).is_none());
}

#[test]
fn json_and_varints_of_whole_and_empty_ids() {
    let tokenizer = Tokenizer::from_file(&common::tokenizer_path()).unwrap();
    for ids in [vec![], vec![0], vec![1, 22, 333, 4444, 55555, 128_000]] {
        let whole = PromptIds::from(ids.clone());
        assert_eq!(whole.to_json(), json_of(&ids));
        assert_eq!(whole.json_len(), json_of(&ids).len());
        assert_eq!(
            whole.unwritten_json(),
            ids.len(),
            "whole ids are written every time"
        );
        assert!(whole.json_pieces().is_none());
        assert_eq!(varints(&whole), varints_of(&ids));
    }
    let empty = tokenizer.encode_prompt_ids_after("", &[], None).unwrap();
    assert_eq!(empty.to_json(), b"[]");
    assert_eq!(empty.json_pieces().unwrap().concat(), b"[]");
    assert!(varints(&empty).is_empty());
    // Every length of a varint: one byte up to 127, five from 2^28 on.
    let edges = vec![
        0,
        127,
        128,
        16_383,
        16_384,
        (1 << 21) - 1,
        1 << 21,
        (1 << 28) - 1,
        1 << 28,
        u32::MAX,
    ];
    assert_eq!(varints(&PromptIds::from(edges.clone())), varints_of(&edges));
    assert_eq!(varints_of(&[300]), [0xac, 0x02], "protobuf's own example");
}
