//! Per-block rendering (`tests/rules.rs`, `tests/conformance.rs`): user/tool runs, reminders,
//! non-head system messages and assistant turns (normal and prefix).

use deepseek_model::{Message, Role, SpecialToken};

use crate::dialect::Dialect;
use crate::dsml::write_tool_calls;
use crate::normalize::Unit;
use crate::tools_block::write_updated_tool_schemas;
use crate::writer::Writer;

/// What the rendering of a message depends on besides the message itself.
pub(crate) struct Context {
    pub(crate) dialect: Dialect,
    pub(crate) thinking: bool,
    pub(crate) tools_active: bool,
}

/// `<User>` + the run's parts joined by `"\n\n"`; a tool part is wrapped in `<tool_result>`.
/// A merged user part (V4) joins its non-empty messages by `"\n\n"`.
pub(crate) fn write_user_run(w: &mut Writer<'_>, run: &[Unit<'_>]) {
    w.special(SpecialToken::User);
    for (index, unit) in run.iter().enumerate() {
        if index > 0 {
            w.text("\n\n");
        }
        let mut wrote_text = false;
        for message in unit {
            if message.role == Role::Tool {
                w.text("<tool_result>");
                w.content(message);
                w.text("</tool_result>");
                continue;
            }
            if !message.content.is_empty() {
                if wrote_text {
                    w.text("\n\n");
                }
                wrote_text = true;
            }
            w.content(message);
        }
    }
}

pub(crate) fn write_reminder(w: &mut Writer<'_>, message: &Message) {
    w.special(SpecialToken::LatestReminder);
    w.content(message);
}

/// The content of a V4.1 system message and its "Updated Tool Schemas", after the token.
pub(crate) fn write_system_body(w: &mut Writer<'_>, dialect: &Dialect, message: &Message) {
    w.content(message);
    write_message_tools(w, dialect, message);
}

/// V4.1: a system message's own tools, if any, as "Updated Tool Schemas".
pub(crate) fn write_message_tools(w: &mut Writer<'_>, dialect: &Dialect, message: &Message) {
    if let Some(tools) = message.tools.as_deref().filter(|tools| !tools.is_empty()) {
        write_updated_tool_schemas(w, dialect, tools);
    }
}

/// Where an assistant block sits among the normalized blocks.
pub(crate) struct Position {
    pub(crate) first: bool,
    pub(crate) last: bool,
}

/// An assistant turn. A V4 prefix assistant that is not last is written with the prefix
/// rule and then closed with EOS (the reference's published description calls it "a normal
/// turn", but its THINK follows the prefix rule; `docs/compatibility.md`).
pub(crate) fn write_assistant(
    w: &mut Writer<'_>,
    ctx: &Context,
    message: &Message,
    position: Position,
) {
    let last = position.last;
    w.special(SpecialToken::Assistant);
    if message.prefix {
        write_prefix_body(w, ctx, message, position.first);
        if !ctx.dialect.v41 && !last {
            w.special(SpecialToken::Eos);
        }
        return;
    }
    write_history_think(w, ctx, message);
    w.assistant_text(&message.content);
    write_tool_calls(w, &ctx.dialect, message.tool_calls.as_deref());
    w.special(SpecialToken::Eos);
}

/// THINK of a completed turn: reasoning is kept only while tools are active (V4: when it is
/// present; V4.1: when thinking is on), otherwise just the closing tag.
fn write_history_think(w: &mut Writer<'_>, ctx: &Context, message: &Message) {
    let reasoning = if !ctx.tools_active {
        None
    } else if ctx.dialect.v41 {
        ctx.thinking
            .then(|| message.reasoning_content.as_deref().unwrap_or_default())
    } else {
        message.reasoning_content.as_deref()
    };
    if let Some(reasoning) = reasoning {
        w.special(SpecialToken::ThinkingStart);
        w.assistant_text(reasoning);
    }
    w.special(SpecialToken::ThinkingEnd);
}

/// A continuation the model extends: no end-of-sentence token. On V4.1 a prefix assistant
/// that opens the conversation (nothing before it, not even a system message) is written as
/// with thinking off.
fn write_prefix_body(w: &mut Writer<'_>, ctx: &Context, message: &Message, first: bool) {
    let content = message.content.as_str();
    let calls = message.calls();
    if ctx.dialect.v41 {
        if ctx.thinking && !first {
            w.special(SpecialToken::ThinkingStart);
            w.assistant_text(message.reasoning_content.as_deref().unwrap_or_default());
            if content.is_empty() && calls.is_empty() {
                return;
            }
        }
        w.special(SpecialToken::ThinkingEnd);
        w.assistant_text(content);
    } else {
        if let Some(reasoning) = &message.reasoning_content {
            w.special(SpecialToken::ThinkingStart);
            w.assistant_text(reasoning);
        }
        if !content.is_empty() || !ctx.thinking {
            w.special(SpecialToken::ThinkingEnd);
            w.assistant_text(content);
        }
    }
    write_tool_calls(w, &ctx.dialect, message.tool_calls.as_deref());
}
