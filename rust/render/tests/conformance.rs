//! Conformance harness: every vendored request case whose `expected.render` holds a prompt is
//! rebuilt from `expected.conversation` (the probe's JSON shape, see
//! tests/conformance/probe.py `ser_conversation`) and rendered; `prompt`, `special_ranges`
//! (as Python code-point offsets) and `image_sources` must equal the reference's.
//!
//! Image placeholder positions are not in the JSON. They are rebuilt with the first-occurrence
//! rule, which is wrong only where user text contains the placeholder spelling before a real
//! placeholder; those cases are listed in [`PLACEHOLDERS_NOT_RECOVERABLE`] and compared on
//! prompt and image sources only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

use deepseek_model::{
    Conversation, ImageDetail, ImageSource, ImageSourceKind, Message, ModelVersion,
    ReasoningEffort, ResponseFormat, SpecialToken, SpecialTokens, ToolCall, ToolChoice,
    ToolDefinition,
};
use std::sync::Arc;

use deepseek_render::{render, render_continuing, RenderedConversation, RenderedPrompt};
use serde_json::Value;

/// Cases whose user text contains the image placeholder spelling before a real placeholder:
/// placeholder positions not recoverable from the JSON, so their special ranges are not
/// compared (prompt and image sources still are).
const PLACEHOLDERS_NOT_RECOVERABLE: &[&str] = &[];

/// The vendored corpus, or another directory of cases in the same shape named by
/// `RENDER_CONFORMANCE_DIR` (for differential runs against locally generated cases).
fn requests_dir() -> PathBuf {
    match std::env::var_os("RENDER_CONFORMANCE_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/requests"),
    }
}

fn string(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {v}"))
        .to_owned()
}

fn opt_string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

fn image_source(v: &Value) -> ImageSource {
    let kind = match v["class"].as_str() {
        Some("UrlImageSource") => ImageSourceKind::Url(string(&v["url"])),
        Some("DataUrlImageSource") => ImageSourceKind::DataUrl(string(&v["data_url"])),
        other => panic!("unsupported image source class {other:?}"),
    };
    let detail = v["detail"]
        .as_str()
        .and_then(ImageDetail::parse)
        .unwrap_or_else(|| panic!("bad detail {v}"));
    ImageSource {
        kind,
        detail,
        path: v["path"].as_str().unwrap_or_default().to_owned(),
    }
}

fn tool_definition(v: &Value) -> ToolDefinition {
    ToolDefinition {
        name: string(&v["name"]),
        description: opt_string(&v["description"]),
        parameters: if v["parameters"].is_null() {
            None
        } else {
            Some(v["parameters"].clone())
        },
        strict: v["strict"].as_bool(),
        defer_loading: v["defer_loading"].as_bool().unwrap_or(false),
    }
}

fn list<T>(v: &Value, f: impl Fn(&Value) -> T) -> Option<Vec<T>> {
    v.as_array().map(|items| items.iter().map(f).collect())
}

fn message(v: &Value, image_token: &str) -> Message {
    let content = string(&v["content"]);
    let images = list(&v["image_sources"], image_source).unwrap_or_default();
    let message = match v["class"].as_str() {
        Some("SystemMessage") => Message {
            tools: list(&v["tools"], tool_definition),
            ..Message::system(content)
        },
        Some("UserMessage") => Message::user(content),
        Some("LatestReminderMessage") => Message::latest_reminder(content),
        Some("ToolMessage") => Message::tool(content, opt_string(&v["tool_call_id"])),
        Some("AssistantMessage") => Message::assistant(
            content,
            opt_string(&v["reasoning_content"]),
            list(&v["tool_calls"], |c| ToolCall {
                id: string(&c["id"]),
                name: string(&c["name"]),
                arguments: string(&c["arguments"]),
            }),
            v["prefix"].as_bool().unwrap_or(false),
        ),
        other => panic!("unknown message class {other:?}"),
    };
    message.with_images_at_first_occurrences(images, image_token)
}

fn conversation(v: &Value, image_token: &str) -> Conversation {
    let response_format = match v["response_format"].as_str() {
        Some("text") => ResponseFormat::Text,
        Some("json_object") => ResponseFormat::JsonObject,
        Some("json_schema") => ResponseFormat::JsonSchema(v["response_schema"].clone()),
        Some("regex") => ResponseFormat::Regex(string(&v["response_regex"])),
        other => panic!("unknown response_format {other:?}"),
    };
    Conversation {
        messages: list(&v["messages"], |m| Arc::new(message(m, image_token))).unwrap_or_default(),
        thinking_mode: v["thinking_mode"].as_bool().expect("thinking_mode"),
        tools: list(&v["tools"], tool_definition).unwrap_or_default(),
        tool_choice: v["tool_choice"]
            .as_str()
            .and_then(ToolChoice::parse)
            .expect("tool_choice"),
        reasoning_effort: v["reasoning_effort"]
            .as_str()
            .map(|e| ReasoningEffort::parse(e).expect("effort")),
        response_format,
    }
}

