//! Chunking never matters, except for JSON-mode spaces (`parser_cases.rs`, `json_output_mode`).
//!
//! Every output of the corpus is fed whole, split in two at every character boundary, one
//! character at a time, and in pseudo-random chunkings; the accumulated reasoning, content,
//! tool calls (names and argument JSON) and stop must be identical. Invariants checked on
//! every run: no marker spelling leaks into reasoning, content or arguments; well-formed calls
//! have argument JSON that parses to the expected object; a call's start arrives no later
//! than the push holding its name's closing quote.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{json, options, run_pushes, with_stops, Outcome};
use deepseek_model::ParsingOptions;
use deepseek_stream::ParseEvent;
use serde_json::{json as j, Value};

const D: &str = "｜DSML｜";

struct Sample {
    name: &'static str,
    options: ParsingOptions,
    text: String,
    /// Expected argument objects of the calls, in order (`None`: malformed on purpose).
    arguments: Option<Vec<Value>>,
}

fn param(v41: bool, name: &str, string: bool, value: &str) -> String {
    let sp = if v41 { " " } else { "" };
    format!("<{D}{sp}parameter name=\"{name}\" string=\"{string}\">{value}</{D}{sp}parameter>\n")
}

fn invoke(v41: bool, name: &str, params: &[String]) -> String {
    let sp = if v41 { " " } else { "" };
    format!(
        "<{D}{sp}invoke name=\"{name}\">\n{}</{D}{sp}invoke>\n",
        params.concat()
    )
}

fn block(v41: bool, invokes: &[String]) -> String {
    if v41 {
        format!("<{D} calls>\n{}</{D} calls>", invokes.concat())
    } else {
        format!("<{D}tool_calls>\n{}</{D}tool_calls>", invokes.concat())
    }
}

fn corpus() -> Vec<Sample> {
    let tricky =
        "a < b </ c </｜ d </｜DSM e \"q\" \\ back\\slash 中文 🦀 </thi｜DSML </｜DSML parameter";
    let calls_v41 = block(
        true,
        &[
            invoke(
                true,
                "get_weather",
                &[
                    param(true, "city", true, "Paris"),
                    param(true, "days", false, "3"),
                    param(true, "note", true, tricky),
                ],
            ),
            invoke(
                true,
                "ns::g",
                &[param(true, "list", false, "[1, \"</x\", {\"k\": null}]")],
            ),
            invoke(true, "empty", &[]),
        ],
    );
    let calls_v4 = block(
        false,
        &[invoke(
            false,
            "名前",
            &[param(false, "q", true, "line1\nline2\t\"x\"")],
        )],
    );
    vec![
        Sample { name: "plain", options: options(false), text: "\n\nHello, world!\n".into(), arguments: Some(vec![]) },
        Sample {
            name: "reasoning then answer",
            options: options(true),
            text: "\n\nLet me think... a<b, c</d, </thin\n\n</think>\n\nThe answer is 42 🦀.".into(),
            arguments: Some(vec![]),
        },
        Sample {
            name: "reasoning, content, several invokes",
            options: options(true),
            text: format!("Need weather.\n\n</think>Checking 中文.\n\n{calls_v41}trailing text"),
            arguments: Some(vec![
                j!({"city": "Paris", "days": 3, "note": tricky}),
                j!({"list": [1, "</x", {"k": null}]}),
                j!({}),
            ]),
        },
        Sample {
            name: "tool call straight from reasoning, V4 tags",
            options: options(true),
            text: format!("plan\n\n{calls_v4}"),
            arguments: Some(vec![j!({"q": "line1\nline2\t\"x\""})]),
        },
        Sample {
            name: "look-alike closing tags in content",
            options: options(false),
            text: "x </think y </｜DSML z <｜DSM \n\n< done".into(),
            arguments: Some(vec![]),
        },
        Sample {
            name: "stop sequences",
            options: with_stops(options(false), &["STOP", "\n\nEND", "aab"]),
            text: "ST STO aaa aa\n\nEN\n\nEND after".into(),
            arguments: Some(vec![]),
        },
        Sample {
            name: "stop after reasoning",
            options: with_stops(options(true), &["</think>", "9"]),
            text: "r 9 r</think>a</think>b 9 c".into(),
            arguments: Some(vec![]),
        },
        Sample {
            name: "JSON mode fenced",
            options: json(options(false)),
            text: "Sure:\n```json\n{\"a\": [1, 2], \"b\": \"x</think>\"}\n```\nDone".into(),
            arguments: Some(vec![]),
        },
        Sample {
            name: "JSON mode bare with tools after",
            options: json(options(true)),
            text: format!("r</think>ok [1, {{\"k\": \"v\"}}]\n```\n\n{}", block(true, &[invoke(true, "f", &[])])),
            arguments: Some(vec![j!({})]),
        },
        Sample {
            name: "unterminated call",
            options: options(false),
            text: format!("<{D} calls>\n<{D} invoke name=\"f\">\n<{D} parameter name=\"a\" string=\"true\">par</｜DS"),
            arguments: None,
        },
    ]
}

