//! The stream processor: lifecycle, usage, tool-call ids,
//! token decoding and its split at added tokens, logprobs. A recording emitter writes each
//! call as one line, so a test states the whole conversation with the emitter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use deepseek_model::{ParsingOptions, ThinkingInitialStage};
use deepseek_stream::emit::{Completion, Emitter, FinishReason, PromptUsage, TokenLogprob, Usage};
use deepseek_stream::processor::{
    escape_invalid_utf8, ChunkLogprob, EngineChecks, InferenceChunk, StreamError, StreamProcessor,
    Vocabulary,
};
use deepseek_stream::{ParseEvent, Segment};

/// Records every emitter call as a line.
#[derive(Debug, Default)]
struct Recorder;

impl Emitter for Recorder {
    type Event = String;

    fn start(&mut self, prompt: PromptUsage, fingerprint: Option<&str>, out: &mut Vec<String>) {
        out.push(format!(
            "start {} {} {:?}",
            prompt.prompt_tokens, prompt.prompt_cache_hit_tokens, fingerprint
        ));
    }

    fn text(
        &mut self,
        segment: Segment,
        text: &str,
        logprobs: Option<&[TokenLogprob]>,
        out: &mut Vec<String>,
    ) {
        let kind = if segment == Segment::Reasoning {
            "reasoning"
        } else {
            "content"
        };
        let mut line = format!("{kind} {text:?}");
        if let Some(logprobs) = logprobs {
            let tokens: Vec<String> = logprobs
                .iter()
                .map(|l| format!("{}={}", l.token, l.logprob))
                .collect();
            line.push_str(&format!(" lp[{}]", tokens.join(",")));
        }
        out.push(line);
    }

    fn tool_call_start(&mut self, index: usize, id: &str, name: &str, out: &mut Vec<String>) {
        out.push(format!("call {index} {name} {id}"));
    }

    fn tool_call_arguments(&mut self, index: usize, fragment: &str, out: &mut Vec<String>) {
        out.push(format!("args {index} {fragment}"));
    }

    fn tool_call_end(&mut self, index: usize, out: &mut Vec<String>) {
        out.push(format!("end {index}"));
    }

    fn finish(
        &mut self,
        completion: &Completion,
        tool_calls: bool,
        usage: &Usage,
        out: &mut Vec<String>,
    ) {
        out.push(format!(
            "finish {completion:?} tools={tool_calls} completion={} reasoning={:?}",
            usage.completion_tokens, usage.reasoning_tokens
        ));
    }
}

/// A tiny vocabulary: ordinary ids map to byte strings, added ids to spellings. Counting
/// tokens is "one per whitespace-separated word" (enough to see the count is of the
/// reasoning text). With a vocabulary the processor always reports a reasoning count
/// (`Some(0)` without reasoning); whether it is shown is the emitter's call.
struct Vocab {
    tokens: HashMap<u32, Vec<u8>>,
    added: Vec<u32>,
}

impl Vocab {
    fn new() -> Self {
        let mut tokens = HashMap::new();
        let crab = "🦀".as_bytes();
        for (id, bytes) in [
            (10, b"Hello".to_vec()),
            (11, b" world".to_vec()),
            (12, b"\n".to_vec()),
            (13, b"r".to_vec()),
            (14, b"x".to_vec()),
            (20, crab[..2].to_vec()),
            (21, crab[2..3].to_vec()),
            (22, crab[3..].to_vec()),
            (1, "<｜end▁of▁sentence｜>".as_bytes().to_vec()),
            (100, b"</think>".to_vec()),
            (101, b"<think>".to_vec()),
            (30, b"</".to_vec()),
            (31, b"think".to_vec()),
            (32, b">".to_vec()),
        ] {
            tokens.insert(id, bytes);
        }
        Self {
            tokens,
            added: vec![1, 100, 101],
        }
    }
}

impl Vocabulary for Vocab {
    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.tokens.get(&id).map(Vec::as_slice)
    }

    fn is_added(&self, id: u32) -> bool {
        self.added.contains(&id)
    }

    fn count_tokens(&self, text: &str) -> u64 {
        text.split_whitespace().count() as u64
    }
}

fn options(thinking: bool) -> ParsingOptions {
    ParsingOptions {
        thinking_initial_stage: thinking.then_some(ThinkingInitialStage::ReasoningStart),
        ..ParsingOptions::default()
    }
}

