//! Named rendering rules, one case each, many of them edge cases the conversion never
//! produces (unknown tool ids, empty call lists, prefix assistants in odd places, custom
//! spellings). Each case builds a conversation directly; `rules_expected.json` holds the
//! reference's rendering of it as markup (every special range shown as `[[…]]`) and the
//! number of image sources it listed. Several of these rules differ from the reference's published
//! description (`docs/compatibility.md` lists them); the
//! case names say which rule they pin.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;

use deepseek_model::{
    Conversation, ImageDetail, ImageSource, ImageSourceKind, Message, ModelVersion,
    ReasoningEffort, ResponseFormat, SpecialToken, SpecialTokens, ToolCall, ToolChoice,
    ToolDefinition,
};
use deepseek_render::{render, RenderedPrompt};
use serde_json::{json, Value};

const V4: ModelVersion = ModelVersion::DeepseekV4Pro;
const V41: ModelVersion = ModelVersion::DeepseekV41Flash;
const IMAGE: &str = "<｜image｜>";

fn u(content: &str) -> Message {
    Message::user(content)
}

fn t(content: &str, id: Option<&str>) -> Message {
    Message::tool(content, id.map(str::to_owned))
}

fn s(content: &str) -> Message {
    Message::system(content)
}

fn r(content: &str) -> Message {
    Message::latest_reminder(content)
}

fn a(
    content: &str,
    reasoning: Option<&str>,
    calls: Option<Vec<ToolCall>>,
    prefix: bool,
) -> Message {
    Message::assistant(content, reasoning.map(str::to_owned), calls, prefix)
}

fn tc(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

fn td(
    name: &str,
    description: Option<&str>,
    parameters: Option<Value>,
    defer_loading: bool,
) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: description.map(str::to_owned),
        parameters,
        strict: None,
        defer_loading,
    }
}

fn tool_f() -> Vec<ToolDefinition> {
    vec![td("f", Some("d"), Some(json!({})), false)]
}

fn image() -> ImageSource {
    ImageSource {
        kind: ImageSourceKind::Url("http://x/a.png".to_owned()),
        detail: ImageDetail::High,
        path: String::new(),
    }
}

fn calls(ids: &[&str]) -> Option<Vec<ToolCall>> {
    Some(ids.iter().map(|id| tc(id, "f", "{}")).collect())
}

fn conv(messages: Vec<Message>) -> Conversation {
    Conversation {
        messages: messages.into_iter().map(Arc::new).collect(),
        ..Conversation::default()
    }
}

fn no_thinking(messages: Vec<Message>) -> Conversation {
    Conversation {
        thinking_mode: false,
        ..conv(messages)
    }
}