/// Boundaries of `text`'s characters (byte offsets, excluding 0 and the end).
fn char_cuts(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(i, _)| i)
        .filter(|&i| i > 0)
        .collect()
}

fn split_at(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut last = 0;
    for &cut in cuts {
        pieces.push(text[last..cut].to_owned());
        last = cut;
    }
    pieces.push(text[last..].to_owned());
    pieces
}

/// Deterministic pseudo-random chunkings (piece lengths 1..=7 characters).
fn random_cuts(text: &str, seed: u64) -> Vec<usize> {
    let cuts = char_cuts(text);
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = Vec::new();
    let mut i = 0usize;
    loop {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        i += 1 + ((state >> 33) % 7) as usize;
        match cuts.get(i - 1) {
            Some(&c) => out.push(c),
            None => return out,
        }
    }
}

fn collapse_spaces(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if !(c == ' ' && out.ends_with(' ')) {
            out.push(c);
        }
    }
    out
}

/// Run one chunking; check the per-run invariants; return the comparable outcome.
fn run_checked(sample: &Sample, pieces: &[String]) -> Outcome {
    let pushes = run_pushes(&sample.options, pieces);
    let mut outcome = Outcome::default();
    for events in &pushes {
        outcome.add(events);
    }
    for leak in ["</think>", "<｜DSML｜", "</｜DSML｜"] {
        assert!(
            !outcome.reasoning.contains(leak),
            "{}: {leak} in reasoning",
            sample.name
        );
        if !sample.options.parse_json_output {
            assert!(
                !outcome.content.contains(leak),
                "{}: {leak} in content",
                sample.name
            );
        }
        for arguments in outcome.arguments() {
            assert!(
                !arguments.contains(leak),
                "{}: {leak} in arguments",
                sample.name
            );
        }
    }
    // The start of call k arrives no later than the push holding its name's closing quote.
    let mut consumed = 0usize;
    let mut search_from = 0usize;
    let mut start_push = Vec::new();
    for (i, events) in pushes.iter().enumerate() {
        for e in events {
            if let ParseEvent::ToolCallStart { .. } = e {
                start_push.push(i);
            }
        }
    }
    let mut quote_push = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        consumed += piece.len();
        while let Some(found) = sample.text[search_from..].find("invoke name=\"") {
            let open = search_from + found + "invoke name=\"".len();
            let Some(close) = sample.text[open..].find('"').map(|c| open + c) else {
                break;
            };
            if close < consumed {
                quote_push.push(i);
                search_from = close + 1;
            } else {
                break;
            }
        }
    }
    for (k, &started) in start_push.iter().enumerate() {
        if let Some(&quote) = quote_push.get(k) {
            assert!(
                started <= quote,
                "{}: call {k} started in push {started}, quote in push {quote}",
                sample.name
            );
        }
    }
    if sample.options.parse_json_output {
        outcome.content = collapse_spaces(&outcome.content);
    }
    outcome
}

#[test]
fn chunking_does_not_change_results() {
    let mut runs = 0usize;
    for sample in corpus() {
        let whole = run_checked(&sample, std::slice::from_ref(&sample.text));
        // Well-formed calls parse to the expected objects.
        if let Some(expected) = &sample.arguments {
            let parsed: Vec<Value> = whole
                .calls
                .iter()
                .map(|c| {
                    serde_json::from_str(&c.1)
                        .unwrap_or_else(|e| panic!("{}: {e}: {}", sample.name, c.1))
                })
                .collect();
            assert_eq!(&parsed, expected, "{}: arguments", sample.name);
        } else {
            assert_eq!(
                whole.arguments(),
                ["{\"a\": \"par</｜DS"],
                "{}: not repaired",
                sample.name
            );
        }

        let mut chunkings: Vec<(String, Vec<String>)> = vec![(
            "one char at a time".into(),
            sample.text.chars().map(String::from).collect(),
        )];
        for cut in char_cuts(&sample.text) {
            chunkings.push((
                format!("split at byte {cut}"),
                split_at(&sample.text, &[cut]),
            ));
        }
        for seed in 0..20 {
            chunkings.push((
                format!("random seed {seed}"),
                split_at(&sample.text, &random_cuts(&sample.text, seed)),
            ));
        }
        for (how, pieces) in chunkings {
            assert_eq!(pieces.concat(), sample.text);
            let got = run_checked(&sample, &pieces);
            assert_eq!(got, whole, "{}: {how} differs from whole", sample.name);
            runs += 1;
        }
    }
    println!("chunking: {runs} chunked runs identical to the whole-text run");
}

#[test]
fn json_mode_spaces_follow_the_pieces() {
    // The one place chunking matters: each pushed piece of prefix text becomes one space.
    let options = json(options(false));
    let whole = common::run(&options, &["ab {1}"]);
    let split = common::run(&options, &["a", "b ", "{1}"]);
    assert_eq!(
        (whole.content.as_str(), split.content.as_str()),
        (" {1}", "  {1}")
    );
}