fn processor(thinking: bool, vocab: bool) -> StreamProcessor<Recorder, Vocab> {
    StreamProcessor::new(
        Recorder,
        &options(thinking),
        thinking,
        vocab.then(Vocab::new),
    )
    .with_id_seed(7)
}

fn ready(prompt: u64, hits: u64) -> InferenceChunk {
    InferenceChunk::Ready {
        prompt_usage: PromptUsage {
            prompt_tokens: prompt,
            prompt_cache_hit_tokens: hits,
        },
        system_fingerprint: Some("fp".to_owned()),
    }
}

fn text(content: &str) -> InferenceChunk {
    InferenceChunk::Text {
        content: content.to_owned(),
        token_count: 1,
    }
}

fn tokens(ids: &[u32]) -> InferenceChunk {
    InferenceChunk::Tokens {
        token_ids: ids.to_vec(),
        logprobs: None,
    }
}

fn tokens_lp(ids: &[u32], first: f64) -> InferenceChunk {
    let logprobs = ids
        .iter()
        .enumerate()
        .map(|(k, _)| ChunkLogprob {
            logprob: first - k as f64,
            top: Vec::new(),
        })
        .collect();
    InferenceChunk::Tokens {
        token_ids: ids.to_vec(),
        logprobs: Some(logprobs),
    }
}

/// Push every chunk, then `finish()`; one line per emitted event, errors as `error …`.
fn run(
    mut processor: StreamProcessor<Recorder, Vocab>,
    chunks: Vec<InferenceChunk>,
) -> Vec<String> {
    let mut lines = Vec::new();
    for chunk in chunks {
        let mut out = Vec::new();
        match processor.push(chunk, &mut out) {
            Ok(()) => lines.extend(out),
            Err(error) => lines.push(format!("error {error}")),
        }
    }
    let mut out = Vec::new();
    match processor.finish(&mut out) {
        Ok(()) => lines.extend(out),
        Err(error) => lines.push(format!("error {error}")),
    }
    lines
}

/// (name, processor, chunks, expected lines; empty: only the last line is checked)
type LifecycleCase = (
    &'static str,
    StreamProcessor<Recorder, Vocab>,
    Vec<InferenceChunk>,
    Vec<&'static str>,
);

