//! Chat messages to canonical messages in one ordered pass: per-message content rules and
//! tool-call / tool-result pairing (conformance cases `cc-toolargs-*`, `cc-etid-*`,
//! `mutation-cc-*`). The pass stops at the first
//! error in message order, which is the order the reference reports them in.

use std::collections::HashSet;

use deepseek_model::{ConversionError, Message, ToolCall};

use super::content::{ContentContext, ImagePolicy};
use super::wire::{
    ChatCompletionRequestMessage as WireMessage, ChatCompletionRequestToolCall, Content,
};

const INSUFFICIENT_TOOL_MESSAGES: &str = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)";
const ORPHAN_TOOL_MESSAGE: &str =
    "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'";

/// Convert every message, dropping system messages whose content ends up empty.
pub(crate) fn convert_messages(
    wire: Vec<WireMessage>,
    ctx: &ContentContext<'_>,
) -> Result<Vec<Message>, ConversionError> {
    // The tool_call_id of every tool message, by raw index, for the pairing look-ahead.
    let tool_ids: Vec<Option<String>> = wire
        .iter()
        .map(|m| match m {
            WireMessage::Tool { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    // Tool messages before this raw index answer the calls of a preceding assistant message.
    let mut answered_until = 0;
    let mut out = Vec::with_capacity(wire.len());
    for (index, message) in wire.into_iter().enumerate() {
        match message {
            WireMessage::System { content, .. } => {
                let text = ctx.convert(content, index, ImagePolicy::Allowed)?;
                if !text.text().is_empty() {
                    out.push(text.into_message(Message::system(String::new())));
                }
            }
            WireMessage::User { content, .. } => {
                let text = ctx.convert(content, index, ImagePolicy::Allowed)?;
                out.push(text.into_message(Message::user(String::new())));
            }
            WireMessage::Assistant {
                content,
                reasoning_content,
                tool_calls,
                prefix,
                ..
            } => {
                let message =
                    convert_assistant(content, reasoning_content, tool_calls, prefix, index, ctx)?;
                let calls = message.calls();
                if !calls.is_empty() {
                    check_tool_results(calls, index, &tool_ids)?;
                    answered_until = index + calls.len() + 1;
                }
                out.push(message);
            }
            WireMessage::Tool {
                content,
                tool_call_id,
            } => {
                if index >= answered_until {
                    return Err(ConversionError::new(ORPHAN_TOOL_MESSAGE));
                }
                let text = ctx.convert(content, index, ImagePolicy::Allowed)?;
                out.push(text.into_message(Message::tool(String::new(), Some(tool_call_id))));
            }
            WireMessage::LatestReminder { content } => out.push(Message::latest_reminder(content)),
        }
    }
    Ok(out)
}

fn convert_assistant(
    content: Option<Content>,
    reasoning_content: Option<String>,
    tool_calls: Option<Vec<ChatCompletionRequestToolCall>>,
    prefix: Option<bool>,
    index: usize,
    ctx: &ContentContext<'_>,
) -> Result<Message, ConversionError> {
    let has_content = content.is_some();
    let text = match content {
        Some(content) => ctx
            .convert(content, index, ImagePolicy::Rejected)?
            .into_text(),
        None => String::new(),
    };
    if tool_calls.as_ref().is_some_and(Vec::is_empty) {
        return Err(ConversionError::new(format!(
            "Invalid 'messages[{index}].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead."
        )));
    }
    if !has_content && tool_calls.is_none() {
        return Err(ConversionError::new(
            "Invalid assistant message: content or tool_calls must be set",
        ));
    }
    let tool_calls = tool_calls.map(|calls| {
        calls
            .into_iter()
            .map(|c| ToolCall {
                id: c.id,
                name: c.function.name,
                arguments: c.function.arguments,
            })
            .collect::<Vec<_>>()
    });
    if let Some(calls) = &tool_calls {
        let mut seen = HashSet::new();
        if let Some(dup) = calls.iter().find(|c| !seen.insert(c.id.as_str())) {
            return Err(duplicate_id(&dup.id, index));
        }
    }
    Ok(Message::assistant(
        text,
        reasoning_content,
        tool_calls,
        prefix.unwrap_or(false),
    ))
}

/// The tool messages right after `index` answer its calls: each of the first `calls.len()`
/// must name a distinct call, then there must be at least `calls.len()` of them.
fn check_tool_results(
    calls: &[ToolCall],
    index: usize,
    tool_ids: &[Option<String>],
) -> Result<(), ConversionError> {
    let call_ids: HashSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    let mut seen = HashSet::new();
    let results = tool_ids
        .iter()
        .enumerate()
        .skip(index + 1)
        .take(calls.len())
        .map_while(|(j, id)| Some((j, id.as_deref()?)));
    let mut answered = 0;
    for (j, id) in results {
        if !seen.insert(id) {
            return Err(duplicate_id(id, j));
        }
        if !call_ids.contains(id) {
            return Err(ConversionError::new(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id', The following tool_call_ids did not have response messages: {id}"
            )));
        }
        answered += 1;
    }
    if answered < calls.len() {
        return Err(ConversionError::new(INSUFFICIENT_TOOL_MESSAGES));
    }
    Ok(())
}

fn duplicate_id(id: &str, index: usize) -> ConversionError {
    ConversionError::new(format!(
        "Duplicate value for 'tool_call_id' of {id} in message[{index}]"
    ))
}