/// (name, version, conversation, special tokens)
fn cases() -> Vec<(&'static str, ModelVersion, Conversation, SpecialTokens)> {
    let default = SpecialTokens::default;
    let unknown_ids = || {
        vec![
            u("u"),
            a("", None, calls(&["c1", "c2"]), false),
            t("x", Some("zz")),
            t("r2", Some("c2")),
            t("y", Some("qq")),
            t("r1", Some("c1")),
        ]
    };
    let two_calls = || Some(vec![tc("b", "f1", "{}"), tc("a", "f2", "{}")]);
    let floats = || {
        vec![
            u("u"),
            a(
                "",
                None,
                Some(vec![tc("c", "f", r#"{"a": [1e-5, 1e-7, 1e16, 2.0]}"#)]),
                false,
            ),
        ]
    };
    let deferred = || Conversation {
        tools: vec![td("f", Some("d"), Some(json!({})), true)],
        ..no_thinking(vec![u("u")])
    };
    let custom = SpecialTokens::default()
        .with(SpecialToken::Dsml, "|D|".to_owned())
        .with(SpecialToken::ThinkingStart, "<TS>".to_owned())
        .with(SpecialToken::ThinkingEnd, "<TE>".to_owned())
        .with(SpecialToken::Eos, "<E>".to_owned())
        .with(SpecialToken::Box, "[B]".to_owned());
    vec![
        (
            "v4_tool_after_user_starts_new_block",
            V4,
            no_thinking(vec![
                u("u"),
                a("", None, calls(&["c1", "c2"]), false),
                t("x", Some("zz")),
                t("r2", Some("c2")),
                u("mid"),
                t("y", Some("qq")),
                t("r1", Some("c1")),
            ]),
            default(),
        ),
        (
            "v41_unknown_ids_sort_as_first_call",
            V41,
            no_thinking(unknown_ids()),
            default(),
        ),
        (
            "v4_unknown_ids_in_window",
            V4,
            no_thinking(unknown_ids()),
            default(),
        ),
        (
            "v4_calls_sorted_by_id",
            V4,
            no_thinking(vec![
                u("u"),
                a("", None, two_calls(), false),
                t("rb", Some("b")),
                t("ra", Some("a")),
            ]),
            default(),
        ),
        (
            "v41_calls_keep_order",
            V41,
            no_thinking(vec![
                u("u"),
                a("", None, two_calls(), false),
                t("ra", Some("a")),
                t("rb", Some("b")),
            ]),
            default(),
        ),
        (
            "v4_window_moves_non_tools_last",
            V4,
            no_thinking(vec![
                u("u"),
                a("", None, calls(&["c1", "c2", "c3"]), false),
                u("m"),
                t("r3", Some("c3")),
                t("r1", Some("c1")),
                t("r2", Some("c2")),
            ]),
            default(),
        ),
        (
            "v41_tool_without_id_keeps_slot",
            V41,
            no_thinking(vec![
                u("u"),
                a("", None, calls(&["c1", "c2", "c3"]), false),
                t("r3", Some("c3")),
                t("r2", Some("c2")),
                t("none", None),
                t("r1", Some("c1")),
            ]),
            default(),
        ),
        (
            "v4_consecutive_users_skip_empty",
            V4,
            no_thinking(vec![
                u("a"),
                u(""),
                u("b"),
                a("x", None, None, false),
                t("t", Some("c")),
                u(""),
                u("d"),
            ]),
            default(),
        ),
        (
            "v41_consecutive_users_join_all",
            V41,
            no_thinking(vec![u("a"), u(""), u("b")]),
            default(),
        ),
        (
            "grounding_tokens_in_assistant_text",
            V41,
            Conversation {
                tools: tool_f(),
                ..conv(vec![
                    u("<｜box｜>u"),
                    a(
                        "a <｜box｜>b<｜/box｜> <｜User｜>",
                        Some("r <｜ref｜>"),
                        Some(vec![tc("c", "f", r#"{"a": "<｜point｜>"}"#)]),
                        false,
                    ),
                ])
            },
            default(),
        ),
        (
            "v4_prefix_not_last",
            V4,
            no_thinking(vec![u("u"), a("c", Some(""), None, true), u("v")]),
            default(),
        ),
        (
            "v41_prefix_not_last",
            V41,
            conv(vec![u("u"), a("c", Some("r"), None, true), u("v")]),
            default(),
        ),
        (
            "v41_prefix_first_message",
            V41,
            Conversation {
                reasoning_effort: Some(ReasoningEffort::Low),
                ..conv(vec![a("c", Some("r"), None, true)])
            },
            default(),
        ),
        (
            "v4_prefix_last_with_required_opener",
            V4,
            Conversation {
                tools: tool_f(),
                tool_choice: ToolChoice::Required,
                reasoning_effort: Some(ReasoningEffort::Low),
                ..conv(vec![u("u"), a("", Some("r"), None, true)])
            },
            default(),
        ),
        (
            "v4_empty_call_list",
            V4,
            no_thinking(vec![u("u"), a("a", None, Some(vec![]), false)]),
            default(),
        ),
        (
            "v41_empty_call_list",
            V41,
            no_thinking(vec![u("u"), a("a", None, Some(vec![]), false)]),
            default(),
        ),
        ("v4_all_tools_deferred", V4, deferred(), default()),
        ("v41_all_tools_deferred", V41, deferred(), default()),
        ("v4_float_spelling", V4, no_thinking(floats()), default()),
        ("v41_float_spelling", V41, no_thinking(floats()), default()),
        (
            "dsml_argument_forms",
            V4,
            no_thinking(vec![
                u("u"),
                a(
                    "",
                    None,
                    Some(vec![
                        tc("c1", "f", r#"{"a":1,"b":"x\ny","a":2,"k\"ey":null}"#),
                        tc("c2", "g", "[1,2]"),
                        tc("c3", "h", "1e400"),
                        tc("c4", "i", " {} "),
                    ]),
                    false,
                ),
            ]),
            default(),
        ),
        (
            "v4_hoisted_systems_skip_empty",
            V4,
            Conversation {
                response_format: ResponseFormat::JsonObject,
                ..no_thinking(vec![
                    s("s1 <｜image｜>").with_images_at_first_occurrences(vec![image()], IMAGE),
                    s("").with_images_at_first_occurrences(vec![image()], IMAGE),
                    u("u"),
                    s("s2"),
                ])
            },
            default(),
        ),
        (
            "v41_head_sections_order",
            V41,
            Conversation {
                tools: tool_f(),
                response_format: ResponseFormat::JsonObject,
                ..no_thinking(vec![
                    Message {
                        tools: Some(vec![td("late", Some("L"), Some(json!({})), false)]),
                        ..s("s")
                    },
                    u("u"),
                    Message {
                        tools: Some(vec![td("later", None, None, false)]),
                        ..s("mid")
                    },
                ])
            },
            default(),
        ),
        (
            "v41_created_head_before_reminder",
            V41,
            Conversation {
                response_format: ResponseFormat::JsonSchema(json!({"type": "object"})),
                ..conv(vec![r("r1"), r("r2"), u("u"), r("r3")])
            },
            default(),
        ),
        (
            "v4_empty_conversation",
            V4,
            Conversation {
                reasoning_effort: Some(ReasoningEffort::Max),
                ..conv(vec![])
            },
            default(),
        ),
        ("v41_empty_conversation", V41, conv(vec![]), default()),
        (
            "custom_spellings",
            V4,
            Conversation {
                tools: tool_f(),
                tool_choice: ToolChoice::Required,
                ..conv(vec![
                    u("u"),
                    a("a", None, Some(vec![tc("c", "f", r#"{"x": 1}"#)]), false),
                ])
            },
            custom,
        ),
    ]
}

/// The prompt with every special range wrapped in `[[…]]`.
fn markup(rendered: &RenderedPrompt) -> String {
    let mut out = String::new();
    let mut last = 0;
    for range in &rendered.special_ranges {
        out.push_str(&rendered.prompt[last..range.start]);
        out.push_str("[[");
        out.push_str(&rendered.prompt[range.clone()]);
        out.push_str("]]");
        last = range.end;
    }
    out.push_str(&rendered.prompt[last..]);
    out
}

#[test]
fn rendering_rules() {
    let expected: BTreeMap<String, Value> =
        serde_json::from_str(include_str!("rules_expected.json")).expect("rules_expected.json");
    let cases = cases();
    assert_eq!(
        cases.len(),
        expected.len(),
        "every expectation has a case and vice versa"
    );
    let mut failures = Vec::new();
    for (name, version, conversation, tokens) in &cases {
        let want = expected
            .get(*name)
            .unwrap_or_else(|| panic!("no expectation for {name}"));
        let rendered = render(conversation, *version, tokens);
        let got = markup(&rendered);
        let want_markup = want["markup"].as_str().expect("markup");
        if got != want_markup {
            failures.push(format!(
                "{name}:\n  got      {got:?}\n  expected {want_markup:?}"
            ));
        }
        let want_images = want["image_sources"].as_u64().expect("image_sources") as usize;
        if rendered.image_sources.len() != want_images {
            failures.push(format!(
                "{name}: {} image sources, expected {want_images}",
                rendered.image_sources.len()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rules differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
