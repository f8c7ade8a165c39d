//! Renders a canonical conversation into the exact prompt text DeepSeek V4 / V4.1 were
//! trained on, with the special ranges (byte offsets of every template token the renderer
//! emitted) and the image sources in prompt order. It refuses to tokenize and never fails:
//! it renders whatever the conversation holds, including conversations conversion would
//! reject. User-supplied text is always plain text; only template tokens and the image
//! placeholders a message marks become special ranges.
//!
//! Layout (pinned by `tests/conformance.rs` over the conformance corpus): BOS, the head system
//! block (effort preamble, system text, tools block, format section), each normalized block, the
//! generation suffix unless the prompt ends in a prefix assistant, and the required-tool opener.
//!
//! A conversation that extends one rendered before (the next turn of a stored conversation)
//! can be rendered from it ([`render_continuing`], `continuing.rs`): the blocks both render
//! identically are copied, only the rest is written.

mod continuing;
mod dialect;
mod dsml;
mod message;
mod normalize;
mod tools_block;
mod writer;

use std::ops::Range;

use deepseek_model::pyjson::pyjson_with;
use deepseek_model::{
    Conversation, ImageSource, Message, ModelVersion, ResponseFormat, SpecialToken, SpecialTokens,
    ToolChoice,
};

pub use crate::continuing::{render_continuing, RenderedConversation};
use crate::dialect::{Dialect, JSON_SCHEMA_SECTION};
use crate::message::Context;
use crate::normalize::{normalize, Block, Normalized};
use crate::writer::Writer;

/// A rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RenderedPrompt {
    pub prompt: String,
    /// Ascending, disjoint byte ranges of `prompt`, each one special-token spelling.
    pub special_ranges: Vec<Range<usize>>,
    /// The image sources of every rendered message, in prompt order (also those a message
    /// holds beyond its placeholders; V4 hoisted system images included, except those of an
    /// empty system message, which is skipped whole).
    pub image_sources: Vec<ImageSource>,
}

/// Render `conversation` for `version` with the given special-token spellings.
pub fn render(
    conversation: &Conversation,
    version: ModelVersion,
    special_tokens: &SpecialTokens,
) -> RenderedPrompt {
    let empty_head = Message::system("");
    let dialect = Dialect::of(version);
    let normalized = normalize(conversation, &dialect, &empty_head);
    let mut w = Writer::new(special_tokens);
    write_prompt(
        &mut w,
        conversation,
        dialect,
        &normalized,
        None,
        &mut |_, _| {},
    );
    w.finish()
}

/// Where writing starts: at block `block`, the writer already holding everything before it.
pub(crate) struct Resume {
    pub(crate) block: usize,
}

/// Write the prompt of `conversation` (normalized as `normalized`) into `w`, from the start or
/// from a block whose predecessors `w` already holds. `mark(index, w)` is called before each
/// block is written and once more (with the block count) before the suffix.
pub(crate) fn write_prompt(
    w: &mut Writer<'_>,
    conversation: &Conversation,
    dialect: Dialect,
    normalized: &Normalized<'_>,
    resume: Option<Resume>,
    mark: &mut dyn FnMut(usize, &Writer<'_>),
) {
    let ctx = Context {
        dialect,
        thinking: conversation.thinking_mode,
        tools_active: conversation.tools_active(),
    };
    let preamble = if ctx.thinking {
        dialect.effort_preamble(conversation.reasoning_effort)
    } else {
        None
    };

    let first = match resume {
        Some(resume) => resume.block,
        None => {
            w.special(SpecialToken::Bos);
            if dialect.v41 {
                write_v41_standalone_preamble(w, normalized, preamble.as_deref());
            } else {
                write_v4_head(w, &ctx, conversation, normalized, preamble.as_deref());
            }
            0
        }
    };

    let count = normalized.blocks.len();
    for (index, block) in normalized.blocks.iter().enumerate().skip(first) {
        mark(index, w);
        match block {
            Block::System { message, head } => {
                w.special(SpecialToken::System);
                if *head {
                    if let Some(text) = &preamble {
                        w.text(text);
                        w.text("\n\n");
                    }
                    w.content(message);
                    write_head_sections(w, &ctx, conversation);
                    message::write_message_tools(w, &dialect, message);
                } else {
                    message::write_system_body(w, &dialect, message);
                }
            }
            Block::UserRun(run) => message::write_user_run(w, run),
            Block::LatestReminder(reminder) => message::write_reminder(w, reminder),
            Block::Assistant(assistant) => {
                let position = message::Position {
                    first: index == 0,
                    last: index + 1 == count,
                };
                message::write_assistant(w, &ctx, assistant, position);
            }
        }
    }
    mark(count, w);

    if !normalized.ends_with_prefix() {
        w.special(SpecialToken::Assistant);
        w.special(if ctx.thinking {
            SpecialToken::ThinkingStart
        } else {
            SpecialToken::ThinkingEnd
        });
    }
    if conversation.tool_choice == ToolChoice::Required && !conversation.tools.is_empty() {
        dsml::write_required_opener(w, &dialect);
    }
}

/// V4.1: the preamble opens the first system block; before a first non-system block it
/// stands alone as `<System>` + preamble. An empty conversation gets none.
fn write_v41_standalone_preamble(
    w: &mut Writer<'_>,
    normalized: &Normalized<'_>,
    preamble: Option<&str>,
) {
    let starts_with_system = matches!(normalized.blocks.first(), Some(Block::System { .. }));
    if let (Some(text), false, false) = (preamble, starts_with_system, normalized.blocks.is_empty())
    {
        w.special(SpecialToken::System);
        w.text(text);
        w.text("\n\n");
    }
}

/// V4: the head has no token of its own: preamble, the hoisted system texts (non-empty ones
/// joined by a blank line; an empty system message is skipped whole, image sources
/// included), then the tools and format sections.
fn write_v4_head(
    w: &mut Writer<'_>,
    ctx: &Context,
    conversation: &Conversation,
    normalized: &Normalized<'_>,
    preamble: Option<&str>,
) {
    if let Some(text) = preamble {
        w.text(text);
        w.text("\n\n");
    }
    let systems = normalized
        .hoisted_systems
        .iter()
        .filter(|m| !m.content.is_empty());
    for (index, system) in systems.enumerate() {
        if index > 0 {
            w.text("\n\n");
        }
        w.content(system);
    }
    write_head_sections(w, ctx, conversation);
}

/// The sections appended to the head system text: the tools block when tools are active,
/// then the response-format section.
fn write_head_sections(w: &mut Writer<'_>, ctx: &Context, conversation: &Conversation) {
    if ctx.tools_active {
        w.text("\n\n");
        tools_block::write_tools_block(w, &ctx.dialect, &conversation.tools);
    }
    match &conversation.response_format {
        ResponseFormat::JsonObject => w.text(ctx.dialect.json_object_section),
        ResponseFormat::JsonSchema(schema) => {
            w.text(JSON_SCHEMA_SECTION);
            w.text(&pyjson_with(schema, ctx.dialect.float_style));
        }
        ResponseFormat::Text | ResponseFormat::Regex(_) => {}
    }
}
