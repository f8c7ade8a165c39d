//! Named, table-driven parser cases of the reference's observed parse results, plus a
//! regression group
//! (behaviours found by differential testing against the reference) that only grows.
//! Every case is checked fed whole and one character at a time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{chars, json, options, run, run_pushes, spell, with_stops, Outcome};
use deepseek_model::{ParsingOptions, SpecialToken};

const D: &str = "｜DSML｜";

struct Case {
    name: &'static str,
    options: ParsingOptions,
    text: String,
    reasoning: &'static str,
    content: &'static str,
    /// (name, arguments)
    calls: &'static [(&'static str, &'static str)],
    stop: Option<&'static str>,
}

fn case(name: &'static str, options: ParsingOptions, text: impl Into<String>) -> Case {
    Case {
        name,
        options,
        text: text.into(),
        reasoning: "",
        content: "",
        calls: &[],
        stop: None,
    }
}

impl Case {
    fn reasoning(mut self, r: &'static str) -> Self {
        self.reasoning = r;
        self
    }
    fn content(mut self, c: &'static str) -> Self {
        self.content = c;
        self
    }
    fn calls(mut self, calls: &'static [(&'static str, &'static str)]) -> Self {
        self.calls = calls;
        self
    }
    fn stop(mut self, s: &'static str) -> Self {
        self.stop = Some(s);
        self
    }
}

/// A V4.1 invoke of `name` with the given (name, string?, value) parameters.
fn invoke(name: &str, params: &[(&str, bool, &str)]) -> String {
    let mut s = format!("<{D} invoke name=\"{name}\">\n");
    for (p, string, v) in params {
        s += &format!("<{D} parameter name=\"{p}\" string=\"{string}\">{v}</{D} parameter>\n");
    }
    s + &format!("</{D} invoke>\n")
}

