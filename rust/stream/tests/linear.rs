//! Linear time: doubling the output at most doubles the parser's work (with slack: ≤ 2.2×).
//!
//! Work is the parser's own instrumented counter (`Parser::work`): bytes examined, matcher
//! failure-link steps, matcher resets, per-push settling and bytes released. Each input is
//! fed whole and one byte (character) at a time, including a 1 MiB string parameter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{options, with_stops};
use deepseek_model::ParsingOptions;
use deepseek_stream::{ParseEvent, Parser};

const D: &str = "｜DSML｜";

fn work(options: &ParsingOptions, text: &str, one_char_pushes: bool) -> (u64, usize) {
    let mut parser = Parser::new(options);
    let mut events: Vec<ParseEvent> = Vec::new();
    if one_char_pushes {
        let mut buf = [0u8; 4];
        for c in text.chars() {
            parser.push(c.encode_utf8(&mut buf), &mut events);
        }
    } else {
        parser.push(text, &mut events);
    }
    parser.finish(&mut events);
    (parser.work(), events.len())
}

fn repeat_to(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len().max(1) + 1)
}

/// (name, options, output of about `n` bytes)
fn inputs(n: usize) -> Vec<(&'static str, ParsingOptions, String)> {
    let value = repeat_to("a<b</c</｜DSM\"q\\ </｜DSML x 中🦀", n);
    vec![
        (
            "reasoning with near-markers",
            options(true),
            repeat_to("r </thin\n\n<｜DS x\n", n),
        ),
        (
            "content with self-overlapping stops",
            with_stops(options(false), &["aaaaaac", "abababc"]),
            repeat_to("aaaaaababab", n),
        ),
        ("many invokes", options(false), {
            let one = format!("<{D} invoke name=\"f\">\n<{D} parameter name=\"a\" string=\"true\">v</{D} parameter>\n</{D} invoke>\n");
            format!("<{D} calls>\n{}", repeat_to(&one, n))
        }),
        ("1 MiB-scale string parameter", options(false), {
            format!("<{D} calls><{D} invoke name=\"f\">\n<{D} parameter name=\"p\" string=\"true\">{value}")
        }),
        (
            "newline runs",
            options(true),
            repeat_to("x\n\n\n\n\n\n\n\n", n),
        ),
    ]
}

#[test]
fn doubling_the_output_at_most_doubles_the_work() {
    const N: usize = 512 * 1024;
    let (small, large) = (inputs(N), inputs(2 * N));
    for ((name, options, a), (_, _, b)) in small.iter().zip(&large) {
        for one_char in [false, true] {
            let (wa, _) = work(options, a, one_char);
            let (wb, _) = work(options, b, one_char);
            let ratio = wb as f64 / wa as f64;
            println!("{name} (one char per push: {one_char}): {} → {} bytes, work {wa} → {wb}, ratio {ratio:.3}", a.len(), b.len());
            assert!(
                ratio <= 2.2,
                "{name}: work grew {ratio:.2}× for 2× the output"
            );
            assert!(
                wb as f64 <= 64.0 * b.len() as f64,
                "{name}: {wb} work units for {} bytes",
                b.len()
            );
        }
    }
}

/// The value is ASCII, so one character per push is one byte per push.
#[test]
fn a_one_mebibyte_string_parameter_byte_by_byte() {
    let value = repeat_to("v<</｜DSMx\"\\\n", 1 << 20);
    let text = format!("<{D} calls><{D} invoke name=\"f\">\n<{D} parameter name=\"p\" string=\"true\">{value}</{D} parameter></{D} invoke>");
    let mut parser = Parser::new(&options(false));
    let mut arguments = String::new();
    let mut events = Vec::new();
    let mut buf = [0u8; 4];
    for c in text.chars() {
        events.clear();
        parser.push(c.encode_utf8(&mut buf), &mut events);
        for e in &events {
            if let ParseEvent::ToolCallArguments { fragment, .. } = e {
                arguments.push_str(fragment);
            }
        }
    }
    let parsed: serde_json::Value = serde_json::from_str(&arguments).unwrap();
    assert_eq!(parsed["p"].as_str().unwrap(), value);
    assert!(
        parser.work() <= 64 * text.len() as u64,
        "work {} for {} bytes",
        parser.work(),
        text.len()
    );
}
