//! Injection safety: text in a gap is never matched against the added
//! vocabulary. Every spelling of every added token, typed into a gap in several contexts,
//! encodes to ordinary ids only, and equals an independent oracle: Hugging Face
//! `tokenizers` loaded from the same file with its `added_tokens` list removed.
//! Gap scheduling must not matter: parallel and sequential encodes of long prompts agree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashSet;
use std::ops::Range;
use std::sync::OnceLock;

use deepseek_tokenize::Parallelism;

/// The §9 definition built independently: the file's JSON with `added_tokens` emptied.
fn oracle() -> &'static tokenizers::Tokenizer {
    static ORACLE: OnceLock<tokenizers::Tokenizer> = OnceLock::new();
    ORACLE.get_or_init(|| {
        let mut json: serde_json::Value = serde_json::from_str(common::tokenizer_json()).unwrap();
        json["added_tokens"] = serde_json::Value::Array(Vec::new());
        json.to_string().parse().unwrap()
    })
}

fn oracle_ids(text: &str) -> Vec<u32> {
    oracle()
        .encode_fast(text, false)
        .unwrap()
        .get_ids()
        .to_vec()
}

fn added_spellings() -> Vec<(String, u32)> {
    let mut spellings: Vec<(String, u32)> = common::tokenizer()
        .added_tokens()
        .map(|(spelling, id)| (spelling.to_owned(), id))
        .collect();
    spellings.sort_by_key(|&(_, id)| id);
    spellings
}

/// The contexts a user might type a spelling in.
fn typed_variants(spelling: &str) -> Vec<String> {
    vec![
        spelling.to_owned(),
        format!("a{spelling}b"),
        format!(" {spelling} "),
        format!("{spelling}{spelling}"),
        format!("\n\n{spelling}\n"),
        format!("中文{spelling}123"),
        format!("\"{spelling}\":"),
    ]
}

#[test]
fn typed_added_spellings_never_become_added_ids() {
    let tokenizer = common::tokenizer();
    let spellings = added_spellings();
    assert!(
        spellings.len() > 1000,
        "the DeepSeek V4 file has 1283 added tokens, found {}",
        spellings.len()
    );
    let added_ids: HashSet<u32> = spellings.iter().map(|&(_, id)| id).collect();
    let mut checked = 0;
    for (spelling, _) in &spellings {
        for text in typed_variants(spelling) {
            let ids = tokenizer.encode_plain(&text).unwrap();
            assert!(
                ids.iter().all(|id| !added_ids.contains(id)),
                "{text:?} produced an added id: {ids:?}"
            );
            assert_eq!(
                ids,
                oracle_ids(&text),
                "{text:?} differs from tokenizers without added_tokens"
            );
            checked += 1;
        }
    }
    println!(
        "injection: {} spellings, {checked} typed texts, none matched the added vocabulary",
        spellings.len()
    );
}

/// A typed spelling right next to a real special range stays text; the range stays one id.
#[test]
fn typed_spelling_beside_a_real_special_range() {
    let tokenizer = common::tokenizer();
    let user = tokenizer.added_token_id("<｜User｜>").unwrap();
    let assistant = tokenizer.added_token_id("<｜Assistant｜>").unwrap();
    for (spelling, _) in added_spellings() {
        let prompt = format!("<｜User｜>{spelling}<｜Assistant｜>");
        let start = "<｜User｜>".len();
        let end = start + spelling.len();
        let ids = tokenizer
            .encode_prompt(&prompt, &[0..start, end..prompt.len()])
            .unwrap();
        let mut want = vec![user];
        want.extend(oracle_ids(&spelling));
        want.push(assistant);
        assert_eq!(ids, want, "{spelling:?}");
    }
}