fn special_tokens(case: &Value) -> SpecialTokens {
    let mut tokens = SpecialTokens::default();
    if let Some(overrides) = case["options"]["special_tokens"].as_object() {
        for (keyword, spelling) in overrides {
            let token = SpecialToken::ALL
                .into_iter()
                .find(|t| t.keyword() == keyword)
                .unwrap_or_else(|| panic!("unknown special token keyword {keyword}"));
            tokens.set(token, string(spelling));
        }
    }
    tokens
}

/// Byte offsets of `text` converted to Python code-point offsets.
fn code_point_ranges(text: &str, ranges: &[std::ops::Range<usize>]) -> Vec<(usize, usize)> {
    let to_cp = |byte: usize| {
        text.get(..byte)
            .map(|prefix| prefix.chars().count())
            .expect("range on a char boundary")
    };
    ranges
        .iter()
        .map(|r| (to_cp(r.start), to_cp(r.end)))
        .collect()
}

fn first_difference(a: &str, b: &str) -> String {
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let tail = |s: &str| {
        s.chars()
            .skip(common.saturating_sub(40))
            .take(120)
            .collect::<String>()
    };
    format!(
        "at char {common}:\n      got      {:?}\n      expected {:?}",
        tail(a),
        tail(b)
    )
}

/// Invariants that hold for every rendering: ranges ascending, disjoint, non-empty, inside the
/// prompt and on character boundaries.
fn check_invariants(prompt: &str, ranges: &[std::ops::Range<usize>]) -> Result<(), String> {
    let mut end = 0;
    for r in ranges {
        if r.start < end || r.start >= r.end || r.end > prompt.len() {
            return Err(format!("range {r:?} out of order or out of bounds"));
        }
        if !prompt.is_char_boundary(r.start) || !prompt.is_char_boundary(r.end) {
            return Err(format!("range {r:?} not on a char boundary"));
        }
        end = r.end;
    }
    Ok(())
}

enum Outcome {
    Passed,
    NotARenderCase,
    /// JSON that serde_json refuses (NaN, Infinity, lone surrogates in a request body) and
    /// that has no `render` member at all.
    UnparsableWithoutRender,
}

/// Compare one case.
fn run_case(path: &Path) -> Result<Outcome, String> {
    let text = fs::read_to_string(path).map_err(|e| e.to_string())?;
    let data: Value = match serde_json::from_str(&text) {
        Ok(data) => data,
        Err(_) if !text.contains("\"render\"") => return Ok(Outcome::UnparsableWithoutRender),
        Err(e) => return Err(format!("unparsable case with a render member: {e}")),
    };
    let expected = &data["expected"];
    let render_expected = &expected["render"];
    let Some(prompt_expected) = render_expected["prompt"].as_str() else {
        return Ok(Outcome::NotARenderCase);
    };
    let id = data["case"]["id"].as_str().unwrap_or_default();
    let version = match expected["model_version"].as_str() {
        Some("DeepseekV4Pro") => ModelVersion::DeepseekV4Pro,
        Some("DeepseekV41Flash") => ModelVersion::DeepseekV41Flash,
        other => return Err(format!("unknown model_version {other:?}")),
    };
    let tokens = special_tokens(&data["case"]);
    let conv = conversation(&expected["conversation"], tokens.get(SpecialToken::Image));
    let rendered = render(&conv, version, &tokens);

    let mut problems = Vec::new();
    if let Err(e) = check_invariants(&rendered.prompt, &rendered.special_ranges) {
        problems.push(format!("invariant: {e}"));
    }
    if rendered.prompt != prompt_expected {
        problems.push(format!(
            "prompt differs {}",
            first_difference(&rendered.prompt, prompt_expected)
        ));
    } else if !PLACEHOLDERS_NOT_RECOVERABLE.contains(&id) {
        let got = code_point_ranges(&rendered.prompt, &rendered.special_ranges);
        let want: Vec<(usize, usize)> = render_expected["special_ranges"]
            .as_array()
            .expect("special_ranges")
            .iter()
            .map(|p| {
                (
                    p[0].as_u64().expect("int") as usize,
                    p[1].as_u64().expect("int") as usize,
                )
            })
            .collect();
        if got != want {
            let at = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
            problems.push(format!(
                "special_ranges differ at #{at}: got {:?} expected {:?} (got {} ranges, expected {})",
                got.get(at),
                want.get(at),
                got.len(),
                want.len()
            ));
        }
    }
    let sources_expected =
        list(&render_expected["image_sources"], image_source).unwrap_or_default();
    if rendered.image_sources != sources_expected {
        problems.push(format!(
            "image_sources differ: got {} expected {}",
            rendered.image_sources.len(),
            sources_expected.len()
        ));
    }
    if problems.is_empty() {
        problems.extend(check_continuing(&conv, version, &tokens, &rendered).err());
    }
    if problems.is_empty() {
        Ok(Outcome::Passed)
    } else {
        Err(problems.join("\n    "))
    }
}

