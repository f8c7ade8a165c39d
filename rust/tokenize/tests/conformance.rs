//! Conformance: every vendored request case that the reference encoded (V4 prompts) is
//! re-encoded from its rendered prompt and special ranges, and compared with the reference's
//! ids (inline ids exactly; long prompts by length, first and last 100 ids) or its error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use serde_json::Value;

/// Each case file by name. A few files hold Python's `NaN`/`Infinity` in request bodies,
/// which strict JSON parsers reject; those cases stop at conversion and carry no `encode`,
/// so they are kept as `Value::Null` (and a file that does carry `encode` must parse).
fn request_cases() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/requests");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let case = serde_json::from_str(&text).unwrap_or_else(|e| {
                assert!(!text.contains("\"encode\""), "{name}: {e}");
                Value::Null
            });
            (name, case)
        })
        .collect()
}

#[derive(Default, Debug)]
struct Counts {
    inline_ids: usize,
    long_ids: usize,
    errors: usize,
    not_encoded: usize,
}

/// Compare one case; `Ok(None)` when the reference did not encode it.
fn check(
    tokenizer: &deepseek_tokenize::Tokenizer,
    case: &Value,
    counts: &mut Counts,
) -> Result<(), String> {
    let expected = &case["expected"];
    let encode = &expected["encode"];
    if encode.is_null() {
        counts.not_encoded += 1;
        return Ok(());
    }
    let prompt = expected["render"]["prompt"]
        .as_str()
        .ok_or("render.prompt is not a string")?;
    let ranges = common::byte_ranges(
        prompt,
        &common::pairs(&expected["render"]["special_ranges"]),
    );
    // Invariants before comparing: ranges ascending, disjoint and inside the prompt.
    let mut cursor = 0;
    for range in &ranges {
        if range.start < cursor || range.end < range.start || range.end > prompt.len() {
            return Err(format!(
                "special range {range:?} is not ascending and inside the prompt"
            ));
        }
        cursor = range.end;
    }
    let actual = tokenizer.encode_prompt(prompt, &ranges);
    if let Some(error) = encode.get("error") {
        counts.errors += 1;
        let want = error["message"].as_str().unwrap_or_default();
        return match actual {
            Err(e) if e.message == want => Ok(()),
            other => Err(format!("expected error {want:?}, got {other:?}")),
        };
    }
    let actual = actual.map_err(|e| format!("unexpected error: {e}"))?;
    let want_len = usize::try_from(encode["len"].as_u64().ok_or("encode.len missing")?).unwrap();
    if let Some(want) = encode.get("ids") {
        counts.inline_ids += 1;
        let want = common::ids(want);
        if actual != want {
            let first = actual
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(actual.len().min(want.len()));
            return Err(format!(
                "ids differ at index {first} (len {} vs expected {}): got {:?}, expected {:?}",
                actual.len(),
                want.len(),
                actual.get(first..(first + 8).min(actual.len())),
                want.get(first..(first + 8).min(want.len()))
            ));
        }
    } else {
        counts.long_ids += 1;
        let head = common::ids(&encode["head"]);
        let tail = common::ids(&encode["tail"]);
        if actual.len() != want_len {
            return Err(format!("len {} != expected {want_len}", actual.len()));
        }
        if actual[..head.len()] != head[..] || actual[actual.len() - tail.len()..] != tail[..] {
            return Err("head or tail ids differ".into());
        }
    }
    if actual.len() != want_len {
        return Err(format!("len {} != expected {want_len}", actual.len()));
    }
    Ok(())
}

#[test]
fn every_vendored_request_case_encodes_like_the_reference() {
    let tokenizer = common::tokenizer();
    let cases = request_cases();
    assert!(!cases.is_empty(), "no conformance cases found");
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for (name, case) in &cases {
        if let Err(why) = check(tokenizer, case, &mut counts) {
            failures.push(format!("{name}: {why}"));
        }
    }
    let compared = counts.inline_ids + counts.long_ids + counts.errors;
    println!(
        "conformance: {} cases, {compared} encoded by the reference ({} inline ids, {} long, {} errors), \
         {} not encoded (V4.1 or conversion error); {} failed",
        cases.len(),
        counts.inline_ids,
        counts.long_ids,
        counts.errors,
        counts.not_encoded,
        failures.len()
    );
    assert!(compared > 0, "no case carried expected ids");
    assert!(
        failures.is_empty(),
        "{} of {compared} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