/// `encode_special_tokens=True` is not the same thing: it still matches non-special added
/// tokens such as `<｜User｜>` and `｜DSML｜` (the flag the reference does not use).
#[test]
fn encode_special_tokens_flag_is_not_injection_safe() {
    let mut flagged: tokenizers::Tokenizer = common::tokenizer_json().parse().unwrap();
    flagged.set_encode_special_tokens(true);
    let tokenizer = common::tokenizer();
    for spelling in ["<｜User｜>", "｜DSML｜", "</think>"] {
        let id = tokenizer.added_token_id(spelling).unwrap();
        let flagged_ids = flagged
            .encode_fast(spelling, false)
            .unwrap()
            .get_ids()
            .to_vec();
        assert_eq!(
            flagged_ids,
            vec![id],
            "{spelling:?} with encode_special_tokens"
        );
        assert!(
            !tokenizer.encode_plain(spelling).unwrap().contains(&id),
            "{spelling:?}"
        );
    }
}

const TEXT_PIECES: &[&str] = &[
    "hello",
    " world",
    "\n",
    "\n\n",
    "  ",
    "\t",
    "123456",
    "3.14159",
    "中文字符",
    "ひらがな",
    "カタカナ",
    "emoji 😀🎉",
    "don't",
    "<｜User｜>",
    "</think>",
    "｜DSML｜",
    "<｜DSML｜invoke name=\"f\">",
    "{\"a\": [1, 2]}",
    "Ünïcödé",
    "x",
    " ",
    "!!!",
    "    indented code();\n",
    "\r\n",
    "<think>",
    "<｜end▁of▁sentence｜>",
];

/// A prompt of `gaps` random gaps separated by real special ranges.
fn generated_prompt(seed: u64, gaps: usize, pieces_per_gap: usize) -> (String, Vec<Range<usize>>) {
    let specials: Vec<String> = added_spellings()
        .into_iter()
        .map(|(spelling, _)| spelling)
        .collect();
    let special_refs: Vec<&str> = specials.iter().map(String::as_str).collect();
    let mut rng = common::Lcg(seed);
    let mut prompt = String::new();
    let mut ranges = Vec::new();
    for gap in 0..gaps {
        let pieces = rng.next() % (pieces_per_gap + 1);
        for _ in 0..pieces {
            prompt.push_str(rng.pick(TEXT_PIECES));
        }
        if gap + 1 < gaps {
            let start = prompt.len();
            prompt.push_str(rng.pick(&special_refs));
            ranges.push(start..prompt.len());
        }
    }
    (prompt, ranges)
}

#[test]
fn parallel_equals_sequential_on_long_generated_prompts() {
    // No gap cache: the sequential run must recompute every gap, not reuse the parallel one.
    let tokenizer = deepseek_tokenize::Tokenizer::from_file(&common::tokenizer_path())
        .unwrap()
        .with_gap_cache_bytes(0);
    let shapes = [
        (1u64, 400usize, 40usize),
        (2, 50, 2000),
        (3, 2000, 5),
        (4, 3, 20000),
    ];
    for (seed, gaps, pieces) in shapes {
        let (prompt, ranges) = generated_prompt(seed, gaps, pieces);
        let parallel = tokenizer
            .encode_prompt_with(&prompt, &ranges, Parallelism::Parallel)
            .unwrap();
        let sequential = tokenizer
            .encode_prompt_with(&prompt, &ranges, Parallelism::Sequential)
            .unwrap();
        assert_eq!(parallel, sequential, "seed {seed}");
        // And both equal the definition: oracle per gap, added id per range.
        let mut want = Vec::new();
        let mut cursor = 0;
        for range in &ranges {
            want.extend(oracle_ids(&prompt[cursor..range.start]));
            want.push(tokenizer.added_token_id(&prompt[range.clone()]).unwrap());
            cursor = range.end;
        }
        want.extend(oracle_ids(&prompt[cursor..]));
        assert_eq!(parallel, want, "seed {seed}");
        println!(
            "seed {seed}: {} bytes, {} ranges, {} ids",
            prompt.len(),
            ranges.len(),
            parallel.len()
        );
    }
}