/// Split points of a message list: all of them for short ones, a spread for long ones.
fn splits(len: usize) -> Vec<usize> {
    if len <= 40 {
        return (0..=len).collect();
    }
    let mut points: Vec<usize> = (0..=len).step_by(len / 16).collect();
    points.extend([len - 1, len]);
    points.sort_unstable();
    points.dedup();
    points
}

fn with_messages(conv: &Conversation, messages: &[Arc<Message>]) -> Conversation {
    Conversation {
        messages: messages.to_vec(),
        ..conv.clone()
    }
}

fn same_render(got: &RenderedPrompt, want: &RenderedPrompt, what: &str) -> Result<(), String> {
    if got.prompt != want.prompt {
        return Err(format!(
            "{what}: prompt differs {}",
            first_difference(&got.prompt, &want.prompt)
        ));
    }
    if got.special_ranges != want.special_ranges || got.image_sources != want.image_sources {
        return Err(format!("{what}: special ranges or image sources differ"));
    }
    Ok(())
}

/// Rendered continuing from any earlier conversation (a prefix of its messages, that prefix
/// with its last message changed, or with other settings), the prompt is the whole render's.
fn check_continuing(
    conv: &Conversation,
    version: ModelVersion,
    tokens: &SpecialTokens,
    whole: &RenderedPrompt,
) -> Result<(), String> {
    let shared = Arc::new(conv.clone());
    let continue_from = |previous: &RenderedConversation| {
        render_continuing(Arc::clone(&shared), version, tokens, Some(previous))
    };
    let messages = &conv.messages;
    for k in splits(messages.len()) {
        let start = render_continuing(
            Arc::new(with_messages(conv, &messages[..k])),
            version,
            tokens,
            None,
        );
        same_render(
            start.prompt(),
            &render(&with_messages(conv, &messages[..k]), version, tokens),
            &format!("messages 0..{k} alone"),
        )?;
        same_render(
            continue_from(&start).prompt(),
            whole,
            &format!("after messages 0..{k}"),
        )?;
        // The earlier conversation continued from its own first half.
        let half = render_continuing(
            Arc::new(with_messages(conv, &messages[..k / 2])),
            version,
            tokens,
            None,
        );
        let chained = render_continuing(
            Arc::new(with_messages(conv, &messages[..k])),
            version,
            tokens,
            Some(&half),
        );
        same_render(
            chained.prompt(),
            start.prompt(),
            &format!("messages 0..{k} after 0..{}", k / 2),
        )?;
        same_render(
            continue_from(&chained).prompt(),
            whole,
            &format!("after 0..{k} after 0..{}", k / 2),
        )?;
        // The earlier conversation's last message differs from this one's.
        if let Some(last) = k.checked_sub(1) {
            let mut changed = messages[..k].to_vec();
            Arc::make_mut(&mut changed[last])
                .content
                .push_str(" (changed)");
            let changed = render_continuing(
                Arc::new(with_messages(conv, &changed)),
                version,
                tokens,
                None,
            );
            same_render(
                continue_from(&changed).prompt(),
                whole,
                &format!("after 0..{k} with the last changed"),
            )?;
        }
        // The earlier conversation had other settings.
        let mut other = with_messages(conv, &messages[..k]);
        other.thinking_mode = !other.thinking_mode;
        let other = render_continuing(Arc::new(other), version, tokens, None);
        same_render(
            continue_from(&other).prompt(),
            whole,
            &format!("after 0..{k} with thinking flipped"),
        )?;
    }
    Ok(())
}

#[test]
fn conformance_render() {
    let mut paths: Vec<PathBuf> = fs::read_dir(requests_dir())
        .expect("conformance requests directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let (mut passed, mut other, mut unparsable, mut failed) = (0usize, 0usize, 0usize, Vec::new());
    for path in &paths {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        match std::panic::catch_unwind(|| run_case(path)) {
            Ok(Ok(Outcome::Passed)) => passed += 1,
            Ok(Ok(Outcome::NotARenderCase)) => other += 1,
            Ok(Ok(Outcome::UnparsableWithoutRender)) => unparsable += 1,
            Ok(Err(e)) => failed.push((name, e)),
            Err(_) => failed.push((name, "panicked".to_owned())),
        }
    }
    for (name, problem) in failed.iter().take(8) {
        println!("FAIL {name}:\n    {problem}");
    }
    println!(
        "render conformance: {} cases read; {other} without a rendered prompt, {unparsable} not JSON to serde_json and without a render member",
        paths.len()
    );
    println!("render: {passed} passed, {} failed", failed.len());
    if !PLACEHOLDERS_NOT_RECOVERABLE.is_empty() {
        println!(
            "special ranges not compared (placeholder positions not recoverable from the JSON): {}",
            PLACEHOLDERS_NOT_RECOVERABLE.join(", ")
        );
    }
    assert!(
        passed > 0,
        "no render cases found in {}",
        requests_dir().display()
    );
    assert!(failed.is_empty(), "{} render cases failed", failed.len());
}