#[test]
fn lifecycle_table() {
    let stop = InferenceChunk::Finish(FinishReason::Stop);
    let cases: Vec<LifecycleCase> = vec![
        (
            "ready opens, finish closes",
            processor(false, false),
            vec![ready(12, 4), text("Hi"), stop.clone()],
            vec!["start 12 4 Some(\"fp\")", "content \"Hi\"", "finish Finished(Stop) tools=false completion=1 reasoning=None"],
        ),
        (
            "output before ready opens with zero usage; a later ready is ignored",
            processor(false, false),
            vec![text("a"), ready(5, 1), text("b")],
            vec!["start 0 0 None", "content \"a\"", "content \"b\"", "finish Ended tools=false completion=2 reasoning=None"],
        ),
        (
            "an empty first chunk still opens the stream",
            processor(false, false),
            vec![text("")],
            vec!["start 0 0 None", "finish Ended tools=false completion=1 reasoning=None"],
        ),
        (
            "pushing after the finish chunk fails",
            processor(false, false),
            vec![ready(1, 0), stop.clone(), text("late")],
            vec![
                "start 1 0 Some(\"fp\")",
                "finish Finished(Stop) tools=false completion=0 reasoning=None",
                "error stream processor has finished",
            ],
        ),
        (
            "a token chunk without a vocabulary closes the processor",
            processor(false, false),
            vec![ready(1, 0), tokens(&[10]), text("x")],
            vec![
                "start 1 0 Some(\"fp\")",
                "error token chunk received without a tokenizer",
                "error stream processor is closed",
                "error stream processor is closed",
            ],
        ),
        (
            "a logprob count mismatch closes the processor",
            processor(false, true),
            vec![
                ready(1, 0),
                InferenceChunk::Tokens {
                    token_ids: vec![10, 11],
                    logprobs: Some(vec![ChunkLogprob { logprob: -1.0, top: Vec::new() }]),
                },
            ],
            vec![
                "start 1 0 Some(\"fp\")",
                "error invalid log probabilities: 1 log probabilities for 2 token IDs",
                "error stream processor is closed",
            ],
        ),
        (
            "finish() after a parsed tool call is still a plain stop",
            StreamProcessor::new(Recorder, &ParsingOptions::default(), false, None).with_id_seed(1),
            vec![text("<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"></｜DSML｜invoke></｜DSML｜tool_calls>")],
            vec![],
        ),
    ];
    for (name, processor, chunks, expected) in cases {
        let lines = run(processor, chunks);
        if expected.is_empty() {
            assert_eq!(
                lines.last().map(String::as_str),
                Some("finish Ended tools=true completion=1 reasoning=None"),
                "{name}"
            );
            continue;
        }
        assert_eq!(lines, expected, "{name}");
    }
}

#[test]
fn stop_sequence_completes_inside_the_push() {
    let options = ParsingOptions {
        stop_sequences: vec!["STOP".to_owned()],
        ..ParsingOptions::default()
    };
    let mut processor: StreamProcessor<Recorder, Vocab> =
        StreamProcessor::new(Recorder, &options, false, None);
    let mut out = Vec::new();
    processor.push(text("before STOP after"), &mut out).unwrap();
    assert!(processor.finished());
    assert_eq!(
        out,
        vec![
            "start 0 0 None",
            "content \"before \"",
            "finish StopSequence(\"STOP\") tools=false completion=1 reasoning=None"
        ]
    );
    let mut again = Vec::new();
    assert_eq!(
        processor.push(InferenceChunk::Finish(FinishReason::Stop), &mut again),
        Err(StreamError::Finished)
    );
    assert_eq!(processor.finish(&mut again), Ok(()));
    assert!(again.is_empty());
}

#[test]
fn close_makes_every_call_fail_and_finished_false() {
    let mut processor = processor(false, false);
    let mut out = Vec::new();
    processor.push(text("a"), &mut out).unwrap();
    processor.close();
    assert!(!processor.finished());
    assert_eq!(
        processor.push(text("b"), &mut out),
        Err(StreamError::Closed)
    );
    assert_eq!(processor.finish(&mut out), Err(StreamError::Closed));
}

#[test]
fn token_decoding_table() {
    let cases: Vec<(&str, bool, Vec<InferenceChunk>, Vec<&str>)> = vec![
        (
            "ordinary tokens of one chunk are one piece",
            false,
            vec![tokens(&[10, 11])],
            vec![
                "start 0 0 None",
                "content \"Hello world\"",
                "finish Ended tools=false completion=2 reasoning=Some(0)",
            ],
        ),
        (
            "an added token splits the chunk into pieces and keeps its spelling",
            false,
            vec![tokens(&[10, 1, 11])],
            vec![
                "start 0 0 None",
                "content \"Hello\"",
                "content \"<｜end▁of▁sentence｜>\"",
                "content \" world\"",
                "finish Ended tools=false completion=3 reasoning=Some(0)",
            ],
        ),
        (
            "a character split over tokens comes out whole; unknown ids give nothing",
            false,
            vec![tokens(&[20]), tokens(&[21, 999]), tokens(&[22])],
            vec![
                "start 0 0 None",
                "content \"🦀\"",
                "finish Ended tools=false completion=4 reasoning=Some(0)",
            ],
        ),
        (
            "a chunk whose run ends in an incomplete character is held whole; held ids do not count",
            false,
            vec![tokens(&[10, 20, 21])],
            vec![
                "start 0 0 None",
                "finish Ended tools=false completion=0 reasoning=Some(0)",
            ],
        ),
        (
            "an incomplete character before an added token is its own U+FFFD piece",
            false,
            vec![tokens(&[20, 1])],
            vec![
                "start 0 0 None",
                "content \"\u{fffd}\"",
                "content \"<｜end▁of▁sentence｜>\"",
                "finish Ended tools=false completion=2 reasoning=Some(0)",
            ],
        ),
        (
            "the </think> token ends reasoning; reasoning tokens count the reasoning text",
            true,
            vec![tokens(&[12, 10, 11, 12, 100, 12, 14])],
            vec![
                "start 0 0 None",
                "reasoning \"Hello world\"",
                "content \"x\"",
                "finish Ended tools=false completion=7 reasoning=Some(2)",
            ],
        ),
        (
            "</think> spelled by ordinary tokens is text, not the marker",
            true,
            vec![tokens(&[13]), tokens(&[30]), tokens(&[31]), tokens(&[32]), tokens(&[14])],
            vec![
                "start 0 0 None",
                "reasoning \"r\"",
                "reasoning \"</\"",
                "reasoning \"think\"",
                "reasoning \">\"",
                "reasoning \"x\"",
                "finish Ended tools=false completion=5 reasoning=Some(1)",
            ],
        ),
        (
            "text chunks are counted by token_count and mixed with tokens",
            true,
            vec![text("r"), tokens(&[101]), text("</think>x")],
            vec![
                "start 0 0 None",
                "reasoning \"r\"",
                "reasoning \"<think>\"",
                "content \"x\"",
                "finish Ended tools=false completion=3 reasoning=Some(1)",
            ],
        ),
    ];
    for (name, thinking, chunks, expected) in cases {
        assert_eq!(run(processor(thinking, true), chunks), expected, "{name}");
    }
}

#[test]
fn logprobs_travel_with_their_text() {
    let cases: Vec<(&str, bool, Vec<InferenceChunk>, Vec<&str>)> = vec![
        (
            "one entry per token of the piece",
            false,
            vec![tokens_lp(&[10, 11], -1.0)],
            vec![
                "start 0 0 None",
                "content \"Hello world\" lp[Hello=-1, world=-2]",
            ],
        ),
        (
            "tokens without text lend theirs to the next piece",
            false,
            vec![
                tokens_lp(&[20], -1.0),
                tokens_lp(&[21], -2.0),
                tokens_lp(&[22], -3.0),
            ],
            vec![
                "start 0 0 None",
                "content \"🦀\" lp[\\xf0\\x9f=-1,\\xa6=-2,\\x80=-3]",
            ],
        ),
        (
            "text held by the parser keeps its own logprobs; swallowed markers drop theirs",
            true,
            vec![
                tokens_lp(&[13], -1.0),
                tokens_lp(&[12], -2.0),
                tokens_lp(&[14], -3.0),
                tokens_lp(&[100], -4.0),
                tokens_lp(&[14], -5.0),
            ],
            vec![
                "start 0 0 None",
                "reasoning \"r\" lp[r=-1]",
                "reasoning \"\\n\" lp[\n=-2]",
                "reasoning \"x\" lp[x=-3]",
                "content \"x\" lp[x=-5]",
            ],
        ),
    ];
    for (name, thinking, chunks, expected) in cases {
        let mut lines = run(processor(thinking, true), chunks);
        lines.pop(); // the finish line
        assert_eq!(lines, expected, "{name}");
    }
}

#[test]
fn tool_call_ids_have_the_reference_shape() {
    let block = "<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"></｜DSML｜invoke><｜DSML｜invoke name=\"g\"></｜DSML｜invoke></｜DSML｜tool_calls>";
    // (name, thinking, output, expected infix per call)
    let cases = [
        ("thinking off: no infix", false, block.to_owned(), ""),
        (
            "thinking on, no reasoning before the call: ET_",
            true,
            format!("</think>{block}"),
            "ET_",
        ),
        (
            "thinking on with reasoning: no infix",
            true,
            format!("why</think>{block}"),
            "",
        ),
    ];
    for (name, thinking, output, infix) in cases {
        let mut processor: StreamProcessor<Recorder, Vocab> =
            StreamProcessor::new(Recorder, &options(thinking), thinking, None);
        let mut out = Vec::new();
        processor.push(text(&output), &mut out).unwrap();
        let ids = processor.tool_call_ids().to_vec();
        assert_eq!(ids.len(), 2, "{name}");
        for (index, id) in ids.iter().enumerate() {
            let prefix = format!("call_{index:02}_{infix}");
            assert!(id.starts_with(&prefix), "{name}: {id}");
            let rest = &id[prefix.len()..];
            assert_eq!(rest.len(), 24, "{name}: {id}");
            assert!(
                rest[..20].bytes().all(|b| b.is_ascii_alphanumeric()),
                "{name}: {id}"
            );
            assert!(
                rest[20..].bytes().all(|b| b.is_ascii_digit()),
                "{name}: {id}"
            );
        }
        assert_ne!(ids[0][8..], ids[1][8..], "{name}: ids differ");
    }
}

/// A token whose bytes are not valid UTF-8 is written byte by byte, its valid bytes too
/// (recorded from the wheel: the vocabulary's ` \xd0` is `\x20\xd0`, `о\xd0` is
/// `\xd0\xbe\xd0`).
#[test]
fn invalid_utf8_is_escaped_byte_by_byte() {
    let table: [(&[u8], &str); 6] = [
        (b"abc", "abc"),
        ("é".as_bytes(), "é"),
        (&[0xf0, 0x9f], "\\xf0\\x9f"),
        (&[0xab], "\\xab"),
        (&[b' ', 0xd0], "\\x20\\xd0"),
        (&[0xd0, 0xbe, 0xd0], "\\xd0\\xbe\\xd0"),
    ];
    for (bytes, expected) in table {
        assert_eq!(escape_invalid_utf8(bytes), expected);
    }
}

/// Push every chunk, then `finish()`; the lines of each call, one list per call.
fn run_pushes(
    mut processor: StreamProcessor<Recorder, Vocab>,
    chunks: Vec<InferenceChunk>,
) -> Vec<Vec<String>> {
    let mut calls = Vec::new();
    for chunk in chunks {
        let mut out = Vec::new();
        processor.push(chunk, &mut out).unwrap();
        calls.push(out);
    }
    let mut out = Vec::new();
    processor.finish(&mut out).unwrap();
    calls.push(out);
    calls
}

/// (name, processor, chunks, expected lines of each push and of `finish()`)
type PushCase = (
    &'static str,
    StreamProcessor<Recorder, Vocab>,
    Vec<InferenceChunk>,
    Vec<Vec<&'static str>>,
);

/// Text that a special token settled comes out in that push, and counts, even when the
/// chunk goes on into an incomplete character; text and token chunks interleave as if the
/// input were one kind. Recorded from the wheel with the real vocabulary (`hello` for `r`,
/// ids 3574 102 225 for the crab), here with the test vocabulary. One list per push, the
/// last one for `finish()`.
#[test]
fn settled_text_is_not_held_back() {
    let length = InferenceChunk::Finish(FinishReason::Length);
    let stop = |sequence: &str| ParsingOptions {
        stop_sequences: vec![sequence.to_owned()],
        ..options(true)
    };
    let with = |options: ParsingOptions| {
        StreamProcessor::new(Recorder, &options, true, Some(Vocab::new())).with_id_seed(7)
    };
    let cases: Vec<PushCase> = vec![
        (
            "reasoning before </think> comes out in that push; the character after it waits",
            processor(true, true),
            vec![tokens(&[13, 100, 20]), tokens(&[21, 22])],
            vec![
                vec!["start 0 0 None", "reasoning \"r\""],
                vec!["content \"🦀\""],
                vec!["finish Ended tools=false completion=5 reasoning=Some(1)"],
            ],
        ),
        (
            "a Length finish counts the settled tokens, not the held ones",
            processor(true, true),
            vec![tokens(&[13, 13, 13, 100, 20]), length.clone()],
            vec![
                vec!["start 0 0 None", "reasoning \"rrr\""],
                vec!["finish Finished(Length) tools=false completion=4 reasoning=Some(1)"],
                vec![],
            ],
        ),
        (
            "an end of sentence settles the text before it",
            processor(true, true),
            vec![tokens(&[13, 1, 13, 20]), length],
            vec![
                vec![
                    "start 0 0 None",
                    "reasoning \"r\"",
                    "reasoning \"<｜end▁of▁sentence｜>\"",
                ],
                vec!["finish Finished(Length) tools=false completion=2 reasoning=Some(1)"],
                vec![],
            ],
        ),
        (
            "tokens after a stop sequence's piece are not counted",
            with(stop("xr")),
            vec![tokens(&[100, 14, 13, 1, 14])],
            vec![
                vec![
                    "start 0 0 None",
                    "finish StopSequence(\"xr\") tools=false completion=3 reasoning=Some(0)",
                ],
                vec![],
            ],
        ),
        (
            "ids that decode to nothing at the end are not counted",
            processor(true, true),
            vec![tokens(&[13]), tokens(&[999])],
            vec![
                vec!["start 0 0 None", "reasoning \"r\""],
                vec![],
                vec!["finish Ended tools=false completion=1 reasoning=Some(1)"],
            ],
        ),
        (
            "a newline from a token chunk goes with </think> in a text chunk",
            processor(true, true),
            vec![tokens(&[13, 12]), text("</think>x")],
            vec![
                vec!["start 0 0 None"],
                vec!["reasoning \"r\"", "content \"x\""],
                vec!["finish Ended tools=false completion=3 reasoning=Some(1)"],
            ],
        ),
        (
            "a newline from a text chunk goes with the </think> token",
            processor(true, true),
            vec![text("r\n"), tokens(&[12]), tokens(&[100]), text("x")],
            vec![
                vec!["start 0 0 None"],
                vec![],
                vec!["reasoning \"r\""],
                vec!["content \"x\""],
                vec!["finish Ended tools=false completion=4 reasoning=Some(1)"],
            ],
        ),
        (
            "a spelling cut by the switch to tokens keeps the newline that breaks it",
            processor(true, true),
            vec![text("r<"), tokens(&[12, 12, 100, 14])],
            vec![
                vec!["start 0 0 None"],
                vec!["reasoning \"r<\"", "reasoning \"\\n\"", "content \"x\""],
                vec!["finish Ended tools=false completion=5 reasoning=Some(1)"],
            ],
        ),
    ];
    for (name, processor, chunks, expected) in cases {
        assert_eq!(run_pushes(processor, chunks), expected, "{name}");
    }
}

/// Logprobs go by origin: each piece's tokens (the held ones of an incomplete character and
/// ids that decode to nothing included) ride on the first event made from it; a piece the
/// parser swallows whole drops them (recorded from the wheel).
#[test]
fn logprobs_are_attributed_by_origin() {
    let cases: Vec<(&str, Vec<InferenceChunk>, Vec<&str>)> = vec![
        (
            "the newline eaten with </think> stays with the text of its piece",
            vec![
                tokens_lp(&[13, 12], -1.0),
                tokens_lp(&[100, 20], -3.0),
                tokens_lp(&[21], -5.0),
                tokens_lp(&[22], -6.0),
            ],
            vec![
                "start 0 0 None",
                "reasoning \"r\" lp[r=-1,\n=-2]",
                "content \"🦀\" lp[\\xf0\\x9f=-4,\\xa6=-5,\\x80=-6]",
            ],
        ),
        (
            "pieces of one chunk each carry their own",
            vec![tokens_lp(&[13, 1, 13, 100, 12, 14], -1.0)],
            vec![
                "start 0 0 None",
                "reasoning \"r\" lp[r=-1]",
                "reasoning \"<｜end▁of▁sentence｜>\" lp[<｜end▁of▁sentence｜>=-2]",
                "reasoning \"r\" lp[r=-3]",
                "content \"x\" lp[\n=-5,x=-6]",
            ],
        ),
        (
            "an id without text lends its logprob to the next piece",
            vec![
                tokens_lp(&[100], -1.0),
                tokens_lp(&[999], -2.0),
                tokens_lp(&[999, 1], -3.0),
                tokens_lp(&[14], -5.0),
            ],
            vec![
                "start 0 0 None",
                "content \"<｜end▁of▁sentence｜>\" lp[=-2,=-3,<｜end▁of▁sentence｜>=-4]",
                "content \"x\" lp[x=-5]",
            ],
        ),
    ];
    for (name, chunks, expected) in cases {
        let mut lines = run(processor(true, true), chunks);
        lines.pop(); // the finish line
        assert_eq!(lines, expected, "{name}");
    }
}

fn checked(thinking: bool, max_tokens: Option<u64>) -> StreamProcessor<Recorder, Vocab> {
    let mut processor = processor(thinking, true);
    processor.check_engine(EngineChecks { max_tokens });
    processor
}

#[test]
fn engine_checks_table() {
    let stop = InferenceChunk::Finish(FinishReason::Stop);
    let cases: Vec<LifecycleCase> = vec![
        (
            "output past max_tokens is cut there and ends with length",
            checked(false, Some(3)),
            vec![
                ready(1, 0),
                tokens(&[10, 11]),
                tokens(&[13, 14, 10]),
                tokens(&[11]),
            ],
            vec![
                "start 1 0 Some(\"fp\")",
                "content \"Hello world\"",
                "content \"r\"",
                "finish Finished(Length) tools=false completion=3 reasoning=Some(0)",
                "error stream processor has finished",
            ],
        ),
        (
            "exactly max_tokens waits for the engine's own finish",
            checked(false, Some(2)),
            vec![ready(1, 0), tokens(&[10, 11]), stop.clone()],
            vec![
                "start 1 0 Some(\"fp\")",
                "content \"Hello world\"",
                "finish Finished(Stop) tools=false completion=2 reasoning=Some(0)",
            ],
        ),
        (
            "text chunks count against the cap too",
            checked(false, Some(2)),
            vec![ready(1, 0), text("a"), text("b"), text("c")],
            vec![
                "start 1 0 Some(\"fp\")",
                "content \"a\"",
                "content \"b\"",
                "content \"c\"",
                "finish Finished(Length) tools=false completion=2 reasoning=Some(0)",
            ],
        ),
        (
            "an id outside the vocabulary fails the stream",
            checked(false, None),
            vec![ready(1, 0), tokens(&[10, 999_999, 11]), tokens(&[10])],
            vec![
                "start 1 0 Some(\"fp\")",
                "error token id 999999 is not in the vocabulary",
                "error stream processor is closed",
                "error stream processor is closed",
            ],
        ),
        (
            // The text encodes to three words (the test vocabulary's count), the engine made
            // it from two ids: the ids count.
            "reasoning tokens are the ids that made reasoning",
            checked(true, None),
            vec![
                ready(1, 0),
                tokens(&[13, 11, 11]),
                tokens(&[100, 10]),
                stop.clone(),
            ],
            vec![
                "start 1 0 Some(\"fp\")",
                "reasoning \"r world world\"",
                "content \"Hello\"",
                "finish Finished(Stop) tools=false completion=5 reasoning=Some(3)",
            ],
        ),
        (
            "text reasoning is encoded again, never above the completion tokens",
            checked(true, None),
            vec![
                ready(1, 0),
                text("one two three four</think>"),
                stop.clone(),
            ],
            vec![
                "start 1 0 Some(\"fp\")",
                "reasoning \"one two three four\"",
                "finish Finished(Stop) tools=false completion=1 reasoning=Some(1)",
            ],
        ),
    ];
    for (name, processor, chunks, expected) in cases {
        assert_eq!(run(processor, chunks), expected, "{name}");
    }
    // Without checks the processor is the reference's: unknown ids are dropped, no cap, and
    // the reasoning text is encoded again.
    let lines = run(
        processor(true, true),
        vec![
            ready(1, 0),
            text("one two three four</think>"),
            tokens(&[10, 999_999]),
            stop,
        ],
    );
    assert_eq!(
        lines,
        [
            "start 1 0 Some(\"fp\")",
            "reasoning \"one two three four\"",
            "content \"Hello\"",
            "finish Finished(Stop) tools=false completion=3 reasoning=Some(4)",
        ]
    );
}

#[test]
fn held_back_is_what_ending_now_would_flush() {
    let options = ParsingOptions {
        stop_sequences: vec!["STOP".to_owned()],
        ..options(true)
    };
    let mut processor = StreamProcessor::new(Recorder, &options, true, Some(Vocab::new()));
    let held_texts = |processor: &StreamProcessor<Recorder, Vocab>| -> Vec<(Segment, String)> {
        processor
            .held_back()
            .into_iter()
            .filter_map(|event| match event {
                ParseEvent::Text { segment, text, .. } => Some((segment, text)),
                _ => None,
            })
            .collect()
    };
    let mut out = Vec::new();
    processor.push(text("ab"), &mut out).unwrap();
    processor.push(text("c</th"), &mut out).unwrap();
    // The run that may end in a marker waits whole.
    assert_eq!(out, ["start 0 0 None", "reasoning \"ab\""]);
    let held = vec![(Segment::Reasoning, "c</th".to_owned())];
    assert_eq!(held_texts(&processor), held);
    // Asking changes nothing: the marker completes as if nobody had looked.
    assert_eq!(held_texts(&processor), held);
    out.clear();
    processor.push(text("ink>xyST"), &mut out).unwrap();
    assert_eq!(out, ["reasoning \"c\""]);
    assert_eq!(
        held_texts(&processor),
        [(Segment::Content, "xyST".to_owned())]
    );
    processor.push(text("OP"), &mut out).unwrap();
    assert!(processor.finished() && processor.held_back().is_empty());
}
