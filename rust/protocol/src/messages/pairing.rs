//! Tool-use / tool-result pairing (behavior.md §6.2): every `tool_use` of an assistant
//! message must be answered by `tool_result` blocks at the very start of the next message,
//! and every `tool_result` must answer a `tool_use` of the message right before it.
//!
//! The error texts keep the reference's quirks: the index names the next message (with a
//! space after the colon) when something else arrives first, but the assistant's own index
//! (and no space) when the next message is missing or runs out of blocks; a block that
//! follows a `tool_use` inside the assistant message is named `messages.<i>.<j>`.

use deepseek_model::ConversionError;

use super::wire::{Content, MessagesContentBlock, MessagesMessage};

fn missing_results(location: &str, separator: &str, ids: &[&str]) -> ConversionError {
    ConversionError::new(format!(
        "{location}:{separator}`tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ids.join(", ")
    ))
}

fn orphan_result(message: usize, block: usize, id: &str) -> ConversionError {
    ConversionError::new(format!(
        "unexpected `messages.{message}.content.{block}: tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    ))
}

fn duplicate_result(message: usize, block: usize, id: &str) -> ConversionError {
    ConversionError::new(format!(
        "messages.{message}.content.{block}: each tool_use must have a single result. Found multiple `tool_result` blocks with id: {id}"
    ))
}

fn blocks_of(message: &MessagesMessage) -> &[MessagesContentBlock] {
    let content = match message {
        MessagesMessage::User(c) | MessagesMessage::Assistant(c) | MessagesMessage::System(c) => c,
    };
    match content {
        Content::Text(_) => &[],
        Content::Blocks(blocks) => blocks,
    }
}

/// The `tool_use` ids of an assistant message, checked for uniqueness and for coming last
/// (only thinking blocks may follow them).
fn tool_use_ids(index: usize, blocks: &[MessagesContentBlock]) -> Result<Vec<&str>, ConversionError> {
    let mut ids: Vec<&str> = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        match block {
            MessagesContentBlock::ToolUse { id, .. } => {
                if ids.contains(&id.as_str()) {
                    return Err(ConversionError::new(format!(
                        "messages.{index}.content.{j}: `tool_use` ids must be unique"
                    )));
                }
                ids.push(id);
            }
            MessagesContentBlock::Thinking { .. } => {}
            _ if !ids.is_empty() => return Err(missing_results(&format!("messages.{index}.{j}"), " ", &ids)),
            _ => {}
        }
    }
    Ok(ids)
}

/// Check the pairing over the whole conversation, in message order.
pub(crate) fn check_pairing(messages: &[MessagesMessage]) -> Result<(), ConversionError> {
    // Index of a user message whose leading tool results answer the previous assistant.
    let mut answered_message: Option<usize> = None;
    for (i, message) in messages.iter().enumerate() {
        match message {
            MessagesMessage::Assistant(_) => {
                let ids = tool_use_ids(i, blocks_of(message))?;
                if ids.is_empty() {
                    continue;
                }
                let next = i + 1;
                match messages.get(next) {
                    None => return Err(missing_results(&format!("messages.{i}"), "", &ids)),
                    Some(MessagesMessage::User(Content::Blocks(blocks))) => {
                        check_results(i, next, &ids, blocks)?;
                        answered_message = Some(next);
                    }
                    Some(_) => return Err(missing_results(&format!("messages.{next}"), " ", &ids)),
                }
            }
            MessagesMessage::User(Content::Blocks(blocks)) if answered_message != Some(i) => {
                for (j, block) in blocks.iter().enumerate() {
                    if let MessagesContentBlock::ToolResult { tool_use_id, .. } = block {
                        return Err(orphan_result(i, j, tool_use_id));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The user message `next` must open with results for every id of assistant `assistant`.
fn check_results(
    assistant: usize,
    next: usize,
    ids: &[&str],
    blocks: &[MessagesContentBlock],
) -> Result<(), ConversionError> {
    let mut pending: Vec<&str> = ids.to_vec();
    let mut answered: Vec<&str> = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        match block {
            MessagesContentBlock::ToolResult { tool_use_id, .. } => {
                let id = tool_use_id.as_str();
                if let Some(pos) = pending.iter().position(|p| *p == id) {
                    pending.remove(pos);
                    answered.push(id);
                } else if answered.contains(&id) {
                    return Err(duplicate_result(next, j, id));
                } else {
                    return Err(orphan_result(next, j, id));
                }
            }
            _ if !pending.is_empty() => return Err(missing_results(&format!("messages.{next}"), " ", &pending)),
            _ => {}
        }
    }
    if !pending.is_empty() {
        return Err(missing_results(&format!("messages.{assistant}"), "", &pending));
    }
    Ok(())
}
