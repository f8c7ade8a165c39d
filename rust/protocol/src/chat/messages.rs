//! Chat messages to canonical messages in one ordered pass: per-message content rules and
//! tool-call / tool-result pairing (conformance cases `cc-toolargs-*`, `cc-etid-*`,
//! `mutation-cc-*`). The pass stops at the first
//! error in message order, which is the order the reference reports them in.

use std::collections::HashSet;
use std::sync::Arc;

use deepseek_model::{ConversionError, Message, ToolCall};

use super::content::{ContentContext, ImagePolicy};
use super::wire::{
    ChatCompletionRequestMessage as WireMessage, ChatCompletionRequestToolCall, Content,
};
use crate::resume::{ConversionKey, FirstConverted, Shared, SharedMessages};

const INSUFFICIENT_TOOL_MESSAGES: &str = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)";
const ORPHAN_TOOL_MESSAGE: &str =
    "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'";

/// A request's messages converted, and the shared ones converted for the first time (to be
/// remembered once the request's rules have run over them: [`crate::resume::remember`]).
pub(crate) struct Converted {
    pub messages: Vec<Arc<Message>>,
    pub first_converted: Vec<FirstConverted<WireMessage>>,
}

/// Convert every message, dropping system messages whose content ends up empty. A message
/// converted under its key before (one an earlier body of the conversation shares) is not
/// converted again: it is its earlier conversion.
pub(crate) fn convert_messages(
    wire: SharedMessages<WireMessage>,
    ctx: &ContentContext<'_>,
    thinking_mode: bool,
) -> Result<Converted, ConversionError> {
    // The tool_call_id of every tool message, by raw index, for the pairing look-ahead.
    let tool_ids: Vec<Option<String>> = wire
        .iter()
        .map(|m| match &***m {
            WireMessage::Tool { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    // Tool messages before this raw index answer the calls of a preceding assistant message.
    let mut answered_until = 0;
    let mut out = Vec::with_capacity(wire.len());
    let mut first_converted = Vec::new();
    for (index, message) in wire.into_iter().enumerate() {
        if matches!(&**message, WireMessage::Tool { .. }) && index >= answered_until {
            return Err(ConversionError::new(ORPHAN_TOOL_MESSAGE));
        }
        let start = out.len();
        if !message.recall(&key(index, ctx, thinking_mode), &mut out) {
            match Shared::take(message) {
                Ok(alone) => out.extend(convert_one(alone, index, ctx)?.map(Arc::new)),
                Err((message, copy)) => {
                    out.extend(convert_one(copy, index, ctx)?.map(Arc::new));
                    first_converted.push(FirstConverted {
                        message,
                        index,
                        places: start..out.len(),
                    });
                }
            }
        }
        let calls = out
            .get(start)
            .map_or(&[][..], |converted| converted.calls());
        if !calls.is_empty() {
            check_tool_results(calls, index, &tool_ids)?;
            answered_until = index + calls.len() + 1;
        }
    }
    Ok(Converted {
        messages: out,
        first_converted,
    })
}

/// What a message's conversion depends on besides the message.
pub(crate) fn key<'a>(
    index: usize,
    ctx: &ContentContext<'a>,
    thinking_mode: bool,
) -> ConversionKey<'a> {
    ConversionKey {
        index,
        version: ctx.version,
        image_token: ctx.image_token,
        thinking_mode,
        web_search: None,
    }
}

/// One message's canonical message (`None`: a system message whose content ends up empty).
fn convert_one(
    message: WireMessage,
    index: usize,
    ctx: &ContentContext<'_>,
) -> Result<Option<Message>, ConversionError> {
    Ok(Some(match message {
        WireMessage::System { content, .. } => {
            let text = ctx.convert(content, index, ImagePolicy::Allowed)?;
            if text.text().is_empty() {
                return Ok(None);
            }
            text.into_message(Message::system(String::new()))
        }
        WireMessage::User { content, .. } => {
            let text = ctx.convert(content, index, ImagePolicy::Allowed)?;
            text.into_message(Message::user(String::new()))
        }
        WireMessage::Assistant {
            content,
            reasoning_content,
            tool_calls,
            prefix,
            ..
        } => convert_assistant(content, reasoning_content, tool_calls, prefix, index, ctx)?,
        WireMessage::Tool {
            content,
            tool_call_id,
        } => {
            let text = ctx.convert(content, index, ImagePolicy::Allowed)?;
            text.into_message(Message::tool(String::new(), Some(tool_call_id)))
        }
        WireMessage::LatestReminder { content } => Message::latest_reminder(content),
    }))
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
