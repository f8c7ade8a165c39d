//! Rendering from an earlier turn copies what the turns share (the conformance harness checks
//! that the prompt is always the whole render's; here, that the copy happens).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use deepseek_model::{
    Conversation, Message, ModelVersion, SpecialTokens, ToolCall, ToolDefinition,
};
use deepseek_render::{render, render_continuing};
use serde_json::json;

fn agent(turns: usize, tools: bool) -> Conversation {
    let mut messages = vec![
        Message::system("Be useful."),
        Message::user("Fix the build"),
    ];
    for turn in 0..turns {
        let calls = vec![
            ToolCall {
                id: format!("call_{turn}_b"),
                name: "read".into(),
                arguments: "{\"path\": \"b\"}".into(),
            },
            ToolCall {
                id: format!("call_{turn}_a"),
                name: "read".into(),
                arguments: "{\"path\": \"a\"}".into(),
            },
        ];
        messages.push(Message::assistant(
            format!("step {turn}"),
            Some(format!("thinking {turn}")),
            Some(calls),
            false,
        ));
        messages.push(Message::tool(
            format!("a{turn}"),
            Some(format!("call_{turn}_a")),
        ));
        messages.push(Message::tool(
            format!("b{turn}"),
            Some(format!("call_{turn}_b")),
        ));
    }
    let tools = if tools {
        vec![ToolDefinition {
            name: "read".into(),
            description: Some("Read a file".into()),
            parameters: Some(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
            strict: None,
            defer_loading: false,
        }]
    } else {
        Vec::new()
    };
    Conversation {
        messages: messages.into_iter().map(Arc::new).collect(),
        tools,
        ..Conversation::default()
    }
}

#[test]
fn the_next_turn_copies_every_earlier_block() {
    let tokens = SpecialTokens::default();
    for version in [ModelVersion::DeepseekV4Pro, ModelVersion::DeepseekV41Flash] {
        for tools in [true, false] {
            let mut previous = None;
            for turns in 1..8 {
                let conv = Arc::new(agent(turns, tools));
                let rendered =
                    render_continuing(Arc::clone(&conv), version, &tokens, previous.as_ref());
                assert_eq!(
                    rendered.prompt(),
                    &render(&conv, version, &tokens),
                    "{version:?} {turns}"
                );
                if let Some(before) = &previous {
                    // Everything up to the generation suffix: the earlier turn's prompt minus
                    // `<｜Assistant｜><think>`.
                    let suffix = "<｜Assistant｜><think>".len();
                    let before: &deepseek_render::RenderedConversation = before;
                    assert_eq!(
                        rendered.reused_bytes(),
                        before.prompt().prompt.len() - suffix,
                        "{version:?} tools={tools} turn {turns}"
                    );
                }
                previous = Some(rendered);
            }
        }
    }
}

#[test]
fn a_new_system_message_is_rendered_whole() {
    let tokens = SpecialTokens::default();
    let version = ModelVersion::DeepseekV4Pro;
    let before = Arc::new(agent(3, true));
    let rendered = render_continuing(Arc::clone(&before), version, &tokens, None);
    let mut after = agent(3, true);
    after
        .messages
        .push(Arc::new(Message::system("Another rule.")));
    after.messages.push(Arc::new(Message::user("go on")));
    let continued = render_continuing(Arc::new(after.clone()), version, &tokens, Some(&rendered));
    assert_eq!(continued.prompt(), &render(&after, version, &tokens));
    assert_eq!(
        continued.reused_bytes(),
        0,
        "V4 hoists the new system message into the head"
    );
}

#[test]
fn a_message_shared_at_two_places_renders_as_a_whole_render() {
    // Conversations share their messages (`Arc`) across turns, and the renderer knows a message
    // by its address: one value standing at two places must not be taken for either place.
    let tokens = SpecialTokens::default();
    let ask = Arc::new(Message::user("Again?"));
    let answer = |text: &str| Arc::new(Message::assistant(text, Some(String::new()), None, false));
    let turn = |count: usize| {
        let mut messages = vec![Arc::new(Message::system("Be brief."))];
        for step in 0..count {
            messages.push(Arc::clone(&ask));
            messages.push(answer(&format!("answer {step}")));
        }
        Arc::new(Conversation {
            messages,
            ..Conversation::default()
        })
    };
    for version in [ModelVersion::DeepseekV4Pro, ModelVersion::DeepseekV41Flash] {
        let mut previous = None;
        for count in 1..5 {
            let conversation = turn(count);
            let rendered = render_continuing(
                Arc::clone(&conversation),
                version,
                &tokens,
                previous.as_ref(),
            );
            assert_eq!(
                rendered.prompt(),
                &render(&conversation, version, &tokens),
                "{version:?} {count}"
            );
            previous = Some(rendered);
        }
    }
}