fn block(invokes: &[String]) -> String {
    format!("<{D} calls>\n{}</{D} calls>", invokes.concat())
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

fn check(cases: Vec<Case>) {
    for c in cases {
        for (how, outcome) in [
            ("whole", run(&c.options, &[&c.text])),
            ("per char", run(&c.options, &chars(&c.text))),
        ] {
            let got: Vec<(&str, &str)> = outcome
                .calls
                .iter()
                .map(|x| (x.0.as_str(), x.1.as_str()))
                .collect();
            assert_eq!(
                outcome.reasoning, c.reasoning,
                "{} ({how}): reasoning",
                c.name
            );
            if c.options.parse_json_output && how != "whole" {
                // JSON mode: the prefix becomes one space per pushed piece (§10.4).
                assert_eq!(
                    collapse_spaces(&outcome.content),
                    collapse_spaces(c.content),
                    "{} ({how}): content",
                    c.name
                );
            } else {
                assert_eq!(outcome.content, c.content, "{} ({how}): content", c.name);
            }
            assert_eq!(got, c.calls, "{} ({how}): calls", c.name);
            assert_eq!(outcome.stop.as_deref(), c.stop, "{} ({how}): stop", c.name);
        }
    }
}

#[test]
fn observed_parse_results_table() {
    let (on, off) = (options(true), options(false));
    let two_params = block(&[invoke(
        "get_weather",
        &[("city", true, "Paris"), ("days", false, "3")],
    )]);
    check(vec![
        case("plain", off.clone(), "Hello").content("Hello"),
        case(
            "leading newlines dropped, trailing kept",
            off.clone(),
            "\n\nHello\n",
        )
        .content("Hello\n"),
        case("reasoning then answer", on.clone(), "reason</think>answer")
            .reasoning("reason")
            .content("answer"),
        case(
            "newlines around the think end",
            on.clone(),
            "\n\nreason\n</think>\n\nanswer",
        )
        .reasoning("reason")
        .content("answer"),
        case("reasoning only", on.clone(), "reasoning only").reasoning("reasoning only"),
        case(
            "second think end deleted",
            on.clone(),
            "r</think>a</think>b",
        )
        .reasoning("r")
        .content("ab"),
        case("stray think end deleted", off.clone(), "a</think>b").content("ab"),
        case(
            "deleting ends leading removal",
            off.clone(),
            "</think>\n\nb",
        )
        .content("\n\nb"),
        case("think start is text", on.clone(), "<think>r</think>a")
            .reasoning("<think>r")
            .content("a"),
        case(
            "EOS is text",
            on.clone(),
            "r</think>a<｜end▁of▁sentence｜>tail",
        )
        .reasoning("r")
        .content("a<｜end▁of▁sentence｜>tail"),
        case("partial think end flushed at EOF", on.clone(), "r</thin").reasoning("r</thin"),
        case(
            "reasoning, content, one call",
            on.clone(),
            format!("think</think>pre\n\n{two_params}"),
        )
        .reasoning("think")
        .content("pre")
        .calls(&[("get_weather", "{\"city\": \"Paris\", \"days\": 3}")]),
    ]);
}

#[test]
fn stage_rules() {
    let (on, off) = (options(true), options(false));
    let one = block(&[invoke("f", &[("a", true, "1")])]);
    check(vec![
        case("only newline counts as leading", off.clone(), "\n \nHello").content(" \nHello"),
        case("carriage return kept", off.clone(), "\r\nHello").content("\r\nHello"),
        case(
            "leading removal after think end",
            on.clone(),
            "r</think>\n \na",
        )
        .reasoning("r")
        .content(" \na"),
        case(
            "other whitespace before think end kept",
            on.clone(),
            "r \n\n</think>",
        )
        .reasoning("r "),
        case(
            "DSML ends reasoning with its newlines",
            on.clone(),
            format!("thinking...\n\n{one}"),
        )
        .reasoning("thinking...")
        .calls(&[("f", "{\"a\": \"1\"}")]),
        case(
            "DSML in content with its newlines",
            off.clone(),
            format!("pre\n\n{one}"),
        )
        .content("pre")
        .calls(&[("f", "{\"a\": \"1\"}")]),
        case(
            "stray DSML swallows the rest",
            off.clone(),
            format!("look at <{D} this"),
        )
        .content("look at "),
        case(
            "DSML not parsed when tool calls are off",
            ParsingOptions {
                parse_tool_calls: false,
                ..off.clone()
            },
            format!("a\n<{D} calls>"),
        )
        .content("a\n<｜DSML｜ calls>"),
        case(
            "starts in the tool-call block",
            ParsingOptions {
                starts_in_tool_calls: true,
                ..on.clone()
            },
            format!("{}</{D} calls>", invoke("f", &[])),
        )
        .calls(&[("f", "{}")]),
        case(
            "continuation keeps leading newlines",
            ParsingOptions {
                thinking_initial_stage: Some(
                    deepseek_model::ThinkingInitialStage::ContentContinuation,
                ),
                ..off.clone()
            },
            "\n\nx",
        )
        .content("\n\nx"),
        case(
            "reasoning continuation keeps leading newlines",
            ParsingOptions {
                thinking_initial_stage: Some(
                    deepseek_model::ThinkingInitialStage::ReasoningContinuation,
                ),
                ..off.clone()
            },
            "\n\nx",
        )
        .reasoning("\n\nx"),
    ]);
}

#[test]
fn tool_call_markup() {
    let off = options(false);
    let v4 = |name: &str, params: &str| {
        format!(
            "<{D}tool_calls>\n<{D}invoke name=\"{name}\">\n{params}</{D}invoke>\n</{D}tool_calls>"
        )
    };
    let p4 = |n: &str, s: &str, v: &str| {
        format!("<{D}parameter name=\"{n}\" string=\"{s}\">{v}</{D}parameter>\n")
    };
    check(vec![
        case("V4 spelling", off.clone(), v4("f", &p4("a", "true", "x"))).calls(&[("f", "{\"a\": \"x\"}")]),
        case("raw value with whitespace", off.clone(), v4("f", &p4("n", "false", " [1, 2,\n 3] ")))
            .calls(&[("f", "{\"n\":  [1, 2,\n 3] }")]),
        case("raw value not validated", off.clone(), v4("f", &p4("n", "false", "abc"))).calls(&[("f", "{\"n\": abc}")]),
        case("empty raw value", off.clone(), v4("f", &p4("n", "false", ""))).calls(&[("f", "{\"n\": }")]),
        case("duplicate parameter", off.clone(), v4("f", &(p4("a", "true", "1") + &p4("a", "true", "2"))))
            .calls(&[("f", "{\"a\": \"1\", \"a\": \"2\"}")]),
        case("string escaping", off.clone(), v4("f", &p4("s", "true", "q\"b\\n\nt\tc\u{1}é🦀")))
            .calls(&[("f", "{\"s\": \"q\\\"b\\\\n\\nt\\tc\\u0001é🦀\"}")]),
        case("no parameters", off.clone(), v4("f", "")).calls(&[("f", "{}")]),
        case("mixed spellings", off.clone(), format!("<{D}tool_calls>{}</{D}tool_calls>", invoke("g", &[])))
            .calls(&[("g", "{}")]),
        case("name up to the quote", off.clone(), format!("<{D} calls><{D} invoke name=\"f\"x\"></{D} invoke>"))
            .calls(&[("f", "{}")]),
        case("text after the block discarded", off.clone(), format!("{}more<{D} calls>", block(&[invoke("f", &[])])))
            .calls(&[("f", "{}")]),
        case(
            "parameter without a string attribute",
            off.clone(),
            format!("<{D} calls><{D} invoke name=\"f\">\n<{D} parameter name=\"a\">v</{D} parameter>"),
        )
        .calls(&[("f", "{\"a\">v</｜DSML｜: ")]),
        case("unterminated: EOF before the invoke end", off.clone(), format!("<{D} calls>{}", &invoke("f", &[("a", true, "1")])[..]).replace(&format!("</{D} invoke>\n"), ""))
            .calls(&[("f", "{\"a\": \"1\"")]),
        case(
            "unterminated: EOF inside a value",
            off.clone(),
            format!("<{D} calls><{D} invoke name=\"f\">\n<{D} parameter name=\"a\" string=\"true\">partial"),
        )
        .calls(&[("f", "{\"a\": \"partial")]),
        case("unterminated: EOF inside the name", off.clone(), format!("<{D} calls><{D} invoke name=\"fo")),
        case("unterminated: EOF after the invoke tag", off.clone(), format!("<{D} calls><{D} invoke name=\"f\">"))
            .calls(&[("f", "")]),
    ]);
}

#[test]
fn json_output_mode() {
    let off = json(options(false));
    check(vec![
        case(
            "fenced",
            off.clone(),
            "Here you go:\n```json\n{\"a\": 1}\n```\nThanks",
        )
        .content(" {\"a\": 1} "),
        case(
            "bare bracket keeps trailing prose",
            off.clone(),
            "text [1, 2] more",
        )
        .content(" [1, 2] more"),
        case("bare brace", off.clone(), "  {\"a\": 1} trailing").content(" {\"a\": 1} trailing"),
        case("no JSON at all", off.clone(), "no json at all").content(" "),
        case("leading newlines removed", off.clone(), "\n\n{}").content("{}"),
        case(
            "stop not matched in the prefix",
            with_stops(off.clone(), &["STOP"]),
            "STOP{\"a\": 1}",
        )
        .content(" {\"a\": 1}"),
        case(
            "stop matched inside the JSON",
            with_stops(off.clone(), &["STOP"]),
            "{\"a\": \"STOP\"}",
        )
        .content("{\"a\": \"")
        .stop("STOP"),
    ]);
}

#[test]
fn stop_sequences() {
    let off = options(false);
    check(vec![
        case(
            "first to complete wins",
            with_stops(off.clone(), &["xx", "x"]),
            "xx",
        )
        .stop("x"),
        case("empty stop discarded", with_stops(off.clone(), &[""]), "ab").content("ab"),
        case(
            "not matched in reasoning",
            with_stops(options(true), &["r"]),
            "r</think>ar",
        )
        .reasoning("r")
        .content("a")
        .stop("r"),
        case(
            "newline stop before leading removal",
            with_stops(off.clone(), &["\n"]),
            "\nab",
        )
        .stop("\n"),
        case(
            "think end as a stop in content",
            with_stops(off.clone(), &["</think>"]),
            "a</think>b",
        )
        .content("a")
        .stop("</think>"),
        case(
            "not inside tool-call markup",
            with_stops(off.clone(), &["a"]),
            block(&[invoke("f", &[("a", true, "a")])]),
        )
        .calls(&[("f", "{\"a\": \"a\"}")]),
    ]);
}

/// Behaviours the spec does not spell out, found by differential tests against the reference.
#[test]
fn regressions() {
    let (on, off) = (options(true), options(false));
    let param = |name_and_attrs: &str| {
        format!("<{D} calls><{D} invoke name=\"f\">\n<{D} parameter name={name_and_attrs}>v</{D} parameter>\n</{D} invoke>")
    };
    let mut empty_end = options(true);
    empty_end
        .special_tokens
        .set(SpecialToken::ThinkingEnd, String::new());
    let mut custom = options(true);
    custom
        .special_tokens
        .set(SpecialToken::ThinkingEnd, "[/think]".to_owned());
    custom
        .special_tokens
        .set(SpecialToken::Dsml, "|DSML|".to_owned());
    check(vec![
        case("parameter name runs to the next space", off.clone(), param("\"k\"x\" string=\"true\""))
            .calls(&[("f", "{\"k\"x\": \"v\"}")]),
        case("a space inside the name ends it", off.clone(), param("\"k x\" string=\"true\""))
            .calls(&[("f", "{\"k: \"v\"}")]),
        case("a newline that breaks a partial marker is kept", on.clone(), "r<\n\n</think>x")
            .reasoning("r<\n")
            .content("x"),
        case("stop tie: listed first wins", with_stops(off.clone(), &["ab", "b"]), "ab").stop("ab"),
        case("stop tie: listed first wins (2)", with_stops(off.clone(), &["b", "ab"]), "ab").content("a").stop("b"),
        case("dropped leading newline resets stops", with_stops(off.clone(), &["\nb"]), "\n\nb").content("b"),
        case("deleted think end resets stops", with_stops(off.clone(), &["nk>b"]), "a</think>b").content("ab"),
        case("fence end also ends bare JSON", json(off.clone()), "{1\n```x").content("{1 "),
        case("after the JSON nothing but DSML is matched", json(off.clone()), "```json\n{1}\n```\n\nx</think>y```json\n{2}")
            .content("{1} "),
        case("empty thinking-end spelling ends reasoning after one byte", empty_end, "\nab</think>c")
            .reasoning("a")
            .content("b</think>c"),
        case("custom spellings", custom, "r[/think]a<|DSML|tool_calls><|DSML|invoke name=\"f\"></|DSML|invoke></|DSML|tool_calls>")
            .reasoning("r")
            .content("a")
            .calls(&[("f", "{}")]),
    ]);
}

/// (name, options, pushed pieces, spelled events of each push and of `finish`)
type GranularityRow = (
    &'static str,
    ParsingOptions,
    Vec<String>,
    Vec<Vec<&'static str>>,
);

/// Event timing per push, as the reference's protocol deltas show it.
#[test]
fn push_granularity_regressions() {
    let off = options(false);
    let value_open =
        format!("<{D} calls><{D} invoke name=\"f\">\n<{D} parameter name=\"a\" string=\"true\">");
    let table: Vec<GranularityRow> = vec![
        (
            "held pieces come out as they arrived",
            with_stops(off.clone(), &["STOP"]),
            vec!["aS".into(), "bS".into(), "T".into(), "OP".into()],
            vec![
                vec![],
                vec!["c:aS"],
                vec![],
                vec!["c:b", "stop:STOP"],
                vec![],
            ],
        ),
        (
            "a push's text is held whole",
            off.clone(),
            vec!["pre\n\n".into(), "x".into()],
            vec![vec![], vec!["c:pre\n\n", "c:x"], vec![]],
        ),
        (
            "text split by a deleted marker is two deltas",
            off.clone(),
            vec!["a</think>b".into()],
            vec![vec!["c:a", "c:b"], vec![]],
        ),
        (
            "JSON prefix: one space per piece",
            json(off.clone()),
            vec!["a".into(), "b".into(), "c{".into()],
            vec![vec!["c: "], vec!["c: "], vec!["c: ", "c:{"], vec![]],
        ),
        (
            "an opening quote waits for a marker starting right after it",
            off.clone(),
            vec![format!("{value_open}</"), "x".into()],
            vec![
                vec!["call0:f", "arg0:{", "arg0:\"a\"", "arg0:: "],
                vec!["arg0:\"", "arg0:</", "arg0:x"],
                vec!["end0"],
            ],
        ),
        (
            // Token input releases it (`token_input`); recorded from the wheel.
            "a closing quote made by a spelled marker waits for a marker after it",
            off.clone(),
            vec![format!("{value_open}v</{D}</"), format!("{D} invoke>")],
            vec![
                vec![
                    "call0:f",
                    "arg0:{",
                    "arg0:\"a\"",
                    "arg0:: ",
                    "arg0:\"",
                    "arg0:v",
                ],
                vec!["arg0:\"", "arg0:}", "end0"],
                vec![],
            ],
        ),
        (
            "a quote from a marker begun in an earlier push does not wait",
            off.clone(),
            vec![
                format!("{value_open}v</"),
                format!("{D}par"),
                "ameter>".into(),
            ],
            vec![
                vec!["call0:f", "arg0:{", "arg0:\"a\"", "arg0:: ", "arg0:\""],
                vec!["arg0:v", "arg0:\""],
                vec![],
                vec!["end0"],
            ],
        ),
        (
            "a call start waits for an invoke end starting right after it",
            off.clone(),
            vec![
                format!("<{D}tool_calls><{D}invoke name=\"f\"</｜"),
                format!("DSML｜invoke>"),
            ],
            vec![vec![], vec!["call0:f", "arg0:{}", "end0"], vec![]],
        ),
    ];
    for (name, options, pieces, want) in table {
        let got: Vec<Vec<String>> = run_pushes(&options, &pieces)
            .iter()
            .map(|e| spell(e))
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn later_text_is_ignored_once_done() {
    let mut parser = deepseek_stream::Parser::new(&with_stops(options(false), &["x"]));
    let mut events = Vec::new();
    parser.push("axb", &mut events);
    assert!(parser.is_done());
    parser.push("more", &mut events);
    parser.finish(&mut events);
    let mut outcome = Outcome::default();
    outcome.add(&events);
    assert_eq!(
        (outcome.content.as_str(), outcome.stop.as_deref()),
        ("a", Some("x"))
    );
}

/// Token input: special tokens are symbols, observed with the V4
/// tokenizer against the reference.
#[test]
fn token_input() {
    use deepseek_stream::Decoded::{Added, Special, Text};
    use deepseek_stream::{Decoded, Parser};
    let eos = SpecialToken::Eos;
    type TokenRow = (
        &'static str,
        ParsingOptions,
        Vec<Vec<Decoded<'static>>>,
        Vec<Vec<&'static str>>,
    );
    let no_tools = ParsingOptions {
        parse_tool_calls: false,
        ..options(true)
    };
    let table: Vec<TokenRow> = vec![
        (
            "the think-end token ends reasoning, with the newlines before it",
            options(true),
            vec![vec![
                Text("r\n\n"),
                Special(SpecialToken::ThinkingEnd),
                Text("x"),
            ]],
            vec![vec!["r:r", "c:x"], vec![]],
        ),
        (
            "think end spelled with ordinary tokens is text",
            options(true),
            vec![vec![Text("a</think>b")]],
            vec![vec!["r:a</think>b"], vec![]],
        ),
        (
            "a lone < is not held when no marker can follow it",
            no_tools,
            vec![vec![Text("a")], vec![Text("<")], vec![Text("b")]],
            vec![vec!["r:a"], vec!["r:<"], vec!["r:b"], vec![]],
        ),
        (
            "a lone < is held when a DSML token may follow",
            options(false),
            vec![vec![Text("a")], vec![Text("<")], vec![Text("b")]],
            vec![vec!["c:a"], vec![], vec!["c:<", "c:b"], vec![]],
        ),
        (
            "an EOS token is its own delta and invisible to stops",
            with_stops(options(false), &["ab", "end▁of"]),
            vec![vec![Text("a"), Special(eos), Text("b")]],
            vec![vec!["c:a", "c:<｜end▁of▁sentence｜>", "c:b"], vec![]],
        ),
        (
            "a special token ends leading-newline removal",
            options(false),
            vec![vec![Special(eos), Text("\n\nx")]],
            vec![vec!["c:<｜end▁of▁sentence｜>", "c:\n\nx"], vec![]],
        ),
        (
            "the DSML token is text when tool calls are off",
            ParsingOptions {
                parse_tool_calls: false,
                ..options(false)
            },
            vec![vec![
                Text("a<"),
                Special(SpecialToken::Dsml),
                Text(" calls>b"),
            ]],
            vec![vec!["c:a<", "c:｜DSML｜", "c: calls>b"], vec![]],
        ),
        (
            "tool call from DSML tokens",
            options(false),
            vec![vec![
                Text("<"),
                Special(SpecialToken::Dsml),
                Text(" calls><"),
                Special(SpecialToken::Dsml),
                Text(" invoke name=\"f\"></"),
                Special(SpecialToken::Dsml),
                Text(" invoke></"),
                Special(SpecialToken::Dsml),
                Text(" calls>"),
            ]],
            vec![vec!["call0:f", "arg0:{}", "end0"], vec![]],
        ),
        // Recorded from the wheel (`tests/reference_tables/string_arg_ends.json.gz`): what a
        // marker completed by the DSML token makes goes out with that push, even when a
        // marker begins right after the token (text input holds it: `push_granularity`).
        (
            "a closing quote made by the DSML token does not wait for a marker after it",
            options(false),
            vec![
                vec![
                    Text("<"),
                    Special(SpecialToken::Dsml),
                    Text(" calls><"),
                    Special(SpecialToken::Dsml),
                    Text(" invoke name=\"f\"><"),
                    Special(SpecialToken::Dsml),
                    Text(" parameter name=\"a\" string=\"true\">v</"),
                    Special(SpecialToken::Dsml),
                    Text("</"),
                ],
                vec![Special(SpecialToken::Dsml), Text(" invoke>")],
            ],
            vec![
                vec![
                    "call0:f",
                    "arg0:{",
                    "arg0:\"a\"",
                    "arg0:: ",
                    "arg0:\"",
                    "arg0:v",
                    "arg0:\"",
                ],
                vec!["arg0:}", "end0"],
                vec![],
            ],
        ),
        (
            "an invoke's end made by the DSML token does not wait for a marker after it",
            options(false),
            vec![
                vec![
                    Text("<"),
                    Special(SpecialToken::Dsml),
                    Text(" calls><"),
                    Special(SpecialToken::Dsml),
                    Text(" invoke name=\"f\"></"),
                    Special(SpecialToken::Dsml),
                    Text("<"),
                ],
                vec![Special(SpecialToken::Dsml), Text(" invoke>")],
            ],
            vec![vec!["call0:f", "arg0:{}", "end0"], vec![], vec![]],
        ),
        (
            "other added tokens come out by their text",
            options(false),
            vec![vec![Text("a"), Added("<｜place▁holder▁no▁7｜>"), Text("b")]],
            vec![vec!["c:a", "c:<｜place▁holder▁no▁7｜>", "c:b"], vec![]],
        ),
    ];
    for (name, options, chunks, want) in table {
        let mut parser = Parser::new(&options);
        let mut got = Vec::new();
        for chunk in &chunks {
            let mut events = Vec::new();
            parser.push_tokens(chunk, &mut events);
            got.push(spell(&events));
        }
        let mut events = Vec::new();
        parser.finish(&mut events);
        got.push(spell(&events));
        assert_eq!(got, want, "{name}");
    }
}

/// Text and token chunks mix as one input (recorded from the wheel with the V4 tokenizer):
/// a special-token marker's newlines, plain prefix and completed token carry over a change
/// of chunk kind; a spelling cut by the change is text, keeps the newline that breaks it,
/// and is finished by the special token when the rest of the marker is a prefix of its
/// spelling. One list per push, the last one for `finish`.
#[test]
fn text_and_token_chunks_mix() {
    use deepseek_stream::Decoded::{Special, Text};
    use deepseek_stream::{Decoded, Parser};
    enum Push {
        Text(&'static str),
        Tokens(Vec<Decoded<'static>>),
    }
    let think_end = || Special(SpecialToken::ThinkingEnd);
    let dsml = || Special(SpecialToken::Dsml);
    type MixRow = (
        &'static str,
        ParsingOptions,
        Vec<Push>,
        Vec<Vec<&'static str>>,
    );
    let table: Vec<MixRow> = vec![
        (
            "a newline of a token chunk goes with a spelled </think>",
            options(true),
            vec![Push::Tokens(vec![Text("a\n")]), Push::Text("</think>b")],
            vec![vec![], vec!["r:a", "c:b"], vec![]],
        ),
        (
            "a newline of a text chunk goes with the </think> token",
            options(true),
            vec![
                Push::Text("a\n"),
                Push::Tokens(vec![think_end()]),
                Push::Text("b"),
            ],
            vec![vec![], vec!["r:a"], vec!["c:b"], vec![]],
        ),
        (
            "a spelling cut by the change is text",
            options(true),
            vec![Push::Text("a</th"), Push::Tokens(vec![Text("ink>b")])],
            vec![vec![], vec!["r:a</th", "r:ink>b"], vec![]],
        ),
        (
            "a cut spelling keeps the newline that breaks it",
            options(true),
            vec![
                Push::Text("r<"),
                Push::Tokens(vec![Text("\n\n"), think_end(), Text("x")]),
            ],
            vec![vec![], vec!["r:r<", "r:\n", "c:x"], vec![]],
        ),
        (
            "the DSML token finishes a spelled <｜DSML, newlines included",
            options(false),
            vec![
                Push::Text("a\n\n<｜DSML"),
                Push::Tokens(vec![
                    dsml(),
                    Text(" calls>\n<"),
                    dsml(),
                    Text(" invoke name=\"f\"></"),
                    dsml(),
                    Text(" invoke></"),
                    dsml(),
                    Text(" calls>"),
                ]),
            ],
            vec![vec![], vec!["c:a", "call0:f", "arg0:{}", "end0"], vec![]],
        ),
        (
            "a plain < of a token chunk and a spelled DSML make the block start",
            options(false),
            vec![
                Push::Tokens(vec![Text("a<")]),
                Push::Text("｜DSML｜ calls><｜DSML｜ invoke name=\"f\"></｜DSML｜ invoke>"),
            ],
            vec![vec![], vec!["c:a", "call0:f", "arg0:{}", "end0"], vec![]],
        ),
    ];
    for (name, options, pushes, want) in table {
        let mut parser = Parser::new(&options);
        let mut got = Vec::new();
        for push in &pushes {
            let mut events = Vec::new();
            match push {
                Push::Text(text) => parser.push(text, &mut events),
                Push::Tokens(pieces) => parser.push_tokens(pieces, &mut events),
            }
            got.push(spell(&events));
        }
        let mut events = Vec::new();
        parser.finish(&mut events);
        got.push(spell(&events));
        assert_eq!(got, want, "{name}");
    }
}
